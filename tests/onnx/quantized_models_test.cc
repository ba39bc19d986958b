// Quantized ONNX models compiled for the CPU and for CUDA (compiler/importers/onnx/
// Quantization.cc): the QOperator form (QuantizeLinear, QLinearConv, ConvInteger,
// QLinearMatMul, MatMulInteger, DynamicQuantizeLinear) and the QDQ form (per-channel int8
// weights, uint8 activations), uint8/int8 operands with int32 accumulation, each checked
// element for element against integer references written here as onnxruntime computes them:
// round half to even, add the zero point, saturate; requantization by the f32 multiplier
// x_scale * w_scale / y_scale. The inputs are multiples of half a quantization step, so many
// of them are ties. The [cuda] cases compile for --target=cuda here and run on the GPU machine
// (modules precompiled by tools/gpu/pack.sh); elsewhere they print HEXIR_SKIPPED.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
namespace e2e = hexir::e2e;
using hexir::hal::ElementType;
using hexir::tools::HostTensor;
using hexir::tools::HostValue;
using ox::testing::Graph;

constexpr int kI8 = ::onnx::TensorProto::INT8;
constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI32 = ::onnx::TensorProto::INT32;

// The image x [1, 3, 7, 7] is quantized with step kSx and zero point kZx; its values are
// multiples of kSx / 2 (ties) and reach past the uint8 range at both ends.
constexpr float kSx = 1.0f / 64;
constexpr int kZx = 128;
constexpr int kC = 3, kH = 7, kF = 4, kK = 3;

std::vector<int> RandomInts(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = u(rng);
  return v;
}

// Multiples of 1/`denominator` between -range and range.
std::vector<float> Steps(size_t n, int range, float denominator, unsigned seed) {
  std::vector<float> v;
  for (int k : RandomInts(n, -range, range, seed)) v.push_back(static_cast<float>(k) / denominator);
  return v;
}

// onnxruntime's quantizer: f rounded half to even, plus the zero point, saturated to [lo, hi].
int Saturate(float f, int zp, int lo, int hi) {
  float q = std::nearbyint(f) + static_cast<float>(zp);  // the default rounding mode: to even
  return static_cast<int>(std::fmin(std::fmax(q, static_cast<float>(lo)), static_cast<float>(hi)));
}

std::vector<int> Quantize(const std::vector<float>& x, float scale, int zp, int lo, int hi) {
  std::vector<int> q;
  for (float v : x) q.push_back(Saturate(v / scale, zp, lo, hi));
  return q;
}

// sum over (c, ky, kx) of (x - zx) * (w[f] - zw[f]) for one image [kC, kH, kH] and weights
// [F, kC, kK, kK], padding `pad` (a padded x counts as zx: it adds nothing), stride `stride`.
std::vector<int32_t> ConvReference(const std::vector<int>& x, int zx, const std::vector<int>& w,
                                   const std::vector<int>& zw, int pad, int stride) {
  const int out = (kH + 2 * pad - kK) / stride + 1;
  std::vector<int32_t> y;
  for (int f = 0; f < kF; ++f)
    for (int oy = 0; oy < out; ++oy)
      for (int ox = 0; ox < out; ++ox) {
        int32_t acc = 0;
        for (int c = 0; c < kC; ++c)
          for (int ky = 0; ky < kK; ++ky)
            for (int kx = 0; kx < kK; ++kx) {
              int iy = oy * stride + ky - pad, ix = ox * stride + kx - pad;
              if (iy < 0 || iy >= kH || ix < 0 || ix >= kH) continue;
              acc += (x[(c * kH + iy) * kH + ix] - zx) * (w[((f * kC + c) * kK + ky) * kK + kx] - zw[f]);
            }
        y.push_back(acc);
      }
  return y;
}

// sum over k of (a[i][k] - za) * (b[k][j] - zb) for a [rows, depth] and b [depth, cols].
std::vector<int32_t> MatMulReference(const std::vector<int>& a, int za, const std::vector<int>& b, int zb,
                                     int rows, int depth, int cols) {
  std::vector<int32_t> y;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < depth; ++k) acc += (a[i * depth + k] - za) * (b[k * cols + j] - zb);
      y.push_back(acc);
    }
  return y;
}

// An integer initializer (INT8, UINT8 or INT32: ONNX keeps them all in int32_data).
void InitInts(Graph& m, const std::string& name, int type, std::vector<int64_t> dims, const std::vector<int>& values) {
  auto* t = m.g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (int v : values) t->add_int32_data(v);
}

HostValue F32Tensor(std::vector<int64_t> dims, const std::vector<float>& values) {
  HostTensor t;
  t.element_type = static_cast<int32_t>(ElementType::kF32);
  t.dims = std::move(dims);
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return e2e::Tensor(std::move(t));
}

// A result's elements as integers: `type` is the ONNX element type the graph declares (uint8
// travels as the runtime's i8).
std::vector<int> Ints(const HostValue& v, int type, std::vector<int64_t> dims) {
  const HostTensor& t = v.tensor;
  REQUIRE(t.dims == dims);
  std::vector<int> r;
  if (type == kI32) {
    REQUIRE(t.element_type == static_cast<int32_t>(ElementType::kI32));
    for (size_t i = 0; i < t.bytes.size(); i += 4) {
      int32_t x;
      std::memcpy(&x, &t.bytes[i], 4);
      r.push_back(x);
    }
    return r;
  }
  REQUIRE(t.element_type == static_cast<int32_t>(ElementType::kI8));
  for (uint8_t byte : t.bytes) r.push_back(type == kU8 ? static_cast<int>(byte) : static_cast<int8_t>(byte));
  return r;
}

std::vector<float> Floats(const HostValue& v, std::vector<int64_t> dims) {
  const HostTensor& t = v.tensor;
  REQUIRE(t.element_type == static_cast<int32_t>(ElementType::kF32));
  REQUIRE(t.dims == dims);
  std::vector<float> r(t.bytes.size() / 4);
  std::memcpy(r.data(), t.bytes.data(), t.bytes.size());
  return r;
}

// Imports m, compiles it for `device` (here, or taken precompiled on the GPU machine) and runs
// main on `inputs`; the [cuda] case stops here (HEXIR_SKIPPED) where there is no GPU.
std::vector<HostValue> ImportAndRun(Graph& m, const std::string& name, const std::string& device,
                                    const std::vector<HostValue>& inputs) {
  auto mlir = ox::ImportOnnxModel(m.model);
  INFO((mlir.ok() ? std::string() : mlir.status().message()));
  REQUIRE(mlir.ok());
  const std::string module = e2e::CompileOrDie(*mlir, name, device);
  auto session = e2e::OpenOrDie(module, device);
  return e2e::CallOrDie(*session, "main", inputs);
}

// The image and the conv weights shared by the QOperator and the QDQ models.
const std::vector<float>& Image() {
  static const std::vector<float> x = Steps(kC * kH * kH, 150, 128, 7);  // x / kSx in [-75, 75] plus ties
  return x;
}
std::vector<float> ImageWithExtremes() {  // a few values past the uint8 range at both ends
  std::vector<float> x = Image();
  x[0] = 3.0f;
  x[1] = -3.0f;
  x[2] = 1.9921875f;   // x / kSx = 127.5: 128 + 128 saturates at 255
  x[3] = -1.9921875f;  // -127.5 rounds to -128: 0
  return x;
}
const std::vector<int>& ConvWeights() {
  static const std::vector<int> w = RandomInts(kF * kC * kK * kK, -127, 127, 11);
  return w;
}

void QOperatorConv(const std::string& device) {
  const std::vector<float> sw = {0.0031f, 0.0047f, 0.0023f, 0.0061f};  // per output channel
  const std::vector<int> bias = {-400, 250, 0, 1200}, zw = {0, 0, 0, 0}, zw_conv_integer = {1, -2, 0, 3};
  constexpr float kSy = 0.05f;
  constexpr int kZy = 90;
  Graph m;
  m.Input("x", {1, kC, kH, kH});
  m.Output("xq", {1, kC, kH, kH}, kU8);
  m.Output("yq", {1, kF, 4, 4}, kU8);
  m.Output("ci", {1, kF, 5, 5}, kI32);
  m.InitF("sx", {}, {kSx});
  InitInts(m, "zx", kU8, {}, {kZx});
  InitInts(m, "wq", kI8, {kF, kC, kK, kK}, ConvWeights());
  m.InitF("sw", {kF}, sw);
  InitInts(m, "zw", kI8, {kF}, zw);
  m.InitF("sy", {}, {kSy});
  InitInts(m, "zy", kU8, {}, {kZy});
  InitInts(m, "bias", kI32, {kF}, bias);
  InitInts(m, "zw2", kI8, {kF}, zw_conv_integer);
  m.Node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"});
  auto* conv = m.Node("QLinearConv", {"xq", "sx", "zx", "wq", "sw", "zw", "sy", "zy", "bias"}, {"yq"});
  Graph::AttrInts(conv, "pads", {1, 1, 1, 1});
  Graph::AttrInts(conv, "strides", {2, 2});
  m.Node("ConvInteger", {"xq", "wq", "zx", "zw2"}, {"ci"});
  const std::vector<float> x = ImageWithExtremes();
  std::vector<HostValue> out = ImportAndRun(m, "qoperator_conv", device, {F32Tensor({1, kC, kH, kH}, x)});
  REQUIRE(out.size() == 3);

  const std::vector<int> xq = Quantize(x, kSx, kZx, 0, 255);
  CHECK(xq[2] == 255);
  CHECK(xq[3] == 0);
  CHECK(Ints(out[0], kU8, {1, kC, kH, kH}) == xq);
  std::vector<int32_t> acc = ConvReference(xq, kZx, ConvWeights(), zw, 1, 2);
  std::vector<int> yq;
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t f = i / 16;
    const float multiplier = kSx * sw[f] / kSy;
    yq.push_back(Saturate(static_cast<float>(acc[i] + bias[f]) * multiplier, kZy, 0, 255));
  }
  CHECK(Ints(out[1], kU8, {1, kF, 4, 4}) == yq);
  const std::vector<int32_t> ci = ConvReference(xq, kZx, ConvWeights(), zw_conv_integer, 0, 1);
  CHECK(Ints(out[2], kI32, {1, kF, 5, 5}) == std::vector<int>(ci.begin(), ci.end()));
}

void QOperatorMatMul(const std::string& device) {
  constexpr int kRows = 5, kDepth = 8, kCols = 6;
  constexpr float kSm = 1.0f / 32, kSy = 0.07f;
  constexpr int kZm = 100, kZs = -3, kZy = 110, kZw = 5;
  const std::vector<float> sw = {0.011f, 0.0093f, 0.0172f, 0.0051f, 0.0208f, 0.0137f};  // per column
  const std::vector<int> w = RandomInts(kDepth * kCols, -127, 127, 21), w2 = RandomInts(kDepth * kCols, -128, 127, 22);
  Graph m;
  m.Input("m", {kRows, kDepth});
  m.Output("qm", {kRows, kCols}, kU8);
  m.Output("ms", {kRows, kDepth}, kI8);
  m.Output("mi", {kRows, kCols}, kI32);
  m.Output("dq", {kRows, kDepth}, kU8);
  m.Output("ds", {});
  m.Output("dz", {}, kU8);
  m.Output("di", {kRows, kCols}, kI32);
  m.InitF("sm", {}, {kSm});
  InitInts(m, "zm", kU8, {}, {kZm});
  InitInts(m, "zs", kI8, {}, {kZs});
  InitInts(m, "w", kI8, {kDepth, kCols}, w);
  m.InitF("sw", {kCols}, sw);
  InitInts(m, "zw", kI8, {}, {0});
  m.InitF("sy", {}, {kSy});
  InitInts(m, "zy", kU8, {}, {kZy});
  InitInts(m, "w2", kI8, {kDepth, kCols}, w2);
  InitInts(m, "zw2", kI8, {}, {kZw});
  m.Node("QuantizeLinear", {"m", "sm", "zm"}, {"mq"});
  m.Node("QLinearMatMul", {"mq", "sm", "zm", "w", "sw", "zw", "sy", "zy"}, {"qm"});
  m.Node("QuantizeLinear", {"m", "sm", "zs"}, {"ms"});  // int8 activations: int8 x int8
  m.Node("MatMulInteger", {"ms", "w2", "zs", "zw2"}, {"mi"});
  m.Node("DynamicQuantizeLinear", {"m"}, {"dq", "ds", "dz"});
  m.Node("MatMulInteger", {"dq", "w", "dz"}, {"di"});
  const std::vector<float> x = Steps(kRows * kDepth, 400, 64, 23);  // x / kSm in [-200, 200], ties
  std::vector<HostValue> out = ImportAndRun(m, "qoperator_matmul", device, {F32Tensor({kRows, kDepth}, x)});
  REQUIRE(out.size() == 7);

  const std::vector<int> mq = Quantize(x, kSm, kZm, 0, 255);
  std::vector<int32_t> acc = MatMulReference(mq, kZm, w, 0, kRows, kDepth, kCols);
  std::vector<int> qm;
  for (size_t i = 0; i < acc.size(); ++i) {
    const float multiplier = kSm * sw[i % kCols] / kSy;
    qm.push_back(Saturate(static_cast<float>(acc[i]) * multiplier, kZy, 0, 255));
  }
  CHECK(Ints(out[0], kU8, {kRows, kCols}) == qm);
  const std::vector<int> ms = Quantize(x, kSm, kZs, -128, 127);
  CHECK(Ints(out[1], kI8, {kRows, kDepth}) == ms);
  const std::vector<int32_t> mi = MatMulReference(ms, kZs, w2, kZw, kRows, kDepth, kCols);
  CHECK(Ints(out[2], kI32, {kRows, kCols}) == std::vector<int>(mi.begin(), mi.end()));

  // DynamicQuantizeLinear: the range [min(x, 0), max(x, 0)] over 255 steps.
  const float lo = std::min(0.0f, *std::min_element(x.begin(), x.end()));
  const float hi = std::max(0.0f, *std::max_element(x.begin(), x.end()));
  const float scale = (hi - lo) / 255.0f;
  const int zp = Saturate((0.0f - lo) / scale, 0, 0, 255);
  CHECK(Floats(out[4], {}) == std::vector<float>{scale});
  CHECK(Ints(out[5], kU8, {}) == std::vector<int>{zp});
  const std::vector<int> dq = Quantize(x, scale, zp, 0, 255);
  CHECK(Ints(out[3], kU8, {kRows, kDepth}) == dq);
  const std::vector<int32_t> di = MatMulReference(dq, zp, w, 0, kRows, kDepth, kCols);
  CHECK(Ints(out[6], kI32, {kRows, kCols}) == std::vector<int>(di.begin(), di.end()));
}

// Every scale of the QDQ model is a power of two, so each product and partial sum of its f32
// Conv and MatMul is exact whatever the order or fusing of the device's arithmetic: the
// results must equal the integer reference exactly.
void QdqModel(const std::string& device) {
  const std::vector<float> sw = {1.0f / 128, 1.0f / 256, 1.0f / 64, 1.0f / 512};  // per output channel
  const std::vector<float> bias = {0.25f, -0.125f, 0.0625f, -0.5f};
  constexpr float kSr = 1.0f / 32;
  constexpr int kFlat = kF * 16, kOut = 10;
  std::vector<float> sfc;
  for (int j = 0; j < kOut; ++j) sfc.push_back(std::ldexp(1.0f, -6 - j % 4));  // per column
  const std::vector<int> wfc = RandomInts(kFlat * kOut, -127, 127, 31);
  Graph m;
  m.Input("x", {1, kC, kH, kH});
  m.Output("rq", {1, kF, 4, 4}, kU8);
  m.Output("y", {1, kOut});
  m.InitF("sx", {}, {kSx});
  InitInts(m, "zx", kU8, {}, {kZx});
  InitInts(m, "wq", kI8, {kF, kC, kK, kK}, ConvWeights());
  m.InitF("sw", {kF}, sw);
  m.InitF("bias", {kF}, bias);
  m.InitF("sr", {}, {kSr});
  InitInts(m, "zr", kU8, {}, {0});
  InitInts(m, "wfc", kI8, {kFlat, kOut}, wfc);
  m.InitF("sfc", {kOut}, sfc);
  m.Node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"});
  m.Node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"});
  Graph::AttrI(m.Node("DequantizeLinear", {"wq", "sw"}, {"wd"}), "axis", 0);
  auto* conv = m.Node("Conv", {"xd", "wd", "bias"}, {"conv"});
  Graph::AttrInts(conv, "pads", {1, 1, 1, 1});
  Graph::AttrInts(conv, "strides", {2, 2});
  m.Node("Relu", {"conv"}, {"r"});
  m.Node("QuantizeLinear", {"r", "sr", "zr"}, {"rq"});
  m.Node("DequantizeLinear", {"rq", "sr", "zr"}, {"rd"});
  Graph::AttrI(m.Node("Flatten", {"rd"}, {"flat"}), "axis", 1);
  Graph::AttrI(m.Node("DequantizeLinear", {"wfc", "sfc"}, {"wfd"}), "axis", 1);
  m.Node("MatMul", {"flat", "wfd"}, {"y"});
  const std::vector<float> x = ImageWithExtremes();
  std::vector<HostValue> out = ImportAndRun(m, "qdq_conv_matmul", device, {F32Tensor({1, kC, kH, kH}, x)});
  REQUIRE(out.size() == 2);

  const std::vector<int> xq = Quantize(x, kSx, kZx, 0, 255);
  const std::vector<int32_t> acc = ConvReference(xq, kZx, ConvWeights(), {0, 0, 0, 0}, 1, 2);
  std::vector<int> rq;
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t f = i / 16;
    const double conv = acc[i] * static_cast<double>(kSx) * sw[f] + bias[f];  // exact
    rq.push_back(Saturate(static_cast<float>(std::max(conv, 0.0) / kSr), 0, 0, 255));
  }
  CHECK(Ints(out[0], kU8, {1, kF, 4, 4}) == rq);
  std::vector<float> y;
  for (int j = 0; j < kOut; ++j) {
    int64_t sum = 0;
    for (int k = 0; k < kFlat; ++k) sum += static_cast<int64_t>(rq[k]) * wfc[k * kOut + j];
    y.push_back(static_cast<float>(static_cast<double>(sum) * kSr * sfc[j]));  // exact
  }
  CHECK(Floats(out[1], {1, kOut}) == y);
}

}  // namespace

HEXIR_E2E_TEST_ON_DEVICES("QuantizeLinear, QLinearConv and ConvInteger give onnxruntime's integers (uint8 activations, int8 weights per channel, int32 accumulation)",
                          QOperatorConv)
HEXIR_E2E_TEST_ON_DEVICES("QLinearMatMul, MatMulInteger (int8 x int8) and DynamicQuantizeLinear + MatMulInteger give onnxruntime's integers",
                          QOperatorMatMul)
HEXIR_E2E_TEST_ON_DEVICES("a QDQ model (per-channel int8 Conv, Relu, per-column int8 MatMul, uint8 activations) equals its integer reference",
                          QdqModel)
