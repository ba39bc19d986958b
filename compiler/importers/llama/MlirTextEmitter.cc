#include "compiler/importers/llama/MlirTextEmitter.h"

#include "dialects/hexir/IR/HexirAttributes.h"

namespace hexir::compiler::llama {

std::string Emitter::Empty(const std::string& type, const std::string& dyn) {
  std::string e = Fresh("e");
  os_ << "    " << e << " = tensor.empty(" << dyn << ") : " << type << "\n";
  return e;
}

std::string Emitter::Filled(const std::string& type, const std::string& value, const std::string& elem,
                            const std::string& dyn) {
  std::string e = Empty(type, dyn);
  if (value.empty()) return e;
  std::string c = Fresh("c"), f = Fresh("f");
  os_ << "    " << c << " = arith.constant " << value << " : " << elem << "\n";
  os_ << "    " << f << " = linalg.fill ins(" << c << " : " << elem << ") outs(" << e << " : " << type
      << ") -> " << type << "\n";
  return f;
}

std::string Emitter::Generic(const std::vector<std::string>& maps, const std::vector<std::string>& iters,
                             const std::vector<Operand>& ins, const Operand& out,
                             const std::vector<std::string>& arg_elems, const Body& body) {
  std::string r = Fresh("g");
  os_ << "    " << r << " = linalg.generic {indexing_maps = [";
  for (size_t i = 0; i < maps.size(); ++i) os_ << (i ? ", " : "") << "affine_map<" << maps[i] << ">";
  os_ << "], iterator_types = [";
  for (size_t i = 0; i < iters.size(); ++i) os_ << (i ? ", " : "") << '"' << iters[i] << '"';
  os_ << "]";
  if (!group.empty()) os_ << ", " << kDispatchGroupAttr << " = \"" << group << "\"";
  if (!block_matvec.empty()) os_ << ", " << kBlockMatvecAttr << " = \"" << block_matvec << "\"";
  if (device_ >= 0) os_ << ", " << kDeviceAttr << " = " << device_ << " : i64";
  os_ << "}";
  if (!ins.empty()) {
    os_ << " ins(";
    for (size_t i = 0; i < ins.size(); ++i) os_ << (i ? ", " : "") << ins[i].name;
    os_ << " : ";
    for (size_t i = 0; i < ins.size(); ++i) os_ << (i ? ", " : "") << ins[i].type;
    os_ << ")";
  }
  os_ << " outs(" << out.name << " : " << out.type << ") {\n    ^bb0(";
  std::vector<std::string> args;
  for (size_t i = 0; i < arg_elems.size(); ++i) {
    args.push_back(Fresh("a"));
    os_ << (i ? ", " : "") << args.back() << ": " << arg_elems[i];
  }
  os_ << "):\n" << body(args) << "    } -> " << out.type << "\n";
  return r;
}

}  // namespace hexir::compiler::llama
