// Quantized ONNX (compiler/importers/onnx/Quantization.cc): onnxruntime's rounding (half to
// even) and saturation, unsigned zero points, and a small model quantized here (int8 weights
// per output channel, uint8 activations) in both the QDQ and the QOperator forms, checked
// against an integer reference written in this file.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
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

constexpr int kI8 = ::onnx::TensorProto::INT8;
constexpr int kU8 = ::onnx::TensorProto::UINT8;

std::string RunModel(Graph& m, const std::string& name, const std::vector<std::string>& inputs) {
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, name);
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, inputs, &code);
  INFO(out);
  REQUIRE(code == 0);
  return out;
}

// An 8-bit initializer (INT8 or UINT8) of the given dims.
void Init8(Graph& m, const std::string& name, int type, std::vector<int64_t> dims, std::vector<int> values) {
  auto* t = m.g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (int v : values) t->add_int32_data(v);
}

// The reference quantizer: round half to even, add the zero point, saturate.
int Quantize(float x, float scale, int zp, int lo, int hi) {
  float q = std::nearbyint(x / scale) + static_cast<float>(zp);  // default rounding: to even
  return static_cast<int>(std::fmin(std::fmax(q, static_cast<float>(lo)), static_cast<float>(hi)));
}

std::string Spec(const std::string& type, const std::vector<float>& v) {
  std::string s = type + "=";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

// The model to quantize: y[2x4] = x[2x3] @ W[3x4].
const std::vector<float> kW = {0.31f, -0.52f, 0.08f, 0.77f, -0.14f, 0.25f, -0.66f, 0.05f, 0.42f, 0.19f, 0.33f, -0.91f};
const std::vector<float> kX = {0.4f, -1.2f, 2.05f, 1.1f, 0.0f, -0.35f};
constexpr float kSx = 0.02f, kSy = 0.01f;
constexpr int kZx = 128, kZy = 100;

// Per output channel symmetric int8 weights: scale_j = max |W[:, j]| / 127.
void QuantizeWeights(std::vector<int>* wq, std::vector<float>* sw) {
  sw->assign(4, 0);
  for (int j = 0; j < 4; ++j) {
    float m = 0;
    for (int k = 0; k < 3; ++k) m = std::fmax(m, std::fabs(kW[k * 4 + j]));
    (*sw)[j] = m / 127;
  }
  wq->clear();
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 4; ++j) wq->push_back(Quantize(kW[k * 4 + j], (*sw)[j], 0, -127, 127));
}

}  // namespace

TEST_CASE("QuantizeLinear rounds half to even and saturates to int8") {
  Graph m;
  m.Input("x", {8});
  m.Output("y", {8}, kI8);
  m.InitF("scale", {}, {1.0f});
  Init8(m, "zp", kI8, {}, {0});
  m.Node("QuantizeLinear", {"x", "scale", "zp"}, {"y"});
  std::string out = RunModel(m, "q_round", {"8xf32=0.5 1.5 2.5 -0.5 -1.5 300 -300 2.6"});
  CHECK(ParseFloats(out) == std::vector<float>{0, 2, 2, 0, -2, 127, -128, 3});
}

TEST_CASE("a uint8 round trip saturates at 255 and 0 and dequantizes with its zero point") {
  Graph m;
  m.Input("x", {3});
  m.Output("y", {3});
  m.InitF("scale", {}, {0.5f});
  Init8(m, "zp", kU8, {}, {10});
  m.Node("QuantizeLinear", {"x", "scale", "zp"}, {"q"});
  m.Node("DequantizeLinear", {"q", "scale", "zp"}, {"y"});
  // q = 12, 0 (saturated), 255 (saturated): (q - 10) * 0.5
  CHECK(ParseFloats(RunModel(m, "q_u8", {"3xf32=1.25 -10 200"})) == std::vector<float>{1, -5, 122.5});
}

TEST_CASE("a MatMul quantized per output channel in QDQ form matches the float reference of its integers") {
  std::vector<int> wq;
  std::vector<float> sw;
  QuantizeWeights(&wq, &sw);
  Graph m;
  m.Input("x", {2, 3});
  m.Output("y", {2, 4});
  m.InitF("sx", {}, {kSx});
  Init8(m, "zx", kU8, {}, {kZx});
  Init8(m, "wq", kI8, {3, 4}, wq);
  m.InitF("sw", {4}, sw);
  m.Node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"});
  m.Node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"});
  auto* n = m.Node("DequantizeLinear", {"wq", "sw"}, {"wd"});
  Graph::AttrI(n, "axis", 1);
  m.Node("MatMul", {"xd", "wd"}, {"y"});
  std::vector<float> got = ParseFloats(RunModel(m, "qdq_matmul", {Spec("2x3xf32", kX)}));
  REQUIRE(got.size() == 8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int k = 0; k < 3; ++k)
        want += static_cast<double>((Quantize(kX[i * 3 + k], kSx, kZx, 0, 255) - kZx) * kSx) * (wq[k * 4 + j] * sw[j]);
      CHECK(got[i * 4 + j] == Approx(want).epsilon(1e-5));
    }
}

TEST_CASE("the same MatMul in QOperator form (QLinearMatMul) gives onnxruntime's integers") {
  std::vector<int> wq;
  std::vector<float> sw;
  QuantizeWeights(&wq, &sw);
  Graph m;
  m.Input("x", {2, 3});
  m.Output("y", {2, 4}, kU8);
  m.InitF("sx", {}, {kSx});
  Init8(m, "zx", kU8, {}, {kZx});
  Init8(m, "wq", kI8, {3, 4}, wq);
  m.InitF("sw", {4}, sw);
  Init8(m, "zw", kI8, {}, {0});
  m.InitF("sy", {}, {kSy});
  Init8(m, "zy", kU8, {}, {kZy});
  m.Node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"});
  m.Node("QLinearMatMul", {"xq", "sx", "zx", "wq", "sw", "zw", "sy", "zy"}, {"y"});
  std::vector<float> got = ParseFloats(RunModel(m, "qlinear_matmul", {Spec("2x3xf32", kX)}));
  REQUIRE(got.size() == 8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < 3; ++k) acc += (Quantize(kX[i * 3 + k], kSx, kZx, 0, 255) - kZx) * wq[k * 4 + j];
      float multiplier = kSx * sw[j] / kSy;
      int want = Quantize(static_cast<float>(acc) * multiplier, 1.0f, kZy, 0, 255);
      // hexir-run prints the uint8 bytes as int8
      CHECK(static_cast<int>(got[i * 4 + j]) == static_cast<int8_t>(static_cast<uint8_t>(want)));
    }
}
