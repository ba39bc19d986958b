// End-to-end checks of the launch and VM optimizations of the scheduling stage (passes/README.md,
// pipeline step 5b): each rewrite keeps results equal to a C++ reference and shows in the device
// statistics (executables loaded, dispatches executed) or in the executable a dispatch ran.
// Every case runs as "[cpu]" and "[cuda]" (skipped where there is no GPU).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "hal/element_type.h"
#include "hal/executable.h"
#include "hal/profiling.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

// ---- deduplication modulo constants + uniform-operand folding ------------------------------

// a = x*2+1 and b = a*3+1 are one kernel (x*c+1, c passed per dispatch, 1 folded back);
// m = -b is another. Both a and b are returned, so neither is fused into its consumer.
const char* kAffineTwice = R"mlir(
#map = affine_map<(i) -> (i)>
func.func @main(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>) {
  %e = tensor.empty() : tensor<1000xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c2 = arith.constant 2.0 : f32
    %c1 = arith.constant 1.0 : f32
    %t = arith.mulf %v, %c2 : f32
    %u = arith.addf %t, %c1 : f32
    linalg.yield %u : f32
  } -> tensor<1000xf32>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c3 = arith.constant 3.0 : f32
    %c1 = arith.constant 1.0 : f32
    %t = arith.mulf %v, %c3 : f32
    %u = arith.addf %t, %c1 : f32
    linalg.yield %u : f32
  } -> tensor<1000xf32>
  %m = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%b : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<1000xf32>
  return %a, %b, %m : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>
}
)mlir";

void KernelsEqualUpToConstantsLoadOnce(const std::string& target) {
  std::string module = CompileOrDie(kAffineTwice, "affine_twice", target);
  auto session = OpenOrDie(module, target);
  hal::Device& device = session->device();
  for (int call = 0; call < 2; ++call) {
    HostTensor x = RandomF32({1000}, 40 + call);
    HostTensor a = ZerosF32({1000}), b = ZerosF32({1000}), m = ZerosF32({1000});
    for (int i = 0; i < 1000; ++i) {
      F32(a)[i] = F32(x)[i] * 2.0f + 1.0f;
      F32(b)[i] = F32(a)[i] * 3.0f + 1.0f;
      F32(m)[i] = -F32(b)[i];
    }
    hal::DeviceStats before = device.stats();
    auto results = CallOrDie(*session, "main", {Tensor(x)});
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 3);
    RequireClose(results[0].tensor, a);
    RequireClose(results[1].tensor, b);
    RequireClose(results[2].tensor, m);
    CHECK(after.dispatches_executed - before.dispatches_executed == 3);
  }
  // Three kernels in the source, two executables loaded: x*c+1 serves a and b.
  CHECK(device.stats().executables_loaded == 2);
}
HEXIR_E2E_TEST_ON_DEVICES("kernels equal up to a constant load once and each dispatch computes with its own constant",
                          KernelsEqualUpToConstantsLoadOnce)

// ---- dispatch specialization ----------------------------------------------------------------

// y = x @ w with dynamic M: M = 1 (decode) gets its own executable with M static.
const char* kDynamicMatmul = R"mlir(
func.func @main(%x: tensor<?x32xf32>, %w: tensor<32x48xf32>) -> tensor<?x48xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x32xf32>
  %e = tensor.empty(%m) : tensor<?x48xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x48xf32>) -> tensor<?x48xf32>
  %r = linalg.matmul ins(%x, %w : tensor<?x32xf32>, tensor<32x48xf32>) outs(%f : tensor<?x48xf32>) -> tensor<?x48xf32>
  return %r : tensor<?x48xf32>
}
)mlir";

// Names the entry points the device ran (hal/profiling.h), from any driver thread.
class EntryRecorder : public hal::Profiler {
 public:
  void OnDispatch(const hal::DispatchTiming& timing) override {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.insert(timing.executable->entry_name(timing.entry));
  }
  std::set<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(entries_, {});
  }

 private:
  std::mutex mu_;
  std::set<std::string> entries_;
};

void DecodeShapedMatmulRunsSpecializedKernel(const std::string& target) {
  std::string module = CompileOrDie(kDynamicMatmul, "dynamic_matmul", target);
  auto session = OpenOrDie(module, target);
  EntryRecorder recorder;
  session->device().SetProfiler(&recorder);
  HostTensor w = RandomF32({32, 48}, 7);
  for (int64_t m : {1, 5, 1}) {
    INFO("M = " << m);
    HostTensor x = RandomF32({m, 32}, 8 + m);
    HostTensor y = ZerosF32({m, 48});
    for (int64_t i = 0; i < m; ++i)
      for (int j = 0; j < 48; ++j) {
        float acc = 0;
        for (int k = 0; k < 32; ++k) acc += F32(x)[i * 32 + k] * F32(w)[k * 48 + j];
        F32(y)[i * 48 + j] = acc;
      }
    auto results = CallOrDie(*session, "main", {Tensor(x), Tensor(w)});
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, y, 1e-5, 1e-5);
    std::set<std::string> ran = recorder.Take();
    std::set<std::string> expected = {m == 1 ? "main_dispatch_0_a0d0eq1" : "main_dispatch_0"};
    CHECK(ran == expected);
  }
  session->device().SetProfiler(nullptr);
}
HEXIR_E2E_TEST_ON_DEVICES("a matmul with M = 1 runs the kernel specialized for M = 1 and M = 5 the generic one, with equal results",
                          DecodeShapedMatmulRunsSpecializedKernel)

// y = relu(x @ w1) @ w2 @ w3 with M dynamic: three matmuls specialized for M = 1, whose
// switches all test M, so hexir-merge-specialization-switches puts them behind one switch.
const char* kDynamicMlp = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<?x13xf32>, %w1: tensor<13x17xf32>, %w2: tensor<17x11xf32>, %w3: tensor<11x3xf32>) -> tensor<?x3xf32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x13xf32>
  %e1 = tensor.empty(%m) : tensor<?x17xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<?x17xf32>) -> tensor<?x17xf32>
  %h1 = linalg.matmul ins(%x, %w1 : tensor<?x13xf32>, tensor<13x17xf32>) outs(%f1 : tensor<?x17xf32>) -> tensor<?x17xf32>
  %r1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%h1 : tensor<?x17xf32>) outs(%e1 : tensor<?x17xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t = arith.maximumf %v, %z : f32
    linalg.yield %t : f32
  } -> tensor<?x17xf32>
  %e2 = tensor.empty(%m) : tensor<?x11xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<?x11xf32>) -> tensor<?x11xf32>
  %h2 = linalg.matmul ins(%r1, %w2 : tensor<?x17xf32>, tensor<17x11xf32>) outs(%f2 : tensor<?x11xf32>) -> tensor<?x11xf32>
  %e3 = tensor.empty(%m) : tensor<?x3xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<?x3xf32>) -> tensor<?x3xf32>
  %h3 = linalg.matmul ins(%h2, %w3 : tensor<?x11xf32>, tensor<11x3xf32>) outs(%f3 : tensor<?x3xf32>) -> tensor<?x3xf32>
  return %h3 : tensor<?x3xf32>
}
)mlir";

// The MLP in f64: x [m][13] -> [m][3].
HostTensor MlpReference(const HostTensor& x, const HostTensor& w1, const HostTensor& w2,
                        const HostTensor& w3, int64_t m) {
  HostTensor y = ZerosF32({m, 3});
  for (int64_t i = 0; i < m; ++i) {
    double h1[17], h2[11];
    for (int j = 0; j < 17; ++j) {
      double acc = 0;
      for (int k = 0; k < 13; ++k) acc += double(F32(x)[i * 13 + k]) * F32(w1)[k * 17 + j];
      h1[j] = acc > 0 ? acc : 0;
    }
    for (int j = 0; j < 11; ++j) {
      double acc = 0;
      for (int k = 0; k < 17; ++k) acc += h1[k] * F32(w2)[k * 11 + j];
      h2[j] = acc;
    }
    for (int j = 0; j < 3; ++j) {
      double acc = 0;
      for (int k = 0; k < 11; ++k) acc += h2[k] * F32(w3)[k * 3 + j];
      F32(y)[i * 3 + j] = float(acc);
    }
  }
  return y;
}

void SpecializedRunIsOneSwitch(const std::string& target) {
  std::string module = CompileOrDie(kDynamicMlp, "dynamic_mlp", target);
  std::string serial = CompileOrDie(kDynamicMlp, "dynamic_mlp_serial", target, "--schedule=serial");
  auto session = OpenOrDie(module, target);
  auto serial_session = OpenOrDie(serial, target);
  hal::Device& device = session->device();
  EntryRecorder recorder;
  device.SetProfiler(&recorder);
  HostTensor w1 = RandomF32({13, 17}, 81), w2 = RandomF32({17, 11}, 82), w3 = RandomF32({11, 3}, 83);
  for (int64_t m : {1, 5, 1, 7}) {
    INFO("M = " << m);
    HostTensor x = RandomF32({m, 13}, 90 + m);
    hal::DeviceStats before = device.stats();
    auto results = CallOrDie(*session, "main", {Tensor(x), Tensor(w1), Tensor(w2), Tensor(w3)});
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, MlpReference(x, w1, w2, w3, m), 1e-5, 1e-5);
    auto serial_results = CallOrDie(*serial_session, "main", {Tensor(x), Tensor(w1), Tensor(w2), Tensor(w3)});
    RequireClose(results[0].tensor, serial_results[0].tensor, 0, 0);
    // matmul + relu (one kernel), matmul, matmul; all specialized for M = 1 or none.
    CHECK(after.dispatches_executed - before.dispatches_executed == 3);
    std::set<std::string> ran = recorder.Take();
    CHECK(ran.size() == 3);
    for (const std::string& entry : ran) {
      INFO(entry);
      CHECK((entry.find("_a0d0eq1") != std::string::npos) == (m == 1));
    }
  }
  device.SetProfiler(nullptr);
  // One command buffer per branch of the one switch, recorded at its first execution (three
  // switches, one segment per branch each, recorded six).
  CHECK(device.stats().command_buffers_recorded == 2);
}
HEXIR_E2E_TEST_ON_DEVICES("three matmuls specialized for M = 1 run behind one switch: one command buffer per branch, results equal to f64 and to --schedule=serial at M = 1, 5, 1, 7",
                          SpecializedRunIsOneSwitch)

// y = n(n(x) @ w) with M dynamic and n(v) = v - rowmax(v) (a reduction and a broadcast: their
// own dispatches before and after the matmul, whose M = 1 switch tests the rows of n(x)):
// hexir-merge-specialization-switches widens the switch to them, so a call is one segment,
// one submission, instead of three (before, in and after the switch).
const char* kNormalizedMatmul = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @main(%x: tensor<?x13xf32>, %w: tensor<13x17xf32>) -> tensor<?x17xf32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %lo = arith.constant -3.0e38 : f32
  %m = tensor.dim %x, %c0 : tensor<?x13xf32>
  %re = tensor.empty(%m) : tensor<?xf32>
  %rf = linalg.fill ins(%lo : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %mx = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x13xf32>) outs(%rf : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  %xe = tensor.empty(%m) : tensor<?x13xf32>
  %xn = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %mx : tensor<?x13xf32>, tensor<?xf32>) outs(%xe : tensor<?x13xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.subf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<?x13xf32>
  %pe = tensor.empty(%m) : tensor<?x17xf32>
  %pf = linalg.fill ins(%z : f32) outs(%pe : tensor<?x17xf32>) -> tensor<?x17xf32>
  %p = linalg.matmul ins(%xn, %w : tensor<?x13xf32>, tensor<13x17xf32>) outs(%pf : tensor<?x17xf32>) -> tensor<?x17xf32>
  %pm = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%p : tensor<?x17xf32>) outs(%rf : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%p, %pm : tensor<?x17xf32>, tensor<?xf32>) outs(%pe : tensor<?x17xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.subf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<?x17xf32>
  return %y : tensor<?x17xf32>
}
)mlir";

void SwitchWidenedToItsNeighbours(const std::string& target) {
  std::string module = CompileOrDie(kNormalizedMatmul, "normalized_matmul", target);
  std::string serial = CompileOrDie(kNormalizedMatmul, "normalized_matmul_serial", target, "--schedule=serial");
  auto session = OpenOrDie(module, target);
  auto serial_session = OpenOrDie(serial, target);
  hal::Device& device = session->device();
  EntryRecorder recorder;
  device.SetProfiler(&recorder);
  HostTensor w = RandomF32({13, 17}, 61);
  uint64_t dispatches = 0;
  for (int64_t m : {1, 4, 1, 6}) {
    INFO("M = " << m);
    HostTensor x = RandomF32({m, 13}, 62 + m);
    HostTensor y = ZerosF32({m, 17});
    for (int64_t i = 0; i < m; ++i) {
      double xmax = -3e38, p[17], pmax = -3e38;
      for (int k = 0; k < 13; ++k) xmax = std::max(xmax, double(F32(x)[i * 13 + k]));
      for (int j = 0; j < 17; ++j) {
        p[j] = 0;
        for (int k = 0; k < 13; ++k) p[j] += (double(F32(x)[i * 13 + k]) - xmax) * F32(w)[k * 17 + j];
        pmax = std::max(pmax, p[j]);
      }
      for (int j = 0; j < 17; ++j) F32(y)[i * 17 + j] = float(p[j] - pmax);
    }
    hal::DeviceStats before = device.stats();
    auto results = CallOrDie(*session, "main", {Tensor(x), Tensor(w)});
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, y, 1e-4, 1e-4);
    auto serial_results = CallOrDie(*serial_session, "main", {Tensor(x), Tensor(w)});
    RequireClose(results[0].tensor, serial_results[0].tensor, 0, 0);
    // Before, in and after the switch: one segment, one submission (three unwidened).
    CHECK(after.queue_submissions - before.queue_submissions == 1);
    const uint64_t ran = after.dispatches_executed - before.dispatches_executed;
    CHECK(ran >= 3);  // at least the normalization, the matmul and the output's
    if (dispatches) CHECK(ran == dispatches);  // the same kernels at every M
    dispatches = ran;
    std::set<std::string> entries = recorder.Take();
    bool special = false;
    for (const std::string& entry : entries) special = special || entry.find("_a0d0eq1") != std::string::npos;
    CHECK(special == (m == 1));
  }
  device.SetProfiler(nullptr);
}
HEXIR_E2E_TEST_ON_DEVICES("a matmul specialized for M = 1 between other dispatches: the switch takes them in, one submission a call, results equal to f64 and to --schedule=serial at M = 1, 4, 1, 6",
                          SwitchWidenedToItsNeighbours)

// ---- a function unswitched on the branches its input's shape decides -------------------------

// Two pair-sum pools over rows, each after a run-time end pad as the ONNX importer writes a
// ceil-mode pool's (x itself when the row count is even, else one zero row appended): y[i][j]
// = sum of relu(x[r][j]) over r in [4i, 4i + 4), r < rows. hexir-unswitch-shape-branches puts
// the whole function behind one branch on "both counts even": that path is one segment.
const char* kTwoCeilPools = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %z = arith.constant 0.0 : f32
  %h = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e0 = tensor.empty(%h) : tensor<?x8xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%e0 : tensor<?x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %z : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %odd1 = arith.remsi %h, %c2 : index
  %even1 = arith.cmpi eq, %odd1, %c0 : index
  %hp = arith.addi %h, %odd1 : index
  %a1 = scf.if %even1 -> (tensor<?x8xf32>) {
    scf.yield %a : tensor<?x8xf32>
  } else {
    %ep = tensor.empty(%hp) : tensor<?x8xf32>
    %p = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%ep : tensor<?x8xf32>) {
    ^bb0(%o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %in = arith.cmpi slt, %i, %h : index
      %last = arith.subi %h, %c1 : index
      %row = arith.minsi %i, %last : index
      %v = tensor.extract %a[%row, %j] : tensor<?x8xf32>
      %r = arith.select %in, %v, %z : f32
      linalg.yield %r : f32
    } -> tensor<?x8xf32>
    scf.yield %p : tensor<?x8xf32>
  }
  %h2 = arith.divsi %hp, %c2 : index
  %e2 = tensor.empty(%h2) : tensor<?x8xf32>
  %b = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<?x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i0 = arith.muli %i, %c2 : index
    %i1 = arith.addi %i0, %c1 : index
    %u = tensor.extract %a1[%i0, %j] : tensor<?x8xf32>
    %w = tensor.extract %a1[%i1, %j] : tensor<?x8xf32>
    %r = arith.addf %u, %w : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %odd2 = arith.remsi %h2, %c2 : index
  %even2 = arith.cmpi eq, %odd2, %c0 : index
  %hq = arith.addi %h2, %odd2 : index
  %b1 = scf.if %even2 -> (tensor<?x8xf32>) {
    scf.yield %b : tensor<?x8xf32>
  } else {
    %eq = tensor.empty(%hq) : tensor<?x8xf32>
    %q = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%eq : tensor<?x8xf32>) {
    ^bb0(%o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %in = arith.cmpi slt, %i, %h2 : index
      %last = arith.subi %h2, %c1 : index
      %row = arith.minsi %i, %last : index
      %v = tensor.extract %b[%row, %j] : tensor<?x8xf32>
      %r = arith.select %in, %v, %z : f32
      linalg.yield %r : f32
    } -> tensor<?x8xf32>
    scf.yield %q : tensor<?x8xf32>
  }
  %h4 = arith.divsi %hq, %c2 : index
  %e4 = tensor.empty(%h4) : tensor<?x8xf32>
  %c = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%e4 : tensor<?x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i0 = arith.muli %i, %c2 : index
    %i1 = arith.addi %i0, %c1 : index
    %u = tensor.extract %b1[%i0, %j] : tensor<?x8xf32>
    %w = tensor.extract %b1[%i1, %j] : tensor<?x8xf32>
    %r = arith.addf %u, %w : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}
)mlir";

void UnswitchedOnShapeBranches(const std::string& target) {
  std::string module = CompileOrDie(kTwoCeilPools, "two_ceil_pools", target);
  std::string serial = CompileOrDie(kTwoCeilPools, "two_ceil_pools_serial", target, "--schedule=serial");
  auto session = OpenOrDie(module, target);
  auto serial_session = OpenOrDie(serial, target);
  hal::Device& device = session->device();
  // 8 and 4 rows: both counts even (the unswitched path); 7, 6 and 5: one pad, the other, both.
  for (int64_t rows : {8, 7, 6, 5, 4}) {
    INFO(rows << " rows");
    HostTensor x = RandomF32({rows, 8}, 90 + rows);
    const int64_t out = ((rows + 1) / 2 + 1) / 2;
    HostTensor y = ZerosF32({out, 8});
    for (int64_t i = 0; i < out; ++i)
      for (int j = 0; j < 8; ++j) {
        double s = 0;
        for (int64_t r = 4 * i; r < std::min(4 * i + 4, rows); ++r) s += std::max(0.0, double(F32(x)[r * 8 + j]));
        F32(y)[i * 8 + j] = float(s);
      }
    hal::DeviceStats before = device.stats();
    auto results = CallOrDie(*session, "main", {Tensor(x)});
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, y, 1e-5, 1e-5);
    auto serial_results = CallOrDie(*serial_session, "main", {Tensor(x)});
    RequireClose(results[0].tensor, serial_results[0].tensor, 0, 0);
    const uint64_t submissions = after.queue_submissions - before.queue_submissions;
    if (rows % 4 == 0) CHECK(submissions == 1);  // no branch left on this path: one segment
    else CHECK(submissions > 1);                  // the general path: a segment per stretch
  }
}
HEXIR_E2E_TEST_ON_DEVICES("two run-time end pads (ceil-mode pools) between dispatches: unswitched on both counts even, one submission a call there, results equal to f64 and to --schedule=serial at 8, 7, 6, 5, 4 rows",
                          UnswitchedOnShapeBranches)

// ---- loops unswitched on a specialization switch -------------------------------------------

// A recurrence over a dynamic batch, carrying h [M, 8] and s [M]: h' = tanh(h W) + h -
// tanh(s) (s broadcast along rows), s' = s + the row sums of h'. The matmul is specialized
// for M = 1; the switch tests the rows of the carried h, which no iteration changes, so the
// loop is unswitched (passes/README.md, hexir-merge-specialization-switches) and each
// iteration's two dispatches (the matmul with its update, the row sums) are one submission
// instead of two (one holding the switch, one after it).
const char* kRecurrence = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @main(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %steps: i64) -> (tensor<?x8xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %n = arith.index_cast %steps : i64 to index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %se = tensor.empty(%m) : tensor<?xf32>
  %s0 = linalg.fill ins(%z : f32) outs(%se : tensor<?xf32>) -> tensor<?xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%h = %x, %s = %s0) -> (tensor<?x8xf32>, tensor<?xf32>) {
    %hs = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%h, %s : tensor<?x8xf32>, tensor<?xf32>) outs(%h : tensor<?x8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %t = math.tanh %b : f32
      %y = arith.subf %a, %t : f32
      linalg.yield %y : f32
    } -> tensor<?x8xf32>
    %e = tensor.empty(%m) : tensor<?x8xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
    %p = linalg.matmul ins(%h, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
    %u = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%p, %hs : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %t = math.tanh %a : f32
      %y = arith.addf %t, %b : f32
      linalg.yield %y : f32
    } -> tensor<?x8xf32>
    %sum = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%u : tensor<?x8xf32>) outs(%s : tensor<?xf32>) {
    ^bb0(%a: f32, %o: f32):
      %y = arith.addf %a, %o : f32
      linalg.yield %y : f32
    } -> tensor<?xf32>
    scf.yield %u, %sum : tensor<?x8xf32>, tensor<?xf32>
  }
  return %r#0, %r#1 : tensor<?x8xf32>, tensor<?xf32>
}
)mlir";

void LoopUnswitchedOnSpecialization(const std::string& target) {
  std::string module = CompileOrDie(kRecurrence, "recurrence", target);
  std::string serial = CompileOrDie(kRecurrence, "recurrence_serial", target, "--schedule=serial");
  auto session = OpenOrDie(module, target);
  auto serial_session = OpenOrDie(serial, target);
  hal::Device& device = session->device();
  EntryRecorder recorder;
  device.SetProfiler(&recorder);
  HostTensor w = RandomF32({8, 8}, 71);
  for (auto [m, steps] : {std::pair<int64_t, int64_t>{1, 5}, {3, 5}, {1, 2}, {4, 7}}) {
    INFO("M = " << m << ", " << steps << " steps");
    HostTensor x = RandomF32({m, 8}, 72 + m);
    std::vector<double> h(F32(x), F32(x) + m * 8), s(m, 0.0);
    for (int64_t step = 0; step < steps; ++step) {
      std::vector<double> next(h.size());
      for (int64_t i = 0; i < m; ++i)
        for (int j = 0; j < 8; ++j) {
          double acc = 0;
          for (int k = 0; k < 8; ++k) acc += h[i * 8 + k] * F32(w)[k * 8 + j];
          next[i * 8 + j] = std::tanh(acc) + h[i * 8 + j] - std::tanh(s[i]);
        }
      h = next;
      for (int64_t i = 0; i < m; ++i)
        for (int j = 0; j < 8; ++j) s[i] += h[i * 8 + j];
    }
    HostTensor y = ZerosF32({m, 8}), sums = ZerosF32({m});
    for (size_t e = 0; e < h.size(); ++e) F32(y)[e] = float(h[e]);
    for (int64_t i = 0; i < m; ++i) F32(sums)[i] = float(s[i]);
    hal::DeviceStats before = device.stats();
    auto results = CallOrDie(*session, "main", {Tensor(x), Tensor(w), I64Scalar(steps)});
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 2);
    RequireClose(results[0].tensor, y, 1e-4, 1e-4);
    RequireClose(results[1].tensor, sums, 1e-4, 1e-4);
    auto serial_results = CallOrDie(*serial_session, "main", {Tensor(x), Tensor(w), I64Scalar(steps)});
    RequireClose(results[0].tensor, serial_results[0].tensor, 0, 0);
    RequireClose(results[1].tensor, serial_results[1].tensor, 0, 0);
    // The initial fill, then one submission an iteration (two before the unswitching).
    CHECK(after.queue_submissions - before.queue_submissions == uint64_t(steps + 1));
    CHECK(after.dispatches_executed - before.dispatches_executed == uint64_t(2 * steps + 1));
    std::set<std::string> ran = recorder.Take();
    bool special = false;
    for (const std::string& entry : ran) special = special || entry.find("_a0d0eq1") != std::string::npos;
    CHECK(special == (m == 1));
  }
  device.SetProfiler(nullptr);
}
HEXIR_E2E_TEST_ON_DEVICES("a recurrence over a dynamic batch with its matmul specialized for M = 1 is unswitched: one submission an iteration, results equal to f64 and to --schedule=serial at M = 1, 3, 1, 4",
                          LoopUnswitchedOnSpecialization)

// ---- parameter transforms lifted out of calls ----------------------------------------------

// main's body from transpose(W) on: y = transpose(W) @ x, with `w` an 8x16 value.
std::string TransposedMatmulOf(const std::string& w) {
  return R"mlir(
  %et = tensor.empty() : tensor<16x8xf32>
  %wt = linalg.transpose ins()mlir" + w + R"mlir( : tensor<8x16xf32>) outs(%et : tensor<16x8xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<16x4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %r = linalg.matmul ins(%wt, %x : tensor<16x8xf32>, tensor<8x4xf32>) outs(%f : tensor<16x4xf32>) -> tensor<16x4xf32>
  return %r : tensor<16x4xf32>
}
)mlir";
}

// transpose(W) @ x in f64, W[k][i] = w(k * 16 + i).
HostTensor TransposedMatmulReference(const std::function<double(int)>& w, const HostTensor& x) {
  HostTensor y = ZerosF32({16, 4});
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 8; ++k) acc += w(k * 16 + i) * F32(x)[k * 4 + j];
      F32(y)[i * 4 + j] = float(acc);
    }
  return y;
}

// y = transpose(W) @ x with W a module constant (8x16, values 0.01 * i - 0.5).
std::string TransposedWeightMatmul() {
  std::string w;
  for (int i = 0; i < 8 * 16; ++i) w += (i ? ", " : "") + std::to_string(0.01 * i - 0.5);
  return R"mlir(
func.func @main(%x: tensor<8x4xf32>) -> tensor<16x4xf32> {
  %w = arith.constant dense<[)mlir" + w + R"mlir(]> : tensor<128xf32>
  %w2 = tensor.expand_shape %w [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>)mlir" +
         TransposedMatmulOf("%w2");
}

void ConstantWeightTransposeRunsOnceAtLoad(const std::string& target) {
  std::string module = CompileOrDie(TransposedWeightMatmul(), "lifted_transpose", target);
  auto session = OpenOrDie(module, target);
  hal::Device& device = session->device();
  const int kCalls = 3;
  for (int call = 0; call < kCalls; ++call) {
    HostTensor x = RandomF32({8, 4}, 60 + call);
    HostTensor y = TransposedMatmulReference([](int i) { return 0.01 * i - 0.5; }, x);
    auto results = CallOrDie(*session, "main", {Tensor(x)});
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, y, 1e-5, 1e-5);
  }
  // The transpose ran once, when the module was loaded; each call ran the matmul only.
  // (Every call read its result, so the in-order queue has finished all of them.)
  CHECK(device.stats().dispatches_executed == 1 + kCalls);
}
HEXIR_E2E_TEST_ON_DEVICES("a transpose of a constant weight runs once at load and each call runs only the matmul",
                          ConstantWeightTransposeRunsOnceAtLoad)

// y = transpose(W) @ x with W a `hexir.parameter` argument (weights the caller passes, as
// hexir-import --parameters writes them): the transpose is one of main's parameter
// transforms, run when W is not the buffer it last ran on.
std::string TransposedParameterMatmul() {
  return "func.func @main(%x: tensor<8x4xf32>, %w: tensor<8x16xf32> {hexir.parameter}) -> tensor<16x4xf32> {" +
         TransposedMatmulOf("%w");
}

void ParameterWeightTransposeRunsOncePerBuffer(const std::string& target) {
  std::string module = CompileOrDie(TransposedParameterMatmul(), "parameter_transpose", target);
  auto session = OpenOrDie(module, target);
  hal::Device& device = session->device();
  auto fn = session->LookupFunction("main");
  REQUIRE(fn.ok());
  HostTensor w1 = RandomF32({8, 16}, 70), w2 = RandomF32({8, 16}, 71);
  auto upload = [&](const HostTensor& w) {
    auto view = hal::BufferViewFromHost(device, w.element_type, Span<const int64_t>(w.dims.data(), w.dims.size()),
                                        w.bytes.data(), w.bytes.size());
    REQUIRE(view.ok());
    return *view;
  };
  vm::Ref<hal::BufferView> v1 = upload(w1), v2 = upload(w2);
  // (weights, their view, dispatches and submissions the call must cost): the transpose and
  // the matmul in two submissions on the first call of a buffer, the matmul alone after.
  struct Step {
    const HostTensor* w;
    vm::Ref<hal::BufferView> view;
    uint64_t dispatches, submissions;
  };
  const Step steps[] = {{&w1, v1, 2, 2}, {&w1, v1, 1, 1}, {&w1, v1, 1, 1},
                        {&w2, v2, 2, 2}, {&w2, v2, 1, 1}, {&w1, v1, 2, 2}};
  int call = 0;
  for (const Step& step : steps) {
    INFO("call " << call);
    HostTensor x = RandomF32({8, 4}, 80 + call++);
    HostTensor y = TransposedMatmulReference([&](int i) { return double(F32(*step.w)[i]); }, x);
    hal::DeviceStats before = device.stats();
    std::vector<HostValue> results;
    Status s = session->Call(*fn, {Tensor(x)}, {step.view}, &results);
    INFO(s.ToString());
    REQUIRE(s.ok());
    hal::DeviceStats after = device.stats();
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, y, 1e-5, 1e-5);
    CHECK(after.dispatches_executed - before.dispatches_executed == step.dispatches);
    CHECK(after.queue_submissions - before.queue_submissions == step.submissions);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a transpose of a parameter weight runs once per weight buffer: again when the caller passes another, results equal to f64",
                          ParameterWeightTransposeRunsOncePerBuffer)

// y = x @ transpose(W) with M = 1, as hexir-import writes an ONNX Gemm with transB = 1: W a
// module constant [N][K] (37 x 29, values 0.01 * i - 0.5), transposed by a generic that the
// reduction generic reads. Fused into that consumer (recompute 1 at M = 1) the transpose ran
// on every call (MobileNetV3's classifier: 8.7 ms a call); as its own dispatch it is lifted.
constexpr int kGemmN = 37, kGemmK = 29;
std::string GemmTransposedConstantWeight() {
  std::string w;
  for (int i = 0; i < kGemmN * kGemmK; ++i) w += (i ? ", " : "") + std::to_string(0.01 * i - 0.5);
  std::string n = std::to_string(kGemmN), k = std::to_string(kGemmK);
  return R"mlir(
#t_in = affine_map<(i, j) -> (j, i)>
#t_out = affine_map<(i, j) -> (i, j)>
#g_a = affine_map<(m, n, k) -> (m, k)>
#g_b = affine_map<(m, n, k) -> (k, n)>
#g_c = affine_map<(m, n, k) -> (m, n)>
func.func @main(%x: tensor<1x)mlir" + k + R"mlir(xf32>) -> tensor<1x)mlir" + n + R"mlir(xf32> {
  %w0 = arith.constant dense<[)mlir" + w + R"mlir(]> : tensor<)mlir" + std::to_string(kGemmN * kGemmK) + R"mlir(xf32>
  %w = tensor.expand_shape %w0 [[0, 1]] output_shape [)mlir" + n + ", " + k + R"mlir(] : tensor<)mlir" +
         std::to_string(kGemmN * kGemmK) + "xf32> into tensor<" + n + "x" + k + R"mlir(xf32>
  %et = tensor.empty() : tensor<)mlir" + k + "x" + n + R"mlir(xf32>
  %t = linalg.generic {indexing_maps = [#t_in, #t_out], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<)mlir" +
         n + "x" + k + "xf32>) outs(%et : tensor<" + k + "x" + n + R"mlir(xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<)mlir" + k + "x" + n + R"mlir(xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x)mlir" + n + R"mlir(xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x)mlir" + n + "xf32>) -> tensor<1x" + n + R"mlir(xf32>
  %r = linalg.generic {indexing_maps = [#g_a, #g_b, #g_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %t : tensor<1x)mlir" +
         k + "xf32>, tensor<" + k + "x" + n + "xf32>) outs(%f : tensor<1x" + n + R"mlir(xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x)mlir" + n + R"mlir(xf32>
  return %r : tensor<1x)mlir" + n + R"mlir(xf32>
}
)mlir";
}

void GemmTransposedConstantWeightRunsOnceAtLoad(const std::string& target) {
  std::string module = CompileOrDie(GemmTransposedConstantWeight(), "gemm_transposed_weight", target);
  auto session = OpenOrDie(module, target);
  hal::Device& device = session->device();
  const int kCalls = 3;
  for (int call = 0; call < kCalls; ++call) {
    HostTensor x = RandomF32({1, kGemmK}, 70 + call);
    HostTensor y = ZerosF32({1, kGemmN});
    for (int n = 0; n < kGemmN; ++n) {
      double acc = 0;
      for (int k = 0; k < kGemmK; ++k) acc += (0.01 * (n * kGemmK + k) - 0.5) * double(F32(x)[k]);
      F32(y)[n] = float(acc);
    }
    auto results = CallOrDie(*session, "main", {Tensor(x)});
    REQUIRE(results.size() == 1);
    RequireClose(results[0].tensor, y, 1e-5, 1e-5);
  }
  // The transpose ran once, at load; each call ran the matvec only.
  CHECK(device.stats().dispatches_executed == 1 + kCalls);
}
HEXIR_E2E_TEST_ON_DEVICES("an ONNX Gemm's transposed constant weight (M = 1) is transposed once at load, not per call",
                          GemmTransposedConstantWeightRunsOnceAtLoad)

}  // namespace
}  // namespace hexir::e2e
