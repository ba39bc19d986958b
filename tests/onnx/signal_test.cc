// ONNX signal processing (DFT, STFT with a window) and the training-domain optimizers through
// the real tools, against direct C++ references; their unsupported forms as named errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"
#include "tools/common/tensor_io.h"

namespace {
namespace ox = hexir::importers::onnx;
using ox::testing::Graph;
using ox::testing::ParseFloats;

using Complex = std::complex<double>;

// sum_n x[n] e^{-+2 pi i k n / size} (divided by size for the inverse), k < bins.
std::vector<Complex> Dft(const std::vector<Complex>& x, int size, int bins, bool inverse) {
  std::vector<Complex> y(bins);
  for (int k = 0; k < bins; ++k) {
    for (int n = 0; n < static_cast<int>(x.size()) && n < size; ++n)
      y[k] += x[n] * std::polar(1.0, (inverse ? 2 : -2) * M_PI * k * n / size);
    if (inverse) y[k] /= size;
  }
  return y;
}

std::string Spec(const std::vector<int64_t>& dims, const std::vector<double>& values) {
  std::string s;
  for (int64_t d : dims) s += std::to_string(d) + "x";
  s += "f32=";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? " " : "") + std::to_string(values[i]);
  return s;
}

void CheckClose(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-4 + 1e-5 * std::fabs(want[i]));
  }
}

std::string ImportAndCompile(Graph& m, const std::string& name) {
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  return ox::testing::CompileForCpu(*r, name);
}

// "@path" of a 0-D .npy file holding `value` (hexir-run's specs have no 0-D tensors).
template <typename T>
std::string ScalarNpy(const std::string& name, int32_t element_type, T value) {
  hexir::tools::HostTensor t;
  t.element_type = element_type;
  t.bytes.resize(sizeof value);
  std::memcpy(t.bytes.data(), &value, sizeof value);
  std::string path = ox::testing::Tmp(name + ".npy");
  REQUIRE(hexir::tools::WriteNpy(path, t).ok());
  return "@" + path;
}

// The importer's error for a model (empty when it imports).
std::string ImportError(const Graph& m) {
  auto r = ox::ImportOnnxModel(m.model);
  return r.ok() ? std::string() : r.status().message();
}

}  // namespace

TEST_CASE("STFT with a Hann window equals a direct DFT of each windowed frame, at batches 1 and 2") {
  Graph m;  // x [N, 20, 1], frames of 8 every 4 samples: [N, 4, 5, 2]
  m.model.mutable_opset_import(0)->set_version(17);
  m.Input("x", {-1, 20, 1});
  m.Output("y", {-1, 4, 5, 2});
  m.InitScalarI("size", 8);
  m.InitScalarI("step", 4);
  m.Node("HannWindow", {"size"}, {"window"});
  m.Node("STFT", {"x", "step", "window"}, {"y"});
  std::string mod = ImportAndCompile(m, "stft");
  REQUIRE(!mod.empty());
  for (int batch : {1, 2}) {
    std::vector<double> x;
    for (int b = 0; b < batch; ++b)
      for (int n = 0; n < 20; ++n) x.push_back((n * 7 % 11) - 5 + b);
    std::vector<double> want;
    for (int b = 0; b < batch; ++b) {
      for (int f = 0; f < 4; ++f) {
        std::vector<Complex> frame;
        for (int n = 0; n < 8; ++n) frame.push_back(x[b * 20 + f * 4 + n] * (0.5 - 0.5 * std::cos(2 * M_PI * n / 8)));
        for (const Complex& v : Dft(frame, 8, 5, false)) {
          want.push_back(v.real());
          want.push_back(v.imag());
        }
      }
    }
    int code = 0;
    std::string out = ox::testing::RunMain(mod, Spec({batch, 20, 1}, x), &code);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(out.find(std::to_string(batch) + "x4x5x2xf32=") == 0);
    CheckClose(ParseFloats(out), want);
  }
}

TEST_CASE("DFT zero-pads a real signal to dft_length and keeps the onesided bins") {
  Graph m;  // [1, 5, 1] padded to 8: bins 0..4
  m.model.mutable_opset_import(0)->set_version(17);
  m.Input("x", {1, 5, 1});
  m.Output("y", {1, 5, 2});
  m.InitScalarI("length", 8);
  Graph::AttrI(m.Node("DFT", {"x", "length"}, {"y"}), "onesided", 1);
  std::string mod = ImportAndCompile(m, "dft_padded");
  REQUIRE(!mod.empty());
  std::vector<double> x = {1, -2, 3, 0.5, 4};
  std::vector<double> want;
  for (const Complex& v : Dft({x.begin(), x.end()}, 8, 5, false)) {
    want.push_back(v.real());
    want.push_back(v.imag());
  }
  int code = 0;
  std::string out = ox::testing::RunMain(mod, Spec({1, 5, 1}, x), &code);
  INFO(out);
  REQUIRE(code == 0);
  CheckClose(ParseFloats(out), want);
}

TEST_CASE("an inverse DFT of a complex signal's DFT along axis 2 gives the signal back") {
  Graph m;  // [1, 2, 6, 2]: two rows of 6 complex samples, transformed along axis 2
  m.model.mutable_opset_import(0)->set_version(17);
  m.Input("x", {1, 2, 6, 2});
  m.Output("spectrum", {1, 2, 6, 2});
  m.Output("y", {1, 2, 6, 2});
  Graph::AttrI(m.Node("DFT", {"x"}, {"spectrum"}), "axis", 2);
  auto* inverse = m.Node("DFT", {"spectrum"}, {"y"});
  Graph::AttrI(inverse, "axis", 2);
  Graph::AttrI(inverse, "inverse", 1);
  std::string mod = ImportAndCompile(m, "dft_round_trip");
  REQUIRE(!mod.empty());
  std::vector<double> x;
  for (int i = 0; i < 24; ++i) x.push_back((i * 5 % 7) - 3);
  std::vector<double> spectrum;
  for (int row = 0; row < 2; ++row) {
    std::vector<Complex> signal;
    for (int n = 0; n < 6; ++n) signal.emplace_back(x[row * 12 + 2 * n], x[row * 12 + 2 * n + 1]);
    for (const Complex& v : Dft(signal, 6, 6, false)) {
      spectrum.push_back(v.real());
      spectrum.push_back(v.imag());
    }
  }
  int code = 0;
  std::string out = ox::testing::RunMain(mod, Spec({1, 2, 6, 2}, x), &code);
  INFO(out);
  REQUIRE(code == 0);
  size_t second = out.find('\n');
  REQUIRE(second != std::string::npos);
  CheckClose(ParseFloats(out.substr(0, second)), spectrum);
  CheckClose(ParseFloats(out.substr(second + 1)), x);
}

TEST_CASE("Adagrad reads the learning rate and the update count at run time") {
  Graph m;
  auto* training = m.model.add_opset_import();
  training->set_domain("ai.onnx.preview.training");
  training->set_version(1);
  m.Input("r", {});
  m.Input("t", {}, ::onnx::TensorProto::INT64);
  m.Input("x", {3});
  m.Input("g", {3});
  m.Input("h", {3});
  m.Output("x_new", {3});
  m.Output("h_new", {3});
  auto* n = m.Node("Adagrad", {"r", "t", "x", "g", "h"}, {"x_new", "h_new"});
  n->set_domain("ai.onnx.preview.training");
  auto* decay = n->add_attribute();
  decay->set_name("decay_factor");
  decay->set_type(::onnx::AttributeProto::FLOAT);
  decay->set_f(0.5f);
  std::string mod = ImportAndCompile(m, "adagrad");
  REQUIRE(!mod.empty());
  std::vector<double> x = {1, -2, 0.5}, g = {0.25, 1, -3}, h = {0, 1, 2};
  for (int t : {0, 3}) {
    int code = 0;
    std::string out = ox::testing::RunMainWith(mod, {ScalarNpy("r", 1, 0.1f), ScalarNpy("t", 19, int64_t{t}), Spec({3}, x), Spec({3}, g), Spec({3}, h)}, &code);
    INFO(out);
    REQUIRE(code == 0);
    std::vector<double> x_new, h_new;
    double rate = 0.1 / (1 + t * 0.5);
    for (int i = 0; i < 3; ++i) {
      h_new.push_back(h[i] + g[i] * g[i]);
      x_new.push_back(x[i] - rate * g[i] / std::sqrt(h_new.back()));
    }
    size_t second = out.find('\n');
    REQUIRE(second != std::string::npos);
    CheckClose(ParseFloats(out.substr(0, second)), x_new);
    CheckClose(ParseFloats(out.substr(second + 1)), h_new);
  }
}

TEST_CASE("unsupported signal and optimizer forms are named errors") {
  Graph dft;
  dft.model.mutable_opset_import(0)->set_version(17);
  dft.Input("x", {1, 4, 2});
  dft.Output("y", {1, 3, 2});
  auto* n = dft.Node("DFT", {"x"}, {"y"}, "ifft");
  Graph::AttrI(n, "inverse", 1);
  Graph::AttrI(n, "onesided", 1);
  CHECK(ImportError(dft) == "node 'ifft' (op DFT): onesided is defined for a forward DFT of a real signal only");

  Graph stft;
  stft.model.mutable_opset_import(0)->set_version(17);
  stft.Input("x", {1, 32, 1});
  stft.Input("w", {6});
  stft.Output("y", {1, 4, 5, 2});
  stft.InitScalarI("step", 8);
  stft.InitScalarI("length", 8);
  stft.Node("STFT", {"x", "step", "w", "length"}, {"y"}, "spec");
  CHECK(ImportError(stft) == "node 'spec' (op STFT): the window has 6 samples, frame_length is 8");

  Graph runtime_step;  // frame_step decides the output's shape: it must be known at import
  runtime_step.model.mutable_opset_import(0)->set_version(17);
  runtime_step.Input("x", {1, 32, 1});
  runtime_step.Input("step", {}, ::onnx::TensorProto::INT64);
  runtime_step.Output("y", {1, 4, 5, 2});
  runtime_step.InitScalarI("length", 8);
  runtime_step.Node("STFT", {"x", "step", "", "length"}, {"y"}, "spec");
  CHECK_THAT(ImportError(runtime_step), Catch::Contains("frame_step must be a constant"));

  Graph momentum;
  auto* training = momentum.model.add_opset_import();
  training->set_domain("ai.onnx.preview.training");
  training->set_version(1);
  momentum.Input("r", {});
  momentum.Input("t", {}, ::onnx::TensorProto::INT64);
  momentum.Input("x", {2});
  momentum.Input("g", {2});
  momentum.Output("x_new", {2});
  auto* m = momentum.Node("Momentum", {"r", "t", "x", "g"}, {"x_new"}, "step");
  m->set_domain("ai.onnx.preview.training");
  CHECK(ImportError(momentum) == "node 'step' (op Momentum): expected R, T and 3 lists of equally many tensors, got 4 operands");

  Graph other;
  other.Input("x", {2});
  other.Output("y", {2});
  other.Node("Relu", {"x"}, {"y"}, "custom")->set_domain("com.example");
  CHECK(ImportError(other) == "node 'custom' (op Relu): unsupported op domain 'com.example'");
}
