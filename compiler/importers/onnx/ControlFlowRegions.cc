// Region helpers of ONNX control flow (see ControlFlowRegions.h).
#include "compiler/importers/onnx/ControlFlowRegions.h"

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

// v with the static extents its declaration gives where the lowering computed `?` (a Slice of
// run-time bounds that always has one element): a `tensor.cast`, checked at run time by
// hexir-compile's shape checks. Loop-carried values and scan outputs need those static types.
Val RefineToDeclared(Context& c, const ::onnx::ValueInfoProto& info, const Val& v, int output,
                     const RefinesFn& refines) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return v;
  const auto& dims = info.type().tensor_type().shape().dim();
  if (dims.size() != static_cast<int>(v.rank())) return v;
  Val refined = v;
  bool changed = false;
  for (int i = 0; i < dims.size(); ++i) {
    if (!v.shape[i].dynamic() || !dims[i].has_dim_value() || dims[i].dim_value() < 0) continue;
    if (refines && !refines(output, i, dims[i].dim_value())) continue;
    refined.shape[i] = Dim::Static(dims[i].dim_value());
    changed = true;
  }
  if (!changed) return v;
  refined.name = c.b.Fresh();
  c.b.Line(refined.name + " = tensor.cast " + v.name + " : " + Builder::TensorType(v) + " to " +
           Builder::TensorType(refined));
  return refined;
}

}  // namespace

StatusOr<std::vector<Val>> LowerBody(Context& c, const ::onnx::GraphProto& g, const std::vector<Val>& args,
                                     bool materialize, const RefinesFn& refines) {
  const ::onnx::NodeProto* node = c.node;
  if (g.input_size() != static_cast<int>(args.size()))
    return c.Error("body '" + g.name() + "' has " + std::to_string(g.input_size()) + " inputs, expected " +
                   std::to_string(args.size()));
  for (const auto& t : g.initializer()) {
    HEXIR_ASSIGN_OR_RETURN(c.values[t.name()], c.FromTensorProto(t));
  }
  for (int i = 0; i < g.input_size(); ++i) c.values[g.input(i).name()] = args[i];
  Status lowered = LowerGraphNodes(c, g);
  c.node = node;
  HEXIR_RETURN_IF_ERROR(lowered);
  std::vector<Val> outs;
  for (const auto& o : g.output()) {
    auto it = c.values.find(o.name());
    if (it == c.values.end()) return c.Error("body '" + g.name() + "' never defines its output '" + o.name() + "'");
    if (materialize && it->second.IsList())
      return c.Error("body '" + g.name() + "' yields the sequence or optional '" + o.name() +
                     "' from a region that runs at run time: its condition or trip count must be a constant");
    if (materialize) {
      c.Mat(it->second);
      outs.push_back(RefineToDeclared(c, o, it->second, static_cast<int>(outs.size()), refines));
    } else {
      outs.push_back(it->second);
    }
  }
  return outs;
}

StatusOr<std::vector<Val>> CaptureRegion(Context& c, std::string* text,
                                         const std::function<StatusOr<std::vector<Val>>()>& lower) {
  std::map<std::string, Val> saved = c.values;
  size_t mark = c.b.Mark();
  c.b.EnterRegion();
  StatusOr<std::vector<Val>> r = lower();
  c.b.ExitRegion();
  *text = c.b.TakeSince(mark);
  c.values = std::move(saved);
  return r;
}

Val Typed(Context& c, const std::string& name, const Val& type) {
  Val v;
  v.name = name;
  v.et = type.et;
  v.shape = type.shape;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (!v.shape[i].dynamic()) continue;
    std::string d = c.b.Fresh();
    c.b.Line(d + " = tensor.dim " + name + ", " + c.b.IndexConst(static_cast<int64_t>(i)) + " : " +
             Builder::TensorType(type));
    c.b.MarkNonNegative(d);
    v.shape[i] = Dim::Dynamic(d);
  }
  return v;
}

std::string ExtractScalar(Context& c, Val& t) {
  c.Mat(t);
  std::vector<std::string> idx(t.rank(), c.b.IndexConst(0));
  std::string s = c.b.Fresh();
  c.b.Line(s + " = tensor.extract " + t.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(t));
  return s;
}

Val FromScalar(Context& c, const std::string& s, const std::string& et) {
  Val v;
  v.et = et;
  v.name = c.b.Fresh();
  c.b.Line(v.name + " = tensor.from_elements " + s + " : tensor<" + et + ">");
  return v;
}

std::string TypeList(const std::vector<Val>& vs) {
  std::vector<std::string> t;
  for (const Val& v : vs) t.push_back(Builder::TensorType(v));
  return Builder::Join(t);
}
std::string NameList(const std::vector<Val>& vs) {
  std::vector<std::string> n;
  for (const Val& v : vs) n.push_back(v.name);
  return Builder::Join(n);
}

Shape JoinedShape(const Shape& a, const Shape& b) {
  Shape joined = a;
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d].dynamic() || b[d].dynamic() || a[d].v != b[d].v) joined[d] = Dim::Dynamic("?");
  return joined;
}

Status CheckCarried(Context& c, const ::onnx::GraphProto& g, const std::vector<Val>& in,
                    const std::vector<Val>& out, int first_out) {
  for (size_t k = 0; k < in.size(); ++k) {
    std::string a = Builder::TensorType(in[k]), b = Builder::TensorType(out[first_out + k]);
    if (a != b)
      return c.Error("loop-carried value '" + g.output(first_out + static_cast<int>(k)).name() + "' changes type from " +
                     a + " to " + b);
  }
  return Status::Ok();
}

StatusOr<Val> StackType(Context& c, const ::onnx::GraphProto& g, int out_index, const Val& element,
                        const Dim& count) {
  for (const Dim& d : element.shape)
    if (d.dynamic())
      return c.Error("scan output '" + g.output(out_index).name() + "' has a dynamic shape (not supported)");
  Val t;
  t.et = element.et;
  t.shape = {count};
  t.shape.insert(t.shape.end(), element.shape.begin(), element.shape.end());
  return t;
}

std::string WriteRow(Context& c, const Val& acc, const Val& element, const std::string& row,
                     bool device_row) {
  Builder& b = c.b;
  int loops = static_cast<int>(acc.rank());
  return b.IndexGeneric(acc.shape, acc.et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(loops);
    std::vector<std::string> rest(idx.begin() + 1, idx.end());
    std::string at = row;
    if (device_row) {
      std::string i64 = b.Fresh();
      b.Line(i64 + " = tensor.extract " + row + "[" + b.IndexConst(0) + "] : tensor<1xi64>");
      at = b.ToIndex(i64, "i64");
    }
    std::string here = b.Fresh(), mine = b.Fresh(), old = b.Fresh();
    b.Line(here + " = arith.cmpi eq, " + idx[0] + ", " + at + " : index");
    b.Line(mine + " = tensor.extract " + element.name + "[" + Builder::Join(rest) + "] : " +
           Builder::TensorType(element));
    b.Line(old + " = tensor.extract " + acc.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(acc));
    return b.Select(here, mine, old, acc.et);
  });
}

Val FirstRows(Context& c, const Val& acc, const Dim& count) {
  Builder& b = c.b;
  Shape out = acc.shape;
  out[0] = count;
  Val r;
  r.et = acc.et;
  r.shape = out;
  int loops = static_cast<int>(out.size());
  r.name = b.IndexGeneric(out, acc.et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(loops);
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + acc.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(acc));
    return e;
  });
  return r;
}

}  // namespace hexir::importers::onnx
