// ONNX control flow (onnx/defs/controlflow): If -> scf.if (a known condition inlines the
// chosen branch), Loop -> scf.while (trip count and/or condition, loop-carried values, scan
// outputs), Scan -> scf.for. Bodies are subgraphs lowered in place: they read outer-scope
// values directly (those dominate the region); what a body defines or materializes stays in
// its region (the value table is restored afterwards, index constants are not cached there).
// A body is lowered before its op's header, whose result types it decides (Builder::Mark).
//
// Loop-carried values keep their type: a body that yields another shape for one is an error
// naming it (dims read at run time, `?`, may change value). Scan outputs are stacked along a
// new axis 0 (one generic per iteration writes row i); their element shapes must be static.
#include <algorithm>
#include <functional>

#include "compiler/importers/onnx/ControlFlowRegions.h"
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

// A Loop carrying a sequence runs at most this many iterations (unrolled at import time).
constexpr int64_t kMaxUnrolledIterations = 4096;

// The body of a Loop (either form): after its own leading arguments (iteration, condition) it
// gets the carried values, typed as they went in, and yields them back with one row of each
// scan output, written into an accumulator whose type the body decides. Block argument names
// are made first, since the header that declares them is emitted after the body.
struct LoopBody {
  std::vector<std::string> carried_args, acc_args;
  std::vector<Val> accs;  // the scan accumulators' types, known once Yield ran
  // The carried values' types: the inits', widened where the body changes an extent.
  std::vector<Val> carried_types;

  LoopBody(Builder& b, int carried, int scans) {
    for (int k = 0; k < carried; ++k) carried_args.push_back(b.Fresh());
    for (int s = 0; s < scans; ++s) acc_args.push_back(b.Fresh());
  }

  // g's outputs (cond, carried..., scan elements...), lowered on `leading` and the carried
  // block arguments. A carried value whose extents the body changes (a list of results that
  // grows by a row per iteration: Mask R-CNN's pasted masks, from tensor<0x..> to
  // tensor<1x..>) is carried as the join of the types in and out (static dims only where they
  // agree): the body is lowered again on the joined type until the types come back (each
  // round makes a dim dynamic), its results cast to them; the caller casts the inits
  // (CastInits). Another element type or rank is an error naming the value.
  StatusOr<std::vector<Val>> Lower(Context& c, const ::onnx::GraphProto& g, const std::vector<Val>& leading,
                                   const std::vector<Val>& inits) {
    carried_types = inits;
    for (int round = 0;; ++round) {
      const size_t mark = c.b.Mark();
      const std::map<std::string, Val> saved = c.values;
      std::vector<Val> args = leading;
      for (size_t k = 0; k < carried_types.size(); ++k) args.push_back(Typed(c, carried_args[k], carried_types[k]));
      // A carried output's declared extent holds only where it is the one the value came in with.
      auto refines = [&](int output, int dim, int64_t extent) {
        if (output < 1 || output > static_cast<int>(carried_types.size())) return true;
        if (dim >= carried_types[output - 1].rank()) return false;
        const Dim& in = carried_types[output - 1].shape[dim];
        return !in.dynamic() && in.v == extent;
      };
      HEXIR_ASSIGN_OR_RETURN(std::vector<Val> o, LowerBody(c, g, args, true, refines));
      bool widened = false;
      for (size_t k = 0; k < carried_types.size(); ++k) {
        Val& in = carried_types[k];
        const Val& out = o[1 + k];
        if (out.et != in.et || out.rank() != in.rank()) return CheckCarried(c, g, carried_types, o, 1);
        const Shape joined = JoinedShape(in.shape, out.shape);
        if (Builder::TensorType(joined, in.et) == Builder::TensorType(in)) continue;
        in.shape = joined;
        widened = true;
      }
      if (!widened) {
        for (size_t k = 0; k < carried_types.size(); ++k) CastTo(c, o[1 + k], carried_types[k]);
        HEXIR_RETURN_IF_ERROR(CheckCarried(c, g, carried_types, o, 1));
        return o;
      }
      if (round > 64) return CheckCarried(c, g, inits, o, 1);  // not expected: each round widens a dim
      c.b.TakeSince(mark);
      c.values = saved;
    }
  }

  // The inits cast to the carried types (emitted before the loop).
  void CastInits(Context& c, std::vector<Val>& inits) const {
    for (size_t k = 0; k < inits.size(); ++k) CastTo(c, inits[k], carried_types[k]);
  }

  // `v` as `type`'s extents: a tensor.cast where their types differ.
  static void CastTo(Context& c, Val& v, const Val& type) {
    const std::string from = Builder::TensorType(v), to = Builder::TensorType(type);
    if (from == to) return;
    const std::string cast = c.b.Fresh();
    c.b.Line(cast + " = tensor.cast " + v.name + " : " + from + " to " + to);
    v.name = cast;
    v.shape = type.shape;
  }

  // Appends the carried values and each scan accumulator with `row` written (WriteRow) to the
  // body's yields and their types.
  Status Yield(Context& c, const ::onnx::GraphProto& g, const std::vector<Val>& o, const Dim& trips,
               const std::string& row, bool device_row, std::vector<std::string>& yields,
               std::vector<std::string>& types) {
    const int carried = static_cast<int>(carried_args.size());
    for (int k = 0; k < carried; ++k) {
      yields.push_back(o[1 + k].name);
      types.push_back(Builder::TensorType(o[1 + k]));
    }
    for (size_t s = 0; s < acc_args.size(); ++s) {
      const int out = 1 + carried + static_cast<int>(s);
      HEXIR_ASSIGN_OR_RETURN(Val acc, StackType(c, g, out, o[out], trips));
      accs.push_back(acc);
      Val arg = acc;
      arg.name = acc_args[s];
      yields.push_back(WriteRow(c, arg, o[out], row, device_row));
      types.push_back(Builder::TensorType(acc));
    }
    return Status::Ok();
  }
};

// Opens the `scf.while` both Loop forms emit. On entry `inits`, `types` and `after_args` hold
// the loop's own leading values (flag, counter) and `before_args` names none or some of them;
// the carried values and the scan accumulators (created empty) are appended, the remaining
// before-region arguments named, and the header line emitted. Returns the op's name.
std::string OpenLoopWhile(Builder& b, const std::vector<Val>& carried, const LoopBody& body,
                          std::vector<std::string>& inits, std::vector<std::string>& types,
                          std::vector<std::string>& before_args, std::vector<std::string>& after_args) {
  for (size_t k = 0; k < carried.size(); ++k) {
    inits.push_back(carried[k].name);
    types.push_back(Builder::TensorType(carried[k]));
    after_args.push_back(body.carried_args[k] + ": " + types.back());
  }
  for (size_t s = 0; s < body.accs.size(); ++s) {
    inits.push_back(b.Empty(body.accs[s].shape, body.accs[s].et));
    types.push_back(Builder::TensorType(body.accs[s]));
    after_args.push_back(body.acc_args[s] + ": " + types.back());
  }
  while (before_args.size() < inits.size()) before_args.push_back(b.Fresh());
  std::vector<std::string> bindings;
  for (size_t k = 0; k < inits.size(); ++k) bindings.push_back(before_args[k] + " = " + inits[k]);
  std::string w = b.Fresh(), type_list = Builder::Join(types);
  b.Line(w + ":" + std::to_string(types.size()) + " = scf.while (" + Builder::Join(bindings) + ") : (" + type_list +
         ") -> (" + type_list + ") {");
  return w;
}

// Whether a Loop body's condition output is its condition input (through Identity nodes).
bool PassesConditionThrough(const ::onnx::GraphProto& g) {
  std::string name = g.output(0).name();
  for (int hops = 0; hops <= g.node_size(); ++hops) {
    if (name == g.input(1).name()) return true;
    const ::onnx::NodeProto* producer = nullptr;
    for (const auto& n : g.node())
      for (const auto& o : n.output())
        if (o == name) producer = &n;
    if (!producer || producer->op_type() != "Identity" || producer->input_size() != 1) return false;
    name = producer->input(0);
  }
  return false;
}

// A Loop whose body computes its condition, as an scf.while whose condition is a device value
// (passes/loops/DeviceLoops.h): it carries a one-element i32 flag and the iteration count as a
// one-element i64 tensor beside the loop-carried values and scan stacks; the before region
// only tests the flag, and the body computes the next flag (`cond_out && i + 1 < M`) and
// count with generics, so a body of device work runs as one device loop, and otherwise it is
// a host loop reading the flag once per iteration. The body's cond input is a known true (it
// runs only while the condition holds). Scan outputs keep the rows the loop ran (the count
// read once after the loop).
Status LowerLoopWithDeviceCondition(Context& c, const ::onnx::GraphProto& g, int scans, bool has_trips,
                                    const Dim& trips, const std::string& cond0, std::vector<Val> inits) {
  Builder& b = c.b;
  int carried = static_cast<int>(inits.size());
  // Outside the loop: the trip count as an i64 host scalar, the first flag and count.
  std::string trips_i64, go0 = cond0;
  if (has_trips) {
    std::string trips_ssa = b.DimValue(trips), above = b.Fresh();
    trips_i64 = b.Fresh();
    b.Line(trips_i64 + " = arith.index_cast " + trips_ssa + " : index to i64");
    b.Line(above + " = arith.cmpi slt, " + b.IndexConst(0) + ", " + trips_ssa + " : index");
    go0 = b.AndI1(cond0, above);
  }
  std::string flag_i32 = b.Fresh(), flag0 = b.Fresh(), count0 = b.Fresh();
  b.Line(flag_i32 + " = arith.extui " + go0 + " : i1 to i32");
  b.Line(flag0 + " = tensor.from_elements " + flag_i32 + " : tensor<1xi32>");
  b.Line(count0 + " = arith.constant dense<0> : tensor<1xi64>");
  // The body, lowered first (it decides the scan output types).
  std::string flag = b.Fresh(), count = b.Fresh(), body_text;
  LoopBody body(b, carried, scans);
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> outs, CaptureRegion(c, &body_text, [&]() -> StatusOr<std::vector<Val>> {
    Val iteration;
    iteration.et = "i64";
    iteration.name = b.Fresh();
    b.Line(iteration.name + " = tensor.collapse_shape " + count + " [] : tensor<1xi64> into tensor<i64>");
    HEXIR_ASSIGN_OR_RETURN(std::vector<Val> o,
                           body.Lower(c, g, {iteration, KnownInts("i1", {Dim::Static(1)}, /*scalar=*/true)}, inits));
    Val& cond_out = o[0];
    if (cond_out.et != "i1") return c.Error("the body's condition must be bool, not " + cond_out.et);
    if (b.Product(cond_out.shape, 0, cond_out.shape.size()).v != 1)
      return c.Error("the body's condition must have one element");
    std::string next_count = b.IndexGeneric({Dim::Static(1)}, "i64", [&](const Args&) {
      std::string i = b.Fresh(), n = b.Fresh();
      b.Line(i + " = tensor.extract " + count + "[" + b.IndexConst(0) + "] : tensor<1xi64>");
      b.Line(n + " = arith.addi " + i + ", " + b.ScalarConst("i64", 1) + " : i64");
      return n;
    });
    std::string next_flag = b.IndexGeneric({Dim::Static(1)}, "i32", [&](const Args&) {
      std::string go;
      if (cond_out.has_ints && !cond_out.ints[0].dynamic()) {  // known: no i1 constant tensor
        go = b.ScalarConst("i1", static_cast<double>(cond_out.ints[0].v));
      } else {
        std::vector<std::string> zeros(cond_out.rank(), b.IndexConst(0));
        go = b.Fresh();
        b.Line(go + " = tensor.extract " + cond_out.name + "[" + Builder::Join(zeros) + "] : " +
               Builder::TensorType(cond_out));
      }
      if (has_trips) {
        std::string n = b.Fresh(), below = b.Fresh();
        b.Line(n + " = tensor.extract " + next_count + "[" + b.IndexConst(0) + "] : tensor<1xi64>");
        b.Line(below + " = arith.cmpi slt, " + n + ", " + trips_i64 + " : i64");
        go = b.AndI1(go, below);
      }
      std::string r = b.Fresh();
      b.Line(r + " = arith.extui " + go + " : i1 to i32");
      return r;
    });
    std::vector<std::string> yields = {next_flag, next_count}, types = {"tensor<1xi32>", "tensor<1xi64>"};
    HEXIR_RETURN_IF_ERROR(body.Yield(c, g, o, trips, count, /*device_row=*/true, yields, types));
    b.Line("  scf.yield " + Builder::Join(yields) + " : " + Builder::Join(types));
    return o;
  }));
  body.CastInits(c, inits);
  // Header, the before region (the flag test only), then the body.
  std::vector<std::string> inits_list = {flag0, count0}, types = {"tensor<1xi32>", "tensor<1xi64>"};
  std::vector<std::string> after_args = {flag + ": tensor<1xi32>", count + ": tensor<1xi64>"}, before_args;
  std::string w = OpenLoopWhile(b, inits, body, inits_list, types, before_args, after_args);
  std::string type_list = Builder::Join(types), c0 = b.Fresh(), zero = b.Fresh(), e = b.Fresh(), go = b.Fresh();
  b.Line("  " + c0 + " = arith.constant 0 : index");
  b.Line("  " + zero + " = arith.constant 0 : i32");
  b.Line("  " + e + " = tensor.extract " + before_args[0] + "[" + c0 + "] : tensor<1xi32>");
  b.Line("  " + go + " = arith.cmpi ne, " + e + ", " + zero + " : i32");
  b.Line("  scf.condition(" + go + ") " + Builder::Join(before_args) + " : " + type_list);
  b.Line("} do {");
  b.Line("^bb0(" + Builder::Join(after_args) + "):");
  b.Emit(body_text);
  // A static trip count bounds the device loop's steps (passes/loops: hexir.max_iterations).
  bool bounded = has_trips && !trips.dynamic() && trips.v <= 0xFFFFFFFFll;
  b.Line(bounded ? "} attributes {hexir.max_iterations = " + std::to_string(std::max<int64_t>(trips.v, 1)) + " : i64}"
                 : "}");
  auto result = [&](size_t k) { return w + "#" + std::to_string(k); };
  for (int k = 0; k < carried; ++k) c.SetOut(k, Typed(c, result(2 + k), inits[k]));
  if (scans > 0) {
    std::string ran = b.Fresh();
    b.Line(ran + " = tensor.extract " + result(1) + "[" + b.IndexConst(0) + "] : tensor<1xi64>");
    Dim rows = Dim::Dynamic(b.ToIndex(ran, "i64"));
    b.MarkNonNegative(rows.ssa);
    for (int s = 0; s < scans && carried + s < c.node->output_size(); ++s)
      c.SetOut(carried + s, FirstRows(c, Typed(c, result(2 + carried + s), body.accs[s]), rows));
  }
  (void)outs;
  return Status::Ok();
}

}  // namespace

Status LowerIf(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& cond, c.In(0));
  const ::onnx::GraphProto* then_g = c.AttrG("then_branch");
  const ::onnx::GraphProto* else_g = c.AttrG("else_branch");
  if (!then_g || !else_g) return c.Error("then_branch and else_branch are required");
  int n = c.node->output_size();
  if (then_g->output_size() != n || else_g->output_size() != n)
    return c.Error("each branch must yield " + std::to_string(n) + " outputs");
  if (IsKnown(cond) && cond.has_ints && cond.ints.size() == 1 && !cond.ints[0].dynamic()) {
    HEXIR_ASSIGN_OR_RETURN(std::vector<Val> outs,
                           LowerBody(c, cond.ints[0].v ? *then_g : *else_g, {}, /*materialize=*/false));
    for (int i = 0; i < n; ++i) c.SetOut(i, outs[i]);
    return Status::Ok();
  }
  std::string flag = ExtractScalar(c, cond);
  if (cond.et != "i1") return c.Error("the condition must be bool, not " + cond.et);
  std::string then_text, else_text;
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> then_outs, CaptureRegion(c, &then_text, [&] {
                           return LowerBody(c, *then_g, {}, true);
                         }));
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> else_outs, CaptureRegion(c, &else_text, [&] {
                           return LowerBody(c, *else_g, {}, true);
                         }));
  // Branches whose extents differ (torchvision's detection heads: an empty tensor<0xi64>
  // against a run-time count) yield the join: each dim static where both agree, else `?`,
  // a branch's value cast to it at its end.
  for (int i = 0; i < n; ++i) {
    Val& t = then_outs[i];
    Val& e = else_outs[i];
    if (Builder::TensorType(t) == Builder::TensorType(e)) continue;
    if (t.et != e.et || t.rank() != e.rank())
      return c.Error("branches yield different types for output " + std::to_string(i) + ": " +
                     Builder::TensorType(t) + " and " + Builder::TensorType(e));
    const Shape joined = JoinedShape(t.shape, e.shape);
    for (auto [branch, text] : {std::pair{&t, &then_text}, std::pair{&e, &else_text}}) {
      const std::string from = Builder::TensorType(*branch), to = Builder::TensorType(joined, branch->et);
      if (from == to) continue;
      const std::string cast = c.b.Fresh();
      *text += "    " + cast + " = tensor.cast " + branch->name + " : " + from + " to " + to + "\n";
      branch->name = cast;
      branch->shape = joined;
    }
  }
  std::string types = TypeList(then_outs), r = c.b.Fresh();
  c.b.Line(r + ":" + std::to_string(n) + " = scf.if " + flag + " -> (" + types + ") {");
  c.b.Emit(then_text);
  c.b.Line("  scf.yield " + NameList(then_outs) + " : " + types);
  c.b.Line("} else {");
  c.b.Emit(else_text);
  c.b.Line("  scf.yield " + NameList(else_outs) + " : " + types);
  c.b.Line("}");
  for (int i = 0; i < n; ++i) c.SetOut(i, Typed(c, r + "#" + std::to_string(i), then_outs[i]));
  return Status::Ok();
}

namespace {

// A Loop carrying a sequence or optional, unrolled at import time (their lengths are static):
// the trip count and each iteration's condition must be known.
Status LowerLoopUnrolled(Context& c, const ::onnx::GraphProto& g, int scans) {
  const ::onnx::NodeProto* node = c.node;
  if (scans > 0) return c.Error("scan outputs of a Loop carrying a sequence are not supported");
  int64_t trips = kMaxUnrolledIterations + 1;
  if (c.HasIn(0)) {
    HEXIR_ASSIGN_OR_RETURN(Val& m, c.In(0));
    HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> t, c.ConstInts(m, "the trip count of a Loop carrying a sequence"));
    if (t.size() != 1) return c.Error("the trip count must have one element");
    trips = t[0];
  }
  bool go = true;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& cv, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.ConstInts(cv, "the condition of a Loop carrying a sequence"));
    if (v.size() != 1) return c.Error("the condition must have one element");
    go = v[0] != 0;
  }
  std::vector<Val> carried;
  for (int k = 2; k < c.NumIn(); ++k) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.InAny(k));
    carried.push_back(v);
  }
  int64_t i = 0;
  for (; go && i < trips; ++i) {
    if (i == kMaxUnrolledIterations)
      return c.Error("a Loop carrying a sequence is unrolled at import time: more than " +
                     std::to_string(kMaxUnrolledIterations) + " iterations");
    std::vector<Val> args = {KnownInts("i64", {Dim::Static(i)}, true), KnownInts("i1", {Dim::Static(1)}, true)};
    args.insert(args.end(), carried.begin(), carried.end());
    std::map<std::string, Val> saved = c.values;
    StatusOr<std::vector<Val>> outs = LowerBody(c, g, args, /*materialize=*/false);
    c.values = std::move(saved);
    c.node = node;
    if (!outs.ok()) return std::move(outs).status();
    Val& cond = (*outs)[0];
    if (!cond.has_ints || cond.ints.size() != 1 || cond.ints[0].dynamic())
      return c.Error("the body's condition must be a constant when the Loop carries a sequence");
    go = cond.ints[0].v != 0;
    carried.assign(outs->begin() + 1, outs->begin() + 1 + static_cast<long>(carried.size()));
  }
  for (size_t k = 0; k < carried.size(); ++k) c.SetOut(static_cast<int>(k), carried[k]);
  return Status::Ok();
}

}  // namespace

// Loop(M, cond, v...) with body (iteration, cond, v...) -> (cond, v..., scan...): runs while
// iteration < M (when given) and cond (when given).
Status LowerLoop(Context& c) {
  Builder& b = c.b;
  const ::onnx::GraphProto* g = c.AttrG("body");
  if (!g) return c.Error("the body attribute is required");
  int carried = c.NumIn() - 2;
  if (carried < 0) return c.Error("expects at least the trip count and condition operands");
  int scans = g->output_size() - 1 - carried;
  if (scans < 0 || g->input_size() != 2 + carried || c.node->output_size() > carried + scans)
    return c.Error("the body's inputs and outputs do not match the loop's operands");
  for (int k = 2; k < c.NumIn(); ++k) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.InAny(k));
    if (v.IsList()) return LowerLoopUnrolled(c, *g, scans);
  }
  // Trip count and first condition, outside the loop.
  bool has_trips = c.HasIn(0), always_true = true;
  Dim trips;
  if (has_trips) {
    HEXIR_ASSIGN_OR_RETURN(Val& m, c.In(0));
    if (m.has_ints && m.ints.size() == 1) {
      trips = m.ints[0];
    } else {
      std::string s = ExtractScalar(c, m), i = b.Fresh();
      b.Line(i + " = arith.index_cast " + s + " : " + m.et + " to index");
      trips = Dim::Dynamic(i);
    }
  } else if (scans > 0) {
    return c.Error("scan outputs of a Loop without a trip count are not supported");
  }
  std::string cond0;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& cv, c.In(1));
    if (cv.has_ints && cv.ints.size() == 1 && !cv.ints[0].dynamic()) {
      always_true = cv.ints[0].v != 0;
      cond0 = b.ScalarConst("i1", cv.ints[0].v);
    } else {
      always_true = false;
      cond0 = ExtractScalar(c, cv);
    }
  } else {
    cond0 = b.ScalarConst("i1", 1);
  }
  std::vector<Val> inits;
  for (int k = 0; k < carried; ++k) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(2 + k));
    c.Mat(v);
    inits.push_back(v);
  }
  // A condition the body computes is a device value: the device-loop form.
  if (c.HasIn(1) && !PassesConditionThrough(*g))
    return LowerLoopWithDeviceCondition(c, *g, scans, has_trips, trips, cond0, inits);
  std::string trips_ssa = has_trips ? b.DimValue(trips) : "", zero = b.IndexConst(0);
  // The body (the "after" region), lowered first: it decides the scan output types.
  std::string iter = b.Fresh(), flag = b.Fresh(), body_text, cond_arg_name;
  LoopBody body(b, carried, scans);
  bool runs_all = false;
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> outs, CaptureRegion(c, &body_text, [&]() -> StatusOr<std::vector<Val>> {
    std::string i64 = b.Fresh();
    b.Line(i64 + " = arith.index_cast " + iter + " : index to i64");
    Val iteration = FromScalar(c, i64, "i64");
    Val cond_in = FromScalar(c, flag, "i1");
    cond_arg_name = cond_in.name;
    HEXIR_ASSIGN_OR_RETURN(std::vector<Val> o, body.Lower(c, *g, {iteration, cond_in}, inits));
    runs_all = always_true && o[0].name == cond_arg_name;  // the condition passes through
    std::string next_flag = ExtractScalar(c, o[0]), next = b.Fresh();
    b.Line(next + " = arith.addi " + iter + ", " + b.IndexConst(1) + " : index");
    std::vector<std::string> yields = {next, next_flag}, types = {"index", "i1"};
    HEXIR_RETURN_IF_ERROR(body.Yield(c, *g, o, trips, iter, /*device_row=*/false, yields, types));
    b.Line("  scf.yield " + Builder::Join(yields) + " : " + Builder::Join(types));
    return o;
  }));
  body.CastInits(c, inits);
  // Header, the "before" region (the continuation test), then the body.
  std::vector<std::string> inits_list = {zero, cond0}, types = {"index", "i1"}, before_args = {b.Fresh(), b.Fresh()};
  std::vector<std::string> after_args = {iter + ": index", flag + ": i1"};
  std::string w = OpenLoopWhile(b, inits, body, inits_list, types, before_args, after_args);
  std::string type_list = Builder::Join(types);
  std::string go = before_args[1];
  if (has_trips) {
    std::string below = b.Fresh();
    go = b.Fresh();
    b.Line(below + " = arith.cmpi slt, " + before_args[0] + ", " + trips_ssa + " : index");
    b.Line(go + " = arith.andi " + below + ", " + before_args[1] + " : i1");
  }
  b.Line("  scf.condition(" + go + ") " + Builder::Join(before_args) + " : " + type_list);
  b.Line("} do {");
  b.Line("^bb0(" + Builder::Join(after_args) + "):");
  b.Emit(body_text);
  b.Line("}");
  auto result = [&](size_t k) { return w + "#" + std::to_string(k); };
  for (int k = 0; k < carried; ++k) c.SetOut(k, Typed(c, result(2 + k), inits[k]));
  for (int s = 0; s < scans && carried + s < c.node->output_size(); ++s) {
    Val acc = Typed(c, result(2 + carried + s), body.accs[s]);
    c.SetOut(carried + s, runs_all ? acc : FirstRows(c, acc, Dim::Dynamic(result(0))));
  }
  (void)outs;
  return Status::Ok();
}

// Scan (opset 9+): state values carried, scan inputs sliced along their axes (reversed by
// scan_input_directions), scan outputs stacked along axis 0 (reversed by directions).
Status LowerScan(Context& c) {
  Builder& b = c.b;
  const ::onnx::GraphProto* g = c.AttrG("body");
  if (!g) return c.Error("the body attribute is required");
  int64_t num_scans = c.AttrI("num_scan_inputs", 0);
  int states = c.NumIn() - static_cast<int>(num_scans);
  int scan_outs = g->output_size() - states;
  if (num_scans < 1 || states < 0 || scan_outs < 0 || g->input_size() != c.NumIn())
    return c.Error("the body's inputs and outputs do not match num_scan_inputs and the operands");
  std::vector<int64_t> in_axes = c.AttrInts("scan_input_axes"), in_dirs = c.AttrInts("scan_input_directions"),
                       out_axes = c.AttrInts("scan_output_axes"), out_dirs = c.AttrInts("scan_output_directions");
  for (int64_t a : out_axes)
    if (a != 0) return c.Error("scan_output_axes other than 0 are not supported");
  std::vector<Val> inits, xs;
  for (int k = 0; k < states; ++k) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(k));
    c.Mat(v);
    inits.push_back(v);
  }
  std::vector<int64_t> axes;
  for (int64_t j = 0; j < num_scans; ++j) {
    HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(states + static_cast<int>(j)));
    c.Mat(x);
    xs.push_back(x);
    HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(j < static_cast<int64_t>(in_axes.size()) ? in_axes[j] : 0, x.rank()));
    axes.push_back(axis);
  }
  Dim length = xs[0].shape[axes[0]];
  std::string length_ssa = b.DimValue(length), last = b.DimValue(b.Sub(length, Dim::Static(1)));
  std::string zero = b.IndexConst(0), one = b.IndexConst(1);
  std::string iv = b.Fresh(), body_text;
  std::vector<std::string> state_args, acc_args;
  for (int k = 0; k < states; ++k) state_args.push_back(b.Fresh());
  for (int s = 0; s < scan_outs; ++s) acc_args.push_back(b.Fresh());
  std::vector<Val> accs;
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> outs, CaptureRegion(c, &body_text, [&]() -> StatusOr<std::vector<Val>> {
    std::vector<Val> args;
    for (int k = 0; k < states; ++k) args.push_back(Typed(c, state_args[k], inits[k]));
    std::string reversed = b.Fresh();
    b.Line(reversed + " = arith.subi " + last + ", " + iv + " : index");
    for (int64_t j = 0; j < num_scans; ++j) {  // element j: x_j with `axis` fixed at the position
      const Val& x = xs[j];
      int64_t axis = axes[j];
      std::string at = j < static_cast<int64_t>(in_dirs.size()) && in_dirs[j] ? reversed : iv;
      Shape element = x.shape;
      element.erase(element.begin() + axis);
      Val e = b.Tabulate(element, x.et, [&](std::vector<std::string> idx) {
        idx.insert(idx.begin() + axis, at);
        std::string v = b.Fresh();
        b.Line(v + " = tensor.extract " + x.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(x));
        return v;
      });
      args.push_back(e);
    }
    HEXIR_ASSIGN_OR_RETURN(std::vector<Val> o, LowerBody(c, *g, args, true));
    HEXIR_RETURN_IF_ERROR(CheckCarried(c, *g, inits, o, 0));
    std::vector<std::string> yields, types;
    for (int k = 0; k < states; ++k) {
      yields.push_back(o[k].name);
      types.push_back(Builder::TensorType(o[k]));
    }
    for (int s = 0; s < scan_outs; ++s) {
      const Val& element = o[states + s];
      HEXIR_ASSIGN_OR_RETURN(Val acc, StackType(c, *g, states + s, element, length));
      accs.push_back(acc);
      Val arg = acc;
      arg.name = acc_args[s];
      bool reverse = s < static_cast<int>(out_dirs.size()) && out_dirs[s];
      yields.push_back(WriteRow(c, arg, element, reverse ? reversed : iv));
      types.push_back(Builder::TensorType(acc));
    }
    b.Line("  scf.yield " + Builder::Join(yields) + " : " + Builder::Join(types));
    return o;
  }));
  std::vector<std::string> bindings, types;
  for (int k = 0; k < states; ++k) {
    bindings.push_back(state_args[k] + " = " + inits[k].name);
    types.push_back(Builder::TensorType(inits[k]));
  }
  for (int s = 0; s < scan_outs; ++s) {
    bindings.push_back(acc_args[s] + " = " + b.Empty(accs[s].shape, accs[s].et));
    types.push_back(Builder::TensorType(accs[s]));
  }
  std::string r = b.Fresh();
  b.Line(r + ":" + std::to_string(types.size()) + " = scf.for " + iv + " = " + zero + " to " + length_ssa +
         " step " + one + " iter_args(" + Builder::Join(bindings) + ") -> (" + Builder::Join(types) + ") {");
  b.Emit(body_text);
  b.Line("}");
  for (int k = 0; k < states; ++k) c.SetOut(k, Typed(c, r + "#" + std::to_string(k), inits[k]));
  for (int s = 0; s < scan_outs; ++s)
    c.SetOut(states + s, Typed(c, r + "#" + std::to_string(states + s), accs[s]));
  (void)outs;
  return Status::Ok();
}

namespace {

// Scan at opset 8 over a batch other than 1 (static or `?`): an scf.for over the batch whose
// body lowers the opset-9 Scan of batch row b (each operand's row read by a generic) and writes
// every result into row b of a `[batch, ...]` accumulator (result shapes static).
Status LowerScanOverBatch(Context& c, const ::onnx::NodeProto& rows, const std::vector<Val>& operands) {
  Builder& b = c.b;
  const Dim batch = operands[0].shape[0];
  const int results = rows.output_size();
  std::string iv = b.Fresh(), body_text;
  std::vector<std::string> acc_args;
  for (int k = 0; k < results; ++k) acc_args.push_back(b.Fresh());
  std::vector<Val> accs;
  HEXIR_RETURN_IF_ERROR(CaptureRegion(c, &body_text, [&]() -> StatusOr<std::vector<Val>> {
    for (size_t i = 0; i < operands.size(); ++i) {
      const Val& x = operands[i];
      Val row;
      row.et = x.et;
      row.is_unsigned = x.is_unsigned;
      row.shape.assign(x.shape.begin() + 1, x.shape.end());
      int loops = static_cast<int>(row.rank());
      row.name = b.IndexGeneric(row.shape, x.et, [&](const Args&) {
        std::vector<std::string> idx = b.LoopIndices(loops);
        idx.insert(idx.begin(), iv);
        std::string v = b.Fresh();
        b.Line(v + " = tensor.extract " + x.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(x));
        return v;
      });
      c.values[rows.input(static_cast<int>(i))] = row;
    }
    const ::onnx::NodeProto* node = c.node;
    c.node = &rows;
    Status lowered = LowerScan(c);
    c.node = node;
    HEXIR_RETURN_IF_ERROR(lowered);
    std::vector<std::string> yields, types;
    for (int k = 0; k < results; ++k) {
      Val& element = c.values[rows.output(k)];
      c.Mat(element);
      for (const Dim& d : element.shape)
        if (d.dynamic())
          return c.Error("result " + std::to_string(k) + " of a batch row is " + Builder::TensorType(element) +
                         ": a Scan over a batch needs static result shapes (opset 8)");
      Val acc;
      acc.et = element.et;
      acc.is_unsigned = element.is_unsigned;
      acc.shape = {batch};
      acc.shape.insert(acc.shape.end(), element.shape.begin(), element.shape.end());
      accs.push_back(acc);
      Val arg = acc;
      arg.name = acc_args[k];
      yields.push_back(WriteRow(c, arg, element, iv));
      types.push_back(Builder::TensorType(acc));
    }
    b.Line("  scf.yield " + Builder::Join(yields) + " : " + Builder::Join(types));
    return std::vector<Val>{};
  }).status());
  std::vector<std::string> bindings, types;
  for (int k = 0; k < results; ++k) {
    bindings.push_back(acc_args[k] + " = " + b.Empty(accs[k].shape, accs[k].et));
    types.push_back(Builder::TensorType(accs[k]));
  }
  std::string r = b.Fresh();
  b.Line(r + ":" + std::to_string(results) + " = scf.for " + iv + " = " + b.IndexConst(0) + " to " +
         b.DimValue(batch) + " step " + b.IndexConst(1) + " iter_args(" + Builder::Join(bindings) + ") -> (" +
         Builder::Join(types) + ") {");
  b.Emit(body_text);
  b.Line("}");
  for (int k = 0; k < results; ++k) c.SetOut(k, Typed(c, r + "#" + std::to_string(k), accs[k]));
  return Status::Ok();
}

}  // namespace

// Scan at opset 8: operands (sequence_lens?, states..., scan inputs...) carry a leading batch
// axis, and each batch row is the opset-9 Scan of the rows (`directions` becomes
// scan_input_directions). A batch of one is that Scan with the batch axis given back to its
// results; any other batch (static or `?`) is LowerScanOverBatch.
Status LowerScanWithBatch(Context& c) {
  const ::onnx::NodeProto* node = c.node;
  if (c.HasIn(0)) return c.Error("sequence_lens is not supported (opset 8)");
  ::onnx::NodeProto rows = *node;
  rows.clear_input();
  rows.clear_output();
  rows.clear_attribute();
  for (const auto& a : node->attribute()) {
    ::onnx::AttributeProto* copy = rows.add_attribute();
    *copy = a;
    if (a.name() == "directions") copy->set_name("scan_input_directions");
  }
  std::vector<std::string> temporaries;
  auto temporary = [&](const std::string& what) {
    temporaries.push_back(node->name() + "/" + what + "/" + std::to_string(temporaries.size()));
    return temporaries.back();
  };
  std::vector<Val> operands;
  for (int i = 1; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    if (v.rank() < 1) return c.Error("operand " + std::to_string(i) + " has no batch axis (opset 8)");
    operands.push_back(v);
  }
  if (operands.empty()) return c.Error("no operands");
  const Dim batch = operands[0].shape[0];
  if (batch.dynamic() || batch.v != 1) {
    for (int i = 1; i < c.NumIn(); ++i) {
      HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
      if (!batch.dynamic() && !v.shape[0].dynamic() && v.shape[0].v != batch.v)
        return c.Error("operand " + std::to_string(i) + " has a batch of " + Builder::TensorType(v) +
                       ", operand 1 a batch of " + std::to_string(batch.v));
      c.Mat(v);
      operands[i - 1] = v;
      rows.add_input(temporary("in"));
    }
    for (int k = 0; k < node->output_size(); ++k) rows.add_output(temporary("out"));
    Status status = LowerScanOverBatch(c, rows, operands);
    for (const std::string& name : temporaries) c.values.erase(name);
    return status;
  }
  Status status = Status::Ok();
  for (int i = 1; status.ok() && i < c.NumIn(); ++i) {
    Val& v = operands[i - 1];
    if (v.shape[0].dynamic() || v.shape[0].v != 1) {
      status = c.Error("operand " + std::to_string(i) + " has a batch of " + Builder::TensorType(v) +
                       ", operand 1 a batch of 1");
      break;
    }
    Shape row(v.shape.begin() + 1, v.shape.end());
    StatusOr<Val> r = c.ReshapeTo(v, row);
    if (!r.ok()) {
      status = std::move(r).status();
      break;
    }
    std::string name = temporary("in");
    c.values[name] = *r;
    rows.add_input(name);
  }
  for (int k = 0; status.ok() && k < node->output_size(); ++k) rows.add_output(temporary("out"));
  if (status.ok()) {
    c.node = &rows;
    status = LowerScan(c);
    c.node = node;
  }
  for (int k = 0; status.ok() && k < node->output_size(); ++k) {
    Val& r = c.values[rows.output(k)];
    Shape batched = r.shape;
    batched.insert(batched.begin(), Dim::Static(1));
    StatusOr<Val> back = c.ReshapeTo(r, batched);
    if (!back.ok()) status = std::move(back).status();
    else c.SetOut(k, *back);
  }
  for (const std::string& name : temporaries) c.values.erase(name);
  return status;
}

}  // namespace hexir::importers::onnx
