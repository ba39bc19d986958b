// ONNX models placed across devices by the importer (ImportOptions::node_devices, hexir-import
// --onnx-devices): pre-processing (scale, shift) and post-processing (clamp) on device 0, the
// model (two MatMul + Relu layers) on device 1. With two CPU devices (different worker
// counts) the result equals the one-device result, each device runs its part, and with
// --copy-shared-memory the two crossings are counted transfers; selector errors are named.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"
#include "tools/common/invocation.h"

namespace {
namespace ox = hexir::importers::onnx;
using hexir::tools::HostTensor;
using hexir::tools::HostValue;
using ox::testing::Graph;
using ox::testing::Sh;
using ox::testing::Tmp;

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

std::string Compile(const std::string& mlir, const std::string& name, const std::string& flags) {
  std::string src = Tmp(name + ".mlir"), mod = Tmp(name + ".vmfb");
  std::ofstream(src) << mlir;
  int code = 0;
  std::string out = Sh("tools/hexir-compile/hexir-compile " + src + " " + flags + " -o " + mod, &code);
  INFO(out);
  REQUIRE(code == 0);
  return mod;
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

}  // namespace

TEST_CASE("an ONNX model with pre- and post-processing placed on device 0 gives the one-device result on two CPU devices") {
  Graph m = PrePostModel();
  auto plain = ox::ImportOnnxModel(m.model);
  REQUIRE(plain.ok());
  ox::ImportOptions options;
  options.node_devices = "pre_scale:0,pre_shift:0,2-5:1,post_clamp:0";
  auto placed = ox::ImportOnnxModel(m.model, options);
  INFO(placed.status().ToString());
  REQUIRE(placed.ok());
  CHECK(placed->find("hexir.device = 1 : i64") != std::string::npos);
  CHECK(plain->find("hexir.device") == std::string::npos);

  const std::vector<float> x = Random(32, 3);
  auto single = hexir::tools::Session::Open(Compile(*plain, "prepost_one", "--target=cpu"), {});
  REQUIRE(single.ok());
  const HostTensor expected = Run(**single, x);
  for (const char* copy : {"", " --copy-shared-memory"}) {
    INFO(copy);
    hexir::tools::InvocationOptions two;
    two.device_uris = {"cpu", "cpu:threads=1"};
    auto session = hexir::tools::Session::Open(
        Compile(*placed, std::string("prepost_two") + (*copy ? "_copy" : ""), std::string("--target=cpu --target=cpu") + copy),
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
