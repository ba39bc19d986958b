// Device loops end to end: an scf.while whose condition is a device flag and whose body is
// device work compiles to one command buffer with a repeat_while (hexir-prepare-device-loops,
// hexir-form-device-loops; the CPU runs it as a host loop, CUDA as a conditional WHILE node)
// and gives the results of its host-loop form (hexir-compile --no-device-loops) and of C++,
// for 0, 1 and many iterations; a loop that would pass its step limit fails the call naming
// the limit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

// @iterate(x0, n): while count < n { x = x * 0.5 + 1; count += 1 }, the flag (count < n as
// i32) computed on the device after each step and for the first test. Returns (x, count).
// @bounded: the same loop with a step limit of 10.
std::string LoopSource(const std::string& name, const std::string& attributes) {
  return R"mlir(
func.func @)mlir" + name + R"mlir((%x0: tensor<4xf32>, %n: tensor<1xi64>) -> (tensor<4xf32>, tensor<1xi64>) {
  %zero = arith.constant 0 : i64
  %ec = tensor.empty() : tensor<1xi64>
  %c0 = linalg.fill ins(%zero : i64) outs(%ec : tensor<1xi64>) -> tensor<1xi64>
  %ef = tensor.empty() : tensor<1xi32>
  %f0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%c0, %n : tensor<1xi64>, tensor<1xi64>) outs(%ef : tensor<1xi32>) {
  ^bb0(%c: i64, %m: i64, %o: i32):
    %lt = arith.cmpi slt, %c, %m : i64
    %v = arith.extui %lt : i1 to i32
    linalg.yield %v : i32
  } -> tensor<1xi32>
  %r:3 = scf.while (%f = %f0, %x = %x0, %cnt = %c0) : (tensor<1xi32>, tensor<4xf32>, tensor<1xi64>) -> (tensor<1xi32>, tensor<4xf32>, tensor<1xi64>) {
    %i0 = arith.constant 0 : index
    %e = tensor.extract %f[%i0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f, %x, %cnt : tensor<1xi32>, tensor<4xf32>, tensor<1xi64>
  } do {
  ^bb0(%f: tensor<1xi32>, %x: tensor<4xf32>, %cnt: tensor<1xi64>):
    %ex = tensor.empty() : tensor<4xf32>
    %x1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%ex : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %half = arith.constant 0.5 : f32
      %one = arith.constant 1.0 : f32
      %m = arith.mulf %a, %half : f32
      %s = arith.addf %m, %one : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %ec1 = tensor.empty() : tensor<1xi64>
    %c1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%cnt : tensor<1xi64>) outs(%ec1 : tensor<1xi64>) {
    ^bb0(%a: i64, %o: i64):
      %one = arith.constant 1 : i64
      %s = arith.addi %a, %one : i64
      linalg.yield %s : i64
    } -> tensor<1xi64>
    %ef1 = tensor.empty() : tensor<1xi32>
    %f1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%c1, %n : tensor<1xi64>, tensor<1xi64>) outs(%ef1 : tensor<1xi32>) {
    ^bb0(%c: i64, %m: i64, %o: i32):
      %lt = arith.cmpi slt, %c, %m : i64
      %v = arith.extui %lt : i1 to i32
      linalg.yield %v : i32
    } -> tensor<1xi32>
    scf.yield %f1, %x1, %c1 : tensor<1xi32>, tensor<4xf32>, tensor<1xi64>
  } )mlir" + attributes + R"mlir(
  return %r#1, %r#2 : tensor<4xf32>, tensor<1xi64>
}
)mlir";
}

const std::string kLoops = "#id = affine_map<(d0) -> (d0)>\n" + LoopSource("iterate", "") +
                           LoopSource("bounded", "attributes {hexir.max_iterations = 10 : i64}");

HostTensor I64Tensor(int64_t v) {
  HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kI64);
  t.dims = {1};
  t.bytes.resize(8);
  std::memcpy(t.bytes.data(), &v, 8);
  return t;
}

int64_t I64Of(const HostValue& v) {
  int64_t x = 0;
  REQUIRE(v.tensor.bytes.size() == 8);
  std::memcpy(&x, v.tensor.bytes.data(), 8);
  return x;
}

struct Modules {
  std::string device_loop, host_loop;
};

Modules CompileBoth(const std::string& target) {
  return {CompileOrDie(kLoops, "device_loops", target),
          CompileOrDie(kLoops, "device_loops_host", target, "--no-device-loops")};
}

// x after n steps of x = x * 0.5 + 1, in f32 like the kernel.
HostTensor Reference(const HostTensor& x0, int64_t n) {
  HostTensor x = x0;
  for (int64_t k = 0; k < n; ++k)
    for (int i = 0; i < 4; ++i) F32(x)[i] = F32(x)[i] * 0.5f + 1.0f;
  return x;
}

void RunsLikeHostLoop(const std::string& device) {
  Modules m = CompileBoth(device == "cuda" ? "cuda" : "cpu");
  // The device-loop module holds a repeat_while; the host-loop one does not.
  CommandResult dumped = RunCommand("tools/hexir-dump/hexir-dump --no-code " + m.device_loop);
  REQUIRE(dumped.exit_code == 0);
  CHECK(dumped.output.find("hal.command_buffer.repeat_while_slot") != std::string::npos);
  CommandResult host_dumped = RunCommand("tools/hexir-dump/hexir-dump --no-code " + m.host_loop);
  REQUIRE(host_dumped.exit_code == 0);
  CHECK(host_dumped.output.find("hal.command_buffer.repeat_while_slot") == std::string::npos);

  auto device_loop = OpenOrDie(m.device_loop, device);
  auto host_loop = OpenOrDie(m.host_loop, device);
  const HostTensor x0 = RandomF32({4}, 7);
  for (int64_t n : {0, 1, 2, 37, -3}) {
    INFO("n = " << n);
    std::vector<HostValue> inputs = {Tensor(x0), Tensor(I64Tensor(n))};
    std::vector<HostValue> on_device = CallOrDie(*device_loop, "iterate", inputs);
    std::vector<HostValue> on_host = CallOrDie(*host_loop, "iterate", inputs);
    const int64_t steps = n > 0 ? n : 0;
    CHECK(I64Of(on_device[1]) == steps);
    CHECK(I64Of(on_host[1]) == steps);
    RequireClose(on_device[0].tensor, Reference(x0, steps), 1e-6, 1e-6);
    CHECK(on_device[0].tensor.bytes == on_host[0].tensor.bytes);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a device loop gives its host loop's results for 0, 1, 2 and 37 iterations",
                          RunsLikeHostLoop)

void StopsAtItsStepLimit(const std::string& device) {
  Modules m = CompileBoth(device == "cuda" ? "cuda" : "cpu");
  auto device_loop = OpenOrDie(m.device_loop, device);
  const HostTensor x0 = RandomF32({4}, 3);
  // Exactly the limit: the flag is zero after the 10th step.
  std::vector<HostValue> ten = CallOrDie(*device_loop, "bounded", {Tensor(x0), Tensor(I64Tensor(10))});
  CHECK(I64Of(ten[1]) == 10);
  RequireClose(ten[0].tensor, Reference(x0, 10), 1e-6, 1e-6);
  // One more: the loop stops after 10 steps and the call fails naming the limit.
  auto fn = device_loop->LookupFunction("bounded");
  REQUIRE(fn.ok());
  std::vector<HostValue> results;
  Status st = device_loop->Call(*fn, {Tensor(x0), Tensor(I64Tensor(11))}, &results);
  INFO(st.ToString());
  REQUIRE(!st.ok());
  CHECK(st.ToString().find("hexir.repeat_while: the device loop reached its step limit of 10 iterations") !=
        std::string::npos);
  CHECK(st.ToString().find("bounded") != std::string::npos);
  // The session stays usable.
  std::vector<HostValue> again = CallOrDie(*device_loop, "bounded", {Tensor(x0), Tensor(I64Tensor(3))});
  CHECK(I64Of(again[1]) == 3);
  // The host loop has no limit: 11 steps.
  auto host_loop = OpenOrDie(m.host_loop, device);
  std::vector<HostValue> eleven = CallOrDie(*host_loop, "bounded", {Tensor(x0), Tensor(I64Tensor(11))});
  CHECK(I64Of(eleven[1]) == 11);
}
HEXIR_E2E_TEST_ON_DEVICES("a device loop past its step limit fails the call naming the limit",
                          StopsAtItsStepLimit)

}  // namespace
}  // namespace hexir::e2e
