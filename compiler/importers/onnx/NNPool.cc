// ONNX pooling (onnx/defs/nn): MaxPool and AveragePool pad with -inf / 0 and reduce a window
// generic over a tensor.empty of the kernel shape (ceil_mode; count_include_pad=0 divides by a
// counted-valid generic); the global pools are reductions over the spatial dims.
#include <cmath>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/NNWindow.h"

namespace hexir::importers::onnx {
namespace {

Status LowerPool(Context& c, bool max) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  bool integer_max = max && !x.IsFloat() && x.et != "i1";  // MaxPool of int8/uint8 (and wider)
  if (!x.IsFloat() && !integer_max) return c.Error("element type " + x.et + " is not supported");
  // The identity of max: -inf, or the type's smallest value (0 unsigned).
  double lowest = !integer_max ? -INFINITY : x.is_unsigned ? 0 : -std::ldexp(1.0, ElementBytes(x.et) * 8 - 1);
  const char* int_max = x.is_unsigned ? "arith.maxui" : "arith.maxsi";
  std::vector<int64_t> kernel = c.AttrInts("kernel_shape");
  int s = static_cast<int>(kernel.size());
  if (s == 0 || x.rank() != s + 2) return c.Error("kernel_shape does not match the input rank");
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) return c.Error("the Indices output is not supported");
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Window w, WindowGeometry(c, x, kernel, c.AttrI("ceil_mode", 0) != 0));
  Val xp = PadSpatial(c, x, w, max ? lowest : 0.0);
  c.Mat(xp);
  Val win;
  win.et = et;
  for (int64_t k : kernel) win.shape.push_back(Dim::Static(k));
  win.name = b.Empty(win.shape, et);
  int loops = 2 + 2 * s;
  std::vector<std::string> xm = {D(0), D(1)}, km, om = {D(0), D(1)};
  for (int i = 0; i < s; ++i) {
    xm.push_back(D(2 + i) + " * " + std::to_string(w.strides[i]) + " + " + D(2 + s + i) + " * " +
                 std::to_string(w.dilations[i]));
    km.push_back(D(2 + s + i));
    om.push_back(D(2 + i));
  }
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  std::vector<std::string> iters(2 + s, "parallel");
  iters.resize(loops, "reduction");
  std::string init = b.Filled(out, et, max ? lowest : 0.0);
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&xp, &win}, {Builder::Map(loops, xm), Builder::Map(loops, km)},
                     Builder::Map(loops, om), out, et, loops, iters, init, [&](const Args& a) {
                       return max ? b.Bin("arith.maximumf", int_max, a[2], a[0], et)
                                  : b.Bin("arith.addf", "", a[2], a[0], et);
                     });
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

Status LowerMaxPool(Context& c) { return LowerPool(c, /*max=*/true); }
Status LowerAveragePool(Context& c) { return LowerPool(c, /*max=*/false); }
Status LowerGlobalMaxPool(Context& c) { return LowerGlobalPool(c, "max"); }
Status LowerGlobalAveragePool(Context& c) { return LowerGlobalPool(c, "mean"); }

}  // namespace hexir::importers::onnx
