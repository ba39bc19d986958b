// End-to-end: every worker schedule gives the same bits. A wave of four independent dispatches
// of awkward sizes (two elementwise kernels of many workgroups, a matmul, a long row) runs on
// 0 (inline), 1, 2 and 3 CPU workers, with the work policy of hal/drivers/cpu/work_estimate.h
// at its default, off (HEXIR_CPU_MIN_WORK_PER_THREAD_NS=0: every loop shared) and keeping
// everything on one thread (a huge minimum): the results are equal bit for bit and close to
// C++ loops, and `dispatches_kept_on_one_thread` counts what the policy kept,
// `submissions_run_by_submitter` the submissions small enough to run on the calling thread.
// The same policy applies to dispatches of run-time shape: their work is evaluated from
// their parameter words (passes/codegen/CPUWorkWords.h) for each call's sizes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

constexpr int64_t kA0 = 300, kA1 = 129;           // y1 = tanh(x1) * 0.5 + x1
constexpr int64_t kB0 = 97, kB1 = 211;            // y2 = x2 * x2 - 1
constexpr int64_t kM = 67, kK = 45, kN = 33;      // y3 = x3 @ w
constexpr int64_t kC0 = 5, kC1 = 1001;            // y4 = exp(-x4)

std::string Tensor2(int64_t a, int64_t b) {
  return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>";
}

// An elementwise linalg.generic over one 2-D input; `body` computes %r from %a.
std::string Elementwise(const std::string& out, const std::string& in, int64_t d0, int64_t d1,
                        const std::string& body) {
  std::string t = Tensor2(d0, d1);
  std::ostringstream s;
  s << "  %" << out << "_e = tensor.empty() : " << t << "\n"
    << "  %" << out << " = linalg.generic {indexing_maps = [#id, #id], iterator_types = "
       "[\"parallel\", \"parallel\"]} ins(%" << in << " : " << t << ") outs(%" << out << "_e : "
    << t << ") {\n  ^bb0(%a: f32, %o: f32):\n" << body << "    linalg.yield %r : f32\n  } -> " << t
    << "\n";
  return s.str();
}

std::string Source() {
  std::ostringstream s;
  s << "#id = affine_map<(i, j) -> (i, j)>\n"
    << "func.func @main(%x1: " << Tensor2(kA0, kA1) << ", %x2: " << Tensor2(kB0, kB1)
    << ", %x3: " << Tensor2(kM, kK) << ", %w: " << Tensor2(kK, kN) << ", %x4: "
    << Tensor2(kC0, kC1) << ") -> (" << Tensor2(kA0, kA1) << ", " << Tensor2(kB0, kB1) << ", "
    << Tensor2(kM, kN) << ", " << Tensor2(kC0, kC1) << ") {\n"
    << "  %zero = arith.constant 0.0 : f32\n  %half = arith.constant 0.5 : f32\n"
    << "  %one = arith.constant 1.0 : f32\n"
    << Elementwise("y1", "x1", kA0, kA1,
                   "    %t = math.tanh %a : f32\n    %h = arith.mulf %t, %half : f32\n"
                   "    %r = arith.addf %h, %a : f32\n")
    << Elementwise("y2", "x2", kB0, kB1,
                   "    %q = arith.mulf %a, %a : f32\n    %r = arith.subf %q, %one : f32\n")
    << "  %y3_e = tensor.empty() : " << Tensor2(kM, kN) << "\n"
    << "  %y3_z = linalg.fill ins(%zero : f32) outs(%y3_e : " << Tensor2(kM, kN) << ") -> "
    << Tensor2(kM, kN) << "\n"
    << "  %y3 = linalg.matmul ins(%x3, %w : " << Tensor2(kM, kK) << ", " << Tensor2(kK, kN)
    << ") outs(%y3_z : " << Tensor2(kM, kN) << ") -> " << Tensor2(kM, kN) << "\n"
    << Elementwise("y4", "x4", kC0, kC1,
                   "    %n = arith.negf %a : f32\n    %r = math.exp %n : f32\n")
    << "  return %y1, %y2, %y3, %y4 : " << Tensor2(kA0, kA1) << ", " << Tensor2(kB0, kB1) << ", "
    << Tensor2(kM, kN) << ", " << Tensor2(kC0, kC1) << "\n}\n";
  return s.str();
}

struct Run {
  std::vector<HostValue> results;
  uint64_t dispatches = 0, kept = 0, by_submitter = 0;  // of the second call
};

// Two calls on a device of `threads` workers (0: inline) created with the policy variable set
// to `min_work` (nullptr: unset); results and counters of the second call.
Run CallWith(const std::string& module, int threads, const char* min_work,
             const std::vector<HostValue>& inputs) {
  if (min_work) {
    setenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS", min_work, 1);
  } else {
    unsetenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
  }
  tools::InvocationOptions options;
  options.cpu_threads = threads;
  auto session = tools::Session::Open(module, options);  // the device reads the variable here
  unsetenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  auto fn = (*session)->LookupFunction("main");
  REQUIRE(fn.ok());
  Run run;
  for (int call = 0; call < 2; ++call) {
    hal::DeviceStats before = (*session)->device().stats();
    run.results.clear();
    Status st = (*session)->Call(*fn, inputs, &run.results);
    INFO(st.ToString());
    REQUIRE(st.ok());
    hal::DeviceStats after = (*session)->device().stats();
    run.dispatches = after.dispatches_executed - before.dispatches_executed;
    run.kept = after.dispatches_kept_on_one_thread - before.dispatches_kept_on_one_thread;
    run.by_submitter = after.submissions_run_by_submitter - before.submissions_run_by_submitter;
  }
  return run;
}

void RequireSameBits(const std::vector<HostValue>& a, const std::vector<HostValue>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("result " << i);
    REQUIRE(a[i].tensor.dims == b[i].tensor.dims);
    REQUIRE(a[i].tensor.bytes.size() == b[i].tensor.bytes.size());
    REQUIRE(std::memcmp(a[i].tensor.bytes.data(), b[i].tensor.bytes.data(), a[i].tensor.bytes.size()) == 0);
  }
}

TEST_CASE("worker schedules: a wave of independent dispatches gives equal bits on 0-3 workers and every work policy") {
  HostTensor x1 = RandomF32({kA0, kA1}, 1), x2 = RandomF32({kB0, kB1}, 2);
  HostTensor x3 = RandomF32({kM, kK}, 3), w = RandomF32({kK, kN}, 4), x4 = RandomF32({kC0, kC1}, 5);
  std::vector<HostValue> inputs = {Tensor(x1), Tensor(x2), Tensor(x3), Tensor(w), Tensor(x4)};
  HostTensor y1 = ZerosF32({kA0, kA1}), y2 = ZerosF32({kB0, kB1}), y3 = ZerosF32({kM, kN}),
             y4 = ZerosF32({kC0, kC1});
  for (int64_t i = 0; i < kA0 * kA1; ++i) F32(y1)[i] = std::tanh(F32(x1)[i]) * 0.5f + F32(x1)[i];
  for (int64_t i = 0; i < kB0 * kB1; ++i) F32(y2)[i] = F32(x2)[i] * F32(x2)[i] - 1.0f;
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double s = 0;
      for (int64_t p = 0; p < kK; ++p) s += double{F32(x3)[i * kK + p]} * F32(w)[p * kN + j];
      F32(y3)[i * kN + j] = static_cast<float>(s);
    }
  for (int64_t i = 0; i < kC0 * kC1; ++i) F32(y4)[i] = std::exp(-F32(x4)[i]);

  std::string module = CompileOrDie(Source(), "worker_schedules");
  Run reference = CallWith(module, 0, nullptr, inputs);
  REQUIRE(reference.dispatches == 4);
  const HostTensor* expected[] = {&y1, &y2, &y3, &y4};
  for (size_t i = 0; i < 4; ++i) {
    INFO("result " << i);
    RequireClose(reference.results[i].tensor, *expected[i], 1e-5, 1e-5);
  }
  CHECK(reference.kept == 0);  // inline: one thread, nothing to keep
  CHECK(reference.by_submitter == 0);  // inline: every submission runs on the caller anyway
  for (int threads : {1, 2, 3}) {
    for (const char* min_work : {static_cast<const char*>(nullptr), "0", "1e15"}) {
      INFO(threads << " workers, HEXIR_CPU_MIN_WORK_PER_THREAD_NS=" << (min_work ? min_work : "(unset)"));
      Run run = CallWith(module, threads, min_work, inputs);
      RequireSameBits(run.results, reference.results);
      CHECK(run.dispatches == 4);
      if (threads == 1 || (min_work && std::strcmp(min_work, "0") == 0)) {
        CHECK(run.kept == 0);  // one worker has nobody to share with; 0 shares everything
      }
      // The call's work (~0.1 ms estimated) is small enough for the calling thread to run it
      // rather than hand it to the queue thread; not with the policy off.
      if (min_work && std::strcmp(min_work, "0") == 0) {
        CHECK(run.by_submitter == 0);
      } else {
        CHECK(run.by_submitter >= 1);
      }
      if (threads > 1 && min_work && std::strcmp(min_work, "1e15") == 0) {
        CHECK(run.kept == 4);  // the wave (or each dispatch) kept on the executing thread
      }
    }
  }
}

// Run-time shapes: y = tanh(x) * 0.5 + x over ? x ?, and x3 @ w over ? rows.
const char* kDynamic = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<?x?xf32>, %x3: tensor<?x45xf32>, %w: tensor<45x33xf32>) -> (tensor<?x?xf32>, tensor<?x33xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %d0 = tensor.dim %x, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    %h = arith.mulf %t, %half : f32
    %r = arith.addf %h, %a : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %m = tensor.dim %x3, %c0 : tensor<?x45xf32>
  %me = tensor.empty(%m) : tensor<?x33xf32>
  %mz = linalg.fill ins(%zero : f32) outs(%me : tensor<?x33xf32>) -> tensor<?x33xf32>
  %mm = linalg.matmul ins(%x3, %w : tensor<?x45xf32>, tensor<45x33xf32>) outs(%mz : tensor<?x33xf32>) -> tensor<?x33xf32>
  return %y, %mm : tensor<?x?xf32>, tensor<?x33xf32>
}
)mlir";

TEST_CASE("worker schedules: dispatches of run-time shape are kept on one thread when a call's sizes are small") {
  std::string module = CompileOrDie(kDynamic, "worker_schedules_dynamic");
  HostTensor w = RandomF32({45, 33}, 4);
  struct Sizes {
    int64_t rows, cols, m;
    bool small;
  };
  // Small: ~50 elements and a 3-row matmul (well under the default 10 us a thread). Large:
  // 2 M elements (~330 us estimated) and a 1500-row matmul (~90 us): shared.
  for (Sizes sizes : {Sizes{5, 11, 3, true}, Sizes{2000, 1001, 1500, false}}) {
    INFO(sizes.rows << " x " << sizes.cols << ", matmul rows " << sizes.m);
    HostTensor x = RandomF32({sizes.rows, sizes.cols}, 1), x3 = RandomF32({sizes.m, 45}, 3);
    std::vector<HostValue> inputs = {Tensor(x), Tensor(x3), Tensor(w)};
    HostTensor y = ZerosF32({sizes.rows, sizes.cols}), y3 = ZerosF32({sizes.m, 33});
    for (int64_t i = 0; i < sizes.rows * sizes.cols; ++i) F32(y)[i] = std::tanh(F32(x)[i]) * 0.5f + F32(x)[i];
    for (int64_t i = 0; i < sizes.m; ++i)
      for (int64_t j = 0; j < 33; ++j) {
        double s = 0;
        for (int64_t p = 0; p < 45; ++p) s += double{F32(x3)[i * 45 + p]} * F32(w)[p * 33 + j];
        F32(y3)[i * 33 + j] = static_cast<float>(s);
      }
    Run reference = CallWith(module, 0, nullptr, inputs);
    REQUIRE(reference.results.size() == 2);
    RequireClose(reference.results[0].tensor, y, 1e-5, 1e-5);
    RequireClose(reference.results[1].tensor, y3, 1e-5, 1e-5);
    Run run = CallWith(module, 2, nullptr, inputs);
    RequireSameBits(run.results, reference.results);
    REQUIRE(run.dispatches >= 2);
    if (sizes.small) {
      // The dispatches of several workgroups kept on the executing thread (a run-time shape
      // counted as unknown work was shared), and that thread is the caller's.
      CHECK(run.kept >= 1);
      CHECK(run.by_submitter >= 1);
    } else {
      CHECK(run.kept == 0);
    }
    // The policy off: everything shared, bits unchanged.
    Run shared = CallWith(module, 2, "0", inputs);
    RequireSameBits(shared.results, reference.results);
    CHECK(shared.kept == 0);
  }
}

}  // namespace
}  // namespace hexir::e2e
