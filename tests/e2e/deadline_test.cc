// Deadlines and cancellation end to end: an infinite scf.while compiled by hexir-compile
// stops under hexir-run --timeout and hexir-bench --timeout with a named error, and under the C API's deadline and
// hexir_context_cancel from another thread; the context then runs a normal call correctly.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/hexir_runtime.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

// grow(x, limit) doubles x until sum(x) >= limit: x = 0 never gets there (each iteration
// runs a dispatch and reads the sum back). count(n) steps i = 0, 1, ... until i == n: with
// n = -1 it runs 2^64 iterations of host bytecode only.
const char* kLoops = R"mlir(
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

func.func @count(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r = scf.while (%i = %c0) : (i64) -> i64 {
    %c = arith.cmpi ne, %i, %n : i64
    scf.condition(%c) %i : i64
  } do {
  ^bb0(%j: i64):
    %k = arith.addi %j, %c1 : i64
    scf.yield %k : i64
  }
  return %r : i64
}
)mlir";

const std::string& LoopsModule(const std::string& target) {
  static std::string modules[2];
  std::string& m = modules[target == "cuda" ? 1 : 0];
  if (m.empty()) m = CompileOrDie(kLoops, "loops", target);
  return m;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `timeout 120` turns a hang (the bug under test) into exit 124 instead of a stuck suite.
CommandResult RunLoops(const std::string& device, const std::string& args) {
  return RunCommand("timeout 120 " + HexirRun() + " --module=" + LoopsModule(device) +
                    " --device=" + device + " " + args);
}

void TimeoutStopsAnInfiniteWhile(const std::string& device) {
  const std::string& module = LoopsModule(device);
  RequireDevice(device);
  (void)module;
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunLoops(device, "--function=grow --input=4xf32=0 --input=f32=100 --timeout=1");
  double took = SecondsSince(t0);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::StartsWith("hexir-run: error: deadline_exceeded: function 'grow' @"));
  // The budget named is what was left when the VM call began: --timeout also covers the
  // input uploads before it (a few ms on CUDA), so it is at most 1 s and close to it.
  size_t at = r.output.find(": deadline exceeded after ");
  REQUIRE(at != std::string::npos);
  double budget = std::atof(r.output.c_str() + at + std::strlen(": deadline exceeded after "));
  CHECK(budget > 0.8);
  CHECK(budget <= 1.0);
  CHECK(took >= 1.0);
  CHECK(took < 30.0);
  // The same loop with an input that ends it: the timeout does not change the result.
  r = RunLoops(device, "--function=grow --input=4xf32=1 --input=f32=100 --timeout=30");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output == "4xf32=32 32 32 32\n");
}
HEXIR_E2E_TEST_ON_DEVICES("hexir-run --timeout stops an infinite scf.while of dispatches with a named error",
                          TimeoutStopsAnInfiniteWhile)

TEST_CASE("hexir-run --timeout stops an infinite host-only scf.while [cpu]") {
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunLoops("cpu", "--function=count --input=i64=-1 --timeout=0.5");
  double took = SecondsSince(t0);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::StartsWith("hexir-run: error: deadline_exceeded: function 'count' @"));
  // The budget left when the VM call began: the tool's set-up before it takes a little of the
  // 0.5 s (a millisecond under the sanitizers: "after 0.499 s").
  size_t at = r.output.find(": deadline exceeded after ");
  REQUIRE(at != std::string::npos);
  double budget = std::atof(r.output.c_str() + at + std::strlen(": deadline exceeded after "));
  CHECK(budget > 0.4);
  CHECK(budget <= 0.5);
  CHECK(took < 30.0);
  r = RunLoops("cpu", "--function=count --input=i64=1000000 --timeout=30");
  CHECK(r.output == "i64=1000000\n");
}

TEST_CASE("hexir-run refuses a timeout that is not a positive number of seconds") {
  CommandResult r = RunLoops("cpu", "--function=count --input=i64=1 --timeout=0");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("--timeout"));
}

CommandResult BenchLoops(const std::string& device, const std::string& args) {
  return RunCommand("timeout 120 tools/hexir-bench/hexir-bench --module=" + LoopsModule(device) +
                    " --device=" + device + " --iterations=1 --no-baselines --peak-gbps=1 "
                    "--peak-gflops=1 " + args + " 2>&1");
}

void BenchTimeoutStopsAnInfiniteWhile(const std::string& device) {
  const std::string& module = LoopsModule(device);
  RequireDevice(device);
  (void)module;
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = BenchLoops(device, "--function=grow --input=4xf32=0 --input=f32=100 --timeout=1");
  double took = SecondsSince(t0);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::StartsWith(
                           "hexir-bench: error: deadline_exceeded: first call: function 'grow' @"));
  CHECK_THAT(r.output, Catch::Contains(": deadline exceeded after "));
  CHECK(took >= 1.0);
  CHECK(took < 30.0);
  // An input that ends the loop: the bench runs every phase and reports.
  r = BenchLoops(device, "--function=grow --input=4xf32=1 --input=f32=100 --timeout=30");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("where wall time goes"));
}
HEXIR_E2E_TEST_ON_DEVICES("hexir-bench --timeout stops an infinite scf.while of dispatches with a named error",
                          BenchTimeoutStopsAnInfiniteWhile)

TEST_CASE("hexir-bench --timeout stops an infinite host-only scf.while and refuses a zero timeout [cpu]") {
  CommandResult r = BenchLoops("cpu", "--function=count --input=i64=-1 --timeout=0.5");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::StartsWith(
                           "hexir-bench: error: deadline_exceeded: first call: function 'count' @"));
  CHECK_THAT(r.output, Catch::Contains(": deadline exceeded after 0.500 s"));
  r = BenchLoops("cpu", "--function=count --input=i64=1 --timeout=0");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--timeout"));
}

// The C API on the compiled module: one context, one device, four calls.
struct CApiSession {
  explicit CApiSession(const std::string& device_uri, const std::string& module_path) {
    REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
    REQUIRE(hexir_device_create(instance, device_uri.c_str(), &device) == HEXIR_OK);
    REQUIRE(hexir_context_create(instance, device, &context) == HEXIR_OK);
    hexir_module_t* module = nullptr;
    REQUIRE(hexir_module_load_file(instance, module_path.c_str(), &module) == HEXIR_OK);
    REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
    hexir_module_release(module);
    REQUIRE(hexir_context_lookup_function(context, "grow", &grow) == HEXIR_OK);
    REQUIRE(hexir_values_create(&args) == HEXIR_OK);
    REQUIRE(hexir_values_create(&results) == HEXIR_OK);
  }
  ~CApiSession() {
    hexir_values_release(args);
    hexir_values_release(results);
    hexir_function_release(grow);
    hexir_context_release(context);
    hexir_device_release(device);
    hexir_instance_release(instance);
  }
  void SetArgs(float fill, float limit) {
    const float x[4] = {fill, fill, fill, fill};
    const int64_t dims[1] = {4};
    hexir_buffer_view_t* view = nullptr;
    REQUIRE(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, x, sizeof(x),
                                        &view) == HEXIR_OK);
    hexir_values_clear(args);
    REQUIRE(hexir_values_push_buffer_view(args, view) == HEXIR_OK);
    hexir_buffer_view_release(view);
    REQUIRE(hexir_values_push_f64(args, static_cast<double>(limit)) == HEXIR_OK);
  }
  hexir_instance_t* instance = nullptr;
  hexir_device_t* device = nullptr;
  hexir_context_t* context = nullptr;
  hexir_function_t* grow = nullptr;
  hexir_values_t* args = nullptr;
  hexir_values_t* results = nullptr;
};

void CApiDeadlineAndCancel(const std::string& device) {
  const std::string& module = LoopsModule(device);
  RequireDevice(device);
  CApiSession s(device, module);
  s.SetArgs(0, 100);

  const int64_t start = hexir_clock_now_ns();
  hexir_status_t st = hexir_function_call_with_deadline(s.context, s.grow, s.args, s.results,
                                                        start + 300'000'000);
  double took = (hexir_clock_now_ns() - start) / 1e9;
  std::string error = hexir_last_error();
  INFO(error);
  CHECK(st == HEXIR_DEADLINE_EXCEEDED);
  CHECK_THAT(error, Catch::StartsWith("function 'grow' @"));
  // The message names the budget left when the call began: the 0.300 s deadline less the
  // moments between `start` and the call's entry (a loaded, sanitized build shows 0.299).
  CHECK_THAT(error, Catch::Matches(".*: deadline exceeded after 0\\.(2[5-9][0-9]|300) s"));
  CHECK(took >= 0.3);
  CHECK(took < 20.0);
  CHECK(hexir_values_size(s.results) == 0);

  // A cancel from another thread while the same loop runs without a deadline.
  std::atomic<bool> returned{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    while (!returned) {
      REQUIRE(hexir_context_cancel(s.context) == HEXIR_OK);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  st = hexir_function_call(s.context, s.grow, s.args, s.results);
  returned = true;
  canceller.join();
  error = hexir_last_error();
  INFO(error);
  CHECK(st == HEXIR_ABORTED);
  CHECK_THAT(error, Catch::StartsWith("function 'grow' @"));
  CHECK_THAT(error, Catch::EndsWith("call cancelled"));

  // The same context then runs a call that ends, with the right result.
  s.SetArgs(1, 100);
  REQUIRE(hexir_function_call_with_deadline(s.context, s.grow, s.args, s.results,
                                            hexir_clock_now_ns() + 30'000'000'000LL) == HEXIR_OK);
  REQUIRE(hexir_values_size(s.results) == 1);
  hexir_buffer_view_t* out = nullptr;
  REQUIRE(hexir_values_get_buffer_view(s.results, 0, &out) == HEXIR_OK);
  float y[4] = {};
  REQUIRE(hexir_buffer_view_to_host(s.device, out, y, sizeof(y)) == HEXIR_OK);
  hexir_buffer_view_release(out);
  for (float v : y) CHECK(v == 32.0f);
}
HEXIR_E2E_TEST_ON_DEVICES("the C API's deadline and a cancel from another thread stop an infinite scf.while; the context then runs a normal call",
                          CApiDeadlineAndCancel)

}  // namespace
}  // namespace hexir::e2e
