// Grouped ONNX Conv (1 < group < channels) on the CPU, whose kernel runs one implicit GEMM per
// group (passes/codegen/CPUConvolutionKernel.h): a dynamic export's batch and plane are run-time
// values, its channels, groups and window static. Results against a reference loop written from
// the operator's definition, at odd planes, planes of 2 x 2 and 4 x 4 outputs (the kernel's
// static-plane variants), rows of 8 and 16 outputs (panels of whole rows), groups of 8 and 24
// channels, strides 1 and 2, symmetric and asymmetric pads.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
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

// One Conv of the test: F filters over C channels in `group` groups, a 3x3 window.
struct Conv {
  const char* name;
  int64_t filters, group, stride;
  std::vector<int64_t> pads;  // top, left, bottom, right
};

constexpr int64_t kChannels = 48, kWindow = 3;
// Groups of 8 channels (8 filters each) at stride 1; groups of 24 channels (16 filters each,
// so that a filter's group differs from its channel's) at stride 2 with asymmetric pads.
const Conv kConvs[] = {{"g8", 48, 6, 1, {1, 1, 1, 1}}, {"g24", 32, 2, 2, {1, 0, 0, 2}}};

std::vector<float> Weights(const Conv& c) {
  std::vector<float> w(c.filters * (kChannels / c.group) * kWindow * kWindow);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i) + c.filters);
  return w;
}

std::vector<float> Bias(const Conv& c) {
  std::vector<float> b(c.filters);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  return b;
}

int64_t OutExtent(int64_t in, int64_t lo, int64_t hi, int64_t stride) { return (in + lo + hi - kWindow) / stride + 1; }

// y[n][f][oh][ow] = b[f] + sum over c < C/G, (i, j) of
//   x[n][(f / (F/G)) * C/G + c][oh * s + i - top][ow * s + j - left] * w[f][c][i][j]  (0 outside x)
std::vector<float> Reference(const Conv& c, const std::vector<float>& x, int64_t n, int64_t h, int64_t w) {
  const int64_t cg = kChannels / c.group, fg = c.filters / c.group;
  const int64_t oh = OutExtent(h, c.pads[0], c.pads[2], c.stride), ow = OutExtent(w, c.pads[1], c.pads[3], c.stride);
  const std::vector<float> wt = Weights(c), bias = Bias(c);
  std::vector<float> y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t f = 0; f < c.filters; ++f)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double acc = bias[f];
          for (int64_t ch = 0; ch < cg; ++ch)
            for (int64_t i = 0; i < kWindow; ++i)
              for (int64_t j = 0; j < kWindow; ++j) {
                const int64_t ih = r * c.stride + i - c.pads[0], iw = q * c.stride + j - c.pads[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                const int64_t xc = (f / fg) * cg + ch;
                acc += static_cast<double>(x[((b * kChannels + xc) * h + ih) * w + iw]) *
                       wt[((f * cg + ch) * kWindow + i) * kWindow + j];
              }
          y.push_back(static_cast<float>(acc));
        }
  return y;
}

// The module of every Conv of kConvs over x of `dims` (-1: a run-time extent), one output each.
std::string Build(const std::vector<int64_t>& dims, const std::string& name) {
  Graph m;
  m.Input("x", dims);
  for (const Conv& c : kConvs) {
    m.InitF(std::string(c.name) + "_w", {c.filters, kChannels / c.group, kWindow, kWindow}, Weights(c));
    m.InitF(std::string(c.name) + "_b", {c.filters}, Bias(c));
    auto* node = m.Node("Conv", {"x", std::string(c.name) + "_w", std::string(c.name) + "_b"}, {c.name}, c.name);
    Graph::AttrI(node, "group", c.group);
    Graph::AttrInts(node, "strides", {c.stride, c.stride});
    Graph::AttrInts(node, "pads", c.pads);
    std::vector<int64_t> out = {dims[0], c.filters, -1, -1};
    if (dims[2] >= 0) out[2] = OutExtent(dims[2], c.pads[0], c.pads[2], c.stride);
    if (dims[3] >= 0) out[3] = OutExtent(dims[3], c.pads[1], c.pads[3], c.stride);
    m.Output(c.name, out);
  }
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, name);
  REQUIRE(!mod.empty());
  return mod;
}

// Runs `mod` on an n x 48 x h x w input and checks each output against Reference.
void CheckAt(const std::string& mod, int64_t n, int64_t h, int64_t w) {
  INFO("x: " << n << "x" << kChannels << "x" << h << "x" << w);
  std::vector<float> x(n * kChannels * h * w);
  std::string spec = std::to_string(n) + "x" + std::to_string(kChannels) + "x" + std::to_string(h) + "x" +
                     std::to_string(w) + "xf32=";
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::cos(0.11f * static_cast<float>(i)) + 0.01f * static_cast<float>(i % 7);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g ", x[i]);
    spec += buf;
  }
  int code = 0;
  std::string out = RunMainWith(mod, {spec}, &code);
  REQUIRE(code == 0);
  std::istringstream lines(out);
  for (const Conv& c : kConvs) {
    INFO("conv " << c.name);
    std::string line;
    REQUIRE(std::getline(lines, line));
    std::vector<float> got = ParseFloats(line), want = Reference(c, x, n, h, w);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-5));
  }
}

TEST_CASE("grouped Convs over a run-time batch and plane match a reference loop at odd, 2 x 2 and 4 x 4 planes") {
  std::string mod = Build({-1, kChannels, -1, -1}, "grouped_dynamic");
  CheckAt(mod, 2, 7, 9);  // odd planes: g8 7 x 9 outputs, g24 3 x 5
  CheckAt(mod, 1, 4, 4);  // g8 4 x 4 outputs, g24 2 x 2 (the static-plane variants)
  CheckAt(mod, 3, 2, 2);  // g8 2 x 2, g24 1 x 1
  CheckAt(mod, 1, 5, 3);  // g8 5 x 3, g24 2 x 2
  CheckAt(mod, 1, 5, 16);  // g8 5 x 16 and g24 3 x 8: panels of whole output rows, loaded
  CheckAt(mod, 2, 2, 11);  // g24 1 x 6: one partial panel in one row, masked stride-2 loads
}

TEST_CASE("grouped Convs over a static plane match a reference loop") {
  CheckAt(Build({1, kChannels, 7, 9}, "grouped_static"), 1, 7, 9);
  CheckAt(Build({2, kChannels, 4, 4}, "grouped_static_small"), 2, 4, 4);
  CheckAt(Build({1, kChannels, 6, 16}, "grouped_static_rows"), 1, 6, 16);
}

}  // namespace
