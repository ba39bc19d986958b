// End-to-end through the embedding API (tools/common Session): a compiled function called
// several times in one context, checked with HAL device statistics: command buffers are
// recorded on the first call only and replayed afterwards, executables load once, and the
// host waits only where it reads results. Every case runs as "[cpu]" and "[cuda]": the CUDA
// variant compiles with --target=cuda everywhere and runs where there is a GPU (skipped
// otherwise); checks that run hexir-compile themselves are skipped with HEXIR_PRECOMPILED_DIR
// (the GPU machine has no compiler; they ran where the modules were built).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "hal/drivers/cuda/cuda_device.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

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

// CUDA-only counters (zero on other devices): the graph and module work behind a call.
hal::cuda::CudaStats CudaStatsOf(hal::Device& device) {
  if (device.uri().substr(0, 4) != "cuda") return {};
  auto stats = hal::cuda::GetCudaStats(device);
  REQUIRE(stats.ok());
  return *stats;
}

void SecondCallReplays(const std::string& target) {
  std::string module = CompileOrDie(kTwoDispatches, "memo", target);
  auto session = OpenOrDie(module, target);
  hal::Device& device = session->device();
  for (int call = 0; call < 3; ++call) {
    HostTensor a = RandomF32({4, 8}, 10 + call), b = RandomF32({8, 16}, 20 + call),
               bias = RandomF32({16}, 30 + call);
    float s = 0.5f + call;
    hal::DeviceStats before = device.stats();
    hal::cuda::CudaStats cuda_before = CudaStatsOf(device);
    auto results = CallOrDie(*session, "main", {Tensor(a), Tensor(b), Tensor(bias), F32Scalar(s)});
    hal::DeviceStats after = device.stats();
    hal::cuda::CudaStats cuda_after = CudaStatsOf(device);
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, Reference(a, b, bias, s), 1e-5, 1e-5);
    INFO("call " << call);
    if (call == 0) {
      CHECK(after.command_buffers_recorded - before.command_buffers_recorded == 1);
      CHECK(after.executables_loaded - before.executables_loaded >= 1);
    } else {
      CHECK(after.command_buffers_recorded == before.command_buffers_recorded);
      CHECK(after.executables_loaded == before.executables_loaded);
      // CUDA: the recording is a graph, instantiated once; its kernels' module loaded once.
      CHECK(cuda_after.graph_instantiations == cuda_before.graph_instantiations);
      CHECK(cuda_after.module_loads == cuda_before.module_loads);
    }
    CHECK(after.queue_submissions > before.queue_submissions);
    // The function itself never waits: the one host wait is the result download (on CUDA the
    // staging copy of the read is counted by CudaStats::host_synchronizations, not here).
    CHECK(after.host_waits - before.host_waits == 1);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a second call records no command buffer, loads no executable, waits only to read",
                          SecondCallReplays)

// ---- dynamic shapes ------------------------------------------------------------------------

const char* kSoftmax = R"mlir(
#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @softmax(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %ninf = arith.constant -3.0e38 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %m = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]} ins(%x : tensor<?xf32>) outs(%m0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty(%n) : tensor<?xf32>
  %ex = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel"]} ins(%x, %m : tensor<?xf32>, tensor<f32>) outs(%e1 : tensor<?xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %d = arith.subf %a, %mm : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<?xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]} ins(%ex : tensor<?xf32>) outs(%s0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty(%n) : tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel"]} ins(%ex, %s : tensor<?xf32>, tensor<f32>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %q = arith.divf %a, %t : f32
    linalg.yield %q : f32
  } -> tensor<?xf32>
  return %y : tensor<?xf32>
}
)mlir";

void DynamicSoftmax(const std::string& target) {
  std::string module = CompileOrDie(kSoftmax, "softmax", target);
  auto session = OpenOrDie(module, target);
  hal::DeviceStats start = session->device().stats();
  for (int64_t n = 1; n <= 64; ++n) {
    int64_t len = n * 7 - 3 * (n % 5);  // 64 different lengths, not sorted
    HostTensor x = RandomF32({len}, static_cast<unsigned>(n), -4, 4);
    auto results = CallOrDie(*session, "softmax", {Tensor(x)});
    REQUIRE(results.size() == 1);
    HostTensor expected = ZerosF32({len});
    double mx = -1e300, sum = 0;
    for (int64_t i = 0; i < len; ++i) mx = std::max(mx, double(F32(x)[i]));
    for (int64_t i = 0; i < len; ++i) sum += std::exp(double(F32(x)[i]) - mx);
    for (int64_t i = 0; i < len; ++i) F32(expected)[i] = float(std::exp(F32(x)[i] - mx) / sum);
    INFO("length " << len);
    RequireClose(results[0].tensor, expected, 1e-5, 1e-6);
  }
  hal::DeviceStats end = session->device().stats();
  // One segment: recorded on the first call, replayed for the 63 other lengths.
  CHECK(end.command_buffers_recorded - start.command_buffers_recorded == 1);
  CHECK(end.executables_loaded - start.executables_loaded <= 4);
}
HEXIR_E2E_TEST_ON_DEVICES("dynamic-length softmax: 64 lengths, one recording", DynamicSoftmax)

const char* kDynamicMatmul = R"mlir(
func.func @mm(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
)mlir";

void DynamicMatmul(const std::string& target) {
  std::string module = CompileOrDie(kDynamicMatmul, "dynamic_matmul", target);
  auto session = OpenOrDie(module, target);
  for (int64_t m : {1, 5, 17, 64, 3}) {
    HostTensor a = RandomF32({m, 8}, static_cast<unsigned>(m)), b = RandomF32({8, 16}, 99);
    auto results = CallOrDie(*session, "mm", {Tensor(a), Tensor(b)});
    HostTensor expected = ZerosF32({m, 16});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 16; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 8; ++k) acc += double(F32(a)[i * 8 + k]) * F32(b)[k * 16 + j];
        F32(expected)[i * 16 + j] = float(acc);
      }
    INFO("M = " << m);
    RequireClose(results[0].tensor, expected, 1e-5, 1e-5);
  }
  // Two recordings: M = 1 runs its own executable (hexir-specialize-dispatches), recorded on
  // its first call; M = 5, 17, 64, 3 share the generic one's.
  CHECK(session->device().stats().command_buffers_recorded == 2);
}
HEXIR_E2E_TEST_ON_DEVICES("matmul with a dynamic M", DynamicMatmul)

// ---- control flow ---------------------------------------------------------------------------

const char* kWhile = R"mlir(
#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @grow(%x: tensor<4xf32>, %limit: f32) -> tensor<4xf32> {
  %r = scf.while (%a = %x) : (tensor<4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<f32>
    %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]} ins(%a : tensor<4xf32>) outs(%s0 : tensor<f32>) {
    ^bb0(%v: f32, %acc: f32):
      %t = arith.addf %v, %acc : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    %v = tensor.extract %s[] : tensor<f32>
    %c = arith.cmpf olt, %v, %limit : f32
    scf.condition(%c) %a : tensor<4xf32>
  } do {
  ^bb0(%b: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %w = arith.addf %v, %v : f32
      linalg.yield %w : f32
    } -> tensor<4xf32>
    scf.yield %d : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
)mlir";

void WhileLoop(const std::string& target) {
  std::string module = CompileOrDie(kWhile, "while", target);
  auto session = OpenOrDie(module, target);
  for (float limit : {5.0f, 100.0f, 1000.0f}) {
    HostTensor x = RandomF32({4}, 7, 0.5f, 1.5f);
    hal::DeviceStats before = session->device().stats();
    auto results = CallOrDie(*session, "grow", {Tensor(x), F32Scalar(limit)});
    hal::DeviceStats after = session->device().stats();
    HostTensor expected = x;
    int iterations = 0;
    for (;;) {
      float sum = 0;
      for (int i = 0; i < 4; ++i) sum += F32(expected)[i];
      if (!(sum < limit)) break;
      for (int i = 0; i < 4; ++i) F32(expected)[i] *= 2;
      ++iterations;
    }
    INFO("limit " << limit << ", iterations " << iterations);
    RequireClose(results[0].tensor, expected);
    // One wait per condition test (iterations + 1) plus the result download.
    CHECK(after.host_waits - before.host_waits == static_cast<uint64_t>(iterations + 2));
  }
  // The condition segment and the body segment: each recorded once.
  CHECK(session->device().stats().command_buffers_recorded == 2);
}
HEXIR_E2E_TEST_ON_DEVICES("a while loop stops on a device-computed condition, one wait per test", WhileLoop)

const char* kIf = R"mlir(
#id = affine_map<(i) -> (i)>
func.func @pick(%x: tensor<?xf32>, %k: i64) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %two = arith.constant 2 : i64
  %rem = arith.remsi %k, %two : i64
  %zero = arith.constant 0 : i64
  %even = arith.cmpi eq, %rem, %zero : i64
  %r = scf.if %even -> tensor<?xf32> {
    %e = tensor.empty(%n) : tensor<?xf32>
    %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %w = arith.negf %v : f32
      linalg.yield %w : f32
    } -> tensor<?xf32>
    scf.yield %a : tensor<?xf32>
  } else {
    %kf = arith.sitofp %k : i64 to f32
    %e = tensor.empty(%n) : tensor<?xf32>
    %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %w = arith.mulf %v, %kf : f32
      linalg.yield %w : f32
    } -> tensor<?xf32>
    scf.yield %b : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
)mlir";

void IfBranches(const std::string& target) {
  std::string module = CompileOrDie(kIf, "if", target);
  auto session = OpenOrDie(module, target);
  for (int64_t k = 0; k < 6; ++k) {
    HostTensor x = RandomF32({3 + k}, static_cast<unsigned>(40 + k));
    auto results = CallOrDie(*session, "pick", {Tensor(x), I64Scalar(k)});
    HostTensor expected = x;
    for (int64_t i = 0; i < 3 + k; ++i)
      F32(expected)[i] = k % 2 == 0 ? -F32(x)[i] : F32(x)[i] * float(k);
    INFO("k = " << k);
    RequireClose(results[0].tensor, expected);
  }
  CHECK(session->device().stats().command_buffers_recorded == 2);
}
HEXIR_E2E_TEST_ON_DEVICES("scf.if on host scalar arithmetic picks a branch; each branch records once",
                          IfBranches)

const char* kScaledMatmul = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @smm(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>, %s: f32) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x8xf32>
  %ea = tensor.empty(%m) : tensor<?x8xf32>
  %scaled = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x8xf32>) outs(%ea : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %s : f32
    linalg.yield %y : f32
  } -> tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %r = linalg.matmul ins(%scaled, %b : tensor<?x8xf32>, tensor<8x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  %e2 = tensor.empty(%m) : tensor<?x16xf32>
  %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<?x16xf32>) outs(%e2 : tensor<?x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.tanh %x : f32
    linalg.yield %y : f32
  } -> tensor<?x16xf32>
  return %t : tensor<?x16xf32>
}
)mlir";

void FusedScaledMatmul(const std::string& target) {
  std::string module = CompileOrDie(kScaledMatmul, "scaled_matmul", target);
  auto session = OpenOrDie(module, target);
  for (int64_t m : {3, 20}) {
    HostTensor a = RandomF32({m, 8}, 5), b = RandomF32({8, 16}, 6);
    hal::DeviceStats before = session->device().stats();
    auto results = CallOrDie(*session, "smm", {Tensor(a), Tensor(b), F32Scalar(0.75)});
    hal::DeviceStats after = session->device().stats();
    CHECK(after.dispatches_executed - before.dispatches_executed == 1);
    HostTensor expected = ZerosF32({m, 16});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 16; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 8; ++k)
          acc += double(F32(a)[i * 8 + k] * 0.75f) * F32(b)[k * 16 + j];
        F32(expected)[i * 16 + j] = float(std::tanh(acc));
      }
    RequireClose(results[0].tensor, expected, 1e-5, 1e-5);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("elementwise producer and consumer fuse with their matmul: one dispatch per call",
                          FusedScaledMatmul)

std::string EightCalls() {
  std::ostringstream s;
  s << "#map = affine_map<(i, j) -> (i, j)>\n";
  s << "func.func @net(%x: tensor<4x16xf32>";
  for (int i = 0; i < 8; ++i) s << ", %w" << i << ": tensor<16x16xf32>";
  s << ") -> tensor<4x16xf32> {\n";
  std::string prev = "%x";
  for (int i = 0; i < 8; ++i) {
    s << "  %h" << i << " = func.call @layer(" << prev << ", %w" << i
      << ") : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>\n";
    prev = "%h" + std::to_string(i);
  }
  s << "  return " << prev << R"mlir( : tensor<4x16xf32>
}
func.func private @layer(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
)mlir";
  return s.str();
}

// True where modules come precompiled (HEXIR_PRECOMPILED_DIR: no hexir-compile to run).
bool Precompiled() { return std::getenv("HEXIR_PRECOMPILED_DIR") != nullptr; }

// The 8-layer net compiled with `flags`: its VM-form text checked by `check_vm` (where
// modules are compiled here), its result against C++, and what its first call did on the
// device (recordings, submissions, dispatches; executables loaded in all).
hal::DeviceStats EightCallsRun(const std::string& target, const std::string& name, const std::string& flags,
                               const std::function<void(const std::function<size_t(const std::string&)>&)>& check_vm) {
  std::string source = EightCalls();
  std::string module = CompileOrDie(source, name, target, flags);
  if (!Precompiled()) {  // a compile-side check: it ran where the module was built
    std::string mlir = TempFile(name + "." + target + ".vm.mlir");
    CommandResult vm = RunCommand(HexirCompile() + " " + TempFile(name + ".mlir") + " --target=" + target +
                                  " " + flags + " --emit-vm-mlir -o " + mlir);
    INFO(vm.output);
    REQUIRE(vm.exit_code == 0);
    std::ifstream in(mlir);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    CHECK(count("hexir.executable @") == 1);
    check_vm(count);
  }

  auto session = OpenOrDie(module, target);
  HostTensor x = RandomF32({4, 16}, 1);
  std::vector<HostValue> inputs = {Tensor(x)};
  std::vector<HostTensor> w;
  for (int i = 0; i < 8; ++i) {
    w.push_back(RandomF32({16, 16}, 100 + i, -0.3f, 0.3f));
    inputs.push_back(Tensor(w.back()));
  }
  hal::DeviceStats before = session->device().stats();
  auto results = CallOrDie(*session, "net", inputs);
  HostTensor h = x;
  for (int l = 0; l < 8; ++l) {
    HostTensor next = ZerosF32({4, 16});
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 16; ++j) {
        double acc = 0;
        for (int k = 0; k < 16; ++k) acc += double(F32(h)[i * 16 + k]) * F32(w[l])[k * 16 + j];
        F32(next)[i * 16 + j] = float(std::tanh(acc));
      }
    h = next;
  }
  RequireClose(results[0].tensor, h, 1e-4, 1e-5);
  hal::DeviceStats after = session->device().stats(), call;  // the call's own work
  call.command_buffers_recorded = after.command_buffers_recorded - before.command_buffers_recorded;
  call.queue_submissions = after.queue_submissions - before.queue_submissions;
  call.dispatches_executed = after.dispatches_executed - before.dispatches_executed;
  call.executables_loaded = after.executables_loaded;
  // A second call replays: the buffers it allocates are what every later call allocates.
  hal::DeviceStats replay_before = session->device().stats();
  RequireClose(CallOrDie(*session, "net", inputs)[0].tensor, h, 1e-4, 1e-5);
  call.buffers_allocated = session->device().stats().buffers_allocated - replay_before.buffers_allocated;
  return call;
}

void EightCallsKept(const std::string& target) {
  hal::DeviceStats stats = EightCallsRun(target, "eight_calls_kept", "", [](const auto& count) {
    // The layer once in the bytecode: its host form, called 8 times, and its recording
    // function, called by the caller's one recording (8 times, at 8 slot offsets).
    CHECK(count("func.func private @layer(") == 1);
    CHECK(count("func.func private @layer.record(") == 1);
    CHECK(count("hexir_vm.call @layer(") == 8);
    CHECK(count("hexir_vm.call @layer.record(") == 8);
    CHECK(count("\"hal.device.queue.execute_bound\"") == 1);
  });
  // The 8 calls record into the caller's one command buffer, submitted once: as inlined.
  CHECK(stats.command_buffers_recorded == 1);
  CHECK(stats.queue_submissions == 1);
  CHECK(stats.dispatches_executed == 8);
  CHECK(stats.executables_loaded == 1);
  // Allocations per call as inlined: the 9 arguments uploaded and the returned result. The 7
  // results used only inside the caller's region are kept per call site (held buffers,
  // passes/vm/LowerRecordedCalls.cpp); before, each call allocated its result (9 + 8).
  CHECK(stats.buffers_allocated == 9 + 1);
}
HEXIR_E2E_TEST_ON_DEVICES("a function called 8 times, kept as calls, records into the caller's one command buffer: one bytecode function, one executable, one recording, one submission",
                          EightCallsKept)

void EightCallsInlined(const std::string& target) {
  hal::DeviceStats stats = EightCallsRun(target, "eight_calls", "--inline-device-calls", [](const auto& count) {
    CHECK(count("func.func private @layer(") == 0);
    CHECK(count("hexir_vm.call @layer(") == 0);
  });
  // The 8 call sites record into the caller's one command buffer, submitted once.
  CHECK(stats.command_buffers_recorded == 1);
  CHECK(stats.queue_submissions == 1);
  CHECK(stats.dispatches_executed == 8);
  CHECK(stats.executables_loaded == 1);
  CHECK(stats.buffers_allocated == 9 + 1);  // the arguments uploaded, the returned result
}
HEXIR_E2E_TEST_ON_DEVICES("a function with device work called 8 times, inlined, records into the caller's one command buffer: one submission, one executable",
                          EightCallsInlined)

// @layer of the dynamic-row call cases: x * w, then tanh, rows x 16.
const char* kTanhLayer = R"mlir(
func.func private @layer(%x: tensor<?x16xf32>, %w: tensor<16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %r = linalg.generic {indexing_maps = [#rows, #cols, #rows], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<?x16xf32>, tensor<16xf32>) outs(%e : tensor<?x16xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.mulf %a, %s : f32
    %t = math.tanh %m : f32
    linalg.yield %t : f32
  } -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
)mlir";

// A recorded callee with a dynamic dim: rows cross the call as registers (no views), the
// callee's host work sizes its result and parameter buffer per call, and its one recording
// serves every call site and every row count (7, 1, 13: prime, one, odd). (An elementwise
// body: a dynamic-M matmul specializes M = 1 behind a host branch, so its callee has several
// blocks and stays a call of its own.)
const std::string kDynamicLayerCalls = R"mlir(
#rows = affine_map<(i, j) -> (i, j)>
#cols = affine_map<(i, j) -> (j)>
func.func @net(%x: tensor<?x16xf32>, %w: tensor<16xf32>) -> tensor<?x16xf32> {
  %a = func.call @layer(%x, %w) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %b = func.call @layer(%a, %w) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %c = func.call @layer(%b, %w) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return %c : tensor<?x16xf32>
}
)mlir" + std::string(kTanhLayer);

void DynamicLayerCallsKept(const std::string& target) {
  std::string module = CompileOrDie(kDynamicLayerCalls, "dynamic_layer_calls_kept", target);
  std::string inlined_module = CompileOrDie(kDynamicLayerCalls, "dynamic_layer_calls", target, "--inline-device-calls");
  auto session = OpenOrDie(module, target);
  auto inlined = OpenOrDie(inlined_module, target);
  HostTensor w = RandomF32({16}, 7, -2.0f, 2.0f);
  for (int64_t rows : {7, 1, 13, 13}) {
    INFO("rows " << rows);
    HostTensor x = RandomF32({rows, 16}, unsigned(rows));
    hal::DeviceStats inlined_before = inlined->device().stats();
    CallOrDie(*inlined, "net", {Tensor(x), Tensor(w)});
    hal::DeviceStats inlined_after = inlined->device().stats();
    hal::DeviceStats before = session->device().stats();
    auto results = CallOrDie(*session, "net", {Tensor(x), Tensor(w)});
    hal::DeviceStats after = session->device().stats();
    // Allocations as inlined: the three calls' parameter buffers hold equal words, so the
    // second and third reuse the first's (hal.allocator.reuse_uniform), as the inlined
    // dispatches share one; the intermediate results are kept per call site (held buffers).
    CHECK(after.buffers_allocated - before.buffers_allocated ==
          inlined_after.buffers_allocated - inlined_before.buffers_allocated);
    CHECK(after.command_buffers_recorded == inlined_after.command_buffers_recorded);
    HostTensor expected = ZerosF32({rows, 16});
    for (int64_t i = 0; i < rows; ++i)
      for (int j = 0; j < 16; ++j) {
        double v = F32(x)[i * 16 + j];
        for (int l = 0; l < 3; ++l) v = double(float(std::tanh(v * F32(w)[j])));
        F32(expected)[i * 16 + j] = float(v);
      }
    RequireClose(results[0].tensor, expected, 1e-5, 1e-6);
    CHECK(after.queue_submissions - before.queue_submissions == 1);  // the three calls: one submission
    CHECK(after.dispatches_executed - before.dispatches_executed == 3);
    CHECK(after.command_buffers_recorded == 1);  // recorded at the first call, for every row count
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a recorded callee with dynamic rows (7, 1, 13, 13): one submission, one recording, the inlined allocations, f64 reference",
                          DynamicLayerCallsKept)

// A dim of a recorded call's result read by the caller (here the shape check before the add,
// hexir-insert-shape-checks) is resolved through the callee to a dim of the call's operand,
// so the call and the add stay one command buffer: one submission, as inlined (before: the
// dim closed the caller's region, two). Rows 6, 1, 11.
const std::string kCallResultDim = R"mlir(
#rows = affine_map<(i, j) -> (i, j)>
#cols = affine_map<(i, j) -> (j)>
func.func @net(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %y: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %a = func.call @layer(%x, %w) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %s = linalg.add ins(%a, %y : tensor<?x16xf32>, tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %b = func.call @layer(%s, %w) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return %b : tensor<?x16xf32>
}
)mlir" + std::string(kTanhLayer);

void CallResultDimResolved(const std::string& target) {
  std::string module = CompileOrDie(kCallResultDim, "call_result_dim", target);
  std::string inlined_module = CompileOrDie(kCallResultDim, "call_result_dim_inlined", target, "--inline-device-calls");
  auto session = OpenOrDie(module, target);
  auto inlined = OpenOrDie(inlined_module, target);
  HostTensor w = RandomF32({16}, 8, -2.0f, 2.0f);
  for (int64_t rows : {6, 1, 11}) {
    INFO("rows " << rows);
    HostTensor x = RandomF32({rows, 16}, unsigned(rows) + 60), y = RandomF32({rows, 16}, unsigned(rows) + 70);
    hal::DeviceStats inlined_before = inlined->device().stats();
    CallOrDie(*inlined, "net", {Tensor(x), Tensor(w), Tensor(y)});
    hal::DeviceStats inlined_after = inlined->device().stats();
    hal::DeviceStats before = session->device().stats();
    auto results = CallOrDie(*session, "net", {Tensor(x), Tensor(w), Tensor(y)});
    hal::DeviceStats after = session->device().stats();
    CHECK(after.queue_submissions - before.queue_submissions == 1);
    CHECK(after.queue_submissions - before.queue_submissions ==
          inlined_after.queue_submissions - inlined_before.queue_submissions);
    HostTensor expected = ZerosF32({rows, 16});
    for (int64_t i = 0; i < rows; ++i)
      for (int j = 0; j < 16; ++j) {
        double a = double(float(std::tanh(double(F32(x)[i * 16 + j]) * F32(w)[j])));
        double s = double(float(a + F32(y)[i * 16 + j]));
        F32(expected)[i * 16 + j] = float(std::tanh(s * F32(w)[j]));
      }
    RequireClose(results[0].tensor, expected, 1e-5, 1e-6);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a dim of a recorded call's result (a shape check) keeps the call in its caller's command buffer: one submission per call, as inlined (rows 6, 1, 11), f64 reference",
                          CallResultDimResolved)

// A callee that cannot record into its caller is inlined by default
// (hexir-inline-unrecordable-calls): a dynamic-M matmul gets an M = 1 switch on the host, so
// @project would be several blocks, and a kept call of it would end @net's command buffer and
// submit its own (--keep-device-calls: 3 calls, 4 submissions for M > 1). By default the
// submissions per call equal --inline-device-calls' (one) at every row count (1 takes the
// specialized kernels, 5 and 13 the generic ones), and so do the dispatches.
const char* kDynamicMatmulCalls = R"mlir(
func.func @net(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %a = func.call @project(%x, %w) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %b = func.call @project(%a, %w) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %c = func.call @project(%b, %w) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}
func.func private @project(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
)mlir";

void UnrecordableCalleeInlined(const std::string& target) {
  std::string module = CompileOrDie(kDynamicMatmulCalls, "dynamic_matmul_calls", target);
  std::string inlined_module =
      CompileOrDie(kDynamicMatmulCalls, "dynamic_matmul_calls_inlined", target, "--inline-device-calls");
  std::string kept_module =
      CompileOrDie(kDynamicMatmulCalls, "dynamic_matmul_calls_kept", target, "--keep-device-calls");
  auto session = OpenOrDie(module, target);
  auto inlined = OpenOrDie(inlined_module, target);
  auto kept = OpenOrDie(kept_module, target);
  HostTensor w = RandomF32({8, 8}, 5, -0.5f, 0.5f);
  for (int64_t rows : {5, 1, 13, 1}) {
    INFO("rows " << rows);
    HostTensor x = RandomF32({rows, 8}, unsigned(rows) + 40);
    auto call = [&](tools::Session& s, std::vector<HostValue>* results) {
      hal::DeviceStats before = s.device().stats();
      *results = CallOrDie(s, "net", {Tensor(x), Tensor(w)});
      hal::DeviceStats after = s.device().stats();
      return std::make_pair(after.queue_submissions - before.queue_submissions,
                            after.dispatches_executed - before.dispatches_executed);
    };
    std::vector<HostValue> results, inlined_results, kept_results;
    auto [submissions, dispatches] = call(*session, &results);
    auto [inlined_submissions, inlined_dispatches] = call(*inlined, &inlined_results);
    auto [kept_submissions, kept_dispatches] = call(*kept, &kept_results);
    CHECK(submissions == inlined_submissions);
    CHECK(dispatches == inlined_dispatches);
    CHECK(submissions == 1);
    CHECK(kept_submissions > submissions);  // what the default avoids
    HostTensor expected = ZerosF32({rows, 8});
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<double> v(8);
      for (int j = 0; j < 8; ++j) v[j] = F32(x)[i * 8 + j];
      for (int l = 0; l < 3; ++l) {
        std::vector<double> next(8, 0.0);
        for (int j = 0; j < 8; ++j)
          for (int k = 0; k < 8; ++k) next[j] += v[k] * F32(w)[k * 8 + j];
        v = next;
      }
      for (int j = 0; j < 8; ++j) F32(expected)[i * 8 + j] = float(v[j]);
    }
    RequireClose(results[0].tensor, expected, 1e-5, 1e-5);
    RequireClose(kept_results[0].tensor, expected, 1e-5, 1e-5);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a callee with a dynamic-M matmul (several blocks) is inlined by default: submissions and dispatches per call as --inline-device-calls (rows 5, 1, 13, 1), f64 reference",
                          UnrecordableCalleeInlined)

// ---- lifetimes ------------------------------------------------------------------------------

const char* kCountLoop = R"mlir(
#id = affine_map<(i) -> (i)>
func.func @count(%x: tensor<4xf32>, %n64: i64) -> tensor<4xf32> {
  %n = arith.index_cast %n64 : i64 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %w = arith.addf %v, %one : f32
      linalg.yield %w : f32
    } -> tensor<4xf32>
    scf.yield %d : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
)mlir";

// How far a device's queue may run ahead of the program, in submissions.
enum class QueueBound {
  kInline,  // CPU inline: each submission completes before the next iteration
  kCapped,  // CPU queued, CUDA: at most DeviceOptions::queue_max_in_flight pending
};

void CheckConstantMemory(const std::string& module, const std::string& target, QueueBound bound) {
  auto session = OpenOrDie(module, target, bound == QueueBound::kInline ? /*cpu_threads=*/0 : -1);
  HostTensor x = RandomF32({4}, 3);
  auto run = [&](int64_t n) {
    auto results = CallOrDie(*session, "count", {Tensor(x), I64Scalar(n)});
    HostTensor expected = x;
    for (int i = 0; i < 4; ++i) F32(expected)[i] = F32(x)[i] + float(n);
    RequireClose(results[0].tensor, expected, 1e-6, 1e-3);
  };
  constexpr int64_t kIterations = 100000;
  run(10);
  hal::DeviceStats small = session->device().stats();
  run(kIterations);
  hal::DeviceStats big = session->device().stats();
  CHECK(big.buffers_allocated - small.buffers_allocated >= kIterations);
  CHECK(big.buffers_live == small.buffers_live);  // nothing leaked once the call returned
  CHECK(big.command_buffers_recorded == small.command_buffers_recorded);
  // Every iteration's buffer dies at its last use: the peak does not grow with the count.
  // On an asynchronous queue the buffers of pending submissions (each binds at most an
  // iteration's input and output) are alive too, so the peak may grow by what the host runs
  // ahead; keeping every iteration's buffer would grow it by kIterations * per_iteration.
  const uint64_t per_iteration =
      (big.buffer_bytes_allocated - small.buffer_bytes_allocated) / kIterations;
  const uint64_t growth = big.buffer_bytes_peak - small.buffer_bytes_peak;
  INFO("peak " << small.buffer_bytes_peak << " -> " << big.buffer_bytes_peak << ", "
               << per_iteration << " bytes allocated per iteration");
  REQUIRE(per_iteration > 0);
  switch (bound) {
    case QueueBound::kInline:
      CHECK(growth == 0);
      break;
    case QueueBound::kCapped:
      CHECK(growth <= 2 * hal::DeviceOptions().queue_max_in_flight * per_iteration);
      break;
  }
}

void ConstantMemoryLoop(const std::string& target) {
  std::string module = CompileOrDie(kCountLoop, "count_loop", target);
  if (target == "cpu") {
    SECTION("inline queue") { CheckConstantMemory(module, target, QueueBound::kInline); }
    SECTION("queued, back-pressure") { CheckConstantMemory(module, target, QueueBound::kCapped); }
  } else {
    CheckConstantMemory(module, target, QueueBound::kCapped);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a loop of 10^5 iterations that allocates per iteration runs in constant memory",
                          ConstantMemoryLoop)

// A KV-cache-like tensor carried through a loop and updated one row per iteration: the
// update writes into the carried buffer (passes/dispatch/InPlaceUpdates.h), so the number of
// buffers and bytes a call allocates does not depend on the iteration count, and the result
// equals the copy semantics of tensor.insert_slice.
const char* kRowUpdates = R"mlir(
func.func @rows(%rows: tensor<16x4xf32>, %n: i64) -> tensor<16x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ni = arith.index_cast %n : i64 to index
  %r = scf.for %i = %c0 to %ni step %c1 iter_args(%acc = %c) -> (tensor<16x4xf32>) {
    %row = tensor.extract_slice %rows[%i, 0] [1, 4] [1, 1] : tensor<16x4xf32> to tensor<1x4xf32>
    %e2 = tensor.empty() : tensor<1x4xf32>
    %two = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x4xf32>) outs(%e2 : tensor<1x4xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.addf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<1x4xf32>
    %last = arith.subi %ni, %i : index
    %at = arith.subi %last, %c1 : index
    %u = tensor.insert_slice %two into %acc[%at, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<16x4xf32>
    scf.yield %u : tensor<16x4xf32>
  }
  return %r : tensor<16x4xf32>
}
)mlir";

void InPlaceRowUpdates(const std::string& target) {
  std::string module = CompileOrDie(kRowUpdates, "row_updates", target);
  auto session = OpenOrDie(module, target);
  HostTensor rows = RandomF32({16, 4}, 11);
  std::vector<uint64_t> bytes;
  for (int64_t n : {1, 4, 16}) {
    hal::DeviceStats before = session->device().stats();
    auto results = CallOrDie(*session, "rows", {Tensor(rows), I64Scalar(n)});
    hal::DeviceStats after = session->device().stats();
    bytes.push_back(after.buffer_bytes_allocated - before.buffer_bytes_allocated);
    HostTensor expected = ZerosF32({16, 4});
    for (int64_t i = 0; i < n; ++i)
      for (int j = 0; j < 4; ++j) F32(expected)[(n - 1 - i) * 4 + j] = 2 * F32(rows)[i * 4 + j];
    INFO("n = " << n);
    RequireClose(results[0].tensor, expected);
  }
  INFO("bytes allocated per call (n = 1, 4, 16): " << bytes[0] << ", " << bytes[1] << ", "
                                                   << bytes[2]);
  // A copy per update would allocate the 16x4xf32 tensor (256 bytes) per iteration; what
  // remains per iteration is the kernels' small parameter buffers.
  CHECK(bytes[2] - bytes[1] < 12 * 256 / 4);
}
HEXIR_E2E_TEST_ON_DEVICES("a row update of a loop-carried tensor writes in place (no copy per iteration)",
                          InPlaceRowUpdates)

// ---- TOSA input -----------------------------------------------------------------------------

const char* kTosa = R"mlir(
func.func @model(%x: tensor<2x4xf32>, %b: tensor<1x4xf32>) -> tensor<2x4xf32> {
  %w = "tosa.const"() {values = dense<[[1.0, -1.0, 0.5, 2.0]]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %m = tosa.mul %x, %w, %shift : (tensor<2x4xf32>, tensor<1x4xf32>, tensor<1xi8>) -> tensor<2x4xf32>
  %a = tosa.add %m, %b : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %r = tosa.clamp %a {min_val = 0.0 : f32, max_val = 3.0 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = tosa.tanh %r : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}
)mlir";

void TosaModel(const std::string& target) {
  std::string module = CompileOrDie(kTosa, "tosa", target);
  auto session = OpenOrDie(module, target);
  HostTensor x = RandomF32({2, 4}, 5, -3, 3), b = RandomF32({1, 4}, 6);
  auto results = CallOrDie(*session, "model", {Tensor(x), Tensor(b)});
  const float w[4] = {1.0f, -1.0f, 0.5f, 2.0f};
  HostTensor expected = ZerosF32({2, 4});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      float a = F32(x)[i * 4 + j] * w[j] + F32(b)[j];
      F32(expected)[i * 4 + j] = std::tanh(std::min(std::max(a, 0.0f), 3.0f));
    }
  RequireClose(results[0].tensor, expected, 1e-5, 1e-6);
}
HEXIR_E2E_TEST_ON_DEVICES("a small TOSA model through MLIR's tosa-to-linalg pipelines", TosaModel)

}  // namespace
}  // namespace hexir::e2e
