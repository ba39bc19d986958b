// Shapes computed at run time (compiler/importers/onnx: Context::ShapeOperand, TensorCount.cc):
// shape operands that are graph inputs are read on the host, so one module serves several
// shapes; data-dependent extents (NonZero, Compress) come from a count read back once.
// Expected values worked out by hand.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
using ox::testing::CompileForCpu;
using ox::testing::Graph;
using ox::testing::ParseFloats;
using ox::testing::RunMainWith;

constexpr int kI64 = ::onnx::TensorProto::INT64;
constexpr int kBool = ::onnx::TensorProto::BOOL;

// Imports and compiles m; the module path.
std::string Build(Graph& m, const std::string& name) {
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, name);
  REQUIRE(!mod.empty());
  return mod;
}

// Runs main on the inputs; the printed result line (the run must succeed).
std::string Run(const std::string& mod, const std::vector<std::string>& inputs) {
  int code = 0;
  std::string out = RunMainWith(mod, inputs, &code);
  INFO(out);
  REQUIRE(code == 0);
  return out;
}

std::string Prefix(const std::string& line) { return line.substr(0, line.find('=')); }

std::string Floats(const std::vector<float>& v) {
  std::string s;
  for (float x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

constexpr auto AttrS = Graph::AttrS;
constexpr auto AttrF = Graph::AttrF;

// ONNX Resize of one axis, written from the operator's specification: the taps (input index,
// weight) of output position o, or none when tf_crop_and_resize maps o outside the input.
struct Taps {
  std::vector<std::pair<int64_t, double>> taps;
  bool outside = false;
};
Taps ResizeTaps(const std::string& mode, const std::string& transform, int64_t o, int64_t in, int64_t out,
                double roi_start, double roi_end) {
  const double scale = static_cast<double>(static_cast<float>(out) / static_cast<float>(in));
  double x = transform == "half_pixel" ? (o + 0.5) / scale - 0.5
             : out > 1                 ? roi_start * (in - 1) + o * (roi_end - roi_start) * (in - 1) / (out - 1)
                                       : 0.5 * (roi_start + roi_end) * (in - 1);
  Taps t;
  if (transform == "tf_crop_and_resize" && (x < 0 || x > in - 1)) {
    t.outside = true;
    return t;
  }
  auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  double base = std::floor(x), f = x - base;
  if (mode == "linear") {
    t.taps = {{clamp(static_cast<int64_t>(base)), 1 - f}, {clamp(static_cast<int64_t>(base) + 1), f}};
    return t;
  }
  const double a = -0.75;  // cubic_coeff_a's default
  for (int j = -1; j <= 2; ++j) {
    double s = std::fabs(f - j);
    double w = s <= 1 ? ((a + 2) * s - (a + 3)) * s * s + 1 : ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    t.taps.push_back({clamp(static_cast<int64_t>(base) + j), w});
  }
  return t;
}

// A 2-D image [h, w] resized to [oh, ow] through ResizeTaps per axis (roi on the last two axes).
std::vector<float> ResizeReference(const std::vector<float>& x, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                   const std::string& mode, const std::string& transform,
                                   const std::vector<double>& roi, double extrapolation) {
  std::vector<float> y;
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      Taps ti = ResizeTaps(mode, transform, i, h, oh, roi[0], roi[2]);
      Taps tj = ResizeTaps(mode, transform, j, w, ow, roi[1], roi[3]);
      if (ti.outside || tj.outside) {
        y.push_back(static_cast<float>(extrapolation));
        continue;
      }
      double sum = 0;
      for (auto [r, wr] : ti.taps)
        for (auto [c, wc] : tj.taps) sum += wr * wc * x[r * w + c];
      y.push_back(static_cast<float>(sum));
    }
  return y;
}

void CheckClose(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  float scale = 1e-6f;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-4f * scale);
  }
}

}  // namespace

TEST_CASE("Reshape to a shape read at run time resolves 0 and -1 per call") {
  Graph m;
  m.Input("x", {2, 3});
  m.Input("shape", {2}, kI64);
  m.Output("y", {-1, -1});
  m.Node("Reshape", {"x", "shape"}, {"y"});
  std::string mod = Build(m, "reshape_runtime");
  std::string x = "2x3xf32=0 1 2 3 4 5";
  CHECK(Prefix(Run(mod, {x, "2xi64=3 -1"})) == "3x2xf32");
  CHECK(Prefix(Run(mod, {x, "2xi64=-1 1"})) == "6x1xf32");
  std::string same = Run(mod, {x, "2xi64=0 -1"});  // 0 copies the input dim
  CHECK(Prefix(same) == "2x3xf32");
  CHECK(ParseFloats(same) == std::vector<float>{0, 1, 2, 3, 4, 5});
}

// Occurrences of `what` in `text`.
size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("dynamic Reshapes between groups of equal element counts are views, not copies, at two sizes") {
  // x [T, N, 32] -> [T, 4N, 8] (attention heads of a dynamic export: -1 inferred as 4N) and
  // back; [N, 6] -> [N, 6, 1, 1] (a keepdims pool) and back (Flatten). Only the Mul and the
  // Adds are kernels: no index-delinearizing copy.
  Graph m;
  m.Input("x", {-1, -1, 32});
  m.Input("p", {-1, 6});
  m.Output("y", {-1, -1, 32});
  m.Output("q", {-1, 6});
  m.InitF("two", {1}, {2.0f});
  m.InitI("heads", {0, -1, 8});
  m.InitI("rows", {0, -1, 32});
  m.InitI("keep", {0, 6, 1, 1});
  m.Node("Mul", {"x", "two"}, {"a"});
  m.Node("Reshape", {"a", "heads"}, {"h"});
  m.Node("Add", {"h", "h"}, {"s"});
  m.Node("Reshape", {"s", "rows"}, {"y"});
  m.Node("Reshape", {"p", "keep"}, {"k"});
  m.Node("Add", {"k", "k"}, {"d"});
  m.Node("Flatten", {"d"}, {"q"});
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Count(*r, "linalg.generic") == 3);
  CHECK(r->find("linalg.index") == std::string::npos);
  CHECK(Count(*r, "tensor.expand_shape") >= 3);
  std::string mod = CompileForCpu(*r, "reshape_views");
  REQUIRE(!mod.empty());
  for (auto [t, n] : {std::pair<int64_t, int64_t>{3, 1}, {2, 5}}) {
    INFO("T = " << t << ", N = " << n);
    std::vector<float> x(t * n * 32), p(n * 6), y, q;
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) - 40.0f;
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i) * 0.5f;
    for (float v : x) y.push_back(4 * v);  // row-major reshapes keep the element order
    for (float v : p) q.push_back(2 * v);
    std::istringstream lines(Run(mod, {std::to_string(t) + "x" + std::to_string(n) + "x32xf32=" + Floats(x),
                                       std::to_string(n) + "x6xf32=" + Floats(p)}));
    std::string ly, lq;
    std::getline(lines, ly);
    std::getline(lines, lq);
    CHECK(Prefix(ly) == std::to_string(t) + "x" + std::to_string(n) + "x32xf32");
    CHECK(ParseFloats(ly) == y);
    CHECK(Prefix(lq) == std::to_string(n) + "x6xf32");
    CHECK(ParseFloats(lq) == q);
  }
}

TEST_CASE("Slice bounds read at run time are wrapped and clamped like numpy") {
  Graph m;
  m.Input("x", {5});
  m.Input("starts", {1}, kI64);
  m.Input("ends", {1}, kI64);
  m.Output("y", {-1});
  m.Node("Slice", {"x", "starts", "ends"}, {"y"});
  std::string mod = Build(m, "slice_runtime");
  std::string x = "5xf32=10 11 12 13 14";
  CHECK(ParseFloats(Run(mod, {x, "1xi64=-3", "1xi64=100"})) == std::vector<float>{12, 13, 14});
  CHECK(ParseFloats(Run(mod, {x, "1xi64=1", "1xi64=-1"})) == std::vector<float>{11, 12, 13});
  CHECK(Prefix(Run(mod, {x, "1xi64=4", "1xi64=2"})) == "0xf32");
}

TEST_CASE("Open slices as PyTorch exports them (ends INT64_MAX, a reversal to INT64_MIN) keep the rest of the dim") {
  // `x[:, 1:]` is Slice(ends = INT64_MAX), `x.flip(0)` Slice(starts = -1, ends = INT64_MIN,
  // steps = -1). Integer constants were read through a double, which turned INT64_MAX into
  // INT64_MIN: every open slice was empty (torchvision's Swin: its cyclic shift's x[3:]).
  for (int64_t w : {4, -1}) {  // static, then read at run time
    INFO("w: " << w);
    Graph m;
    m.Input("x", {2, w});
    m.InitI("one", {1});
    m.InitI("open", {INT64_MAX});
    m.InitI("last", {-1});
    m.InitI("before_all", {INT64_MIN});
    m.InitI("axis0", {0});
    m.InitI("axis1", {1});
    m.Output("y", {2, w < 0 ? -1 : w - 1});
    m.Output("fill", {2}, kI64);
    m.Node("Slice", {"x", "one", "open", "axis1"}, {"tail"});
    m.Node("Slice", {"tail", "last", "before_all", "axis0", "last"}, {"y"});
    m.InitI("two", {2});
    Graph::AttrTensorI(m.Node("ConstantOfShape", {"two"}, {"fill"}), "value", INT64_MAX);
    std::string mod = Build(m, w < 0 ? "open_slice_runtime" : "open_slice_static");
    std::istringstream lines(Run(mod, {"2x4xf32=1 2 3 4 5 6 7 8"}));
    std::string y, fill;
    std::getline(lines, y);
    std::getline(lines, fill);
    CHECK(Prefix(y) == "2x3xf32");
    CHECK(ParseFloats(y) == std::vector<float>{6, 7, 8, 2, 3, 4});
    CHECK(fill == "2xi64=9223372036854775807 9223372036854775807");
  }
}

// x[n][c][h][w] of extents `e` cropped to [lo, hi) per dim, in row-major order.
std::vector<float> Crop(const std::vector<float>& x, const std::vector<int64_t>& e, const std::vector<int64_t>& lo,
                        const std::vector<int64_t>& hi) {
  std::vector<float> y;
  for (int64_t n = lo[0]; n < hi[0]; ++n)
    for (int64_t c = lo[1]; c < hi[1]; ++c)
      for (int64_t h = lo[2]; h < hi[2]; ++h)
        for (int64_t w = lo[3]; w < hi[3]; ++w) y.push_back(x[((n * e[1] + c) * e[2] + h) * e[3] + w]);
  return y;
}

std::string Spec(const std::vector<int64_t>& e, const std::vector<float>& v) {
  std::string s;
  for (int64_t d : e) s += std::to_string(d) + "x";
  return s + "f32=" + Floats(v);
}

TEST_CASE("Split and Slice over run-time extents copy the elements numpy's slicing reads, at several sizes and offsets") {
  // codegen/CPUSliceCopies.h: a dynamic export's channel split (ShuffleNet's) and a crop at
  // offsets read at run time are one copy each where the source holds the slice.
  auto ramp = [](const std::vector<int64_t>& e) {
    std::vector<float> v(static_cast<size_t>(e[0] * e[1] * e[2] * e[3]));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + 0.25f;
    return v;
  };
  Graph m;
  m.Input("x", {-1, 6, -1, -1});
  m.InitI("split", {2, 4});
  m.Output("a", {-1, 2, -1, -1});
  m.Output("b", {-1, 4, -1, -1});
  Graph::AttrI(m.Node("Split", {"x", "split"}, {"a", "b"}, "split"), "axis", 1);
  std::string mod = Build(m, "split_runtime_extents");
  for (std::vector<int64_t> e : {std::vector<int64_t>{1, 6, 3, 5}, {2, 6, 1, 1}, {3, 6, 4, 2}}) {
    INFO("x: " << e[0] << "x6x" << e[2] << "x" << e[3]);
    std::vector<float> x = ramp(e);
    std::istringstream lines(Run(mod, {Spec(e, x)}));
    std::string la, lb;
    std::getline(lines, la);
    std::getline(lines, lb);
    CHECK(Prefix(la) == std::to_string(e[0]) + "x2x" + std::to_string(e[2]) + "x" + std::to_string(e[3]) + "xf32");
    CHECK(ParseFloats(la) == Crop(x, e, {0, 0, 0, 0}, {e[0], 2, e[2], e[3]}));
    CHECK(ParseFloats(lb) == Crop(x, e, {0, 2, 0, 0}, {e[0], 6, e[2], e[3]}));
  }

  // Starts and ends of h and w read at run time (numpy's wrapping and clamping on the host).
  Graph c;
  c.Input("x", {-1, 3, -1, -1});
  c.Input("starts", {2}, kI64);
  c.Input("ends", {2}, kI64);
  c.InitI("axes", {2, 3});
  c.Output("y", {-1, 3, -1, -1});
  c.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "crop");
  std::string crop = Build(c, "crop_runtime_offsets");
  struct Case {
    std::vector<int64_t> e;
    int64_t sh, sw, eh, ew;        // the operands
    int64_t lh, lw, hh, hw;        // the rows and columns numpy keeps
  };
  for (const Case& k : {Case{{1, 3, 5, 6}, 1, 2, -1, 100, 1, 2, 4, 6}, Case{{2, 3, 4, 4}, -3, 0, 3, 2, 1, 0, 3, 2},
                        Case{{1, 3, 3, 7}, 0, -1, 100, 100, 0, 6, 3, 7}}) {
    INFO("x: " << k.e[0] << "x3x" << k.e[2] << "x" << k.e[3] << ", starts " << k.sh << " " << k.sw);
    std::vector<float> x = ramp(k.e);
    std::string line = Run(crop, {Spec(k.e, x), "2xi64=" + std::to_string(k.sh) + " " + std::to_string(k.sw),
                                  "2xi64=" + std::to_string(k.eh) + " " + std::to_string(k.ew)});
    CHECK(Prefix(line) == std::to_string(k.e[0]) + "x3x" + std::to_string(k.hh - k.lh) + "x" +
                              std::to_string(k.hw - k.lw) + "xf32");
    CHECK(ParseFloats(line) == Crop(x, k.e, {0, 0, k.lh, k.lw}, {k.e[0], 3, k.hh, k.hw}));
  }
}

TEST_CASE("Range, ConstantOfShape, Tile and Pad take operands computed at run time") {
  Graph range;
  range.Input("limit", {1}, kI64);  // hexir-run spells no 0-D tensor; one element reads the same
  range.Output("y", {-1}, kI64);
  range.InitScalarI("start", 1);
  range.InitScalarI("delta", 3);
  range.Node("Range", {"start", "limit", "delta"}, {"y"});
  std::string mod = Build(range, "range_runtime");
  CHECK(Run(mod, {"1xi64=11"}).find("4xi64=1 4 7 10") != std::string::npos);
  CHECK(Prefix(Run(mod, {"1xi64=0"})) == "0xi64");

  Graph fill;
  fill.Input("shape", {2}, kI64);
  fill.Output("y", {-1, -1}, kI64);
  auto* n = fill.Node("ConstantOfShape", {"shape"}, {"y"});
  Graph::AttrTensorI(n, "value", 7);
  mod = Build(fill, "fill_runtime");
  CHECK(Run(mod, {"2xi64=2 3"}).find("2x3xi64=7 7 7 7 7 7") != std::string::npos);

  Graph tile;
  tile.Input("x", {2});
  tile.Input("repeats", {1}, kI64);
  tile.Output("y", {-1});
  tile.Node("Tile", {"x", "repeats"}, {"y"});
  mod = Build(tile, "tile_runtime");
  CHECK(ParseFloats(Run(mod, {"2xf32=1 2", "1xi64=3"})) == std::vector<float>{1, 2, 1, 2, 1, 2});

  Graph pad;
  pad.Input("x", {2});
  pad.Input("pads", {2}, kI64);
  pad.Output("y", {-1});
  pad.Node("Pad", {"x", "pads"}, {"y"});
  mod = Build(pad, "pad_runtime");
  CHECK(ParseFloats(Run(mod, {"2xf32=5 6", "2xi64=1 2"})) == std::vector<float>{0, 5, 6, 0, 0});
}

TEST_CASE("Resize cubic and tf_crop_and_resize to sizes read at run time match the ONNX formulas") {
  struct Case {
    int64_t h, w, oh, ow;
  };
  // Up and down in each axis, one module per mode, input dims and sizes all read at run time.
  const std::vector<Case> cases = {{3, 4, 5, 7}, {4, 6, 3, 2}};
  for (const char* mode : {"cubic", "tf_crop_and_resize"}) {
    const bool crop = std::string(mode) == "tf_crop_and_resize";
    // The crop's roi reaches past the image on the right (extrapolated) and starts inside it.
    const std::vector<double> roi = crop ? std::vector<double>{0.2, 0.1, 0.9, 1.3} : std::vector<double>{0, 0, 1, 1};
    const double extrapolation = 5;
    Graph m;
    m.model.mutable_opset_import(0)->set_version(13);
    m.Input("x", {1, 1, -1, -1});
    m.Input("sizes", {4}, kI64);
    m.Output("y", {-1, -1, -1, -1});
    m.InitF("roi", {8}, {0, 0, static_cast<float>(roi[0]), static_cast<float>(roi[1]), 1, 1,
                         static_cast<float>(roi[2]), static_cast<float>(roi[3])});
    auto* n = m.Node("Resize", {"x", crop ? "roi" : "", "", "sizes"}, {"y"}, "resize");
    AttrS(n, "mode", crop ? "linear" : "cubic");
    AttrS(n, "coordinate_transformation_mode", crop ? "tf_crop_and_resize" : "half_pixel");
    if (crop) AttrF(n, "extrapolation_value", static_cast<float>(extrapolation));
    std::string mod = Build(m, std::string("resize_") + mode);
    for (const Case& k : cases) {
      std::vector<float> x;
      for (int64_t i = 0; i < k.h * k.w; ++i) x.push_back(static_cast<float>((i * 7) % 11) - 3.5f);
      std::string out = Run(mod, {"1x1x" + std::to_string(k.h) + "x" + std::to_string(k.w) + "xf32=" + Floats(x),
                                  "4xi64=1 1 " + std::to_string(k.oh) + " " + std::to_string(k.ow)});
      INFO(mode << " " << k.h << "x" << k.w << " -> " << k.oh << "x" << k.ow << ": " << out);
      CHECK(Prefix(out) == "1x1x" + std::to_string(k.oh) + "x" + std::to_string(k.ow) + "xf32");
      CheckClose(ParseFloats(out), ResizeReference(x, k.h, k.w, k.oh, k.ow, crop ? "linear" : "cubic",
                                                   crop ? "tf_crop_and_resize" : "half_pixel", roi, extrapolation));
    }
  }
}

TEST_CASE("Resize linear to the input's own sizes copies it (torchvision's detection transform at its size)") {
  // No dim resized: each is one tap without a weight (the importer wrote `mulf %e, <nothing>`).
  Graph m;
  m.model.mutable_opset_import(0)->set_version(13);
  m.Input("x", {1, 2, 2, 3});
  m.InitI("sizes", {1, 2, 2, 3});
  m.Output("y", {1, 2, 2, 3});
  auto* n = m.Node("Resize", {"x", "", "", "sizes"}, {"y"}, "same_size");
  AttrS(n, "mode", "linear");
  std::string mod = Build(m, "resize_same_size");
  const std::vector<float> x = {1, -2, 3.5f, 4, 5, 6, -7, 8, 9, 10, 11.25f, 12};
  std::string out = Run(mod, {"1x2x2x3xf32=" + Floats(x)});
  CHECK(Prefix(out) == "1x2x2x3xf32");
  CHECK(ParseFloats(out) == x);
}

// numpy's broadcasting of a [ar, ac] and b [br, bc] under op (each extent equal or 1).
std::vector<float> BroadcastReference(const std::vector<float>& a, int64_t ar, int64_t ac, const std::vector<float>& b,
                                      int64_t br, int64_t bc, float (*op)(float, float)) {
  std::vector<float> r;
  for (int64_t i = 0; i < std::max(ar, br); ++i)
    for (int64_t j = 0; j < std::max(ac, bc); ++j)
      r.push_back(op(a[(ar == 1 ? 0 : i) * ac + (ac == 1 ? 0 : j)], b[(br == 1 ? 0 : i) * bc + (bc == 1 ? 0 : j)]));
  return r;
}

std::string Tensor2(int64_t rows, int64_t cols, const std::vector<float>& v) {
  return std::to_string(rows) + "x" + std::to_string(cols) + "xf32=" + Floats(v);
}

std::vector<float> Iota(int64_t n, float first) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(first + static_cast<float>(i));
  return v;
}

TEST_CASE("two dynamic dims broadcast a run-time 1 as ONNX does; extents that do not broadcast fail naming both") {
  Graph m;
  m.Input("a", {-1, -1});
  m.Input("b", {-1, -1});
  m.Input("row", {1, -1});
  m.Output("z", {-1, -1});
  m.Node("Add", {"a", "b"}, {"s"}, "sum");
  m.Node("Mul", {"s", "row"}, {"z"}, "scale");  // a static 1 (dim 0) and a `?` against the sum's (dim 1)
  std::string mod = Build(m, "runtime_broadcast");
  auto add = [](float x, float y) { return x + y; };
  auto mul = [](float x, float y) { return x * y; };
  struct Shapes {
    int64_t ar, ac, br, bc, rc;
  };
  // Equal extents, then 4 vs 1 in each operand and dim (both `?`), an outer sum, a row of 1.
  for (Shapes k : {Shapes{2, 3, 2, 3, 3}, Shapes{4, 3, 1, 3, 3}, Shapes{1, 3, 4, 3, 3}, Shapes{4, 1, 4, 3, 3},
                   Shapes{4, 1, 1, 3, 1}, Shapes{2, 3, 2, 3, 1}}) {
    std::vector<float> a = Iota(k.ar * k.ac, 1), b = Iota(k.br * k.bc, 10), row = Iota(k.rc, 2);
    int64_t rows = std::max(k.ar, k.br), cols = std::max(k.ac, k.bc);
    std::vector<float> want = BroadcastReference(BroadcastReference(a, k.ar, k.ac, b, k.br, k.bc, add), rows, cols,
                                                 row, 1, k.rc, mul);
    INFO(k.ar << "x" << k.ac << " + " << k.br << "x" << k.bc << ", row of " << k.rc);
    std::string z = Run(mod, {Tensor2(k.ar, k.ac, a), Tensor2(k.br, k.bc, b), Tensor2(1, k.rc, row)});
    CHECK(Prefix(z) == std::to_string(rows) + "x" + std::to_string(cols) + "xf32");
    CHECK(ParseFloats(z) == want);
  }
  struct Bad {
    int64_t br, bc;
    const char* message;
  };
  for (Bad k : {Bad{4, 3, "node 'sum' (op Add): dimension 0 of operand 0 is 2 and of operand 1 is 4: they do not "
                          "broadcast (extents must be equal or 1)"},
                Bad{2, 2, "node 'sum' (op Add): dimension 1 of operand 0 is 3 and of operand 1 is 2: they do not "
                          "broadcast (extents must be equal or 1)"}}) {
    int code = 0;
    std::string bad = RunMainWith(mod, {Tensor2(2, 3, Iota(6, 1)), Tensor2(k.br, k.bc, Iota(k.br * k.bc, 1)),
                                        Tensor2(1, 3, Iota(3, 1))}, &code);
    INFO(bad);
    CHECK(code == 1);
    CHECK(bad.find(k.message) != std::string::npos);
  }
}

TEST_CASE("a `?` extent meeting a static one broadcasts a run-time 1; other extents fail naming both") {
  Graph m;
  m.Input("a", {-1, -1});
  m.Input("s", {-1, 4});
  m.Input("e", {-1});
  m.InitI("shape", {2, 3});
  m.Output("z", {-1, 4});
  m.Output("y", {2, 3});
  m.Node("Add", {"a", "s"}, {"z"}, "plus");  // dim 0: `?` vs `?`; dim 1: `?` vs a static 4
  m.Node("Expand", {"e", "shape"}, {"y"}, "expand");  // `?` vs a static 3
  std::string mod = Build(m, "static_broadcast");
  auto add = [](float x, float y) { return x + y; };
  struct Shapes {
    int64_t ar, ac, sr, e;
  };
  // Equal extents, then a's run-time 1 against the static 4 (with and without a 1 in dim 0).
  for (Shapes k : {Shapes{2, 4, 2, 3}, Shapes{2, 1, 2, 1}, Shapes{1, 1, 3, 3}, Shapes{3, 4, 1, 1}}) {
    std::vector<float> a = Iota(k.ar * k.ac, 1), sv = Iota(k.sr * 4, 10), e = Iota(k.e, 5);
    int64_t rows = std::max(k.ar, k.sr);
    INFO(k.ar << "x" << k.ac << " + " << k.sr << "x4, Expand of " << k.e);
    std::istringstream lines(Run(mod, {Tensor2(k.ar, k.ac, a), Tensor2(k.sr, 4, sv),
                                       std::to_string(k.e) + "xf32=" + Floats(e)}));
    std::string z, y;
    std::getline(lines, z);
    std::getline(lines, y);
    CHECK(Prefix(z) == std::to_string(rows) + "x4xf32");
    CHECK(ParseFloats(z) == BroadcastReference(a, k.ar, k.ac, sv, k.sr, 4, add));
    CHECK(Prefix(y) == "2x3xf32");
    CHECK(ParseFloats(y) == BroadcastReference(e, 1, k.e, std::vector<float>(6, 0.0f), 2, 3, add));
  }
  struct Bad {
    int64_t ac, e;
    const char* message;
  };
  for (Bad k : {Bad{3, 3, "node 'plus' (op Add): dimension 1 of operand 1 is 4 and of operand 0 is 3: they do not "
                          "broadcast (extents must be equal or 1)"},
                Bad{4, 2, "node 'expand' (op Expand): dimension 1 of operand 1 is 3 and of operand 0 is 2: they do "
                          "not broadcast (extents must be equal or 1)"}}) {
    int code = 0;
    std::string bad = RunMainWith(mod, {Tensor2(2, k.ac, Iota(2 * k.ac, 1)), Tensor2(2, 4, Iota(8, 1)),
                                        std::to_string(k.e) + "xf32=" + Floats(Iota(k.e, 1))}, &code);
    INFO(bad);
    CHECK(code == 1);
    CHECK(bad.find(k.message) != std::string::npos);
  }
}

TEST_CASE("Expand to a shape read at run time broadcasts a run-time 1 of its `?` input") {
  Graph m;
  m.Input("x", {-1, -1});
  m.Input("shape", {2}, kI64);
  m.Output("y", {-1, -1});
  m.Node("Expand", {"x", "shape"}, {"y"}, "expand");
  std::string mod = Build(m, "runtime_expand");
  std::string y = Run(mod, {"3x1xf32=1 2 3", "2xi64=3 4"});
  CHECK(Prefix(y) == "3x4xf32");
  CHECK(ParseFloats(y) == std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  y = Run(mod, {"1x4xf32=1 2 3 4", "2xi64=2 1"});
  CHECK(Prefix(y) == "2x4xf32");
  CHECK(ParseFloats(y) == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
}

// numpy's matmul of a [ab, m, k] and b [bb, k, n], batch extents equal or 1.
std::vector<float> BatchMatMulReference(const std::vector<float>& a, int64_t ab, const std::vector<float>& b,
                                        int64_t bb, int64_t m, int64_t k, int64_t n) {
  std::vector<float> r;
  for (int64_t i = 0; i < std::max(ab, bb); ++i)
    for (int64_t row = 0; row < m; ++row)
      for (int64_t col = 0; col < n; ++col) {
        float sum = 0;
        for (int64_t j = 0; j < k; ++j)
          sum += a[((ab == 1 ? 0 : i) * m + row) * k + j] * b[((bb == 1 ? 0 : i) * k + j) * n + col];
        r.push_back(sum);
      }
  return r;
}

std::string Tensor3(int64_t batch, int64_t rows, int64_t cols, const std::vector<float>& v) {
  return std::to_string(batch) + "x" + Tensor2(rows, cols, v);
}

TEST_CASE("MatMul broadcasts a run-time 1 in a batch dim against a static or another `?` extent; other extents fail naming both") {
  Graph m;
  m.Input("a", {-1, 2, 3});
  m.Input("c", {-1, 3, 2});
  const std::vector<float> w = Iota(24, -7);
  m.InitF("w", {4, 3, 2}, w);
  m.Output("y", {4, 2, 2});
  m.Output("z", {-1, 2, 2});
  m.Node("MatMul", {"a", "w"}, {"y"}, "by_weight");  // `?` vs a static 4
  m.Node("MatMul", {"a", "c"}, {"z"}, "by_input");   // `?` vs another `?`
  std::string mod = Build(m, "runtime_batch_matmul");
  // Equal extents, then a run-time 1 in a (against 4 and 3), in c, in both.
  for (auto [ab, cb] : {std::pair<int64_t, int64_t>{4, 4}, {1, 3}, {4, 1}, {1, 1}}) {
    std::vector<float> a = Iota(ab * 6, -3), cv = Iota(cb * 6, 2);
    INFO("a batch " << ab << ", c batch " << cb);
    std::istringstream lines(Run(mod, {Tensor3(ab, 2, 3, a), Tensor3(cb, 3, 2, cv)}));
    std::string y, z;
    std::getline(lines, y);
    std::getline(lines, z);
    CHECK(Prefix(y) == "4x2x2xf32");
    CHECK(ParseFloats(y) == BatchMatMulReference(a, ab, w, 4, 2, 3, 2));
    CHECK(Prefix(z) == std::to_string(std::max(ab, cb)) + "x2x2xf32");
    CHECK(ParseFloats(z) == BatchMatMulReference(a, ab, cv, cb, 2, 3, 2));
  }
  struct Bad {
    int64_t ab, cb;
    const char* message;
  };
  for (Bad k : {Bad{3, 3, "node 'by_weight' (op MatMul): dimension 0 of operand 1 is 4 and of operand 0 is 3: they "
                          "do not broadcast (extents must be equal or 1)"},
                Bad{4, 2, "node 'by_input' (op MatMul): dimension 0 of operand 0 is 4 and of operand 1 is 2: they "
                          "do not broadcast (extents must be equal or 1)"}}) {
    int code = 0;
    std::string bad =
        RunMainWith(mod, {Tensor3(k.ab, 2, 3, Iota(k.ab * 6, 1)), Tensor3(k.cb, 3, 2, Iota(k.cb * 6, 1))}, &code);
    INFO(bad);
    CHECK(code == 1);
    CHECK(bad.find(k.message) != std::string::npos);
  }
}

TEST_CASE("extents computed apart but equal (padded conv, stride-2 branches, one dim_param) need no run-time choice") {
  Graph m;
  m.Input("x", {1, 1, -1, -1});
  m.Output("y", {1, 1, -1, -1});
  m.Output("d", {1, 1, -1, -1});
  m.InitF("w3", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  m.InitF("w1", {1, 1, 1, 1}, {2.0f});
  auto* same = m.Node("Conv", {"x", "w3"}, {"c"}, "same");  // (h + 2 - 3) / 1 + 1 = h
  Graph::AttrInts(same, "pads", {1, 1, 1, 1});
  m.Node("Add", {"c", "x"}, {"y"}, "residual");
  auto* down3 = m.Node("Conv", {"x", "w3"}, {"p"}, "down3");  // (h + 2 - 3) / 2 + 1
  Graph::AttrInts(down3, "pads", {1, 1, 1, 1});
  Graph::AttrInts(down3, "strides", {2, 2});
  auto* down1 = m.Node("Conv", {"x", "w1"}, {"q"}, "down1");  // (h - 1) / 2 + 1
  Graph::AttrInts(down1, "strides", {2, 2});
  m.Node("Add", {"p", "q"}, {"d"}, "downsample");
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  // No broadcast choice (each comes with its hexir.check; the checks left are the windows'
  // non-empty planes); the one scf.if is down1's end pad, nonzero only on an empty plane
  // (Context::Pad: x passes through when it pads nothing).
  CHECK(r->find("scf.if") == r->rfind("scf.if"));
  CHECK(r->find("do not broadcast") == std::string::npos);
  std::string mod = CompileForCpu(*r, "equal_extents");
  REQUIRE(!mod.empty());
  std::istringstream lines(Run(mod, {"1x1x3x3xf32=1 1 1 1 1 1 1 1 1"}));
  std::string y, d;
  std::getline(lines, y);
  std::getline(lines, d);
  // y = 3x3 box sums of ones (4 6 4 / 6 9 6 / 4 6 4) + 1; d at (0,0),(0,2),(2,0),(2,2): box sum + 2.
  CHECK(Prefix(y) == "1x1x3x3xf32");
  CHECK(ParseFloats(y) == std::vector<float>{5, 7, 5, 7, 10, 7, 5, 7, 5});
  CHECK(Prefix(d) == "1x1x2x2xf32");
  CHECK(ParseFloats(d) == std::vector<float>{6, 6, 6, 6});

  Graph two;  // two graph inputs sharing a dim_param: one value, checked equal at entry
  two.Input("a", {-1});
  two.Input("b", {-1});
  two.g->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
      two.g->input(0).type().tensor_type().shape().dim(0).dim_param());
  two.Output("s", {-1});
  two.Node("Add", {"a", "b"}, {"s"}, "sum");
  auto t = ox::ImportOnnxModel(two.model);
  REQUIRE(t.ok());
  CHECK(t->find("scf.if") == std::string::npos);
  std::string tmod = CompileForCpu(*t, "shared_dim_param");
  REQUIRE(!tmod.empty());
  CHECK(ParseFloats(Run(tmod, {"2xf32=1 2", "2xf32=10 20"})) == std::vector<float>{11, 22});
  int code = 0;
  std::string bad = RunMainWith(tmod, {"2xf32=1 2", "1xf32=10"}, &code);
  INFO(bad);
  CHECK(code == 1);
  const std::string param = two.g->input(0).type().tensor_type().shape().dim(0).dim_param();
  CHECK(bad.find("graph input 'a' dimension 0 ('" + param + "') is 2 and graph input 'b' dimension 0 is 1: dims of "
                 "one name must be equal") != std::string::npos);
}

TEST_CASE("a run-time end pad (ceil-mode pool, window past a small input) pads only where it reaches past x") {
  // MaxPool 3x3 / 2, ceil_mode, over x[i][j] = i * w + j + 1: each output is the in-bounds
  // bottom-right element of its window. On 5 x 5 the last window ends at the edge (no pad: the
  // host passes x through); on 6 x 6 it reaches one past it (the -inf pad runs).
  Graph m;
  m.Input("x", {1, 1, -1, -1});
  m.Output("y", {1, 1, -1, -1});
  auto* pool = m.Node("MaxPool", {"x"}, {"y"}, "pool");
  Graph::AttrInts(pool, "kernel_shape", {3, 3});
  Graph::AttrInts(pool, "strides", {2, 2});
  Graph::AttrI(pool, "ceil_mode", 1);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(r->find("scf.if") != std::string::npos);
  std::string mod = CompileForCpu(*r, "ceil_pool_end_pad");
  REQUIRE(!mod.empty());
  auto ramp = [](int n) {
    std::vector<float> v;
    for (int i = 1; i <= n * n; ++i) v.push_back(static_cast<float>(i));
    return "1x1x" + std::to_string(n) + "x" + std::to_string(n) + "xf32=" + Floats(v);
  };
  std::string five = Run(mod, {ramp(5)});
  CHECK(Prefix(five) == "1x1x2x2xf32");
  CHECK(ParseFloats(five) == std::vector<float>{13, 15, 23, 25});
  std::string six = Run(mod, {ramp(6)});
  CHECK(Prefix(six) == "1x1x3x3xf32");
  CHECK(ParseFloats(six) == std::vector<float>{15, 17, 18, 27, 29, 30, 33, 35, 36});

  // A 3x3 / 2 convolution without pads over a 2 x 2 input: ONNX's truncating output size
  // ((2 - 3) / 2 + 1) gives one output, its window reaching one past x on each axis (zeros
  // there); over 4 x 4 it stays inside.
  Graph c;
  c.Input("x", {1, 1, -1, -1});
  c.Output("y", {1, 1, -1, -1});
  c.InitF("w", {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto* conv = c.Node("Conv", {"x", "w"}, {"y"}, "conv");
  Graph::AttrInts(conv, "strides", {2, 2});
  auto cr = ox::ImportOnnxModel(c.model);
  INFO((cr.ok() ? std::string() : cr.status().message()));
  REQUIRE(cr.ok());
  std::string cmod = CompileForCpu(*cr, "conv_end_pad");
  REQUIRE(!cmod.empty());
  std::string small = Run(cmod, {"1x1x2x2xf32=1 2 3 4"});
  CHECK(Prefix(small) == "1x1x1x1xf32");
  CHECK(ParseFloats(small) == std::vector<float>{1 * 1 + 2 * 2 + 3 * 4 + 4 * 5});
  std::string four = Run(cmod, {ramp(4)});
  CHECK(Prefix(four) == "1x1x1x1xf32");
  // sum w[a][b] * x[a][b] = sum (3a + b + 1)(4a + b + 1) over a, b < 3.
  CHECK(ParseFloats(four) == std::vector<float>{348});
}

TEST_CASE("a window over an empty spatial extent is an error naming the node and the dim") {
  // onnxruntime refuses it ("Invalid input shape. Only N can be zero"); padded, the windows
  // would read only the pad value and answer with made-up numbers. At run time for a `?`
  // extent, at import for a static one; an empty batch is fine.
  Graph m;
  m.Input("x", {1, 1, -1, -1});
  m.Output("y", {1, 1, -1, -1});
  m.InitF("w", {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto* conv = m.Node("Conv", {"x", "w"}, {"c"}, "conv");
  Graph::AttrInts(conv, "pads", {1, 1, 1, 1});
  auto* pool = m.Node("MaxPool", {"c"}, {"y"}, "pool");
  Graph::AttrInts(pool, "kernel_shape", {2, 2});
  std::string mod = Build(m, "empty_window");
  std::string ok = Run(mod, {"1x1x2x2xf32=1 2 3 4"});
  CHECK(Prefix(ok) == "1x1x1x1xf32");
  // The padded 3x3 sums over the 2 x 2 input, their max: the top-left output's window.
  CHECK(ParseFloats(ok) == std::vector<float>{5 * 1 + 6 * 2 + 8 * 3 + 9 * 4});
  struct Bad {
    const char* input;
    const char* message;
  };
  for (Bad k : {Bad{"1x1x0x4xf32=0", "node 'conv' (op Conv): spatial dimension 0 of the input (dim 2) is 0: a "
                                     "window needs at least one input position"},
                Bad{"1x1x4x0xf32=0", "node 'conv' (op Conv): spatial dimension 1 of the input (dim 3) is 0: a "
                                     "window needs at least one input position"}}) {
    int code = 0;
    std::string bad = RunMainWith(mod, {k.input}, &code);
    INFO(bad);
    CHECK(code == 1);
    CHECK(bad.find(k.message) != std::string::npos);
  }

  Graph nb;  // a run-time batch: an empty one places no window, whatever the plane
  nb.Input("x", {-1, 1, -1, -1});
  nb.Output("y", {-1, 1, -1, -1});
  auto* npool = nb.Node("MaxPool", {"x"}, {"y"}, "pool");
  Graph::AttrInts(npool, "kernel_shape", {2, 2});
  Graph::AttrInts(npool, "pads", {1, 1, 1, 1});
  std::string nmod = Build(nb, "empty_batch_window");
  CHECK(Prefix(Run(nmod, {"0x1x0x4xf32=0"})) == "0x1x1x5xf32");
  int code = 0;
  std::string bad = RunMainWith(nmod, {"2x1x0x4xf32=0"}, &code);
  INFO(bad);
  CHECK(code == 1);
  CHECK(bad.find("node 'pool' (op MaxPool): spatial dimension 0 of the input (dim 2) is 0: a window needs at least "
                 "one input position") != std::string::npos);

  Graph s;
  s.Input("x", {1, 1, 0, 4});
  s.Output("y", {1, 1, -1, -1});
  auto* spool = s.Node("AveragePool", {"x"}, {"y"}, "avg");
  Graph::AttrInts(spool, "kernel_shape", {1, 1});
  auto r = ox::ImportOnnxModel(s.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("node 'avg' (op AveragePool): spatial dimension 0 of the input (dim 2) is 0: a "
                                  "window needs at least one input position") != std::string::npos);
}

TEST_CASE("a shape operand that is not a short integer vector is an error naming it") {
  Graph m;
  m.Input("x", {2, 3});
  m.Input("shape", {-1}, kI64);
  m.Output("y", {-1, -1});
  m.Node("Reshape", {"x", "shape"}, {"y"}, "reshape_any");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'reshape_any' (op Reshape): the shape must be a constant, computed from shapes, or a 1-D "
        "integer tensor of at most 64 elements");
}

TEST_CASE("NonZero and Compress size their outputs from a count computed on the device") {
  Graph nz;
  nz.Input("x", {2, 3});
  nz.Output("y", {2, -1}, kI64);
  nz.Node("NonZero", {"x"}, {"y"});
  std::string mod = Build(nz, "nonzero_runtime");
  // non-zeros at (0,1), (1,0), (1,2): rows then columns
  CHECK(Run(mod, {"2x3xf32=0 4 0 5 0 6"}).find("2x3xi64=0 1 1 1 0 2") != std::string::npos);
  CHECK(Prefix(Run(mod, {"2x3xf32=0"})) == "2x0xi64");

  Graph cp;
  cp.Input("x", {2, 3});
  cp.Input("keep", {3}, kBool);
  cp.Output("y", {2, -1});
  auto* n = cp.Node("Compress", {"x", "keep"}, {"y"});
  Graph::AttrI(n, "axis", 1);
  mod = Build(cp, "compress_runtime");
  CHECK(ParseFloats(Run(mod, {"2x3xf32=1 2 3 4 5 6", "3xi1=1 0 1"})) == std::vector<float>{1, 3, 4, 6});
  CHECK(Prefix(Run(mod, {"2x3xf32=1 2 3 4 5 6", "3xi1=0 1 0"})) == "2x1xf32");
}

TEST_CASE("detection heads: TopK of a run-time k, If branches of different extents, scatters of run-time counts") {
  // torchvision's SSD / Faster R-CNN: k = min(top_n, anchors kept) known at run time; an If
  // whose branches yield an empty tensor<0xi64> or a run-time count; boxes scattered back by
  // level (ScatterElements of [n, 3] rows, ScatterND of n tuples, n possibly 0).
  Graph top;
  top.Input("x", {2, 5});
  top.Input("k", {1}, kI64);
  top.Output("values", {2, -1});
  top.Output("indices", {2, -1}, kI64);
  top.Node("TopK", {"x", "k"}, {"values", "indices"}, "top");
  std::string mod = Build(top, "topk_runtime_k");
  {
    std::istringstream lines(Run(mod, {"2x5xf32=3 9 1 9 4 0 -1 7 2 5", "1xi64=3"}));
    std::string v, i;
    std::getline(lines, v);
    std::getline(lines, i);
    CHECK(v == "2x3xf32=9 9 4 7 5 2");
    CHECK(i == "2x3xi64=1 3 4 2 4 3");
  }
  CHECK(Prefix(Run(mod, {"2x5xf32=3 9 1 9 4 0 -1 7 2 5", "1xi64=0"})) == "2x0xf32");
  int code = 0;
  std::string err = RunMainWith(mod, {"2x5xf32=3 9 1 9 4 0 -1 7 2 5", "1xi64=6"}, &code);
  CHECK(code != 0);
  CHECK(err.find("node 'top' (op TopK): k = 6 is outside [0, the extent of axis 1]") != std::string::npos);

  Graph choose;
  choose.Input("cond", {1}, ::onnx::TensorProto::BOOL);
  choose.Input("x", {-1}, kI64);
  choose.Output("y", {-1}, kI64);
  auto* n = choose.Node("If", {"cond"}, {"y"}, "choose");
  auto* then_g = Graph::AttrGraph(n, "then_branch");
  auto* none = Graph::AddNode(then_g, "Constant", {}, {"none"});
  auto* a = none->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(kI64);
  a->mutable_t()->add_dims(0);
  Graph::Value(then_g->add_output(), "none", {0}, kI64);
  auto* else_g = Graph::AttrGraph(n, "else_branch");
  Graph::AddNode(else_g, "Neg", {"x"}, {"neg"});
  Graph::Value(else_g->add_output(), "neg", {-1}, kI64);
  mod = Build(choose, "if_joined_extents");
  CHECK(Run(mod, {"1xi1=1", "3xi64=1 2 3"}).rfind("0xi64=\n", 0) == 0);
  CHECK(Run(mod, {"1xi1=0", "3xi64=1 2 3"}).rfind("3xi64=-1 -2 -3\n", 0) == 0);

  // Update (i, j) of a [4, 3] data goes to row indices[i][j] of column j (the last of two
  // aimed at one element wins: 70 over 50, 71 over 51); updates two columns wide leave
  // column 2; no row at all: data.
  Graph rows;
  rows.Input("data", {4, 3});
  rows.Input("indices", {-1, 2}, kI64);
  rows.Input("updates", {-1, 2});
  rows.Output("y", {4, 3});
  Graph::AttrI(rows.Node("ScatterElements", {"data", "indices", "updates"}, {"y"}, "scatter_rows"), "axis", 0);
  mod = Build(rows, "scatter_elements_runtime_rows");
  const std::string data = "4x3xf32=0 1 2 3 4 5 6 7 8 9 10 11";
  CHECK(ParseFloats(Run(mod, {data, "3x2xi64=3 -4 1 1 3 0", "3x2xf32=50 51 60 61 70 71"})) ==
        std::vector<float>{0, 71, 2, 60, 61, 5, 6, 7, 8, 70, 10, 11});
  CHECK(ParseFloats(Run(mod, {data, "0x2xi64=", "0x2xf32="})) ==
        std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  err = RunMainWith(mod, {data, "1x2xi64=4 0", "1x2xf32=1 2"}, &code);
  CHECK(code != 0);
  CHECK(err.find("out_of_range") != std::string::npos);

  Graph tuples;
  tuples.Input("data", {4, 3});
  tuples.Input("indices", {-1, 1}, kI64);
  tuples.Input("updates", {-1, 3});
  tuples.Output("y", {4, 3});
  tuples.Node("ScatterND", {"data", "indices", "updates"}, {"y"}, "scatter_tuples");
  mod = Build(tuples, "scatter_nd_runtime_tuples");
  CHECK(ParseFloats(Run(mod, {data, "3x1xi64=2 -1 2", "3x3xf32=50 51 52 60 61 62 70 71 72"})) ==
        std::vector<float>{0, 1, 2, 3, 4, 5, 70, 71, 72, 60, 61, 62});
  CHECK(ParseFloats(Run(mod, {data, "0x1xi64=", "0x3xf32="})) ==
        std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

TEST_CASE("ScatterElements of an expanded index: PyTorch's index_put of rows, as Faster R-CNN's RoI merge exports it") {
  // y[idx[i], :, :] = updates[i] exports as ScatterElements(data, Expand(Reshape(idx, [n, 1, 1]),
  // Shape(updates)), updates) along axis 0: the importer reads the index before its
  // expansion (one winner per row), with the same results as the general scatter: the last
  // of two updates aimed at one row wins, negative indices count from the end, updates
  // narrower than data off the axis leave the rest, no update leaves data, and an index
  // outside [-n, n) fails the call.
  Graph rows;
  rows.Input("data", {4, 2, 3});
  rows.Input("idx", {-1}, kI64);
  rows.Input("updates", {-1, 2, -1});
  rows.Output("y", {4, 2, 3});
  rows.InitI("column", {-1, 1, 1});
  rows.InitI("zero", {0});
  rows.InitI("one", {1});
  rows.InitI("three", {3});
  rows.Node("Reshape", {"idx", "column"}, {"idx3"});
  // The expanded shape as PyTorch writes it: the index's own count, the updates' other dims.
  rows.Node("Shape", {"idx3"}, {"idx_shape"});
  rows.Node("Slice", {"idx_shape", "zero", "one"}, {"count"});
  rows.Node("Shape", {"updates"}, {"upd_shape"});
  rows.Node("Slice", {"upd_shape", "one", "three"}, {"row_shape"});
  Graph::AttrI(rows.Node("Concat", {"count", "row_shape"}, {"expand_shape"}), "axis", 0);
  rows.Node("Expand", {"idx3", "expand_shape"}, {"expanded"});
  Graph::AttrI(rows.Node("ScatterElements", {"data", "expanded", "updates"}, {"y"}, "merge"), "axis", 0);
  std::string mod = Build(rows, "scatter_elements_expanded_rows");
  {
    // One winner per row: a table of data's 4 rows by the collapsed dims.
    auto text = ox::ImportOnnxModel(rows.model);
    REQUIRE(text.ok());
    CHECK(text->find("tensor<4x1x1xi64>") != std::string::npos);
  }
  const std::string data = "4x2x3xf32=0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23";
  // Row 3 twice (-1, then 3: the second wins), row 0 once.
  CHECK(ParseFloats(Run(mod, {data, "3xi64=-1 0 3", "3x2x3xf32=50 51 52 53 54 55 60 61 62 63 64 65 70 71 72 73 74 75"})) ==
        std::vector<float>{60, 61, 62, 63, 64, 65, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 70, 71, 72, 73, 74, 75});
  // Updates two columns wide: column 2 keeps data.
  CHECK(ParseFloats(Run(mod, {data, "2xi64=2 1", "2x2x2xf32=50 51 52 53 60 61 62 63"})) ==
        std::vector<float>{0, 1, 2, 3, 4, 5, 60, 61, 8, 62, 63, 11, 50, 51, 14, 52, 53, 17, 18, 19, 20, 21, 22, 23});
  CHECK(ParseFloats(Run(mod, {data, "0xi64=", "0x2x3xf32="})) ==
        std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  int code = 0;
  std::string err = RunMainWith(mod, {data, "1xi64=4", "1x2x3xf32=1 2 3 4 5 6"}, &code);
  CHECK(code != 0);
  CHECK(err.find("out_of_range") != std::string::npos);

  // An index that varies along dim 1 too ([n, 2, 1] expanded to [n, 2, 3]): the winner is
  // per (row, dim 1 position); element (i, j, k) goes to row idx[i][j].
  Graph cells;
  cells.Input("data", {3, 2, 3});
  cells.Input("idx", {-1, 2, 1}, kI64);
  cells.Input("updates", {-1, 2, 3});
  cells.Output("y", {3, 2, 3});
  cells.InitI("zero", {0});
  cells.InitI("two", {2});
  cells.InitI("three", {3});
  cells.Node("Shape", {"idx"}, {"idx_shape"});
  cells.Node("Slice", {"idx_shape", "zero", "two"}, {"cell_count"});
  cells.Node("Shape", {"updates"}, {"upd_shape"});
  cells.Node("Slice", {"upd_shape", "two", "three"}, {"width"});
  Graph::AttrI(cells.Node("Concat", {"cell_count", "width"}, {"expand_shape"}), "axis", 0);
  cells.Node("Expand", {"idx", "expand_shape"}, {"expanded"});
  Graph::AttrI(cells.Node("ScatterElements", {"data", "expanded", "updates"}, {"y"}), "axis", 0);
  mod = Build(cells, "scatter_elements_expanded_cells");
  {
    auto text = ox::ImportOnnxModel(cells.model);
    REQUIRE(text.ok());
    CHECK(text->find("tensor<3x2x1xi64>") != std::string::npos);
  }
  CHECK(ParseFloats(Run(mod, {"3x2x3xf32=0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", "2x2x1xi64=2 0 2 1",
                              "2x2x3xf32=50 51 52 53 54 55 60 61 62 63 64 65"})) ==
        std::vector<float>{0, 1, 2, 53, 54, 55, 6, 7, 8, 63, 64, 65, 60, 61, 62, 15, 16, 17});
}

TEST_CASE("Concat of run-time extents, some empty: a detection level without boxes") {
  // RetinaNet and FCOS concatenate per-level scores and boxes whose counts are known at run
  // time; a level may keep none. Its clamped read was index -1 of an empty tensor
  // ("index -1 out of range [0, 0)").
  Graph m;
  m.Input("a", {-1, 2});
  m.Input("b", {-1, 2});
  m.Input("c", {-1, 2});
  m.Output("y", {-1, 2});
  Graph::AttrI(m.Node("Concat", {"a", "b", "c"}, {"y"}), "axis", 0);
  std::string mod = Build(m, "concat_runtime_empty");
  CHECK(ParseFloats(Run(mod, {"1x2xf32=1 2", "0x2xf32=", "2x2xf32=5 6 7 8"})) == std::vector<float>{1, 2, 5, 6, 7, 8});
  CHECK(ParseFloats(Run(mod, {"0x2xf32=", "1x2xf32=3 4", "0x2xf32="})) == std::vector<float>{3, 4});
  CHECK(ParseFloats(Run(mod, {"2x2xf32=1 2 3 4", "0x2xf32=", "0x2xf32="})) == std::vector<float>{1, 2, 3, 4});
  CHECK(Prefix(Run(mod, {"0x2xf32=", "0x2xf32=", "0x2xf32="})) == "0x2xf32");
}

TEST_CASE("Split of a run-time dim: given sizes checked against it, equal slices of run-time extent") {
  // PyTorch's `list(images)` over a dynamic batch (torchvision's detection models) exports as
  // Split(x, [1]) along the batch: fine when the batch is 1, a named error otherwise.
  Graph listed;
  listed.Input("x", {-1, 3});
  listed.Output("y", {1, 3});
  listed.InitI("one", {1});
  listed.Node("Split", {"x", "one"}, {"y"}, "list_images");
  std::string mod = Build(listed, "split_runtime_sizes");
  CHECK(Run(mod, {"1x3xf32=1 2 3"}).rfind("1x3xf32=1 2 3\n", 0) == 0);
  int code = 0;
  std::string err = RunMainWith(mod, {"2x3xf32=1 2 3 4 5 6"}, &code);
  CHECK(code != 0);
  CHECK(err.find("node 'list_images' (op Split): dimension 0 is 2 where the split sizes sum to 1") != std::string::npos);

  // No sizes: ceil(n / 2) and the rest.
  Graph halves;
  halves.Input("x", {-1});
  halves.Output("a", {-1});
  halves.Output("b", {-1});
  halves.Node("Split", {"x"}, {"a", "b"});
  mod = Build(halves, "split_runtime_halves");
  {
    std::istringstream lines(Run(mod, {"5xf32=1 2 3 4 5"}));
    std::string a, b;
    std::getline(lines, a);
    std::getline(lines, b);
    CHECK(a == "3xf32=1 2 3");
    CHECK(b == "2xf32=4 5");
  }
  {
    std::istringstream lines(Run(mod, {"4xf32=1 2 3 4"}));
    std::string a, b;
    std::getline(lines, a);
    std::getline(lines, b);
    CHECK(a == "2xf32=1 2");
    CHECK(b == "2xf32=3 4");
  }
}

TEST_CASE("a bool initializer too large to fold (a stored attention mask) compiles and selects") {
  // Its constant reached the module's read-only data as i1, which the bytecode writer
  // refused ("unsupported rodata element type 'i1'"); booleans are one byte each in buffers.
  constexpr int n = 5000;
  Graph m;
  m.Input("x", {n});
  m.Input("y", {n});
  m.Output("z", {n});
  auto* mask = m.g->add_initializer();
  mask->set_name("mask");
  mask->set_data_type(::onnx::TensorProto::BOOL);
  mask->add_dims(n);
  std::string bytes(n, '\0');
  for (int i = 0; i < n; i += 3) bytes[i] = 1;
  mask->set_raw_data(bytes);
  m.Node("Where", {"mask", "x", "y"}, {"z"});
  std::string mod = Build(m, "bool_initializer");
  std::vector<float> z = ParseFloats(Run(mod, {"5000xf32=1", "5000xf32=2"}));
  REQUIRE(z.size() == static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) CHECK(z[i] == (i % 3 == 0 ? 1.0f : 2.0f));
}

TEST_CASE("a 2-D bool initializer small enough to fold selects as stored") {
  // Its constant is written 1-D and reshaped; the reshape of known contents folded back to an
  // unnamed value, and the module referred to it by an empty name (`ins( : tensor<3x4xi1>)`).
  Graph m;
  m.Input("x", {3, 4});
  m.Input("y", {3, 4});
  m.Output("z", {3, 4});
  auto* mask = m.g->add_initializer();
  mask->set_name("mask");
  mask->set_data_type(::onnx::TensorProto::BOOL);
  mask->add_dims(3);
  mask->add_dims(4);
  std::string bytes(12, '\0');
  for (int i = 0; i < 12; i += 5) bytes[i] = 1;
  mask->set_raw_data(bytes);
  m.Node("Where", {"mask", "x", "y"}, {"z"});
  std::string mod = Build(m, "bool_initializer_2d");
  std::vector<float> z = ParseFloats(Run(mod, {"3x4xf32=1", "3x4xf32=2"}));
  REQUIRE(z.size() == 12u);
  for (int i = 0; i < 12; ++i) CHECK(z[i] == (i % 5 == 0 ? 1.0f : 2.0f));
}
