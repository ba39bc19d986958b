// Hostile data in kernels end to end (passes/codegen/KernelChecks.h): an index read from data
// (a gather, an embedding lookup) outside its tensor and an integer division by zero (or
// INT_MIN / -1) fail the call with an error naming the kernel and the values (exit 1, never
// a signal), on the CPU through the workgroup's error record and on CUDA through the
// dispatch's status record, with the same message; the device then still runs calls. In-range
// data gives the right numbers on both.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

const char* kKernels = R"mlir(
#m1 = affine_map<(i) -> (i)>
#row = affine_map<(i, j) -> (i)>
#m2 = affine_map<(i, j) -> (i, j)>
func.func @gather(%table: tensor<10xf32>, %idx: tensor<?xi64>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %idx, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#m1, #m1], iterator_types = ["parallel"]}
      ins(%idx : tensor<?xi64>) outs(%e : tensor<?xf32>) {
  ^bb0(%i: i64, %o: f32):
    %ii = arith.index_cast %i : i64 to index
    %v = tensor.extract %table[%ii] : tensor<10xf32>
    linalg.yield %v : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
// As hexir-import lowers ONNX Gather: a negative index counts from the end.
func.func @onnx_gather(%table: tensor<10xf32>, %idx: tensor<?xi64>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c10 = arith.constant 10 : index
  %n = tensor.dim %idx, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#m1, #m1], iterator_types = ["parallel"]}
      ins(%idx : tensor<?xi64>) outs(%e : tensor<?xf32>) {
  ^bb0(%i: i64, %o: f32):
    %ii = arith.index_cast %i : i64 to index
    %neg = arith.cmpi slt, %ii, %c0 : index
    %wrapped = arith.addi %ii, %c10 : index
    %s = arith.select %neg, %wrapped, %ii : index
    %v = tensor.extract %table[%s] : tensor<10xf32>
    linalg.yield %v : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
// A token embedding as the llama importer emits it: the token id lives in a device tensor.
func.func @embed(%table: tensor<?x4xf32>, %token: tensor<1xi32>) -> tensor<1x4xf32> {
  %e = tensor.empty() : tensor<1x4xf32>
  %r = linalg.generic {indexing_maps = [#row, #m2], iterator_types = ["parallel", "parallel"]}
      ins(%token : tensor<1xi32>) outs(%e : tensor<1x4xf32>) {
  ^bb0(%t: i32, %o: f32):
    %row = arith.index_cast %t : i32 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<?x4xf32>
    linalg.yield %v : f32
  } -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}
func.func @divide(%a: tensor<?xi32>, %b: tensor<?xi32>) -> tensor<?xi32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xi32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %q = linalg.generic {indexing_maps = [#m1, #m1, #m1], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xi32>, tensor<?xi32>) outs(%e : tensor<?xi32>) {
  ^bb0(%x: i32, %y: i32, %o: i32):
    %d = arith.divsi %x, %y : i32
    linalg.yield %d : i32
  } -> tensor<?xi32>
  return %q : tensor<?xi32>
}
func.func @remainder(%a: tensor<?xi64>, %b: tensor<?xi64>) -> tensor<?xi64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?xi64>
  %q = linalg.generic {indexing_maps = [#m1, #m1, #m1], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xi64>, tensor<?xi64>) outs(%e : tensor<?xi64>) {
  ^bb0(%x: i64, %y: i64, %o: i64):
    %d = arith.remui %x, %y : i64
    linalg.yield %d : i64
  } -> tensor<?xi64>
  return %q : tensor<?xi64>
}
func.func @signed_remainder(%a: tensor<?xi64>, %b: tensor<?xi64>) -> tensor<?xi64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?xi64>
  %q = linalg.generic {indexing_maps = [#m1, #m1, #m1], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xi64>, tensor<?xi64>) outs(%e : tensor<?xi64>) {
  ^bb0(%x: i64, %y: i64, %o: i64):
    %d = arith.remsi %x, %y : i64
    linalg.yield %d : i64
  } -> tensor<?xi64>
  return %q : tensor<?xi64>
}
// Host scalar division: run by the VM, not by a kernel, under the same rule and words.
func.func @host_div_i64(%a: i64, %b: i64) -> i64 {
  %q = arith.divsi %a, %b : i64
  return %q : i64
}
func.func @host_rem_i64(%a: i64, %b: i64) -> i64 {
  %r = arith.remsi %a, %b : i64
  return %r : i64
}
func.func @host_div_i32(%a: i32, %b: i32) -> i32 {
  %q = arith.divsi %a, %b : i32
  return %q : i32
}
func.func @host_rem_i32(%a: i32, %b: i32) -> i32 {
  %r = arith.remsi %a, %b : i32
  return %r : i32
}
)mlir";

const char* kTable = "'--input=10xf32=0 1 2 3 4 5 6 7 8 9'";
const char* kRows = "'--input=3x4xf32=1 2 3 4 5 6 7 8 9 10 11 12'";

CommandResult Run(const std::string& module, const std::string& device, const std::string& args) {
  return RunCommand(HexirRun() + " --module=" + module + " --device=" + device + " " + args);
}

void RequireOutput(const CommandResult& r, const std::string& expected) {
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output == expected);
}

// Exit 1 with `code: ... message` (both devices name the kernel and the values).
void RequireFailure(const CommandResult& r, const std::string& code, const std::string& message) {
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(r.output, Catch::StartsWith("hexir-run: error: " + code + ": "));
  REQUIRE_THAT(r.output, Catch::Contains(message));
}

std::string KernelsModule(const std::string& device) {
  std::string module = CompileOrDie(kKernels, "kernel_checks", device);
  RequireDevice(device);
  return module;
}

void Gather(const std::string& device) {
  std::string m = KernelsModule(device);
  RequireOutput(Run(m, device, std::string("--function=gather ") + kTable + " '--input=3xi64=2 9 0'"),
                "3xf32=2 9 0\n");
  CommandResult r = Run(m, device, std::string("--function=gather ") + kTable +
                                       " '--input=3xi64=2 1000000000 3'");
  RequireFailure(r, "out_of_range",
                 "kernel 'gather_dispatch_0': index 1000000000 out of range [0, 10)");
  if (device == "cpu")
    REQUIRE_THAT(r.output, Catch::Contains("out_of_range: result 0 of function 'gather': kernel"));
  RequireFailure(Run(m, device, std::string("--function=gather ") + kTable + " '--input=2xi64=-7 1'"),
                 "out_of_range", "kernel 'gather_dispatch_0': index -7 out of range [0, 10)");
}
HEXIR_E2E_TEST_ON_DEVICES("a gather index outside its table fails the call naming index and extent",
                          Gather)

void OnnxGather(const std::string& device) {
  std::string m = KernelsModule(device);
  RequireOutput(Run(m, device, std::string("--function=onnx_gather ") + kTable +
                                   " '--input=4xi64=-1 -10 0 9'"),
                "4xf32=9 0 0 9\n");
  // -11 is -1 after the wrap: still out of range, as is 10. The CPU names the first bad
  // element of a workgroup; on CUDA the first thread to claim the status record is named.
  CommandResult r = Run(m, device, std::string("--function=onnx_gather ") + kTable +
                                       " '--input=2xi64=-11 10'");
  RequireFailure(r, "out_of_range", "kernel 'onnx_gather_dispatch_0': index ");
  REQUIRE_THAT(r.output, Catch::Contains(device == "cpu" ? "index -1 out of range [0, 10)"
                                                         : " out of range [0, 10)"));
}
HEXIR_E2E_TEST_ON_DEVICES("ONNX Gather counts negative indices from the end and refuses the rest",
                          OnnxGather)

void Embedding(const std::string& device) {
  std::string m = KernelsModule(device);
  RequireOutput(Run(m, device, std::string("--function=embed ") + kRows + " --input=1xi32=2"),
                "1x4xf32=9 10 11 12\n");
  RequireFailure(Run(m, device, std::string("--function=embed ") + kRows + " --input=1xi32=100000"),
                 "out_of_range", "kernel 'embed_dispatch_0': index 100000 out of range [0, 3)");
  RequireFailure(Run(m, device, std::string("--function=embed ") + kRows + " --input=1xi32=-7"),
                 "out_of_range", "kernel 'embed_dispatch_0': index -7 out of range [0, 3)");
}
HEXIR_E2E_TEST_ON_DEVICES("an embedding lookup with a token id past the vocabulary fails the call",
                          Embedding)

void Division(const std::string& device) {
  std::string m = KernelsModule(device);
  RequireOutput(Run(m, device, "--function=divide '--input=3xi32=7 -8 9' '--input=3xi32=2 3 -4'"),
                "3xi32=3 -2 -2\n");
  CommandResult r = Run(m, device, "--function=divide '--input=3xi32=7 -8 9' '--input=3xi32=2 0 4'");
  RequireFailure(r, "invalid_argument",
                 "kernel 'divide_dispatch_0': integer division by zero (-8 / 0)");
  if (device == "cpu")
    REQUIRE_THAT(r.output, Catch::Contains("invalid_argument: result 0 of function 'divide': kernel"));
  RequireFailure(Run(m, device, "--function=divide --input=1xi32=-2147483648 --input=1xi32=-1"),
                 "invalid_argument",
                 "kernel 'divide_dispatch_0': integer division overflow (-2147483648 / -1)");
  RequireOutput(Run(m, device, "--function=remainder '--input=2xi64=7 9' '--input=2xi64=4 5'"),
                "2xi64=3 4\n");
  RequireFailure(Run(m, device, "--function=remainder '--input=2xi64=7 9' '--input=2xi64=4 0'"),
                 "invalid_argument", "kernel 'remainder_dispatch_0': integer division by zero (9 / 0)");
  RequireOutput(Run(m, device, "--function=signed_remainder '--input=2xi64=-7 9' '--input=2xi64=3 -1'"),
                "2xi64=-1 0\n");
  RequireFailure(Run(m, device, "--function=signed_remainder --input=1xi64=-9223372036854775808 "
                                "--input=1xi64=-1"),
                 "invalid_argument",
                 "kernel 'signed_remainder_dispatch_0': integer division overflow "
                 "(-9223372036854775808 / -1)");
}
HEXIR_E2E_TEST_ON_DEVICES("integer division by zero in a kernel fails the call, never SIGFPE",
                          Division)

// The VM's own division (host scalars) follows the kernels' rule: INT_MIN / -1 and INT_MIN % -1
// at the type's width fail the call like a zero divisor, with the kernels' words.
void HostDivision(const std::string& device) {
  std::string m = KernelsModule(device);
  auto call = [&](const std::string& fn, const std::string& type, const std::string& a,
                  const std::string& b) {
    return Run(m, device, "--function=" + fn + " --input=" + type + "=" + a + " --input=" + type + "=" + b);
  };
  RequireOutput(call("host_div_i64", "i64", "-7", "2"), "i64=-3\n");
  RequireOutput(call("host_rem_i64", "i64", "-7", "2"), "i64=-1\n");
  RequireOutput(call("host_div_i32", "i32", "-2147483648", "1"), "i32=-2147483648\n");
  RequireOutput(call("host_rem_i32", "i32", "-7", "-1"), "i32=0\n");
  for (const char* fn : {"host_div_i64", "host_rem_i64"}) {
    RequireFailure(call(fn, "i64", "-9223372036854775808", "-1"), "invalid_argument",
                   "integer division overflow (-9223372036854775808 / -1)");
    RequireFailure(call(fn, "i64", "5", "0"), "invalid_argument", "integer division by zero (5 / 0)");
  }
  for (const char* fn : {"host_div_i32", "host_rem_i32"}) {
    CommandResult r = call(fn, "i32", "-2147483648", "-1");
    RequireFailure(r, "invalid_argument", "integer division overflow (-2147483648 / -1)");
    REQUIRE_THAT(r.output, Catch::Contains(std::string("function '") + fn + "' @"));
  }
}
HEXIR_E2E_TEST_ON_DEVICES("host i32/i64 division of INT_MIN by -1 fails the call as a kernel's does",
                          HostDivision)

// One process, one device: a call failed by a kernel check leaves the device usable (on CUDA
// the clamped read never faults, so the context is not lost), and the error is not reported
// again by the next call.
void DeviceUsableAfterFailure(const std::string& device) {
  std::string m = KernelsModule(device);
  auto session = OpenOrDie(m, device);
  auto fn = session->LookupFunction("gather");
  REQUIRE(fn.ok());
  tools::HostTensor table = ZerosF32({10});
  for (int i = 0; i < 10; ++i) F32(table)[i] = float(i);
  auto indices = [](std::vector<int64_t> values) {
    tools::HostTensor t;
    t.element_type = static_cast<int32_t>(hal::ElementType::kI64);
    t.dims = {int64_t(values.size())};
    t.bytes.resize(values.size() * 8);
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  };
  for (int round = 0; round < 3; ++round) {
    std::vector<tools::HostValue> results;
    Status bad = session->Call(*fn, {Tensor(table), Tensor(indices({3, 1000000000, 4}))}, &results);
    INFO(bad.ToString());
    REQUIRE(bad.code() == StatusCode::kOutOfRange);
    REQUIRE_THAT(bad.message(),
                 Catch::Contains("kernel 'gather_dispatch_0': index 1000000000 out of range [0, 10)"));
    std::vector<tools::HostValue> good =
        CallOrDie(*session, "gather", {Tensor(table), Tensor(indices({7, 0, 9, 2}))});
    REQUIRE(good.size() == 1);
    REQUIRE(good[0].tensor.dims == std::vector<int64_t>{4});
    const float* y = F32(good[0].tensor);
    CHECK(y[0] == 7.0f);
    CHECK(y[1] == 0.0f);
    CHECK(y[2] == 9.0f);
    CHECK(y[3] == 2.0f);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("after a kernel check fails a call the same device runs the next calls correctly",
                          DeviceUsableAfterFailure)

}  // namespace
}  // namespace hexir::e2e
