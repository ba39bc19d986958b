// ONNX Resize (opsets 10-19) and Upsample (onnx/defs/tensor): nearest (every nearest_mode),
// n-linear and cubic (cubic_coeff_a, exclude_outside) over the resized dims, every
// coordinate_transformation_mode including tf_crop_and_resize (roi, extrapolation_value) and
// half_pixel_symmetric (19); opset 18's axes, keep_aspect_ratio_policy and antialias (a
// widened filter along each shrinking dim, applied one dim at a time).
// An index generic computes each output position's source coordinate in f32, the taps
// (index, weight) per resized dim, and sums the weighted corner elements read with
// tensor.extract. Dims may be dynamic and sizes read at run time: the extents, scales and
// resized lengths are then host f32 values captured by the body.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// An f32 quantity of one resized dim: static (folded in the body) or a host SSA value.
struct HostF32 {
  bool is_static = true;
  double v = 0;
  std::string ssa;
  std::string In(Builder& b) const { return is_static ? b.ScalarConst("f32", v) : ssa; }
};

HostF32 StaticF(double v) { return HostF32{true, v, ""}; }
HostF32 DimF(Builder& b, const Dim& d) {
  return d.dynamic() ? HostF32{false, 0, b.DimAsFloat(d, "f32")} : StaticF(static_cast<double>(d.v));
}

// One resized dim: input extent, output extent, scale and the spec's length_resized.
struct Axis {
  bool resized = false;
  Dim out;
  HostF32 in, scale, length;
  double roi_start = 0, roi_end = 1;
};

struct Options {
  std::string mode, ctm, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
  bool antialias = false;       // opset 18: a widened filter where an axis shrinks
  std::string aspect = "stretch";  // opset 18's keep_aspect_ratio_policy (with sizes)
  std::vector<bool> listed;        // the dims the policy spans (opset 18's axes; all by default)
  std::vector<double> roi;
};

// keep_aspect_ratio_policy over `sizes`: one scale for the listed dims, the least
// (not_larger) or greatest (not_smaller) of size / extent in f32, and each listed dim's size
// round(scale * extent) (half away from zero); the other dims keep their extents. Returns
// the scale, host f32 where an extent or a size is a run-time value.
HostF32 ApplyAspectPolicy(Builder& b, const Val& x, const Options& o, std::vector<Dim>* sizes) {
  bool smaller = o.aspect == "not_larger";
  bool all_static = true;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (o.listed[i]) all_static = all_static && !x.shape[i].dynamic() && !(*sizes)[i].dynamic();
  HostF32 scale;
  if (all_static) {
    float chosen = smaller ? std::numeric_limits<float>::max() : 0.0f;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (!o.listed[i]) continue;
      float ratio = static_cast<float>((*sizes)[i].v) / static_cast<float>(x.shape[i].v);
      chosen = smaller ? std::min(chosen, ratio) : std::max(chosen, ratio);
    }
    scale = StaticF(chosen);
  } else {
    std::string chosen;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (!o.listed[i]) continue;
      std::string ratio = b.Bin("arith.divf", "", DimF(b, (*sizes)[i]).In(b), DimF(b, x.shape[i]).In(b), "f32");
      // cmpf + select: the host's f32 arithmetic has no minimumf / maximumf.
      if (!chosen.empty()) ratio = b.Select(b.Cmp(smaller ? "olt" : "ogt", "", chosen, ratio, "f32"), chosen, ratio, "f32");
      chosen = ratio;
    }
    scale = HostF32{false, 0, chosen};
  }
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!o.listed[i]) {
      (*sizes)[i] = x.shape[i];
    } else if (scale.is_static && !x.shape[i].dynamic()) {
      (*sizes)[i] = Dim::Static(static_cast<int64_t>(std::round(static_cast<float>(scale.v) * x.shape[i].v)));
    } else {
      // floor(scale * extent + 0.5): the product is not negative.
      std::string product = b.Bin("arith.mulf", "", scale.In(b), DimF(b, x.shape[i]).In(b), "f32");
      std::string shifted = b.Bin("arith.addf", "", product, b.ScalarConst("f32", 0.5), "f32");
      std::string i64 = b.Fresh(), ix = b.Fresh();
      b.Line(i64 + " = arith.fptosi " + shifted + " : f32 to i64");
      b.Line(ix + " = arith.index_cast " + i64 + " : i64 to index");
      b.MarkNonNegative(ix);
      (*sizes)[i] = Dim::Dynamic(ix);
    }
  }
  return scale;
}

// Output extent floor(in * scale) of a dynamic input extent, on the host (f32, as ORT; the
// product is non-negative, so fptosi's truncation is the floor).
Dim ScaledExtent(Builder& b, const Dim& in, double scale) {
  std::string f = b.Bin("arith.mulf", "", b.DimAsFloat(in, "f32"), b.ScalarConst("f32", scale), "f32");
  std::string i = b.Fresh(), x = b.Fresh();
  b.Line(i + " = arith.fptosi " + f + " : f32 to i64");
  b.Line(x + " = arith.index_cast " + i + " : i64 to index");
  b.MarkNonNegative(x);
  return Dim::Dynamic(x);
}

bool SameDim(const Dim& a, const Dim& b) {
  return a.dynamic() == b.dynamic() && (a.dynamic() ? a.ssa == b.ssa : a.v == b.v);
}

// cond ? a : b on f32, folded when cond is static.
std::string SelectF(Builder& b, const std::string& cond, const std::string& a, const std::string& c) {
  return b.Select(cond, a, c, "f32");
}

// The source coordinate of output index xf (f32) along one axis.
std::string SourceCoordinate(Builder& b, const Options& o, const Axis& ax, const std::string& xf) {
  std::string s = ax.scale.In(b), half = b.ScalarConst("f32", 0.5), one = b.ScalarConst("f32", 1);
  std::string len = ax.length.In(b), in = ax.in.In(b);
  auto bin = [&](const char* op, const std::string& x, const std::string& y) { return b.Bin(op, "", x, y, "f32"); };
  // len > 1 (folded when static).
  auto longer = [&]() { return b.Cmp("ogt", "", len, one, "f32"); };
  bool len_static = ax.length.is_static;
  if (o.ctm == "asymmetric") return bin("arith.divf", xf, s);
  if (o.ctm == "tf_half_pixel_for_nn") return bin("arith.divf", bin("arith.addf", xf, half), s);
  if (o.ctm == "align_corners") {
    if (len_static && ax.length.v <= 1) return b.ScalarConst("f32", 0);
    std::string r = bin("arith.divf", bin("arith.mulf", xf, bin("arith.subf", in, one)), bin("arith.subf", len, one));
    return len_static ? r : SelectF(b, longer(), r, b.ScalarConst("f32", 0));
  }
  if (o.ctm == "tf_crop_and_resize") {
    std::string st = b.ScalarConst("f32", ax.roi_start), en = b.ScalarConst("f32", ax.roi_end);
    std::string last = bin("arith.subf", in, one);
    std::string mid = bin("arith.mulf", bin("arith.mulf", half, bin("arith.addf", st, en)), last);
    if (len_static && ax.length.v <= 1) return mid;
    std::string step = bin("arith.divf", bin("arith.mulf", bin("arith.subf", en, st), last), bin("arith.subf", len, one));
    std::string r = bin("arith.addf", bin("arith.mulf", st, last), bin("arith.mulf", xf, step));
    return len_static ? r : SelectF(b, longer(), r, mid);
  }
  // half_pixel, pytorch_half_pixel, half_pixel_symmetric
  std::string r = bin("arith.subf", bin("arith.divf", bin("arith.addf", xf, half), s), half);
  if (o.ctm == "half_pixel_symmetric") {
    // Centred: shifted by in / 2 * (1 - out / (in * scale)), the rounding of the output extent.
    std::string adjustment = bin("arith.divf", DimF(b, ax.out).In(b), bin("arith.mulf", in, s));
    std::string offset = bin("arith.mulf", bin("arith.mulf", in, half), bin("arith.subf", one, adjustment));
    return bin("arith.addf", offset, r);
  }
  if (o.ctm != "pytorch_half_pixel") return r;
  if (len_static) return ax.length.v <= 1 ? b.ScalarConst("f32", 0) : r;
  return SelectF(b, longer(), r, b.ScalarConst("f32", 0));
}

// f32 value v clamped to [0, in - 1], as an index.
std::string ClampedIndex(Builder& b, const Axis& ax, const std::string& v) {
  std::string lo = b.ScalarConst("f32", 0);
  std::string hi = b.Bin("arith.subf", "", ax.in.In(b), b.ScalarConst("f32", 1), "f32");
  std::string cl = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", v, lo, "f32"), hi, "f32");
  std::string i64 = b.Fresh(), ix = b.Fresh();
  b.Line(i64 + " = arith.fptosi " + cl + " : f32 to i64");
  b.Line(ix + " = arith.index_cast " + i64 + " : i64 to index");
  return ix;
}

// The supported modes and transforms, one scale or size per dim, a constant roi for crops;
// "bilinear" and "bicubic" (Upsample's names) become "linear" and "cubic".
Status CheckResize(Context& c, Options& o, int64_t rank, const std::vector<double>& scales,
                   const std::vector<Dim>& sizes) {
  if (o.mode == "bilinear") o.mode = "linear";
  if (o.mode == "bicubic") o.mode = "cubic";
  if (o.mode != "nearest" && o.mode != "linear" && o.mode != "cubic")
    return c.Error("mode '" + o.mode + "' is not supported");
  static const char* const kTransforms[] = {"align_corners",      "asymmetric",         "half_pixel",
                                            "half_pixel_symmetric", "pytorch_half_pixel", "tf_crop_and_resize",
                                            "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kTransforms), std::end(kTransforms), o.ctm) == std::end(kTransforms))
    return c.Error("coordinate_transformation_mode '" + o.ctm + "' is not supported");
  if (o.aspect != "stretch" && o.aspect != "not_larger" && o.aspect != "not_smaller")
    return c.Error("keep_aspect_ratio_policy '" + o.aspect + "' is not supported");
  if (scales.empty() && sizes.empty()) return c.Error("needs scales or sizes");
  if (!sizes.empty() ? static_cast<int64_t>(sizes.size()) != rank
                     : static_cast<int64_t>(scales.size()) != rank)
    return c.Error("scales / sizes must have one entry per dim");
  if (o.ctm == "tf_crop_and_resize" && static_cast<int64_t>(o.roi.size()) != 2 * rank)
    return c.Error("tf_crop_and_resize needs a constant roi of 2 * rank values");
  return Status::Ok();
}

// Per dim of x: whether it is resized, its output extent (appended to `out`), input and
// output lengths as f32, scale and roi.
std::vector<Axis> ResizeAxes(Builder& b, const Val& x, const Options& o, const std::vector<double>& scales,
                             std::vector<Dim> sizes, Shape* out) {
  int64_t rank = x.rank();
  std::optional<HostF32> policy_scale;
  if (!sizes.empty() && o.aspect != "stretch") policy_scale = ApplyAspectPolicy(b, x, o, &sizes);
  bool crop = o.ctm == "tf_crop_and_resize";
  std::vector<Axis> axes(rank);
  for (int64_t i = 0; i < rank; ++i) {
    const Dim& d = x.shape[i];
    Axis& ax = axes[i];
    bool same = sizes.empty() ? scales[i] == 1.0 : SameDim(sizes[i], d);
    if (crop) same = same && o.roi[i] == 0 && o.roi[rank + i] == 1;
    ax.out = d;
    ax.resized = !same;
    if (ax.resized) {
      ax.in = DimF(b, d);
      ax.roi_start = crop ? o.roi[i] : 0;
      ax.roi_end = crop ? o.roi[rank + i] : 1;
      if (!sizes.empty()) {
        ax.out = sizes[i];
        if (ax.out.dynamic()) b.MarkNonNegative(ax.out.ssa);
        ax.length = DimF(b, ax.out);
        if (policy_scale) {
          ax.scale = *policy_scale;
        } else if (ax.in.is_static && ax.length.is_static) {
          ax.scale = StaticF(ax.length.v / ax.in.v);
        } else {
          ax.scale = HostF32{false, 0, b.Bin("arith.divf", "", ax.length.In(b), ax.in.In(b), "f32")};
        }
      } else {
        // Scales in f32 as ONNX stores them; crops scale the roi's length.
        double len_factor = crop ? ax.roi_end - ax.roi_start : 1;
        ax.scale = StaticF(static_cast<float>(scales[i]));
        if (d.dynamic()) {
          ax.out = ScaledExtent(b, d, scales[i] * len_factor);
          ax.length = HostF32{false, 0, b.Bin("arith.mulf", "", ax.in.In(b), b.ScalarConst("f32", scales[i] * len_factor), "f32")};
        } else {
          ax.out = Dim::Static(static_cast<int64_t>(std::floor(d.v * scales[i] * len_factor)));
          ax.length = StaticF(d.v * static_cast<float>(scales[i]) * len_factor);
        }
      }
    }
    out->push_back(ax.out);
  }
  return axes;
}

// Source positions read for one output position along a dim, with their weights (empty for
// nearest).
using Taps = std::vector<std::pair<std::string, std::string>>;

// The taps of a resized dim at output index `idx`; for tf_crop_and_resize, or-s into `outside`
// whether the source coordinate falls outside the input. `zero` and `one`: f32 constants.
Taps AxisTaps(Builder& b, const Options& o, const Axis& ax, const std::string& idx, const std::string& zero,
              const std::string& one, std::string* outside) {
  Taps taps;
  std::string xi = b.Fresh(), xf = b.Fresh();
  b.Line(xi + " = arith.index_cast " + idx + " : index to i64");
  b.Line(xf + " = arith.sitofp " + xi + " : i64 to f32");
  std::string src = SourceCoordinate(b, o, ax, xf);
  if (o.ctm == "tf_crop_and_resize") {
    std::string last = b.Bin("arith.subf", "", ax.in.In(b), one, "f32");
    std::string lt = b.Cmp("olt", "", src, zero, "f32"), gt = b.Cmp("ogt", "", src, last, "f32");
    std::string any = b.Bin("", "arith.ori", lt, gt, "i1");
    *outside = outside->empty() ? any : b.Bin("", "arith.ori", *outside, any, "i1");
  }
  if (o.mode == "nearest") {
    std::string n;
    if (o.nearest == "floor") n = b.Op1("math.floor", src, "f32");
    else if (o.nearest == "ceil") n = b.Op1("math.ceil", src, "f32");
    else {  // round half toward floor / ceil
      std::string fl = b.Op1("math.floor", src, "f32");
      std::string fr = b.Bin("arith.subf", "", src, fl, "f32");
      std::string half = b.ScalarConst("f32", 0.5);
      std::string up = b.Cmp(o.nearest == "round_prefer_ceil" ? "oge" : "ogt", "", fr, half, "f32");
      n = b.Select(up, b.Bin("arith.addf", "", fl, one, "f32"), fl, "f32");
    }
    taps.push_back({ClampedIndex(b, ax, n), ""});
  } else if (o.mode == "linear") {
    std::string last = b.Bin("arith.subf", "", ax.in.In(b), one, "f32");
    std::string cl = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", src, zero, "f32"), last, "f32");
    std::string fl = b.Op1("math.floor", cl, "f32");
    std::string t = b.Bin("arith.subf", "", cl, fl, "f32");
    taps.push_back({ClampedIndex(b, ax, fl), b.Bin("arith.subf", "", one, t, "f32")});
    taps.push_back({ClampedIndex(b, ax, b.Bin("arith.addf", "", fl, one, "f32")), t});
  } else {  // cubic: taps at floor - 1 .. floor + 2, edge indices clamped
    std::string fl = b.Op1("math.floor", src, "f32");
    std::string t = b.Bin("arith.subf", "", src, fl, "f32");
    std::string last = b.Bin("arith.subf", "", ax.in.In(b), one, "f32");
    std::string sum;
    for (int k = -1; k <= 2; ++k) {
      std::string pos = b.Bin("arith.addf", "", fl, b.ScalarConst("f32", k), "f32");
      std::string dist = b.Op1("math.absf", b.Bin("arith.subf", "", t, b.ScalarConst("f32", k), "f32"), "f32");
      std::string w = CubicWeight(b, o.cubic_a, dist);
      if (o.exclude_outside) {
        std::string in = b.Bin("", "arith.andi", b.Cmp("oge", "", pos, zero, "f32"),
                               b.Cmp("ole", "", pos, last, "f32"), "i1");
        w = b.Select(in, w, zero, "f32");
        sum = sum.empty() ? w : b.Bin("arith.addf", "", sum, w, "f32");
      }
      taps.push_back({ClampedIndex(b, ax, pos), w});
    }
    if (o.exclude_outside)
      for (auto& tap : taps) tap.second = b.Bin("arith.divf", "", tap.second, sum, "f32");
  }
  return taps;
}

// Whether an axis shrinks by a scale known at compile time: where antialias widens the filter.
bool ShrinksStatically(const Axis& ax) { return ax.resized && ax.scale.is_static && ax.scale.v < 1; }

// Antialiased taps of a shrinking axis (static scale s < 1), as Pillow and onnxruntime filter:
// the triangle (linear) or Keys cubic (cubic) kernel stretched by 1 / s, so that each output
// element averages the (2 / s or 4 / s wide) window of inputs it covers. The window
// [floor(c - support + 0.5), floor(c + support + 0.5)) around c = source + 0.5 holds at most
// 2 ceil(support) + 1 taps; weights are normalised to sum to 1. Outside the input a tap
// reads the edge element, or (exclude_outside) gets no weight.
Taps AntialiasTaps(Builder& b, const Options& o, const Axis& ax, const std::string& idx, const std::string& zero,
                   const std::string& one) {
  auto bin = [&](const char* op, const std::string& x, const std::string& y) { return b.Bin(op, "", x, y, "f32"); };
  auto f = [&](double v) { return b.ScalarConst("f32", v); };
  const float s = static_cast<float>(ax.scale.v);
  const float support = (o.mode == "cubic" ? 2.0f : 1.0f) / s;
  const int window = static_cast<int>(std::ceil(support)) * 2 + 1;
  std::string xi = b.Fresh(), xf = b.Fresh();
  b.Line(xi + " = arith.index_cast " + idx + " : index to i64");
  b.Line(xf + " = arith.sitofp " + xi + " : i64 to f32");
  std::string center = bin("arith.addf", SourceCoordinate(b, o, ax, xf), f(0.5));
  std::string first = b.Op1("math.floor", bin("arith.addf", bin("arith.subf", center, f(support)), f(0.5)), "f32");
  std::string end = b.Op1("math.floor", bin("arith.addf", bin("arith.addf", center, f(support)), f(0.5)), "f32");
  std::string last_in = bin("arith.subf", ax.in.In(b), one);
  std::vector<std::string> weights;
  std::string total;
  Taps taps;
  for (int k = 0; k < window; ++k) {
    std::string pos = bin("arith.addf", first, f(k));
    std::string active = b.Cmp("olt", "", pos, end, "f32");
    if (o.exclude_outside)
      active = b.Bin("", "arith.andi", active,
                     b.Bin("", "arith.andi", b.Cmp("oge", "", pos, zero, "f32"), b.Cmp("ole", "", pos, last_in, "f32"), "i1"),
                     "i1");
    std::string dist = b.Op1("math.absf", bin("arith.mulf", bin("arith.addf", bin("arith.subf", pos, center), f(0.5)), f(s)), "f32");
    std::string w;
    if (o.mode == "cubic") {
      w = b.Select(b.Cmp("olt", "", dist, f(2), "f32"), CubicWeight(b, o.cubic_a, dist), zero, "f32");
    } else {
      w = bin("arith.maximumf", zero, bin("arith.subf", one, dist));
    }
    w = b.Select(active, w, zero, "f32");
    total = total.empty() ? w : bin("arith.addf", total, w);
    weights.push_back(w);
    taps.push_back({ClampedIndex(b, ax, pos), ""});
  }
  std::string divisor = b.Select(b.Cmp("oeq", "", total, zero, "f32"), one, total, "f32");
  for (int k = 0; k < window; ++k) taps[k].second = bin("arith.divf", weights[k], divisor);
  return taps;
}

// The output element: the one tap's element (nearest), else the sum over the product of the
// dims' taps of element x weights, in f32.
std::string SumOfTaps(Builder& b, const Val& x, const std::vector<Taps>& taps, bool interpolates) {
  const int loops = static_cast<int>(taps.size());
  std::vector<size_t> pick(loops, 0);
  std::string acc;
  for (;;) {
    std::vector<std::string> at;
    std::string w;
    for (int i = 0; i < loops; ++i) {
      at.push_back(taps[i][pick[i]].first);
      const std::string& wi = taps[i][pick[i]].second;
      if (!wi.empty()) w = w.empty() ? wi : b.Bin("arith.mulf", "", w, wi, "f32");
    }
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + x.name + "[" + Builder::Join(at) + "] : " + Builder::TensorType(x));
    if (!interpolates) return e;
    // No weight: every dim is one tap (a resize to the input's own sizes).
    std::string term = b.Convert(e, x.et, "f32");
    if (!w.empty()) term = b.Bin("arith.mulf", "", term, w, "f32");
    acc = acc.empty() ? term : b.Bin("arith.addf", "", acc, term, "f32");
    int i = loops - 1;
    while (i >= 0 && ++pick[i] == taps[i].size()) pick[i--] = 0;
    if (i < 0) return acc;
  }
}

// Scales (or output sizes when `sizes` is not empty) per dim of x.
Status ResizeWith(Context& c, Val& x, Options o, const std::vector<double>& scales,
                  const std::vector<Dim>& sizes) {
  Builder& b = c.b;
  HEXIR_RETURN_IF_ERROR(CheckResize(c, o, x.rank(), scales, sizes));
  Shape out;
  std::vector<Axis> axes = ResizeAxes(b, x, o, scales, sizes, &out);
  c.Mat(x);
  std::string et = x.et;
  bool interpolates = o.mode != "nearest";
  if (interpolates && !x.IsFloat()) return c.Error(o.mode + " mode on integers is not supported");
  const int loops = static_cast<int>(x.rank());
  if (interpolates && o.antialias) {
    bool shrinks = false;
    for (const Axis& ax : axes) {
      if (ax.resized && !ax.scale.is_static)
        return c.Error("antialias needs each resized dim's scale at compile time (here a run-time size or extent sets it)");
      shrinks = shrinks || ShrinksStatically(ax);
    }
    if (shrinks && o.ctm == "tf_crop_and_resize")
      return c.Error("antialias with tf_crop_and_resize is not supported");
    if (shrinks) {
      // Separable: one pass per resized dim, each filtering along that dim alone, the
      // innermost dim first (onnxruntime's order, so that the f32 roundings agree).
      Val cur = x;
      for (int i = loops - 1; i >= 0; --i) {
        if (!axes[i].resized) continue;
        Shape step = cur.shape;
        step[i] = axes[i].out;
        cur = b.Tabulate(step, et, [&](std::vector<std::string> idx) {
          std::string zero = b.ScalarConst("f32", 0), one = b.ScalarConst("f32", 1);
          std::vector<Taps> taps(loops);
          std::string unused;
          for (int j = 0; j < loops; ++j) taps[j].push_back({idx[j], ""});
          taps[i] = ShrinksStatically(axes[i]) ? AntialiasTaps(b, o, axes[i], idx[i], zero, one)
                                               : AxisTaps(b, o, axes[i], idx[i], zero, one, &unused);
          return b.Convert(SumOfTaps(b, cur, taps, true), "f32", et);
        });
      }
      c.SetOut(0, cur);
      return Status::Ok();
    }
  }
  Val r = b.Tabulate(out, et, [&](std::vector<std::string> idx) {
    std::string zero = b.ScalarConst("f32", 0), one = b.ScalarConst("f32", 1);
    // Per dim: its taps (index, weight; weight empty for nearest).
    std::vector<Taps> taps(loops);
    std::string outside;  // tf_crop_and_resize: some coordinate falls outside the input
    for (int i = 0; i < loops; ++i) {
      if (axes[i].resized) taps[i] = AxisTaps(b, o, axes[i], idx[i], zero, one, &outside);
      else taps[i].push_back({idx[i], ""});
    }
    std::string acc = SumOfTaps(b, x, taps, interpolates);
    std::string v = interpolates ? b.Convert(acc, "f32", et) : acc;
    if (!outside.empty()) v = b.Select(outside, b.ScalarConst(et, o.extrapolation), v, et);
    return v;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

Options ResizeOptions(Context& c, bool v10) {
  Options o;
  o.mode = c.AttrS("mode", "nearest");
  o.ctm = c.AttrS("coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel");
  o.nearest = c.AttrS("nearest_mode", v10 ? "floor" : "round_prefer_floor");
  o.cubic_a = c.AttrF("cubic_coeff_a", -0.75f);
  o.exclude_outside = c.AttrI("exclude_outside", 0) != 0;
  o.extrapolation = c.AttrF("extrapolation_value", 0);
  o.antialias = c.AttrI("antialias", 0) != 0;
  o.aspect = c.AttrS("keep_aspect_ratio_policy", "stretch");
  return o;
}

// Opset 18's `axes`: scales, sizes and roi name only these dims; the others keep scale 1,
// their extent and the roi [0, 1]. Rewrites them to one entry per dim of x and records the
// listed dims in o.listed (every dim without axes).
Status SpreadOverAxes(Context& c, const Val& x, Options& o, std::vector<double>& scales, std::vector<Dim>& sizes) {
  int64_t rank = x.rank();
  o.listed.assign(rank, !c.HasAttr("axes"));
  if (!c.HasAttr("axes")) return Status::Ok();
  std::vector<int64_t> axes;
  for (int64_t a : c.AttrInts("axes")) {
    HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(a, rank));
    if (o.listed[axis]) return c.Error("axes repeat dim " + std::to_string(axis));
    o.listed[axis] = true;
    axes.push_back(axis);
  }
  const size_t n = axes.size();
  auto count_error = [&](const char* what, size_t got) {
    return c.Error(std::string(what) + " has " + std::to_string(got) + " entries for " + std::to_string(n) + " axes");
  };
  if (!scales.empty()) {
    if (scales.size() != n) return count_error("scales", scales.size());
    std::vector<double> full(rank, 1.0);
    for (size_t k = 0; k < n; ++k) full[axes[k]] = scales[k];
    scales = std::move(full);
  }
  if (!sizes.empty()) {
    if (sizes.size() != n) return count_error("sizes", sizes.size());
    std::vector<Dim> full = x.shape;
    for (size_t k = 0; k < n; ++k) full[axes[k]] = sizes[k];
    sizes = std::move(full);
  }
  if (!o.roi.empty()) {
    if (o.roi.size() != 2 * n) return count_error("roi", o.roi.size() / 2);
    std::vector<double> full(2 * rank, 0.0);
    std::fill(full.begin() + rank, full.end(), 1.0);
    for (size_t k = 0; k < n; ++k) {
      full[axes[k]] = o.roi[k];
      full[rank + axes[k]] = o.roi[n + k];
    }
    o.roi = std::move(full);
  }
  return Status::Ok();
}

}  // namespace

// Opset 10: scales (input 1), asymmetric / floor. From 11: roi, scales, sizes (inputs 1-3).
Status LowerResize(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  bool v10 = c.opset < 11;
  Options o = ResizeOptions(c, v10);
  std::vector<double> scales;
  std::vector<Dim> sizes;
  if (v10) {
    HEXIR_ASSIGN_OR_RETURN(Val& scales_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(scales, c.ConstFloats(scales_in, "scales"));
  } else {
    if (o.ctm == "tf_crop_and_resize" && c.HasIn(1)) {
      HEXIR_ASSIGN_OR_RETURN(Val& roi_in, c.In(1));
      HEXIR_ASSIGN_OR_RETURN(o.roi, c.ConstFloats(roi_in, "roi"));
    }
    if (c.HasIn(2)) {
      HEXIR_ASSIGN_OR_RETURN(Val& scales_in, c.In(2));
      if (!scales_in.shape.empty() && scales_in.shape[0].v != 0) {
        HEXIR_ASSIGN_OR_RETURN(scales, c.ConstFloats(scales_in, "scales"));
      }
    }
    if (c.HasIn(3)) {
      HEXIR_ASSIGN_OR_RETURN(Val& sizes_in, c.In(3));
      HEXIR_ASSIGN_OR_RETURN(Val sizes_val, c.ShapeOperand(sizes_in, "sizes"));
      sizes = sizes_val.ints;
    }
  }
  HEXIR_RETURN_IF_ERROR(SpreadOverAxes(c, x, o, scales, sizes));
  return ResizeWith(c, x, o, scales, sizes);
}

// Scales: the attribute before opset 9, input 1 from 9 on; asymmetric / floor.
Status LowerUpsample(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  Options o = ResizeOptions(c, true);
  o.ctm = "asymmetric";
  o.nearest = "floor";
  std::vector<double> scales;
  if (c.opset >= 9) {
    HEXIR_ASSIGN_OR_RETURN(Val& scales_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(scales, c.ConstFloats(scales_in, "scales"));
  }
  if (scales.empty())
    for (float f : c.AttrFloats("scales")) scales.push_back(f);
  o.listed.assign(x.rank(), true);
  return ResizeWith(c, x, o, scales, {});
}

}  // namespace hexir::importers::onnx
