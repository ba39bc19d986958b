// Weights outside the module text (compiler/importers/onnx/ParameterFile.h, TensorData.h):
// initializers above the threshold become trailing arguments read from a parameter file that
// hexir-run --parameters maps and uploads; ONNX external data is read relative to the model's
// folder; a missing, short or escaping external file is an error naming the tensor and file;
// on a terminal (script(1)) hexir-import and hexir-compile show their progress.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
using ox::testing::CompileForCpu;
using ox::testing::Graph;
using ox::testing::ParseFloats;
using ox::testing::Sh;
using ox::testing::Tmp;

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

constexpr int kRows = 2, kIn = 40, kOut = 30;  // W: 40x30 f32 = 4800 bytes (> 4096)

float WeightAt(int i) { return std::sin(0.37f * static_cast<float>(i)); }
float BiasAt(int j) { return 0.5f - 0.03f * static_cast<float>(j); }
float InputAt(int i) { return 0.01f * static_cast<float>(i % 17) - 0.05f; }

std::vector<float> Weights() {
  std::vector<float> w(kIn * kOut);
  for (int i = 0; i < kIn * kOut; ++i) w[i] = WeightAt(i);
  return w;
}

// y = x @ W + b, computed with a plain loop.
std::vector<float> Reference() {
  std::vector<float> y(kRows * kOut);
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kOut; ++j) {
      double acc = BiasAt(j);
      for (int k = 0; k < kIn; ++k) acc += double(InputAt(r * kIn + k)) * WeightAt(k * kOut + j);
      y[r * kOut + j] = static_cast<float>(acc);
    }
  return y;
}

// x[2,40] @ W[40,30] + b[30]; W and b as float_data initializers.
Graph DenseModel() {
  Graph m;
  m.Input("x", {kRows, kIn});
  m.Output("y", {kRows, kOut});
  m.InitF("W", {kIn, kOut}, Weights());
  std::vector<float> b(kOut);
  for (int j = 0; j < kOut; ++j) b[j] = BiasAt(j);
  m.InitF("b", {kOut}, b);
  m.Node("MatMul", {"x", "W"}, {"xw"});
  m.Node("Add", {"xw", "b"}, {"y"});
  return m;
}

std::string InputSpec() {
  std::string s = std::to_string(kRows) + "x" + std::to_string(kIn) + "xf32=";
  for (int i = 0; i < kRows * kIn; ++i) s += std::to_string(InputAt(i)) + " ";
  return s;
}

// Runs `module` with the parameter file (none when empty) and checks y against Reference().
void RunAndCompare(const std::string& module, const std::string& parameters) {
  int code = 0;
  std::string out = Sh("tools/hexir-run/hexir-run --module=" + module +
                           (parameters.empty() ? "" : " --parameters=" + parameters) + " '--input=" +
                           InputSpec() + "'",
                       &code);
  INFO(out);
  REQUIRE(code == 0);
  std::vector<float> got = ParseFloats(out), want = Reference();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i])));
}

// Moves every initializer's bytes into `folder`/weights.bin (after `lead` junk bytes) as ONNX
// external data, `location` = "weights.bin".
void MakeExternal(Graph& m, const std::string& folder, int lead) {
  std::ofstream f(folder + "/weights.bin", std::ios::binary);
  f << std::string(lead, 'x');
  int64_t offset = lead;
  for (auto& t : *m.g->mutable_initializer()) {
    std::string bytes(reinterpret_cast<const char*>(t.float_data().data()), t.float_data_size() * 4);
    t.clear_float_data();
    t.set_data_location(::onnx::TensorProto::EXTERNAL);
    auto add = [&](const std::string& k, const std::string& v) {
      auto* kv = t.add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    };
    add("location", "weights.bin");
    add("offset", std::to_string(offset));
    add("length", std::to_string(bytes.size()));
    f << bytes;
    offset += static_cast<int64_t>(bytes.size());
  }
}

std::string Folder(const std::string& name) {
  std::string dir = Tmp(name);
  int code = 0;
  Sh("rm -rf " + dir + " && mkdir -p " + dir, &code);
  return dir;
}

}  // namespace

TEST_CASE("initializers above the threshold are arguments read from the parameter file") {
  std::string dir = Folder("dense");
  Graph m = DenseModel();
  ox::testing::Save(m.model, dir + "/dense.onnx");
  int code = 0;
  std::string out = Sh("tools/hexir-import/hexir-import " + dir + "/dense.onnx -o " + dir +
                           "/dense.mlir --parameters=" + dir + "/dense.gguf",
                       &code);
  CHECK(out.empty());  // no progress line when stderr is not a terminal
  REQUIRE(code == 0);
  std::ifstream f(dir + "/dense.mlir");
  std::string mlir((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // W (4800 bytes) is the second argument; b (120 bytes) stays a constant in the text.
  CHECK(Has(mlir, "func.func @main(%arg0: tensor<2x40xf32>, %arg1: tensor<40x30xf32> {hexir.parameter})"));
  CHECK(Has(mlir, "// %arg1: parameter 'W'"));
  CHECK(Has(mlir, "dense<\"0x") == true);  // the bias
  CHECK(mlir.size() < 4000);                // W's 9600 hex digits are not in the text
  std::string module = CompileForCpu(mlir, "dense_parameters");
  REQUIRE(!module.empty());
  RunAndCompare(module, dir + "/dense.gguf");

  SECTION("without the file, the call is refused naming the count of inputs") {
    std::string err = Sh("tools/hexir-run/hexir-run --module=" + module + " '--input=" + InputSpec() + "'", &code);
    CHECK(code == 1);
    CHECK(Has(err, "function 'main' expects 2 inputs"));
  }
  SECTION("a file with more parameters than the function's arguments is refused") {
    Sh("tools/hexir-import/hexir-import " + dir + "/dense.onnx -o " + dir +
           "/both.mlir --parameter-threshold=100 --parameters=" + dir + "/both.gguf",
       &code);
    REQUIRE(code == 0);
    std::string err = Sh("tools/hexir-run/hexir-run --module=" + module + " --parameters=" + dir +
                             "/both.gguf '--input=" + InputSpec() + "'",
                         &code);
    CHECK(code == 1);
    CHECK(Has(err, "the file holds 2 tensors for arguments 1.., the function takes 2 arguments"));
  }
  SECTION("a file that is not a parameter file is refused by name") {
    std::string err = Sh("tools/hexir-run/hexir-run --module=" + module + " --parameters=" + dir +
                             "/dense.onnx '--input=" + InputSpec() + "'",
                         &code);
    CHECK(code == 1);
    CHECK(Has(err, "parameter file '" + dir + "/dense.onnx' is not a GGUF file"));
  }
}

// The count after `what` ("dispatches ") on hexir-bench's line starting with `line`.
double BenchCount(const std::string& report, const std::string& line, const std::string& what) {
  size_t at = report.find(line);
  if (at == std::string::npos) return -1;
  size_t end = report.find('\n', at);
  size_t w = report.find(what, at);
  if (w == std::string::npos || w > end) return -1;
  return std::atof(report.c_str() + w + what.size());
}

TEST_CASE("work on parameters alone (a filter's packing, a weight's transpose) runs on the first call only") {
  // x[1,32,6,6] -> Conv W[16,32,3,3] (288 taps: the packed-filter kernel) pads 1 -> Flatten
  // -> Gemm with B[10,576] transposed (transB = 1): with the weights inline the packing and
  // the transpose run once at load; imported with --parameters they are the function's
  // parameter transforms, so a steady call runs the same dispatches.
  std::string dir = Folder("conv_gemm");
  Graph m;
  m.Input("x", {1, 32, 6, 6});
  m.Output("y", {1, 10});
  std::vector<float> w(16 * 32 * 9), b(10 * 576), x(32 * 36);
  for (size_t i = 0; i < w.size(); ++i) w[i] = WeightAt(int(i)) * 0.1f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = WeightAt(int(i) + 7) * 0.05f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = InputAt(int(i));
  m.InitF("W", {16, 32, 3, 3}, w);
  m.InitF("B", {10, 576}, b);
  auto* conv = m.Node("Conv", {"x", "W"}, {"c"});
  Graph::AttrInts(conv, "pads", {1, 1, 1, 1});
  m.Node("Flatten", {"c"}, {"f"});
  auto* gemm = m.Node("Gemm", {"f", "B"}, {"y"});
  Graph::AttrI(gemm, "transB", 1);
  ox::testing::Save(m.model, dir + "/m.onnx");
  int code = 0;
  Sh("tools/hexir-import/hexir-import " + dir + "/m.onnx -o " + dir + "/inline.mlir", &code);
  REQUIRE(code == 0);
  Sh("tools/hexir-import/hexir-import " + dir + "/m.onnx -o " + dir + "/p.mlir --parameters=" + dir + "/p.gguf", &code);
  REQUIRE(code == 0);
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  std::string inline_module = CompileForCpu(read(dir + "/inline.mlir"), "conv_gemm_inline");
  std::string parameter_module = CompileForCpu(read(dir + "/p.mlir"), "conv_gemm_parameters");
  REQUIRE(!inline_module.empty());
  REQUIRE(!parameter_module.empty());
  std::string input = "1x32x6x6xf32=";
  for (float v : x) input += std::to_string(v) + " ";

  std::string a = Sh("tools/hexir-run/hexir-run --module=" + inline_module + " '--input=" + input + "'", &code);
  REQUIRE(code == 0);
  std::string p = Sh("tools/hexir-run/hexir-run --module=" + parameter_module + " --parameters=" + dir +
                         "/p.gguf --repeat=2 '--input=" + input + "'", &code);
  INFO(a << "\n" << p);
  REQUIRE(code == 0);
  std::vector<float> want = ParseFloats(a), got = ParseFloats(p);
  REQUIRE(want.size() == 10);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-5f * (1 + std::fabs(want[i])));

  const std::string bench = " --iterations=3 --cpu-threads=0 --no-baselines '--input=" + input + "'";
  std::string ib = Sh("tools/hexir-bench/hexir-bench --module=" + inline_module + bench, &code);
  REQUIRE(code == 0);
  std::string pb = Sh("tools/hexir-bench/hexir-bench --module=" + parameter_module + " --parameters=" + dir +
                          "/p.gguf" + bench, &code);
  INFO(ib << "\n" << pb);
  REQUIRE(code == 0);
  const double steady = BenchCount(ib, "  per steady call:", "dispatches ");
  CHECK(steady >= 2);
  CHECK(BenchCount(pb, "  per steady call:", "dispatches ") == steady);
  // The first call also packed the filter and transposed B, in a submission of their own.
  CHECK(BenchCount(pb, "  first call     :", "dispatches ") == steady + 2);
  CHECK(BenchCount(pb, "  first call     :", "queue submissions ") == 2);
  CHECK(BenchCount(pb, "  per steady call:", "queue submissions ") == 1);
}

TEST_CASE("a parameter file of the wrong shapes names the argument and the tensor") {
  std::string dir = Folder("dense_shapes");
  Graph m = DenseModel();
  ox::testing::Save(m.model, dir + "/dense.onnx");
  int code = 0;
  Sh("tools/hexir-import/hexir-import " + dir + "/dense.onnx -o " + dir + "/dense.mlir --parameters=" + dir + "/dense.gguf", &code);
  REQUIRE(code == 0);
  // The same graph with W 40x31 imports to a file whose one tensor has 1240 elements.
  Graph wide = DenseModel();
  wide.g->mutable_initializer(0)->set_dims(1, 31);
  for (int i = 0; i < kIn; ++i) wide.g->mutable_initializer(0)->add_float_data(0.f);
  wide.g->mutable_initializer(1)->set_dims(0, 31);
  wide.g->mutable_initializer(1)->add_float_data(0.f);
  wide.g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(31);
  ox::testing::Save(wide.model, dir + "/wide.onnx");
  Sh("tools/hexir-import/hexir-import " + dir + "/wide.onnx -o " + dir + "/wide.mlir --parameters=" + dir + "/wide.gguf", &code);
  std::ifstream f(dir + "/dense.mlir");
  std::string mlir((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string module = CompileForCpu(mlir, "dense_shapes");
  REQUIRE(!module.empty());
  std::string err = Sh("tools/hexir-run/hexir-run --module=" + module + " --parameters=" + dir +
                           "/wide.gguf '--input=" + InputSpec() + "'",
                       &code);
  CHECK(code == 1);
  CHECK(Has(err, "argument 1 is tensor<40x30xf32>, the file's tensor 'W' is 1240 x f32"));
}

TEST_CASE("external data is read relative to the model's folder, embedded or as parameters") {
  std::string dir = Folder("external");
  Graph m = DenseModel();
  MakeExternal(m, dir, 16);
  ox::testing::Save(m.model, dir + "/model.onnx");
  int code = 0;
  // From another working directory: locations are relative to the model, not to the caller.
  std::string out = Sh("cd / && " + std::filesystem::current_path().string() + "/tools/hexir-import/hexir-import " + dir + "/model.onnx -o " + dir + "/embedded.mlir", &code);
  INFO(out);
  REQUIRE(code == 0);
  std::ifstream f(dir + "/embedded.mlir");
  std::string mlir((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string module = CompileForCpu(mlir, "external_embedded");
  REQUIRE(!module.empty());
  RunAndCompare(module, "");

  ox::ImportOptions options;
  options.parameters_path = dir + "/p.gguf";
  auto r = ox::ImportOnnxFile(dir + "/model.onnx", options);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  module = CompileForCpu(*r, "external_parameters");
  REQUIRE(!module.empty());
  RunAndCompare(module, dir + "/p.gguf");
}

TEST_CASE("a large raw_data weight is read in place: the import holds the model's structure, not the weight") {
  // y[1,4096] = x[1,2048] @ W, W a 32 MiB raw_data initializer of the .onnx itself.
  constexpr int kK = 2048, kN = 4096;
  std::string dir = Folder("in_place");
  Graph m;
  m.Input("x", {1, kK});
  m.Output("y", {1, kN});
  std::vector<float> w(static_cast<size_t>(kK) * kN);
  for (size_t i = 0; i < w.size(); ++i) w[i] = WeightAt(static_cast<int>(i % 100003));
  m.InitF("W", {kK, kN}, {});
  m.g->mutable_initializer(0)->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  m.Node("MatMul", {"x", "W"}, {"y"});
  ox::testing::Save(m.model, dir + "/big.onnx");
  const auto model_bytes = static_cast<int64_t>(std::filesystem::file_size(dir + "/big.onnx"));
  int code = 0;
  std::string out = Sh("/usr/bin/time -f 'maxrss %M KB' tools/hexir-import/hexir-import " + dir + "/big.onnx -o " +
                           dir + "/big.mlir --parameters=" + dir + "/big.gguf",
                       &code);
  INFO(out);
  REQUIRE(code == 0);
  size_t at = out.find("maxrss ");
  REQUIRE(at != std::string::npos);
  const int64_t peak = std::stoll(out.substr(at + 7)) * 1024;
  CHECK(peak < model_bytes / 2);  // protobuf's own parse holds the 32 MiB (and more while it grows)
  std::ifstream f(dir + "/big.mlir");
  std::string mlir((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string module = CompileForCpu(mlir, "in_place");
  REQUIRE(!module.empty());
  std::string x = "1x" + std::to_string(kK) + "xf32=";
  std::vector<float> xs(kK);
  for (int k = 0; k < kK; ++k) x += std::to_string(xs[k] = InputAt(k)) + " ";
  std::string y = Sh("tools/hexir-run/hexir-run --module=" + module + " --parameters=" + dir + "/big.gguf '--input=" + x + "'",
                     &code);
  REQUIRE(code == 0);
  std::vector<float> got = ParseFloats(y);
  REQUIRE(got.size() == static_cast<size_t>(kN));
  for (int j = 0; j < kN; ++j) {
    double acc = 0;
    for (int k = 0; k < kK; ++k) acc += double(xs[k]) * w[static_cast<size_t>(k) * kN + j];
    INFO("y[" << j << "]");
    REQUIRE(std::fabs(got[j] - acc) <= 1e-4 * (1 + std::fabs(acc)));
  }

  SECTION("a file cut inside the weight is refused as protobuf refuses it") {
    Sh("head -c 20000000 " + dir + "/big.onnx > " + dir + "/cut.onnx", &code);
    std::string err = Sh("tools/hexir-import/hexir-import " + dir + "/cut.onnx -o " + dir + "/cut.mlir", &code);
    CHECK(code == 1);
    CHECK(Has(err, "is not an ONNX model (protobuf parse failed)"));
  }
}

TEST_CASE("a missing, short or escaping external data file is an error naming the tensor") {
  std::string dir = Folder("external_bad");
  Graph m = DenseModel();
  MakeExternal(m, dir, 16);
  SECTION("missing") {
    ox::testing::Save(m.model, dir + "/model.onnx");
    int code = 0;
    Sh("rm " + dir + "/weights.bin", &code);
    auto r = ox::ImportOnnxFile(dir + "/model.onnx");
    REQUIRE(!r.ok());
    CHECK(Has(r.status().message(), "tensor 'W': external data file 'weights.bin' (" + dir +
                                        "/weights.bin): No such file or directory"));
  }
  SECTION("short") {
    ox::testing::Save(m.model, dir + "/model.onnx");
    int code = 0;
    Sh("truncate -s 1000 " + dir + "/weights.bin", &code);
    // Embedded, W (the first initializer) fails; with a parameter file W is a parameter whose
    // bytes are copied last, so b (embedded, read first) is the one named.
    const std::pair<std::string, std::string> cases[] = {
        {"", "tensor 'W': external data file 'weights.bin' has 1000 bytes, the tensor needs bytes [16, 4816)"},
        {dir + "/p.gguf", "tensor 'b': external data file 'weights.bin' has 1000 bytes, the tensor needs bytes [4816, 4936)"}};
    for (const auto& [parameters, message] : cases) {
      ox::ImportOptions options;
      options.parameters_path = parameters;
      auto r = ox::ImportOnnxFile(dir + "/model.onnx", options);
      REQUIRE(!r.ok());
      CHECK(Has(r.status().message(), message));
    }
  }
  SECTION("outside the model's folder") {
    m.g->mutable_initializer(0)->mutable_external_data(0)->set_value("../weights.bin");
    ox::testing::Save(m.model, dir + "/model.onnx");
    auto r = ox::ImportOnnxFile(dir + "/model.onnx");
    REQUIRE(!r.ok());
    CHECK(Has(r.status().message(),
              "tensor 'W': external data location '../weights.bin' is not a path inside the model's folder"));
  }
}

TEST_CASE("on a terminal the import and the compile show their stage and counts") {
  int code = 0;
  if (Sh("test -x /usr/bin/script", &code), code != 0) SUCCEED("no script(1) to make a terminal");
  if (code != 0) return;
  std::string dir = Folder("progress");
  Graph m = DenseModel();
  ox::testing::Save(m.model, dir + "/dense.onnx");
  const std::string cwd = std::filesystem::current_path().string();
  std::string out = Sh("/usr/bin/script -qec '" + cwd + "/tools/hexir-import/hexir-import " + dir +
                           "/dense.onnx -o " + dir + "/dense.mlir --parameters=" + dir + "/dense.gguf && " +
                           cwd + "/tools/hexir-compile/hexir-compile " + dir + "/dense.mlir --target=cpu -o " +
                           dir + "/dense.vmfb' /dev/null",
                       &code);
  INFO(out);
  CHECK(code == 0);
  CHECK(Has(out, "hexir-import: reading " + dir + "/dense.onnx"));
  CHECK(Has(out, "hexir-import: lowering: 1 nodes, 1 of 2 top-level (MatMul)"));
  CHECK(Has(out, "hexir-compile: pass 1 (hexir-"));  // the pipeline's first pass, whichever it is
  // The line is redrawn at most every 200 ms, but the pipeline's last pass (Pipeline.cpp ends with
  // the memoization of VM shape work, a module pass) is always drawn before the line is cleared.
  CHECK(Has(out, "(hexir-memoize-vm-shape-work), "));
}
