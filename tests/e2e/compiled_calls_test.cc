// End-to-end through the embedding API (tools/common Session): a compiled function called
// several times in one context, checked with HAL device statistics: command buffers are
// recorded on the first call only and replayed afterwards, executables load once, and the
// host waits only where it reads results.
#include <catch2/catch.hpp>

#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

HostValue Tensor(HostTensor t) {
  HostValue v;
  v.kind = HostValue::Kind::kTensor;
  v.tensor = std::move(t);
  return v;
}

HostValue F32Scalar(double x) {
  HostValue v;
  v.kind = HostValue::Kind::kFloat;
  v.scalar_type = static_cast<int32_t>(hal::ElementType::kF32);
  v.f = x;
  return v;
}

std::unique_ptr<tools::Session> OpenOrDie(const std::string& module, int cpu_threads = -1) {
  tools::InvocationOptions options;
  options.cpu_threads = cpu_threads;
  auto session = tools::Session::Open(module, options);
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  return std::move(session).value();
}

std::vector<HostValue> CallOrDie(tools::Session& s, const std::string& name,
                                 const std::vector<HostValue>& inputs) {
  auto fn = s.LookupFunction(name);
  REQUIRE(fn.ok());
  std::vector<HostValue> results;
  Status st = s.Call(*fn, inputs, &results);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return results;
}

// relu(a @ b + bias) * s, then + a@b's shape-mate c: three kernels, two of them chained.
const char* kTwoDispatches = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
#bcast = affine_map<(i, j) -> (j)>
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>, %s: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #bcast, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    %c0 = arith.constant 0.0 : f32
    %u = arith.maximumf %t, %c0 : f32
    linalg.yield %u : f32
  } -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %q = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%r, %m : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.mulf %x, %s : f32
    %w = arith.addf %t, %y : f32
    linalg.yield %w : f32
  } -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}
)mlir";

HostTensor Reference(const HostTensor& a, const HostTensor& b, const HostTensor& bias, float s) {
  HostTensor q = ZerosF32({4, 16});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      float m = 0;
      for (int k = 0; k < 8; ++k) m += F32(a)[i * 8 + k] * F32(b)[k * 16 + j];
      float r = std::max(m + F32(bias)[j], 0.0f);
      F32(q)[i * 16 + j] = r * s + m;
    }
  return q;
}

TEST_CASE("a second call records no command buffer, loads no executable, waits only to read") {
  std::string module = CompileOrDie(kTwoDispatches, "memo");
  auto session = OpenOrDie(module);
  hal::Device& device = session->device();
  for (int call = 0; call < 3; ++call) {
    HostTensor a = RandomF32({4, 8}, 10 + call), b = RandomF32({8, 16}, 20 + call),
               bias = RandomF32({16}, 30 + call);
    float s = 0.5f + call;
    hal::DeviceStats before = device.stats();
    auto results = CallOrDie(*session, "main", {Tensor(a), Tensor(b), Tensor(bias), F32Scalar(s)});
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, Reference(a, b, bias, s), 1e-5, 1e-5);
    INFO("call " << call);
    if (call == 0) {
      CHECK(after.command_buffers_recorded - before.command_buffers_recorded == 1);
      CHECK(after.executables_loaded - before.executables_loaded >= 1);
    } else {
      CHECK(after.command_buffers_recorded == before.command_buffers_recorded);
      CHECK(after.executables_loaded == before.executables_loaded);
    }
    CHECK(after.queue_submissions > before.queue_submissions);
    // The function itself never waits: the one host wait is the result download.
    CHECK(after.host_waits - before.host_waits == 1);
  }
}

}  // namespace
}  // namespace hexir::e2e
