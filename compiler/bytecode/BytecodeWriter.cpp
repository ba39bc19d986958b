#include "compiler/bytecode/BytecodeWriter.h"

#include <map>
#include <set>

#include "compiler/bytecode/Encoder.h"
#include "compiler/bytecode/ModuleFile.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::compiler {
namespace {
using namespace mlir;
using bytecode::Encoder;
using bytecode::ListEntry;
using bytecode::Opcode;

class RegisterFile {
 public:
  uint32_t take() {
    if (free_.empty()) return count_++;
    uint32_t r = *free_.begin();
    free_.erase(free_.begin());
    return r;
  }
  uint32_t takeFixed() { return count_++; }  // arguments: 0, 1, ... before anything else
  void give(uint32_t r) { free_.insert(r); }
  uint32_t count() const { return count_; }

 private:
  std::set<uint32_t> free_;
  uint32_t count_ = 0;
};

class ModuleWriter {
 public:
  LogicalResult write(ModuleOp module, std::vector<uint8_t>* out) {
    data.name = module.getName() ? module.getName()->str() : "module";
    for (auto exe : module.getOps<ExecutableOp>())
      if (failed(addExecutable(exe))) return failure();
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(addFunction(func))) return failure();
    *out = bytecode::SerializeModule(data);
    return success();
  }

 private:
  LogicalResult addExecutable(ExecutableOp exe) {
    auto format = exe->getAttrOfType<StringAttr>("hexir.format");
    auto binary = exe->getAttrOfType<StringAttr>("hexir.binary");
    auto entry = exe->getAttrOfType<StringAttr>("hexir.entry");
    if (!format || !binary || !entry)
      return exe.emitError("executable was not serialized (no hexir.format/binary/entry)");
    bytecode::ExecutableData e;
    e.format = format.str();
    e.binary.assign(binary.getValue().begin(), binary.getValue().end());
    e.entry_points.push_back(entry.str());
    // Target metadata: `hexir.attrs` strings are copied; each `hexir.rodata_attrs` blob
    // is stored as rodata and its key maps to the rodata ordinal (e.g. CUDA's PTX).
    if (auto attrs = exe->getAttrOfType<DictionaryAttr>("hexir.attrs"))
      for (NamedAttribute a : attrs)
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          e.attrs.emplace_back(a.getName().str(), s.str());
    if (auto blobs = exe->getAttrOfType<DictionaryAttr>("hexir.rodata_attrs"))
      for (NamedAttribute a : blobs)
        if (auto s = dyn_cast<StringAttr>(a.getValue())) {
          data.rodata.emplace_back(s.getValue().begin(), s.getValue().end());
          e.attrs.emplace_back(a.getName().str(), std::to_string(data.rodata.size() - 1));
        }
    data.executables.push_back(std::move(e));
    return success();
  }

  uint32_t importOrdinal(StringRef name, StringRef signature) {
    std::string key = (name + "|" + signature).str();
    auto [it, inserted] = imports.try_emplace(key, data.imports.size());
    if (inserted)
      data.imports.push_back({name.split('.').first.str(), name.str(), signature.str()});
    return it->second;
  }

  FailureOr<uint32_t> rodataOrdinal(vmir::RodataOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getData());
    if (!dense) return op.emitError("rodata needs a dense elements attribute");
    Type element = dense.getElementType();
    unsigned bits = element.getIntOrFloatBitWidth();
    if (bits % 8 != 0) return op.emitError("unsupported rodata element type ") << element;
    ArrayRef<char> raw = dense.getRawData();
    std::vector<uint8_t> bytes;
    int64_t count = dense.isSplat() ? dense.getNumElements() : 1;
    for (int64_t i = 0; i < count; ++i) bytes.insert(bytes.end(), raw.begin(), raw.end());
    data.rodata.push_back(std::move(bytes));
    return static_cast<uint32_t>(data.rodata.size() - 1);
  }

  static std::string signatureOf(TypeRange args, TypeRange results) {
    std::string s;
    for (Type t : args) s += vmir::SignatureChar(t);
    s += '_';
    for (Type t : results) s += vmir::SignatureChar(t);
    return s;
  }

  LogicalResult addFunction(func::FuncOp func) {
    if (func.isExternal()) return success();
    if (!llvm::hasSingleElement(func.getBody()))
      return func.emitError("the bytecode writer handles single-block functions only");
    for (Type t : llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
      if (!vmir::SignatureChar(t))
        return func.emitError("function is not in VM form: type ") << t;
    Block& block = func.getBody().front();

    // Liveness over the single block: index of the last op using each value.
    DenseMap<Value, unsigned> lastUse;
    SmallVector<Operation*> ops;
    for (Operation& op : block) {
      for (Value v : op.getOperands()) lastUse[v] = ops.size();
      ops.push_back(&op);
    }
    RegisterFile values, refs;
    DenseMap<Value, uint32_t> regs;
    auto isRef = [](Value v) { return isa<vmir::RefType>(v.getType()); };
    Encoder enc;
    std::vector<ListEntry> unusedArgs;
    for (BlockArgument arg : block.getArguments()) {
      regs[arg] = isRef(arg) ? refs.takeFixed() : values.takeFixed();
      if (!lastUse.count(arg)) {
        if (isRef(arg)) unusedArgs.push_back({true, false, regs[arg]});
        (isRef(arg) ? refs : values).give(regs[arg]);
      }
    }
    if (!unusedArgs.empty()) {
      enc.op(Opcode::Release);
      enc.L(unusedArgs);
    }

    for (auto [index, op] : llvm::enumerate(ops)) {
      // Operand entries: MOVE on the value's final occurrence in its last-using op.
      std::vector<ListEntry> operands;
      for (auto [j, v] : llvm::enumerate(op->getOperands())) {
        bool laterInOp = llvm::is_contained(op->getOperands().drop_front(j + 1), v);
        bool move = isRef(v) && lastUse[v] == index && !laterInOp;
        operands.push_back({isRef(v), move, regs[v]});
      }
      std::vector<ListEntry> results;
      for (Value r : op->getResults()) {
        regs[r] = isRef(r) ? refs.take() : values.take();
        results.push_back({isRef(r), false, regs[r]});
      }
      if (failed(encode(op, enc, operands, results))) return failure();
      llvm::SmallDenseSet<Value> freed;
      for (Value v : op->getOperands())
        if (lastUse[v] == index && freed.insert(v).second) (isRef(v) ? refs : values).give(regs[v]);
      std::vector<ListEntry> dead;
      for (Value r : op->getResults()) {
        if (!r.use_empty()) continue;
        if (isRef(r) && !isa<vmir::NullRefOp>(op)) dead.push_back({true, false, regs[r]});
        (isRef(r) ? refs : values).give(regs[r]);
      }
      if (!dead.empty()) {
        enc.op(Opcode::Release);
        enc.L(dead);
      }
    }
    if (!block.mightHaveTerminator() || !isa<vmir::ReturnOp>(block.back()))
      return func.emitError("function must end with hexir_vm.return");

    std::string error;
    bytecode::FunctionData fn;
    fn.name = func.getName().str();
    fn.signature = signatureOf(func.getArgumentTypes(), func.getResultTypes());
    fn.code = enc.finish(&error);
    if (!error.empty()) return func.emitError("internal encoding error: ") << error;
    fn.value_register_count = values.count();
    fn.ref_register_count = refs.count();
    fn.exported = func.isPublic();
    for (auto [attr, key] : {std::pair{"hexir_vm.abi_args", "abi.args"},
                             std::pair{"hexir_vm.abi_results", "abi.results"}})
      if (auto s = func->getAttrOfType<StringAttr>(attr)) fn.attrs.emplace_back(key, s.str());
    data.functions.push_back(std::move(fn));
    return success();
  }

  LogicalResult encode(Operation* op, Encoder& enc, const std::vector<ListEntry>& operands,
                       const std::vector<ListEntry>& results) {
    if (auto c = dyn_cast<vmir::ConstI64Op>(op)) {
      enc.op(Opcode::ConstI64);
      enc.V(results[0].index);
      enc.K(static_cast<uint64_t>(c.getValue()));
    } else if (auto c = dyn_cast<vmir::ConstF64Op>(op)) {
      enc.op(Opcode::ConstF64);
      enc.V(results[0].index);
      enc.K(c.getValueAttr().getValue().bitcastToAPInt().getZExtValue());
    } else if (isa<vmir::TruncF64F32Op>(op)) {
      enc.op(Opcode::TruncF64F32);
      enc.V(results[0].index);
      enc.V(operands[0].index);
    } else if (isa<vmir::NullRefOp>(op)) {
      // A fresh or released register is null; nothing to emit.
    } else if (auto r = dyn_cast<vmir::RodataOp>(op)) {
      FailureOr<uint32_t> ordinal = rodataOrdinal(r);
      if (failed(ordinal)) return failure();
      enc.op(Opcode::Rodata);
      enc.R(results[0].index, false);
      enc.D(*ordinal);
    } else if (auto call = dyn_cast<vmir::CallImportOp>(op)) {
      enc.op(Opcode::CallImport);
      enc.M(importOrdinal(call.getCallee(),
                          signatureOf(call.getArgs().getTypes(), call.getResultTypes())));
      enc.L(operands);
      enc.L(results);
    } else if (isa<vmir::ReturnOp>(op)) {
      enc.op(Opcode::Return);
      enc.L(operands);
    } else {
      return op->emitError() << "cannot encode op '" << op->getName()
                             << "' as VM bytecode (not in VM form)";
    }
    return success();
  }

  bytecode::ModuleData data;
  std::map<std::string, uint32_t> imports;
};

}  // namespace

LogicalResult WriteBytecodeModule(ModuleOp module, std::vector<uint8_t>* out) {
  return ModuleWriter().write(module, out);
}

}  // namespace hexir::compiler
