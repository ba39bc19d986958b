#include "compiler/importers/onnx/Importer.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "compiler/importers/onnx/Context.h"
#include "compiler/importers/onnx/ModelFile.h"
#include "compiler/importers/onnx/OpTable.h"
#include "compiler/importers/onnx/ParameterFile.h"
#include "compiler/importers/onnx/TensorData.h"

namespace hexir::importers::onnx {
namespace {

// ImportOptions::node_devices as one device per top-level node (-1: unplaced). Errors name
// the item: a malformed one, an index past the graph, a name no node has.
StatusOr<std::vector<int64_t>> NodeDevices(const std::string& spec, const ::onnx::GraphProto& g) {
  std::vector<int64_t> devices(g.node_size(), -1);
  if (spec.empty()) return devices;
  auto count = [](const std::string& text, int64_t* out) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
      return false;
    *out = std::stoll(text);
    return true;
  };
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    const size_t colon = item.rfind(':');
    int64_t device = 0, first = 0, last = 0;
    if (colon == std::string::npos || !count(item.substr(colon + 1), &device))
      return InvalidArgument("--onnx-devices: '", item, "' is not SELECTOR:DEVICE");
    const std::string selector = item.substr(0, colon);
    const size_t dash = selector.find('-');
    bool by_index = count(selector, &first);
    if (by_index) last = first;
    if (!by_index && dash != std::string::npos)
      by_index = count(selector.substr(0, dash), &first) && count(selector.substr(dash + 1), &last);
    if (by_index) {
      if (last < first || last >= g.node_size())
        return InvalidArgument("--onnx-devices: '", item, "': the graph has nodes 0-", g.node_size() - 1);
      for (int64_t i = first; i <= last; ++i) devices[i] = device;
      continue;
    }
    bool found = false;
    for (int i = 0; i < g.node_size(); ++i)
      if (g.node(i).name() == selector) {
        devices[i] = device;
        found = true;
      }
    if (!found) return InvalidArgument("--onnx-devices: no node is named '", selector, "'");
  }
  return devices;
}

// One line on stderr rewritten in place (ImportOptions::progress), at most 5 times a second;
// cleared when the import ends.
class ProgressLine {
 public:
  explicit ProgressLine(bool on) : on_(on) {}
  ~ProgressLine() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  void Show(const std::string& text, bool force = false) {
    if (!on_) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && shown_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    shown_ = true;
    double s = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r\033[Khexir-import: %s (%.1f s)", text.c_str(), s);
    std::fflush(stderr);
  }

 private:
  bool on_, shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_;
};

// Lowers the top-level nodes, each with its device (a one-node graph per placed node).
Status LowerPlacedNodes(Context& c, const ::onnx::GraphProto& g, const std::vector<int64_t>& devices) {
  for (int i = 0; i < g.node_size(); ++i) {
    ::onnx::GraphProto one;
    *one.add_node() = g.node(i);
    c.b.SetDevice(devices[i]);
    HEXIR_RETURN_IF_ERROR(LowerGraphNodes(c, one));
  }
  c.b.SetDevice(-1);
  return Status::Ok();
}

StatusOr<std::string> BuildFunction(const ::onnx::ModelProto& model, const ImportOptions& options) {
  Context c;
  c.model_dir = options.model_dir;
  ProgressLine progress(options.progress);
  const ::onnx::GraphProto& g = model.graph();
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") c.opset = o.version();
    else if (o.domain() == kTrainingDomain) c.training_opset = o.version();
    else if (o.domain() == kMicrosoftDomain) c.microsoft_opset = o.version();
  HEXIR_RETURN_IF_ERROR(RefuseStringNodes(c, g));
  std::set<std::string> init_names;
  std::vector<ParameterTensor> parameters;
  for (const auto& t : g.initializer()) {
    init_names.insert(t.name());
    const std::string et = Context::ElementType(t.data_type());
    if (!options.parameters_path.empty() && ParameterGgmlType(et) >= 0 &&
        TensorByteSize(t, et) > options.parameter_threshold) {
      parameters.push_back({&t, et});
      continue;
    }
    HEXIR_ASSIGN_OR_RETURN(c.values[t.name()], c.FromTensorProto(t));
  }
  // Arguments: graph inputs that are not initializers, in order.
  std::string args;
  int argn = 0;
  std::vector<std::pair<std::string, const ::onnx::ValueInfoProto*>> arg_list;
  std::map<std::string, std::pair<std::string, std::string>> named_dims;  // dim_param -> (SSA, where)
  for (const auto& in : g.input()) {
    if (init_names.count(in.name())) continue;
    if (in.type().has_sequence_type() || in.type().has_optional_type())
      return InvalidArgument("graph input '", in.name(), "' is a ",
                             in.type().has_sequence_type() ? "sequence" : "optional",
                             ": Hexir imports sequences and optionals as compile-time lists; make its elements "
                             "tensor inputs and build it with SequenceConstruct or Optional");
    if (!in.type().has_tensor_type())
      return InvalidArgument("graph input '", in.name(), "' is not a tensor");
    const auto& tt = in.type().tensor_type();
    Val v;
    v.et = Context::ElementType(tt.elem_type());
    v.is_unsigned = Context::IsUnsignedType(tt.elem_type());
    if (v.et.empty())
      return InvalidArgument("graph input '", in.name(), "': ", Context::UnsupportedType(tt.elem_type()));
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
    // Dynamic dims are read once at entry. Dims sharing a `dim_param` are one value: a later
    // one is checked equal to the first at run time.
    for (size_t i = 0; i < v.shape.size(); ++i) {
      if (v.shape[i].v >= 0) continue;
      std::string d = c.b.Fresh();
      c.b.Line(d + " = tensor.dim " + v.name + ", " + c.b.IndexConst(static_cast<int64_t>(i)) +
               " : " + type);
      c.b.MarkNonNegative(d);
      v.shape[i] = Dim::Dynamic(d);
      const std::string& param = tt.shape().dim(static_cast<int>(i)).dim_param();
      if (param.empty()) continue;
      std::string here = "graph input '" + in.name() + "' dimension " + std::to_string(i);
      auto [first, fresh] = named_dims.emplace(param, std::make_pair(d, here));
      if (fresh) continue;
      std::string same = c.b.Fresh();
      c.b.Line(same + " = arith.cmpi eq, " + first->second.first + ", " + d + " : index");
      c.b.Line("hexir.check " + same + ", \"" + Builder::CheckText(first->second.second + " ('" + param + "')") + " is {} and " +
               Builder::CheckText(here) + " is {}: dims of one name must be equal" +
               "\"(" + first->second.first + ", " + d + ") : index, index");
      v.shape[i] = Dim::Dynamic(first->second.first);  // the check dominates every use
    }
    c.values[in.name()] = v;
  }
  // Parameters: static arguments after the graph inputs, in initializer order.
  std::string parameter_notes;
  const int first_parameter = argn;
  for (const ParameterTensor& p : parameters) {
    Val v;
    v.et = p.et;
    v.is_unsigned = Context::IsUnsignedType(p.tensor->data_type());
    for (int64_t d : p.tensor->dims()) v.shape.push_back(Dim::Static(d));
    v.name = "%arg" + std::to_string(argn++);
    // Weights: work on them alone runs once per buffer (passes/dispatch/LoadTimeValues.h).
    args += std::string(args.empty() ? "" : ", ") + v.name + ": " + Builder::TensorType(v) + " {hexir.parameter}";
    std::string printable = p.tensor->name();
    for (char& ch : printable)
      if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
    parameter_notes += "  // " + v.name + ": parameter '" + printable + "'\n";
    c.values[p.tensor->name()] = v;
  }
  int64_t lowered = 0;
  c.on_node = [&](const ::onnx::GraphProto& graph, int index) {
    ++lowered;
    if (&graph == &g)
      progress.Show("lowering: " + std::to_string(lowered) + " nodes, " + std::to_string(index + 1) +
                    " of " + std::to_string(g.node_size()) + " top-level (" +
                    graph.node(index).op_type() + ")");
  };
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> devices, NodeDevices(options.node_devices, g));
  if (options.node_devices.empty()) {
    HEXIR_RETURN_IF_ERROR(LowerGraphNodes(c, g));
  } else {
    HEXIR_RETURN_IF_ERROR(LowerPlacedNodes(c, g, devices));
  }
  std::string rets, ret_types;
  for (const auto& out : g.output()) {
    auto it = c.values.find(out.name());
    if (it == c.values.end()) return InvalidArgument("graph output '", out.name(), "' is never defined");
    // A sequence or optional output is its elements, in order (an empty one: no result).
    std::vector<Val> flat;
    std::function<void(const Val&)> flatten = [&](const Val& v) {
      if (!v.IsList()) flat.push_back(v);
      else
        for (const Val& e : *v.list) flatten(e);
    };
    flatten(it->second);
    for (Val& v : flat) {
      if (v.name.empty() && v.et == "i1") {  // known bools: the VM has no i1 constant data
        Val bytes = v;
        bytes.et = "i8";
        HEXIR_ASSIGN_OR_RETURN(v, c.Elementwise({&bytes}, "i1", [&](const std::vector<std::string>& a) {
          std::string r = c.b.Fresh();
          c.b.Line(r + " = arith.trunci " + a[0] + " : i8 to i1");
          return r;
        }));
      }
      c.Mat(v);
      rets += std::string(rets.empty() ? "" : ", ") + v.name;
      ret_types += std::string(ret_types.empty() ? "" : ", ") + Builder::TensorType(v);
    }
  }
  std::string body = c.b.Text();
  std::string text = parameter_notes + "  func.func @" + options.entry_name + "(" + args + ") -> (" +
                     ret_types + ") {\n" + body + "    return " + rets + " : " + ret_types + "\n  }\n";
  if (!options.parameters_path.empty()) {
    HEXIR_RETURN_IF_ERROR(WriteParameterFile(
        options.parameters_path, options.entry_name, first_parameter, parameters, c.model_dir,
        [&](int64_t done, int64_t total) {
          progress.Show("writing parameters: " + std::to_string(done >> 20) + " of " +
                        std::to_string(total >> 20) + " MiB");
        }));
  }
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
  ProgressLine reading(options.progress);
  reading.Show("reading " + path, true);
  ImportOptions with_dir = options;
  const size_t slash = path.rfind('/');
  // Large initializers are read in place, as external data of the model's own file, unless
  // external data is resolved against another folder than the file's.
  int64_t in_place_bytes = kReadInPlaceBytes;
  if (with_dir.model_dir.empty())
    with_dir.model_dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  else
    in_place_bytes = INT64_MAX;
  ::onnx::ModelProto model;
  HEXIR_RETURN_IF_ERROR(ReadModelFile(path, slash == std::string::npos ? path : path.substr(slash + 1),
                                      in_place_bytes, &model));
  auto r = ImportOnnxModel(model, with_dir);
  if (!r.ok()) return std::move(r).status().WithContext(path);
  return r;
}

}  // namespace hexir::importers::onnx
