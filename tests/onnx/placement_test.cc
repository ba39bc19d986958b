// ONNX models placed across devices by the importer (ImportOptions::node_devices, hexir-import
// --onnx-devices): pre-processing (scale, shift) and post-processing (clamp) on device 0, the
// model (two MatMul + Relu layers) on device 1. With two CPU devices (different worker
// counts) the result equals the one-device result, each device runs its part, and with
// --copy-shared-memory the two crossings are counted transfers; selector errors are named.
// With the CPU and a CUDA device (modules compiled here, run on the GPU machine from
// HEXIR_PRECOMPILED_DIR) the result matches the one-device results and the two crossings
// are transfers counted on the GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/e2e/harness.h"
#include "tests/onnx/test_graph.h"
#include "tools/common/invocation.h"

namespace {
namespace ox = hexir::importers::onnx;
using hexir::tools::HostTensor;
using hexir::tools::HostValue;
using ox::testing::Graph;

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

Graph PrePostModel() {
  Graph m;
  m.Input("x", {4, 8});
  m.Output("y", {4, 8});
  m.InitF("half", {1}, {0.5f});
  m.InitF("one", {1}, {1.0f});
  m.InitF("w0", {8, 8}, Random(64, 1));
  m.InitF("w1", {8, 8}, Random(64, 2));
  m.Node("Mul", {"x", "half"}, {"scaled"}, "pre_scale");
  m.Node("Add", {"scaled", "one"}, {"shifted"}, "pre_shift");
  m.Node("MatMul", {"shifted", "w0"}, {"m0"}, "layer0");
  m.Node("Relu", {"m0"}, {"h0"}, "relu0");
  m.Node("MatMul", {"h0", "w1"}, {"m1"}, "layer1");
  m.Node("Relu", {"m1"}, {"h1"}, "relu1");
  m.Node("Min", {"h1", "one"}, {"y"}, "post_clamp");
  return m;
}

// The module of `mlir` for the targets `first` and `more` (e.g. "--target=cuda"), through the
// e2e harness: compiled here, or taken from HEXIR_PRECOMPILED_DIR on a machine without LLVM.
std::string Compile(const std::string& mlir, const std::string& name, const std::string& first,
                    const std::string& more = "") {
  return hexir::e2e::CompileOrDie(mlir, name, first, more);
}

HostTensor Run(hexir::tools::Session& session, const std::vector<float>& x) {
  HostValue in;
  in.tensor.element_type = static_cast<int32_t>(hexir::hal::ElementType::kF32);
  in.tensor.dims = {4, 8};
  in.tensor.bytes.resize(x.size() * 4);
  std::memcpy(in.tensor.bytes.data(), x.data(), in.tensor.bytes.size());
  auto fn = session.LookupFunction("main");
  REQUIRE(fn.ok());
  std::vector<HostValue> out;
  hexir::Status st = session.Call(*fn, {in}, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  REQUIRE(out.size() == 1);
  return out[0].tensor;
}

// The model's MLIR unplaced, and with pre/post-processing on device 0 and the layers on 1.
struct PrePost {
  std::string plain, placed;
};
PrePost ImportPrePost() {
  Graph m = PrePostModel();
  auto plain = ox::ImportOnnxModel(m.model);
  INFO(plain.status().ToString());
  REQUIRE(plain.ok());
  ox::ImportOptions options;
  options.node_devices = "pre_scale:0,pre_shift:0,2-5:1,post_clamp:0";
  auto placed = ox::ImportOnnxModel(m.model, options);
  INFO(placed.status().ToString());
  REQUIRE(placed.ok());
  return {*plain, *placed};
}

}  // namespace

TEST_CASE("an ONNX model with pre- and post-processing placed on device 0 gives the one-device result on two CPU devices") {
  const PrePost imported = ImportPrePost();
  const std::string *plain = &imported.plain, *placed = &imported.placed;
  CHECK(placed->find("hexir.device = 1 : i64") != std::string::npos);
  CHECK(plain->find("hexir.device") == std::string::npos);

  const std::vector<float> x = Random(32, 3);
  auto single = hexir::tools::Session::Open(Compile(*plain, "onnx_prepost_one", "cpu"), {});
  REQUIRE(single.ok());
  const HostTensor expected = Run(**single, x);
  for (const char* copy : {"", " --copy-shared-memory"}) {
    INFO(copy);
    hexir::tools::InvocationOptions two;
    two.device_uris = {"cpu", "cpu:threads=1"};
    auto session = hexir::tools::Session::Open(
        Compile(*placed, std::string("onnx_prepost_two") + (*copy ? "_copy" : ""), "cpu", std::string("--target=cpu") + copy),
        two);
    INFO(session.status().ToString());
    REQUIRE(session.ok());
    hexir::hal::Device &d0 = (*session)->device(0), &d1 = (*session)->device(1);
    hexir::hal::DeviceStats before0 = d0.stats(), before1 = d1.stats();
    const HostTensor actual = Run(**session, x);
    REQUIRE(actual.bytes == expected.bytes);
    CHECK(d0.stats().dispatches_executed > before0.dispatches_executed);
    CHECK(d1.stats().dispatches_executed > before1.dispatches_executed);
    const uint64_t moved = d0.stats().transfers_queued - before0.transfers_queued +
                           d1.stats().transfers_queued - before1.transfers_queued;
    // With copies: the pre-processed x to device 1, the model's result back; else in place.
    CHECK(moved == (*copy ? 2u : 0u));
  }
}

float MaxDifference(const HostTensor& a, const HostTensor& b) {
  REQUIRE(a.bytes.size() == b.bytes.size());
  const float* x = reinterpret_cast<const float*>(a.bytes.data());
  const float* y = reinterpret_cast<const float*>(b.bytes.data());
  float worst = 0;
  for (size_t i = 0; i < a.bytes.size() / 4; ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

TEST_CASE("an ONNX model with pre- and post-processing on the CPU and the layers on CUDA gives the one-device results [cpu+cuda]") {
  const PrePost imported = ImportPrePost();
  const std::string *plain = &imported.plain, *placed = &imported.placed;
  const std::string on_cpu = Compile(*plain, "onnx_prepost_one", "cpu");
  const std::string on_cuda = Compile(*plain, "onnx_prepost_one", "cuda");
  const std::string split = Compile(*placed, "onnx_prepost_cpu_cuda", "cpu", "--target=cuda");
  try {
    hexir::e2e::RequireDevice("cuda");
  } catch (const hexir::e2e::DeviceUnavailable& e) {
    std::printf("HEXIR_SKIPPED: an ONNX model on the CPU and CUDA: %s\n", e.reason.c_str());
    return;
  }
  const std::vector<float> x = Random(32, 3);
  auto cpu = hexir::tools::Session::Open(on_cpu, {});
  REQUIRE(cpu.ok());
  hexir::tools::InvocationOptions gpu_only;
  gpu_only.device_uris = {"cuda"};
  auto gpu = hexir::tools::Session::Open(on_cuda, gpu_only);
  INFO(gpu.status().ToString());
  REQUIRE(gpu.ok());
  const HostTensor cpu_result = Run(**cpu, x), gpu_result = Run(**gpu, x);
  hexir::tools::InvocationOptions both;
  both.device_uris = {"cpu", "cuda"};
  auto session = hexir::tools::Session::Open(split, both);
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  hexir::hal::Device &d0 = (*session)->device(0), &d1 = (*session)->device(1);
  Run(**session, x);  // the first call uploads the weights (constants) to the GPU
  const hexir::hal::DeviceStats before0 = d0.stats(), before1 = d1.stats();
  const HostTensor actual = Run(**session, x);
  // The layers' kernels are the one-CUDA-device module's; the CPU's matmul sums in another order.
  std::printf("[cpu+cuda] ONNX pre/post on the CPU: max |difference| %g from one CUDA device, %g from "
              "one CPU device\n", MaxDifference(actual, gpu_result), MaxDifference(actual, cpu_result));
  CHECK(MaxDifference(actual, gpu_result) <= 1e-5f);
  CHECK(MaxDifference(actual, cpu_result) <= 1e-5f);
  CHECK(d0.stats().dispatches_executed > before0.dispatches_executed);
  CHECK(d1.stats().dispatches_executed > before1.dispatches_executed);
  // The pre-processed x to the GPU, the layers' result back: queue transfers on the GPU.
  CHECK(d1.stats().transfers_queued - before1.transfers_queued == 2);
}

TEST_CASE("ONNX node placement names a malformed item, an index past the graph and an unknown node") {
  Graph m = PrePostModel();
  ox::ImportOptions options;
  options.node_devices = "layer0";
  CHECK(ox::ImportOnnxModel(m.model, options).status().message() ==
        "--onnx-devices: 'layer0' is not SELECTOR:DEVICE");
  options.node_devices = "2-9:1";
  CHECK(ox::ImportOnnxModel(m.model, options).status().message() ==
        "--onnx-devices: '2-9:1': the graph has nodes 0-6");
  options.node_devices = "layer7:1";
  CHECK(ox::ImportOnnxModel(m.model, options).status().message() ==
        "--onnx-devices: no node is named 'layer7'");
}
