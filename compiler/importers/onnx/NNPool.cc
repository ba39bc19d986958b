// ONNX pooling (onnx/defs/nn): MaxPool and AveragePool pad with -inf / 0 and reduce a window
// generic over a tensor.empty of the kernel shape (ceil_mode; count_include_pad=0 divides by a
// counted-valid generic); LpPool sums |x|^p over the window as AveragePool sums x, then takes
// the p-th root; the global pools are reductions over the spatial dims.
#include <cmath>
#include <optional>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/NNWindow.h"

namespace hexir::importers::onnx {
namespace {

// The loops of a pooling generic: (n, c, o_0 .. o_{s-1}) parallel, then (k_0 .. k_{s-1})
// reductions over the window; the padded input is read at o_i * stride_i + k_i * dilation_i,
// the window tensor at k, the result written at (n, c, o).
struct PoolLoops {
  int loops = 0;
  std::vector<std::string> input, window, output, iterators;
};
PoolLoops PoolLoopsOf(const Window& w) {
  const int s = w.s;
  PoolLoops p;
  p.loops = 2 + 2 * s;
  p.input = {D(0), D(1)};
  p.output = {D(0), D(1)};
  for (int i = 0; i < s; ++i) {
    p.input.push_back(D(2 + i) + " * " + std::to_string(w.strides[i]) + " + " + D(2 + s + i) + " * " +
                      std::to_string(w.dilations[i]));
    p.window.push_back(D(2 + s + i));
    p.output.push_back(D(2 + i));
  }
  p.iterators.assign(2 + s, "parallel");
  p.iterators.resize(p.loops, "reduction");
  return p;
}

// MaxPool's Indices: for each output the flat index into x (n, c and the spatial position,
// row-major; column-major spatial dims for storage_order=1) of the first window element equal
// to the maximum (the smallest row-major index: a min reduction, so the order of the window
// loops does not matter). Padding never matches.
std::string MaxIndices(Context& c, const Val& x, Val& xp, Val& win, Val& maxima, const Window& w, bool column_major) {
  Builder& b = c.b;
  int s = w.s;
  const PoolLoops pool = PoolLoopsOf(w);
  const int loops = pool.loops;
  Shape out = maxima.shape;
  std::vector<std::string> extents;
  for (const Dim& d : x.shape) extents.push_back(b.DimValue(d));
  std::string none = b.Filled(out, "i64", 9.2233720368547758e18);
  std::string first = b.Generic({&xp, &win, &maxima},
                                {Builder::Map(loops, pool.input), Builder::Map(loops, pool.window), Builder::Map(loops, pool.output)},
                                Builder::Map(loops, pool.output), out, "i64", loops, pool.iterators, none, [&](const Args& a) {
                                  std::vector<std::string> idx = b.LoopIndices(loops);
                                  std::string inside, flat = idx[0];
                                  flat = b.Bin("", "arith.addi", b.Bin("", "arith.muli", flat, extents[1], "index"), idx[1], "index");
                                  for (int i = 0; i < s; ++i) {
                                    std::string p = b.Bin("", "arith.addi",
                                                          b.Bin("", "arith.muli", idx[2 + i], b.IndexConst(w.strides[i]), "index"),
                                                          b.Bin("", "arith.muli", idx[2 + s + i], b.IndexConst(w.dilations[i]), "index"),
                                                          "index");
                                    p = b.Bin("", "arith.subi", p, b.DimValue(w.pad_begin[i]), "index");
                                    inside = b.AndI1(inside, b.Cmp("", "sge", p, b.IndexConst(0), "index"));
                                    inside = b.AndI1(inside, b.Cmp("", "slt", p, extents[2 + i], "index"));
                                    flat = b.Bin("", "arith.addi", b.Bin("", "arith.muli", flat, extents[2 + i], "index"), p, "index");
                                  }
                                  std::string hit = b.AndI1(inside, b.Cmp("oeq", "eq", a[0], a[2], x.et));
                                  std::string here = b.Select(hit, b.ToI64(flat), a[3], "i64");
                                  return b.Bin("", "arith.minsi", here, a[3], "i64");
                                });
  if (!column_major) return first;
  // (n, c, p_0 .. p_{s-1}) -> (n * C + c) * prod(spatial) + sum p_i * prod(extents of p_0 .. p_{i-1})
  Val rowmajor;
  rowmajor.et = "i64";
  rowmajor.shape = out;
  rowmajor.name = first;
  int rl = 2 + s;
  return b.Generic({&rowmajor}, {Builder::IdentityMap(rl)}, Builder::IdentityMap(rl), out, "i64", rl,
                   std::vector<std::string>(rl, "parallel"), "", [&](const Args& a) {
                     std::vector<std::string> coords = b.Delinearize(b.ToIndex(a[0], "i64"), extents);
                     std::string plane = b.Bin("", "arith.addi", b.Bin("", "arith.muli", coords[0], extents[1], "index"),
                                               coords[1], "index");
                     std::string offset = b.IndexConst(0), stride = b.IndexConst(1);
                     for (int i = 0; i < s; ++i) {
                       offset = b.Bin("", "arith.addi", offset, b.Bin("", "arith.muli", coords[2 + i], stride, "index"), "index");
                       stride = b.Bin("", "arith.muli", stride, extents[2 + i], "index");
                     }
                     return b.ToI64(b.Bin("", "arith.addi", b.Bin("", "arith.muli", plane, stride, "index"), offset, "index"));
                   });
}

// The p of LpPool / GlobalLpPool: a float attribute at opset 1, an int from opset 2 (default 2).
StatusOr<double> LpExponent(Context& c) {
  double p = c.opset < 2 ? c.AttrF("p", 2.0f) : static_cast<double>(c.AttrI("p", 2));
  if (!(p > 0)) return c.Error("p must be positive");
  return p;
}

// |x|^p, and its inverse y^(1 / p) for the window sums (squares and square roots for p = 2).
StatusOr<Val> PowerOfMagnitude(Context& c, Val& x, double p, bool inverse) {
  Builder& b = c.b;
  std::string et = x.et;
  return c.Elementwise({&x}, et, [&](const Args& a) {
    if (inverse) return p == 2 ? b.Op1("math.sqrt", a[0], et)
                               : b.Bin("math.powf", "", a[0], b.ScalarConst(et, 1.0 / p), et);
    std::string m = b.Op1("math.absf", a[0], et);
    if (p == 1) return m;
    if (p == 2) return b.Bin("arith.mulf", "", m, m, et);
    return b.Bin("math.powf", "", m, b.ScalarConst(et, p), et);
  });
}

Status LowerPool(Context& c, bool max, std::optional<double> lp = std::nullopt) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& input, c.In(0));
  Val magnitudes;
  if (lp) {
    if (!input.IsFloat()) return c.Error("element type " + input.et + " is not supported");
    HEXIR_ASSIGN_OR_RETURN(magnitudes, PowerOfMagnitude(c, input, *lp, /*inverse=*/false));
  }
  Val& x = lp ? magnitudes : input;
  bool integer_max = max && !x.IsFloat() && x.et != "i1";  // MaxPool of int8/uint8 (and wider)
  if (!x.IsFloat() && !integer_max) return c.Error("element type " + x.et + " is not supported");
  // The identity of max: -inf, or the type's smallest value (0 unsigned).
  double lowest = !integer_max ? -INFINITY : x.is_unsigned ? 0 : -std::ldexp(1.0, ElementBytes(x.et) * 8 - 1);
  const char* int_max = x.is_unsigned ? "arith.maxui" : "arith.maxsi";
  std::vector<int64_t> kernel = c.AttrInts("kernel_shape");
  int s = static_cast<int>(kernel.size());
  if (s == 0 || x.rank() != s + 2) return c.Error("kernel_shape does not match the input rank");
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Window w, WindowGeometry(c, x, kernel, c.AttrI("ceil_mode", 0) != 0));
  Val xp = PadSpatial(c, x, w, max ? lowest : 0.0);
  c.Mat(xp);
  Val win;
  win.et = et;
  for (int64_t k : kernel) win.shape.push_back(Dim::Static(k));
  win.name = b.Empty(win.shape, et);
  const PoolLoops pool = PoolLoopsOf(w);
  const int loops = pool.loops;
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  std::string init = b.Filled(out, et, max ? lowest : 0.0);
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&xp, &win}, {Builder::Map(loops, pool.input), Builder::Map(loops, pool.window)},
                     Builder::Map(loops, pool.output), out, et, loops, pool.iterators, init, [&](const Args& a) {
                       return max ? b.Bin("arith.maximumf", int_max, a[2], a[0], et)
                                  : b.Bin("arith.addf", "", a[2], a[0], et);
                     });
  if (max && c.node->output_size() > 1 && !c.node->output(1).empty()) {
    c.Mat(r);
    Val indices;
    indices.et = "i64";
    indices.shape = out;
    indices.name = MaxIndices(c, x, xp, win, r, w, c.AttrI("storage_order", 0) != 0);
    c.SetOut(1, indices);
  }
  if (lp) return c.SetOut(0, PowerOfMagnitude(c, r, *lp, /*inverse=*/true));
  if (!max) {
    bool include_pad = c.AttrI("count_include_pad", 0) != 0;
    bool padded = false;
    for (int i = 0; i < s; ++i)
      padded = padded || w.pad_begin[i].v != 0 || w.pad_end[i].dynamic() || w.pad_end[i].v != 0;
    int64_t ksize = 1;
    for (int64_t k : kernel) ksize *= k;
    if (include_pad || !padded) {
      HEXIR_ASSIGN_OR_RETURN(r, c.Elementwise({&r}, et, [&](const Args& a) {
        return b.Bin("arith.divf", "", a[0], b.ScalarConst(et, static_cast<double>(ksize)), et);
      }));
    } else {
      // Count the window positions inside the unpadded input, per output position.
      std::vector<std::string> dims;
      for (int i = 0; i < s; ++i) dims.push_back(b.DimValue(x.shape[2 + i]));
      int cl = 2 * s;
      Shape cshape(w.out.begin(), w.out.end());
      std::vector<std::string> cm, co;
      for (int i = 0; i < s; ++i) {
        cm.push_back(D(s + i));
        co.push_back(D(i));
      }
      std::vector<std::string> citers(s, "parallel");
      citers.resize(cl, "reduction");
      std::string cinit = b.Filled(cshape, et, 0);
      Val cnt;
      cnt.et = et;
      cnt.shape = cshape;
      cnt.name = b.Generic({&win}, {Builder::Map(cl, cm)}, Builder::Map(cl, co), cshape, et, cl,
                           citers, cinit, [&](const Args& a) {
                             std::string valid;
                             for (int i = 0; i < s; ++i) {
                               std::string o = b.Fresh(), k = b.Fresh(), p = b.Fresh();
                               b.Line(o + " = linalg.index " + std::to_string(i) + " : index");
                               b.Line(k + " = linalg.index " + std::to_string(s + i) + " : index");
                               std::string os = b.Fresh(), kd = b.Fresh(), sum = b.Fresh();
                               b.Line(os + " = arith.muli " + o + ", " +
                                      b.IndexConst(w.strides[i]) + " : index");
                               b.Line(kd + " = arith.muli " + k + ", " +
                                      b.IndexConst(w.dilations[i]) + " : index");
                               b.Line(sum + " = arith.addi " + os + ", " + kd + " : index");
                               b.Line(p + " = arith.subi " + sum + ", " +
                                      b.IndexConst(w.pad_begin[i].v) + " : index");
                               std::string ge = b.Fresh(), lt = b.Fresh(), ok = b.Fresh();
                               b.Line(ge + " = arith.cmpi sge, " + p + ", " + b.IndexConst(0) + " : index");
                               b.Line(lt + " = arith.cmpi slt, " + p + ", " + dims[i] + " : index");
                               b.Line(ok + " = arith.andi " + ge + ", " + lt + " : i1");
                               valid = b.AndI1(valid, ok);
                             }
                             std::string one = b.ScalarConst(et, 1), zero = b.ScalarConst(et, 0);
                             return b.Bin("arith.addf", "", a[1], b.Select(valid, one, zero, et), et);
                           });
      std::vector<std::string> rm;
      int rl = 2 + s;
      for (int i = 0; i < s; ++i) rm.push_back(D(2 + i));
      Val q;
      q.et = et;
      q.shape = out;
      c.Mat(r);
      q.name = b.Generic({&r, &cnt}, {Builder::IdentityMap(rl), Builder::Map(rl, rm)},
                         Builder::IdentityMap(rl), out, et, rl,
                         std::vector<std::string>(rl, "parallel"), "",
                         [&](const Args& a) { return b.Bin("arith.divf", "", a[0], a[1], et); });
      r = q;
    }
  }
  c.SetOut(0, r);
  return Status::Ok();
}

// Global pools: a reduction over every spatial dim, kept as 1s.
Status LowerGlobalPool(Context& c, const char* kind) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  return c.SetOut(0, c.Reduce(x, axes, true, kind));
}

}  // namespace

// MaxUnpool: zeros of the unpooled shape ((in - 1) * stride - pads + kernel, padded at the end
// to output_shape when given) with each X element written at its flat index I (in the
// unpooled shape); one generic over (output, input)
// positions whose reduction finds the element aimed at each output (the last one wins).
// O(output x input).
Status LowerMaxUnpool(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(1));
  std::vector<int64_t> kernel = c.AttrInts("kernel_shape"), strides = c.AttrInts("strides"), pads = c.AttrInts("pads");
  int s = static_cast<int>(kernel.size());
  if (s == 0 || x.rank() != s + 2) return c.Error("kernel_shape does not match the input rank");
  if (strides.empty()) strides.assign(s, 1);
  if (pads.empty()) pads.assign(2 * s, 0);
  if (static_cast<int>(strides.size()) != s || static_cast<int>(pads.size()) != 2 * s)
    return c.Error("strides/pads do not match " + std::to_string(s) + " spatial dims");
  if (ind.rank() != x.rank()) return c.Error("indices must have the input's rank");
  // Indices address the unpooled shape; a larger output_shape pads it at the end.
  Shape unpooled = {x.shape[0], x.shape[1]};
  for (int i = 0; i < s; ++i) {
    Dim d = b.Mul(b.Sub(x.shape[2 + i], Dim::Static(1)), Dim::Static(strides[i]));
    unpooled.push_back(b.Add(b.Sub(d, Dim::Static(pads[i] + pads[s + i])), Dim::Static(kernel[i])));
  }
  Shape out = unpooled;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& shape_in, c.In(2));
    HEXIR_ASSIGN_OR_RETURN(Val shape, c.ShapeOperand(shape_in, "output_shape"));
    if (static_cast<int64_t>(shape.ints.size()) != x.rank()) return c.Error("output_shape must have the input's rank");
    out = shape.ints;
  }
  c.Mat(x);
  c.Mat(ind);
  int r = static_cast<int>(x.rank()), loops = 2 * r;
  std::vector<std::string> in_map, out_map, iters(r, "parallel");
  for (int i = 0; i < r; ++i) {
    in_map.push_back(D(r + i));
    out_map.push_back(D(i));
  }
  iters.resize(loops, "reduction");
  std::vector<std::string> extents;
  for (const Dim& d : unpooled) extents.push_back(b.DimValue(d));
  Val y;
  y.et = x.et;
  y.shape = out;
  y.name = b.Generic({&x, &ind}, {Builder::Map(loops, in_map), Builder::Map(loops, in_map)}, Builder::Map(loops, out_map),
                     out, x.et, loops, iters, b.Filled(out, x.et, 0), [&](const Args& a) {
                       std::vector<std::string> idx = b.LoopIndices(r);
                       std::string flat = b.IndexConst(0), hit;
                       for (int i = 0; i < r; ++i) {
                         hit = b.AndI1(hit, b.Cmp("", "slt", idx[i], extents[i], "index"));
                         flat = b.Bin("", "arith.addi", b.Bin("", "arith.muli", flat, extents[i], "index"), idx[i], "index");
                       }
                       hit = b.AndI1(hit, b.Cmp("", "eq", b.ToIndex(a[1], ind.et), flat, "index"));
                       return b.Select(hit, a[0], a[2], x.et);
                     });
  c.SetOut(0, y);
  return Status::Ok();
}

Status LowerLpPool(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(double p, LpExponent(c));
  return LowerPool(c, /*max=*/false, p);
}
Status LowerGlobalLpPool(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(double p, LpExponent(c));
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (!x.IsFloat()) return c.Error("element type " + x.et + " is not supported");
  HEXIR_ASSIGN_OR_RETURN(Val m, PowerOfMagnitude(c, x, p, /*inverse=*/false));
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  HEXIR_ASSIGN_OR_RETURN(Val sum, c.Reduce(m, axes, true, "sum"));
  return c.SetOut(0, PowerOfMagnitude(c, sum, p, /*inverse=*/true));
}
Status LowerMaxPool(Context& c) { return LowerPool(c, /*max=*/true); }
Status LowerAveragePool(Context& c) { return LowerPool(c, /*max=*/false); }
Status LowerGlobalMaxPool(Context& c) { return LowerGlobalPool(c, "max"); }
Status LowerGlobalAveragePool(Context& c) { return LowerGlobalPool(c, "mean"); }

}  // namespace hexir::importers::onnx
