#include "compiler/importers/onnx/Importer.h"

#include <fstream>
#include <set>

#include "compiler/importers/onnx/Context.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

StatusOr<std::string> BuildFunction(const ::onnx::ModelProto& model, const ImportOptions& options) {
  Context c;
  const ::onnx::GraphProto& g = model.graph();
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") c.opset = o.version();
  std::set<std::string> init_names;
  for (const auto& t : g.initializer()) {
    init_names.insert(t.name());
    HEXIR_ASSIGN_OR_RETURN(c.values[t.name()], c.FromTensorProto(t));
  }
  // Arguments: graph inputs that are not initializers, in order.
  std::string args;
  int argn = 0;
  std::vector<std::pair<std::string, const ::onnx::ValueInfoProto*>> arg_list;
  for (const auto& in : g.input()) {
    if (init_names.count(in.name())) continue;
    if (!in.type().has_tensor_type())
      return InvalidArgument("graph input '", in.name(), "' is not a tensor");
    const auto& tt = in.type().tensor_type();
    Val v;
    v.et = Context::ElementType(tt.elem_type());
    v.is_unsigned = Context::IsUnsignedType(tt.elem_type());
    if (v.et.empty())
      return InvalidArgument("graph input '", in.name(), "': unsupported element type ",
                             tt.elem_type());
    if (!tt.has_shape()) return InvalidArgument("graph input '", in.name(), "' has no shape (rank)");
    std::string type = "tensor<";
    for (const auto& d : tt.shape().dim()) {
      bool known = d.has_dim_value() && d.dim_value() >= 0;
      v.shape.push_back(Dim::Static(known ? d.dim_value() : -1));
      type += (known ? std::to_string(d.dim_value()) : std::string("?")) + "x";
    }
    type += v.et + ">";
    v.name = "%arg" + std::to_string(argn++);
    args += std::string(args.empty() ? "" : ", ") + v.name + ": " + type;
    // Dynamic dims are read once at entry.
    for (size_t i = 0; i < v.shape.size(); ++i) {
      if (v.shape[i].v >= 0) continue;
      std::string d = c.b.Fresh();
      c.b.Line(d + " = tensor.dim " + v.name + ", " + c.b.IndexConst(static_cast<int64_t>(i)) +
               " : " + type);
      v.shape[i] = Dim::Dynamic(d);
      c.b.MarkNonNegative(d);
    }
    c.values[in.name()] = v;
  }
  HEXIR_RETURN_IF_ERROR(LowerGraphNodes(c, g));
  std::string rets, ret_types;
  for (const auto& out : g.output()) {
    auto it = c.values.find(out.name());
    if (it == c.values.end()) return InvalidArgument("graph output '", out.name(), "' is never defined");
    c.Mat(it->second);
    rets += std::string(rets.empty() ? "" : ", ") + it->second.name;
    ret_types += std::string(ret_types.empty() ? "" : ", ") + Builder::TensorType(it->second);
  }
  std::string body = c.b.Text();
  std::string text = "  func.func @" + options.entry_name + "(" + args + ") -> (" + ret_types +
                     ") {\n" + body + "    return " + rets + " : " + ret_types + "\n  }\n";
  return text;
}

}  // namespace

StatusOr<std::string> ImportOnnxFunction(const ::onnx::ModelProto& model,
                                         const ImportOptions& options) {
  return BuildFunction(model, options);
}

StatusOr<std::string> ImportOnnxModel(const ::onnx::ModelProto& model, const ImportOptions& options) {
  HEXIR_ASSIGN_OR_RETURN(std::string f, ImportOnnxFunction(model, options));
  return "module {\n" + f + "}\n";
}

StatusOr<std::string> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot open '" + path + "'");
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    return Status(StatusCode::kInvalidArgument, "'" + path + "' is not an ONNX model (protobuf parse failed)");
  auto r = ImportOnnxModel(model, options);
  if (!r.ok()) return std::move(r).status().WithContext(path);
  return r;
}

}  // namespace hexir::importers::onnx
