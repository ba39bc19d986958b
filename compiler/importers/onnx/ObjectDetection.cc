// ONNX object detection ops (onnx/defs/object_detection): NonMaxSuppression, RoiAlign.
//
// NonMaxSuppression is greedy: per (batch, class), boxes in decreasing score (ties: lower index
// first) are kept unless their score is not above score_threshold, max_output_boxes_per_class
// are already kept, or a kept box overlaps them by IoU > iou_threshold (onnxruntime's rules: an
// empty intersection or a box of no area never overlaps). The device computes the score order
// (a rank count, as TopK), the [B, N, N] overlap matrix and each box's candidacy once; an
// `scf.for` over the N ranks then decides rank r for every (batch, class) at once from the
// boxes kept so far (two generics per step: a sum of kept and kept-and-overlapping boxes, then
// the decision written into the carried [B, C, N] mask). The selected triples are counted and
// read back once (TensorCount.h). O(N) steps of O(B C N) work.
#include <limits>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/TensorCount.h"

namespace hexir::importers::onnx {
namespace {

// A scalar operand read inside a body: a known value as a constant, else element 0 of the
// (0-D or 1-element) tensor, converted to `et`; `absent` when the input is missing.
struct ScalarOperand {
  Val* v = nullptr;
  double absent = 0;
  std::string Read(Builder& b, const std::string& et) const {
    if (!v) return b.ScalarConst(et, absent);
    if (v->has_ints && !v->ints.empty() && !v->ints[0].dynamic()) return b.ScalarConst(et, static_cast<double>(v->ints[0].v));
    if (v->has_floats && !v->floats.empty()) return b.ScalarConst(et, v->floats[0]);
    std::vector<std::string> zero(v->rank(), b.IndexConst(0));
    return b.Convert(b.Extract(*v, zero), v->et, et);
  }
};

// NonMaxSuppression's materialized boxes and scores, their element type and extents.
struct NmsProblem {
  Val& boxes;   // [B, N, 4]
  Val& scores;  // [B, C, N]
  std::string et;
  Dim B, N, C;
  Shape PerClass() const { return {B, C, N}; }
};

// corners[b][i] = (y_min, x_min, y_max, x_max)
Val BoxCorners(Builder& b, const NmsProblem& p, bool center) {
  const std::string& et = p.et;
  auto bin = [&](const char* op, const std::string& x, const std::string& y) { return b.Bin(op, "", x, y, et); };
  Val corners;
  corners.et = et;
  corners.shape = {p.B, p.N, Dim::Static(4)};
  corners.name = b.IndexGeneric(corners.shape, et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(3);
    std::vector<std::string> v;
    for (int k = 0; k < 4; ++k) v.push_back(b.Extract(p.boxes, {idx[0], idx[1], b.IndexConst(k)}));
    std::string lo[2], hi[2];  // [0]: y, [1]: x
    if (center) {              // (x_center, y_center, width, height)
      std::string half = b.ScalarConst(et, 0.5);
      for (int a = 0; a < 2; ++a) {
        std::string mid = v[1 - a], ext = bin("arith.mulf", v[3 - a], half);
        lo[a] = bin("arith.subf", mid, ext);
        hi[a] = bin("arith.addf", mid, ext);
      }
    } else {  // (y1, x1, y2, x2), either diagonal
      for (int a = 0; a < 2; ++a) {
        lo[a] = bin("arith.minimumf", v[a], v[a + 2]);
        hi[a] = bin("arith.maximumf", v[a], v[a + 2]);
      }
    }
    std::string k64 = b.ToI64(idx[2]), r = hi[1];
    r = b.Select(b.Cmp("", "eq", k64, b.ScalarConst("i64", 2), "i64"), hi[0], r, et);
    r = b.Select(b.Cmp("", "eq", k64, b.ScalarConst("i64", 1), "i64"), lo[1], r, et);
    return b.Select(b.Cmp("", "eq", k64, b.ScalarConst("i64", 0), "i64"), lo[0], r, et);
  });
  return corners;
}

// overlap[b][i][j] = 1 when IoU(box i, box j) > iou_threshold
Val Overlaps(Builder& b, const NmsProblem& p, const Val& corners, const ScalarOperand& iou_threshold) {
  const std::string& et = p.et;
  auto bin = [&](const char* op, const std::string& x, const std::string& y) { return b.Bin(op, "", x, y, et); };
  Val overlap;
  overlap.et = "i64";
  overlap.shape = {p.B, p.N, p.N};
  overlap.name = b.IndexGeneric(overlap.shape, "i64", [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(3);
    auto corner = [&](const std::string& box, int k) { return b.Extract(corners, {idx[0], box, b.IndexConst(k)}); };
    std::string inter = b.ScalarConst(et, 1), area_i = inter, area_j = inter, zero = b.ScalarConst(et, 0);
    std::string valid;
    for (int a = 0; a < 2; ++a) {
      std::string li = corner(idx[1], a), hi = corner(idx[1], a + 2), lj = corner(idx[2], a), hj = corner(idx[2], a + 2);
      std::string side = bin("arith.subf", bin("arith.minimumf", hi, hj), bin("arith.maximumf", li, lj));
      valid = b.AndI1(valid, b.Cmp("ogt", "", side, zero, et));
      inter = bin("arith.mulf", inter, side);
      area_i = bin("arith.mulf", area_i, bin("arith.subf", hi, li));
      area_j = bin("arith.mulf", area_j, bin("arith.subf", hj, lj));
    }
    valid = b.AndI1(valid, b.Cmp("ogt", "", area_i, zero, et));
    valid = b.AndI1(valid, b.Cmp("ogt", "", area_j, zero, et));
    std::string uni = bin("arith.subf", bin("arith.addf", area_i, area_j), inter);
    valid = b.AndI1(valid, b.Cmp("ogt", "", uni, zero, et));
    std::string iou = bin("arith.divf", inter, uni);
    valid = b.AndI1(valid, b.Cmp("ogt", "", iou, iou_threshold.Read(b, et), et));
    return b.Convert(valid, "i1", "i64");
  });
  return overlap;
}

// order[b][c][r] = the box of rank r, where rank[b][c][i] = #{j: score j before score i}.
Val ScoreOrder(Builder& b, const NmsProblem& p) {
  const std::string& et = p.et;
  Shape per_class = p.PerClass();
  Val rank;
  rank.et = "i64";
  rank.shape = per_class;
  std::string same = Builder::Map(4, {"d0", "d1", "d2"}), other = Builder::Map(4, {"d0", "d1", "d3"});
  std::vector<std::string> reduce_last = {"parallel", "parallel", "parallel", "reduction"};
  rank.name = b.Generic({&p.scores, &p.scores}, {same, other}, same, per_class, "i64", 4, reduce_last,
                        b.Filled(per_class, "i64", 0), [&](const Args& a) {
                          std::vector<std::string> idx = b.LoopIndices(4);
                          std::string lower = b.Fresh();
                          b.Line(lower + " = arith.cmpi ult, " + idx[3] + ", " + idx[2] + " : index");
                          std::string tie = b.AndI1(b.Cmp("oeq", "", a[1], a[0], et), lower);
                          std::string before = b.Bin("", "arith.ori", b.Cmp("ogt", "", a[1], a[0], et), tie, "i1");
                          return b.Bin("", "arith.addi", a[2], b.Convert(before, "i1", "i64"), "i64");
                        });
  Val order = rank;
  order.name = b.Generic({&rank}, {other}, same, per_class, "i64", 4, reduce_last, b.Filled(per_class, "i64", 0),
                         [&](const Args& a) {
                           std::vector<std::string> idx = b.LoopIndices(4);
                           std::string hit = b.Cmp("", "eq", a[0], b.ToI64(idx[2]), "i64");
                           return b.Select(hit, b.ToI64(idx[3]), a[1], "i64");
                         });
  return order;
}

// candidate[b][c][r] = 1 when the score of rank r is above score_threshold
Val Candidates(Builder& b, const NmsProblem& p, const Val& order, const ScalarOperand& score_threshold) {
  Val candidate = order;
  candidate.name = b.Generic({&order}, {Builder::IdentityMap(3)}, Builder::IdentityMap(3), p.PerClass(), "i64", 3,
                             {"parallel", "parallel", "parallel"}, "", [&](const Args& a) {
                               std::vector<std::string> idx = b.LoopIndices(3);
                               std::string s = b.Extract(p.scores, {idx[0], idx[1], b.ToIndex(a[0], "i64")});
                               std::string above = b.Cmp("ogt", "", s, score_threshold.Read(b, p.et), p.et);
                               return b.Convert(above, "i1", "i64");
                             });
  return candidate;
}

// The greedy walk: kept[b][c][r] (0/1), an scf.for deciding rank r for every (batch, class).
Val GreedyKeep(Builder& b, const NmsProblem& p, const Val& overlap, const Val& order, const Val& candidate,
               const ScalarOperand& max_boxes) {
  Shape per_class = p.PerClass();
  Val kept = order;
  std::string kept0 = b.Filled(per_class, "i64", 0), type = Builder::TensorType(per_class, "i64");
  std::string r = b.Fresh(), carried = b.Fresh(), result = b.Fresh();
  b.Line(result + " = scf.for " + r + " = " + b.IndexConst(0) + " to " + b.DimValue(p.N) + " step " +
         b.IndexConst(1) + " iter_args(" + carried + " = " + kept0 + ") -> (" + type + ") {");
  b.EnterRegion();
  kept.name = carried;
  // tally[b][c] = #kept + 2^32 * #kept overlapping the box of rank r
  Shape pairs = {p.B, p.C};
  Val tally;
  tally.et = "i64";
  tally.shape = pairs;
  std::string pair_map = Builder::Map(3, {"d0", "d1"});
  tally.name = b.Generic({&kept, &order}, {Builder::IdentityMap(3), Builder::IdentityMap(3)}, pair_map, pairs, "i64", 3,
                         {"parallel", "parallel", "reduction"}, b.Filled(pairs, "i64", 0), [&](const Args& a) {
                           std::vector<std::string> idx = b.LoopIndices(3);
                           std::string box = b.ToIndex(b.Extract(order, {idx[0], idx[1], r}), "i64");
                           std::string over = b.Extract(overlap, {idx[0], box, b.ToIndex(a[1], "i64")});
                           std::string weight = b.Bin("", "arith.addi", b.ScalarConst("i64", 1),
                                                      b.Bin("", "arith.muli", over, b.ScalarConst("i64", 1LL << 32), "i64"), "i64");
                           return b.Bin("", "arith.addi", a[2], b.Bin("", "arith.muli", a[0], weight, "i64"), "i64");
                         });
  std::string next = b.Generic({&kept, &candidate, &tally}, {Builder::IdentityMap(3), Builder::IdentityMap(3), pair_map},
                               Builder::IdentityMap(3), per_class, "i64", 3, {"parallel", "parallel", "parallel"}, "",
                               [&](const Args& a) {
                                 std::vector<std::string> idx = b.LoopIndices(3);
                                 std::string here = b.Fresh();
                                 b.Line(here + " = arith.cmpi eq, " + idx[2] + ", " + r + " : index");
                                 std::string low = b.Bin("", "arith.andi", a[2], b.ScalarConst("i64", (1LL << 32) - 1), "i64");
                                 std::string high = b.Bin("", "arith.shrui", a[2], b.ScalarConst("i64", 32), "i64");
                                 std::string keep = b.Cmp("", "ne", a[1], b.ScalarConst("i64", 0), "i64");
                                 keep = b.AndI1(keep, b.Cmp("", "eq", high, b.ScalarConst("i64", 0), "i64"));
                                 keep = b.AndI1(keep, b.Cmp("", "slt", low, max_boxes.Read(b, "i64"), "i64"));
                                 return b.Select(here, b.Convert(keep, "i1", "i64"), a[0], "i64");
                               });
  b.Line("  scf.yield " + next + " : " + type);
  b.ExitRegion();
  b.Line("}");
  kept.name = result;
  return kept;
}

// The selected rows (batch, class, box) of the kept mask: flattened (b, c, r) positions ->
// (b, c, order[b][c][r]).
StatusOr<Val> SelectedIndices(Context& c, const NmsProblem& p, Val& kept, const Val& order) {
  Builder& b = c.b;
  Shape flat = {b.Product(p.PerClass(), 0, 3)};
  HEXIR_ASSIGN_OR_RETURN(Val mask, c.ReshapeTo(kept, flat));
  Selection s = SelectPositions(c, mask);
  std::vector<std::string> extents = {b.DimValue(p.B), b.DimValue(p.C), b.DimValue(p.N)};
  Val out;
  out.et = "i64";
  out.shape = {s.count, Dim::Static(3)};
  out.name = b.IndexGeneric(out.shape, "i64", [&](const Args&) {
    std::vector<std::string> jk = b.LoopIndices(2);
    std::vector<std::string> bcr = b.Delinearize(b.ToIndex(b.Extract(s.positions, {jk[0]}), "i64"), extents);
    std::string box = b.Extract(order, bcr);
    std::string k64 = b.ToI64(jk[1]);
    std::string v = b.Select(b.Cmp("", "eq", k64, b.ScalarConst("i64", 1), "i64"), b.ToI64(bcr[1]), box, "i64");
    return b.Select(b.Cmp("", "eq", k64, b.ScalarConst("i64", 0), "i64"), b.ToI64(bcr[0]), v, "i64");
  });
  return out;
}

}  // namespace

Status LowerNonMaxSuppression(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& boxes, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& scores, c.In(1));
  if (boxes.rank() != 3 || boxes.shape[2].dynamic() || boxes.shape[2].v != 4)
    return c.Error("boxes must be [batch, boxes, 4], not " + Builder::TensorType(boxes));
  if (scores.rank() != 3) return c.Error("scores must be [batch, classes, boxes], not " + Builder::TensorType(scores));
  if (!boxes.IsFloat() || scores.et != boxes.et) return c.Error("boxes and scores must be floats of one type");
  ScalarOperand max_boxes, iou_threshold, score_threshold;
  score_threshold.absent = -std::numeric_limits<double>::infinity();
  ScalarOperand* operands[] = {&max_boxes, &iou_threshold, &score_threshold};
  for (int i = 2; i < 5; ++i) {
    if (!c.HasIn(i)) continue;
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    for (const Dim& d : v.shape)
      if (d.dynamic() || d.v != 1) return c.Error("input " + std::to_string(i) + " must hold one value");
    c.Mat(v);
    operands[i - 2]->v = &v;
  }
  bool center = c.AttrI("center_point_box", 0) != 0;
  c.Mat(boxes);
  c.Mat(scores);
  NmsProblem p{boxes, scores, boxes.et, boxes.shape[0], boxes.shape[1], scores.shape[1]};
  Val corners = BoxCorners(b, p, center);
  Val overlap = Overlaps(b, p, corners, iou_threshold);
  Val order = ScoreOrder(b, p);
  Val candidate = Candidates(b, p, order, score_threshold);
  Val kept = GreedyKeep(b, p, overlap, order, candidate, max_boxes);
  HEXIR_ASSIGN_OR_RETURN(Val out, SelectedIndices(c, p, kept, order));
  c.SetOut(0, out);
  return Status::Ok();
}

// RoiAlign (opset 10+; sampling_ratio > 0): one generic over (roi, channel, out_h, out_w)
// whose reduction dims are the sampling grid of a bin (sampling_ratio^2 points). Each point is
// sampled bilinearly as onnxruntime does: a point beyond [-1, extent] reads 0, coordinates
// below 0 clamp to 0, the last row/column clamps both taps; avg sums w*v / count, max takes
// the largest of the four weighted taps (onnxruntime's rule). half_pixel shifts the roi by
// -0.5 and keeps sizes below 1; output_half_pixel (the only mode before opset 16) rounds
// them up to 1.
Status LowerRoiAlign(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& rois, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& batch, c.In(2));
  if (x.rank() != 4 || !x.IsFloat()) return c.Error("X must be a 4-D float tensor, not " + Builder::TensorType(x));
  if (rois.rank() != 2 || rois.et != x.et) return c.Error("rois must be [num_rois, 4] of X's type");
  int64_t grid = c.AttrI("sampling_ratio", 0);
  if (grid <= 0) return c.Error("sampling_ratio " + std::to_string(grid) + " (a grid sized by each roi) is not supported");
  std::string mode = c.AttrS("mode", "avg");
  if (mode != "avg" && mode != "max") return c.Error("mode '" + mode + "' is not avg or max");
  std::string transform = c.AttrS("coordinate_transformation_mode", c.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return c.Error("coordinate_transformation_mode '" + transform + "' is not half_pixel or output_half_pixel");
  bool half_pixel = transform == "half_pixel", avg = mode == "avg";
  int64_t oh = c.AttrI("output_height", 1), ow = c.AttrI("output_width", 1);
  double scale = c.AttrF("spatial_scale", 1.0f);
  c.Mat(x);
  c.Mat(rois);
  c.Mat(batch);
  std::string et = x.et;
  Val win;
  win.et = et;
  win.shape = {Dim::Static(grid), Dim::Static(grid)};
  win.name = b.Empty(win.shape, et);
  Shape out = {rois.shape[0], x.shape[1], Dim::Static(oh), Dim::Static(ow)};
  auto f = [&](double v) { return b.ScalarConst(et, v); };
  auto bin = [&](const char* op, const std::string& p, const std::string& q) { return b.Bin(op, "", p, q, et); };
  auto from_index = [&](const std::string& i) { return b.Convert(b.ToI64(i), "i64", et); };
  std::string height = b.DimValue(x.shape[2]), width = b.DimValue(x.shape[3]);
  Val y;
  y.et = et;
  y.shape = out;
  double identity = avg ? 0.0 : -std::numeric_limits<double>::infinity();
  y.name = b.Generic({&win}, {Builder::Map(6, {"d4", "d5"})}, Builder::Map(6, {"d0", "d1", "d2", "d3"}), out, et, 6,
                     {"parallel", "parallel", "parallel", "parallel", "reduction", "reduction"}, b.Filled(out, et, identity),
                     [&](const Args& a) {
                       std::vector<std::string> idx = b.LoopIndices(6);
                       std::string n = b.ToIndex(b.Extract(batch, {idx[0]}), batch.et);
                       std::string shift = f(half_pixel ? 0.5 : 0.0), sc = f(scale);
                       auto corner = [&](int k) {
                         return bin("arith.subf", bin("arith.mulf", b.Extract(rois, {idx[0], b.IndexConst(k)}), sc), shift);
                       };
                       std::string pos[2];  // [0]: y, [1]: x
                       std::string extent[2] = {height, width};
                       int64_t bins[2] = {oh, ow};
                       std::string inside;
                       for (int a2 = 0; a2 < 2; ++a2) {
                         std::string start = corner(1 - a2), end = corner(3 - a2);
                         std::string size = bin("arith.subf", end, start);
                         if (!half_pixel) size = bin("arith.maximumf", size, f(1.0));
                         std::string bin_size = bin("arith.divf", size, f(static_cast<double>(bins[a2])));
                         std::string sample = bin("arith.addf", from_index(idx[4 + a2]), f(0.5));
                         std::string p = bin("arith.addf", start, bin("arith.mulf", from_index(idx[2 + a2]), bin_size));
                         p = bin("arith.addf", p, bin("arith.divf", bin("arith.mulf", sample, bin_size), f(static_cast<double>(grid))));
                         std::string e = from_index(extent[a2]);
                         inside = b.AndI1(inside, b.Cmp("oge", "", p, f(-1.0), et));
                         inside = b.AndI1(inside, b.Cmp("ole", "", p, e, et));
                         pos[a2] = bin("arith.maximumf", p, f(0.0));
                       }
                       // taps: low = min(floor(p), extent - 1), high = min(low + 1, extent - 1)
                       std::string low[2], high[2], frac[2];
                       for (int a2 = 0; a2 < 2; ++a2) {
                         std::string last = b.Bin("", "arith.subi", extent[a2], b.IndexConst(1), "index");
                         std::string fl = b.Fresh();
                         b.Line(fl + " = arith.fptosi " + pos[a2] + " : " + et + " to i64");
                         std::string l = b.Bin("", "arith.minsi", b.ToIndex(fl, "i64"), last, "index");
                         std::string at_end = b.Cmp("", "sge", l, last, "index");
                         low[a2] = l;
                         high[a2] = b.Select(at_end, l, b.Bin("", "arith.addi", l, b.IndexConst(1), "index"), "index");
                         std::string p = b.Select(at_end, from_index(l), pos[a2], et);
                         frac[a2] = bin("arith.subf", p, from_index(l));
                       }
                       std::string one = f(1.0);
                       std::string hy = bin("arith.subf", one, frac[0]), hx = bin("arith.subf", one, frac[1]);
                       std::string taps[4] = {
                           bin("arith.mulf", bin("arith.mulf", hy, hx), b.Extract(x, {n, idx[1], low[0], low[1]})),
                           bin("arith.mulf", bin("arith.mulf", hy, frac[1]), b.Extract(x, {n, idx[1], low[0], high[1]})),
                           bin("arith.mulf", bin("arith.mulf", frac[0], hx), b.Extract(x, {n, idx[1], high[0], low[1]})),
                           bin("arith.mulf", bin("arith.mulf", frac[0], frac[1]), b.Extract(x, {n, idx[1], high[0], high[1]}))};
                       if (avg) {
                         std::string v = bin("arith.addf", bin("arith.addf", taps[0], taps[1]), bin("arith.addf", taps[2], taps[3]));
                         v = b.Select(inside, bin("arith.divf", v, f(static_cast<double>(grid * grid))), f(0.0), et);
                         return bin("arith.addf", a[1], v);
                       }
                       std::string v = bin("arith.maximumf", bin("arith.maximumf", taps[0], taps[1]),
                                           bin("arith.maximumf", taps[2], taps[3]));
                       v = b.Select(inside, v, f(0.0), et);
                       return bin("arith.maximumf", a[1], v);
                     });
  c.SetOut(0, y);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
