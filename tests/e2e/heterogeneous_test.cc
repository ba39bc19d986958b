// End-to-end: modules of several devices (hexir-compile --target repeated). Two CPU devices
// with different worker counts (--device=cpu --device=cpu:threads=1) run models split by
// annotations (layer ranges, pre/post-processing, a loop body on the other device) and give
// exactly the one-device results; device statistics show where the dispatches ran and how
// many transfers moved bytes (none in place between shared-memory devices, one per crossing
// with --copy-shared-memory) and how many queue waits a call issues (only where it crosses
// devices). The tools bind, check, list and dump the device list.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <tuple>

#include "hal/drivers/cuda/cuda_device.h"
#include "runtime/hexir_runtime.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

constexpr int64_t kRows = 8, kWidth = 16, kLayers = 4;

// relu(h @ w) as one generic matmul (device annotation in its attributes) and a relu consumer
// fused into the same dispatch.
std::string LayerLines(int layer, const std::string& in, int device) {
  std::ostringstream s;
  std::string t = "tensor<8x16xf32>", l = std::to_string(layer);
  s << "  %e" << l << " = tensor.empty() : " << t << "\n"
    << "  %z" << l << " = linalg.fill ins(%zero : f32) outs(%e" << l << " : " << t << ") -> " << t << "\n"
    << "  %m" << l << " = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, "
    << "affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = "
    << "[\"parallel\", \"parallel\", \"reduction\"], hexir.device = " << device << " : i64} ins(%"
    << in << ", %w" << l << " : " << t << ", tensor<16x16xf32>) outs(%z" << l << " : " << t << ") {\n"
    << "  ^bb0(%a: f32, %b: f32, %c: f32):\n"
    << "    %p = arith.mulf %a, %b : f32\n    %q = arith.addf %c, %p : f32\n    linalg.yield %q : f32\n"
    << "  } -> " << t << "\n"
    << "  %h" << l << " = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, "
    << "affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]} ins(%m" << l
    << " : " << t << ") outs(%e" << l << " : " << t << ") {\n"
    << "  ^bb0(%a: f32, %o: f32):\n    %r = arith.maximumf %a, %zero : f32\n    linalg.yield %r : f32\n"
    << "  } -> " << t << "\n";
  return s.str();
}

// Layers 0-1 on device 0, layers 2-3 on device 1 (their weights are arguments on device 1).
std::string SplitMlpSource() {
  std::ostringstream s;
  s << "func.func @main(%x: tensor<8x16xf32>";
  for (int l = 0; l < kLayers; ++l)
    s << ", %w" << l << ": tensor<16x16xf32>" << (l >= 2 ? " {hexir.device = 1 : i64}" : "");
  s << ") -> tensor<8x16xf32> {\n  %zero = arith.constant 0.0 : f32\n";
  std::string in = "x";
  for (int l = 0; l < kLayers; ++l) {
    s << LayerLines(l, in, l >= 2 ? 1 : 0);
    in = "h" + std::to_string(l);
  }
  s << "  return %" << in << " : tensor<8x16xf32>\n}\n";
  return s.str();
}

// relu(h @ w) in C++.
HostTensor ReluMatMul(const HostTensor& h, const HostTensor& w) {
  HostTensor next = ZerosF32({kRows, kWidth});
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kWidth; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < kWidth; ++k) acc += F32(h)[i * kWidth + k] * F32(w)[k * kWidth + j];
      F32(next)[i * kWidth + j] = acc > 0 ? acc : 0;
    }
  return next;
}

HostTensor MlpReference(const std::vector<HostTensor>& in) {
  HostTensor h = in[0];
  for (int l = 0; l < kLayers; ++l) h = ReluMatMul(h, in[1 + l]);
  return h;
}

std::vector<HostTensor> MlpInputs() {
  std::vector<HostTensor> in = {RandomF32({kRows, kWidth}, 1)};
  for (int l = 0; l < kLayers; ++l) in.push_back(RandomF32({kWidth, kWidth}, 10 + l, -0.5f, 0.5f));
  return in;
}

std::vector<HostValue> Values(const std::vector<HostTensor>& tensors) {
  std::vector<HostValue> v;
  for (const HostTensor& t : tensors) v.push_back(Tensor(t));
  return v;
}

std::string PrePostSource();

std::unique_ptr<tools::Session> OpenTwoCpus(const std::string& module) {
  tools::InvocationOptions options;
  options.device_uris = {"cpu", "cpu:threads=1"};
  auto session = tools::Session::Open(module, options);
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  REQUIRE((*session)->device_count() == 2);
  return std::move(session).value();
}

void RequireSameBytes(const HostTensor& actual, const HostTensor& expected) {
  REQUIRE(actual.dims == expected.dims);
  REQUIRE(actual.bytes.size() == expected.bytes.size());
  REQUIRE(std::memcmp(actual.bytes.data(), expected.bytes.data(), expected.bytes.size()) == 0);
}

TEST_CASE("a model split across two CPU devices by layer ranges gives exactly the one-device results") {
  const std::string source = SplitMlpSource();
  const std::vector<HostTensor> inputs = MlpInputs();
  std::string one = CompileOrDie(source, "split_mlp_one", "cpu");
  std::string two = CompileOrDie(source, "split_mlp_two", "cpu", "--target=cpu");
  auto single = OpenOrDie(one, "cpu");
  HostTensor expected = CallOrDie(*single, "main", Values(inputs))[0].tensor;
  RequireClose(expected, MlpReference(inputs), 1e-5, 1e-5);

  auto session = OpenTwoCpus(two);
  hal::DeviceStats before0 = session->device(0).stats(), before1 = session->device(1).stats();
  for (int call = 0; call < 3; ++call) RequireSameBytes(CallOrDie(*session, "main", Values(inputs))[0].tensor, expected);
  hal::DeviceStats after0 = session->device(0).stats(), after1 = session->device(1).stats();
  // Two layers (one dispatch each: matmul + fused relu) per device per call.
  CHECK(after0.dispatches_executed - before0.dispatches_executed == 2 * 3);
  CHECK(after1.dispatches_executed - before1.dispatches_executed == 2 * 3);
  // Shared memory: the values cross in place, nothing is copied.
  CHECK(after0.transfers_queued - before0.transfers_queued == 0);
  CHECK(after1.transfers_queued - before1.transfers_queued == 0);
}

TEST_CASE("with --copy-shared-memory each crossing is one queued transfer per call") {
  const std::string source = SplitMlpSource();
  const std::vector<HostTensor> inputs = MlpInputs();
  auto single = OpenOrDie(CompileOrDie(source, "split_mlp_one", "cpu"), "cpu");
  HostTensor expected = CallOrDie(*single, "main", Values(inputs))[0].tensor;
  auto session = OpenTwoCpus(
      CompileOrDie(source, "split_mlp_copy", "cpu", "--target=cpu --copy-shared-memory"));
  hal::DeviceStats before0 = session->device(0).stats(), before1 = session->device(1).stats();
  for (int call = 0; call < 2; ++call) RequireSameBytes(CallOrDie(*session, "main", Values(inputs))[0].tensor, expected);
  hal::DeviceStats after0 = session->device(0).stats(), after1 = session->device(1).stats();
  // Per call: layer 1's result to device 1 (counted there), the result back to device 0.
  CHECK(after1.transfers_queued - before1.transfers_queued == 2);
  CHECK(after0.transfers_queued - before0.transfers_queued == 2);
  CHECK(after1.transfer_bytes_queued - before1.transfer_bytes_queued == 2 * kRows * kWidth * 4);
}

// Queue waits a call issues (device statistics; #14 item 3): the compile-time elision
// (passes/schedule/ElideTimepoints.cpp) leaves only the awaits that cross devices, and the
// driver's run-time elision (hal/queue_waits.h) counts each remaining wait once, as ordered
// (queue_waits) or as already reached / implied by queue order (queue_waits_elided), which
// depends on timing: the sum does not.
struct WaitCounts {
  uint64_t ordered = 0, elided = 0;
  uint64_t total() const { return ordered + elided; }
};
WaitCounts WaitsBetween(const hal::DeviceStats& before, const hal::DeviceStats& after) {
  return {after.queue_waits - before.queue_waits, after.queue_waits_elided - before.queue_waits_elided};
}

TEST_CASE("a call waits only where it crosses devices: none on one device, one per crossing in place, fence + await when copied") {
  const std::string source = SplitMlpSource();
  const std::vector<HostTensor> inputs = MlpInputs();
  constexpr uint64_t kCalls = 3;
  // One device: one region per call, awaiting nothing; the host waits once, for the result.
  auto single = OpenOrDie(CompileOrDie(source, "split_mlp_one", "cpu"), "cpu");
  hal::DeviceStats b = single->device(0).stats();
  for (uint64_t call = 0; call < kCalls; ++call) CallOrDie(*single, "main", Values(inputs));
  hal::DeviceStats a = single->device(0).stats();
  CHECK(WaitsBetween(b, a).total() == 0);
  CHECK(a.queue_submissions - b.queue_submissions == kCalls);
  CHECK(a.host_waits - b.host_waits == kCalls);

  // Two devices, values crossing in place: device 1's region awaits device 0's, device 0's
  // in-place return transfer awaits device 1's; nothing else waits.
  auto in_place = OpenTwoCpus(CompileOrDie(source, "split_mlp_two", "cpu", "--target=cpu"));
  hal::DeviceStats b0 = in_place->device(0).stats(), b1 = in_place->device(1).stats();
  for (uint64_t call = 0; call < kCalls; ++call) CallOrDie(*in_place, "main", Values(inputs));
  hal::DeviceStats a0 = in_place->device(0).stats(), a1 = in_place->device(1).stats();
  CHECK(WaitsBetween(b0, a0).total() == kCalls);
  CHECK(WaitsBetween(b1, a1).total() == kCalls);

  // Copied (--copy-shared-memory): a transfer runs on the target device after a queue fence
  // (QueueFence: the target's empty submission waits for the source's) and its await of the
  // producer; device 1's compute region then awaits its own transfer queue's timepoint, which
  // the driver elides by queue order (the CPU has one in-order queue), every call.
  auto copied = OpenTwoCpus(
      CompileOrDie(source, "split_mlp_copy", "cpu", "--target=cpu --copy-shared-memory"));
  b0 = copied->device(0).stats(), b1 = copied->device(1).stats();
  for (uint64_t call = 0; call < kCalls; ++call) CallOrDie(*copied, "main", Values(inputs));
  a0 = copied->device(0).stats(), a1 = copied->device(1).stats();
  CHECK(WaitsBetween(b0, a0).total() == 2 * kCalls);
  CHECK(WaitsBetween(b1, a1).total() == 3 * kCalls);
  CHECK(WaitsBetween(b1, a1).elided >= kCalls);
}

// Pre-processing (scale and shift) and post-processing (clamp) on device 0, the model
// (two layers) on device 1: the layout of an ONNX model with its pre/post-processing pinned
// to the CPU.
std::string PrePostSource() {
  std::ostringstream s;
  const std::string t = "tensor<8x16xf32>", id = "affine_map<(i, j) -> (i, j)>";
  s << "func.func @main(%x: " << t << ", %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>) -> " << t << " {\n"
    << "  %zero = arith.constant 0.0 : f32\n  %half = arith.constant 0.5 : f32\n  %one = arith.constant 1.0 : f32\n"
    << "  %ep = tensor.empty() : " << t << "\n"
    << "  %pre = linalg.generic {indexing_maps = [" << id << ", " << id << "], iterator_types = "
    << "[\"parallel\", \"parallel\"], hexir.device = 0 : i64} ins(%x : " << t << ") outs(%ep : " << t << ") {\n"
    << "  ^bb0(%a: f32, %o: f32):\n    %m = arith.mulf %a, %half : f32\n    %r = arith.addf %m, %one : f32\n"
    << "    linalg.yield %r : f32\n  } -> " << t << "\n"
    << LayerLines(0, "pre", 1) << LayerLines(1, "h0", 1)
    << "  %eq = tensor.empty() : " << t << "\n"
    << "  %post = linalg.generic {indexing_maps = [" << id << ", " << id << "], iterator_types = "
    << "[\"parallel\", \"parallel\"], hexir.device = 0 : i64} ins(%h1 : " << t << ") outs(%eq : " << t << ") {\n"
    << "  ^bb0(%a: f32, %o: f32):\n    %r = arith.minimumf %a, %one : f32\n    linalg.yield %r : f32\n"
    << "  } -> " << t << "\n  return %post : " << t << "\n}\n";
  return s.str();
}

TEST_CASE("pre- and post-processing on device 0 around a model on device 1 give the one-device results") {
  const std::string source = PrePostSource();
  std::vector<HostTensor> inputs = {RandomF32({kRows, kWidth}, 3), RandomF32({kWidth, kWidth}, 4, -0.5f, 0.5f),
                                    RandomF32({kWidth, kWidth}, 5, -0.5f, 0.5f)};
  auto single = OpenOrDie(CompileOrDie(source, "prepost_one", "cpu"), "cpu");
  HostTensor expected = CallOrDie(*single, "main", Values(inputs))[0].tensor;
  // Reference: min(relu(relu((x/2+1) @ w0) @ w1), 1).
  HostTensor ref = ZerosF32({kRows, kWidth});
  for (int64_t i = 0; i < ref.element_count(); ++i) F32(ref)[i] = F32(inputs[0])[i] * 0.5f + 1.0f;
  ref = ReluMatMul(ReluMatMul(ref, inputs[1]), inputs[2]);
  for (int64_t i = 0; i < ref.element_count(); ++i) F32(ref)[i] = std::min(F32(ref)[i], 1.0f);
  RequireClose(expected, ref, 1e-5, 1e-5);
  auto session = OpenTwoCpus(CompileOrDie(source, "prepost_two", "cpu", "--target=cpu"));
  hal::DeviceStats before1 = session->device(1).stats();
  RequireSameBytes(CallOrDie(*session, "main", Values(inputs))[0].tensor, expected);
  // The two layers ran on device 1 (the pre/post-processing on device 0).
  CHECK(session->device(1).stats().dispatches_executed - before1.dispatches_executed == 2);
}

// The arguments of the pre/post model are unannotated and read only by device 1's dispatches
// (the weights by the layers, x by the first layer's dispatch, which the pre-processing is
// fused into): placement puts them on device 1 (the caller uploads them there), so a call
// copies only the layers' result down, not x, w0 and w1 up every call (4 copies before).
TEST_CASE("arguments read only on device 1 are placed there and not copied on every call") {
  const std::string source = PrePostSource();
  std::vector<HostTensor> inputs = {RandomF32({kRows, kWidth}, 3), RandomF32({kWidth, kWidth}, 4, -0.5f, 0.5f),
                                    RandomF32({kWidth, kWidth}, 5, -0.5f, 0.5f)};
  auto single = OpenOrDie(CompileOrDie(source, "prepost_one", "cpu"), "cpu");
  HostTensor expected = CallOrDie(*single, "main", Values(inputs))[0].tensor;
  auto session = OpenTwoCpus(CompileOrDie(source, "prepost_copy", "cpu", "--target=cpu --copy-shared-memory"));
  auto fn = session->LookupFunction("main");
  REQUIRE(fn.ok());
  CHECK(std::string(fn->attr("abi.arg_devices")) == "1;1;1");
  hal::DeviceStats before0 = session->device(0).stats(), before1 = session->device(1).stats();
  for (int call = 0; call < 3; ++call)
    RequireSameBytes(CallOrDie(*session, "main", Values(inputs))[0].tensor, expected);
  hal::DeviceStats after0 = session->device(0).stats(), after1 = session->device(1).stats();
  CHECK(after1.transfers_queued - before1.transfers_queued == 0);
  CHECK(after0.transfers_queued - before0.transfers_queued == 3);  // the layers' result
  CHECK(after0.transfer_bytes_queued - before0.transfer_bytes_queued == 3 * kRows * kWidth * 4);
}

// A loop whose carried value lives on device 0 and whose body runs on device 1: every
// iteration crosses devices twice.
TEST_CASE("a loop body on device 1 with its carried value on device 0 gives the one-device results") {
  const std::string t = "tensor<8x16xf32>";
  std::ostringstream s;
  s << "func.func @main(%x: " << t << ", %w0: tensor<16x16xf32>, %n: index) -> " << t << " {\n"
    << "  %zero = arith.constant 0.0 : f32\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
    << "  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (" << t << ") {\n"
    << LayerLines(0, "acc", 1) << "    scf.yield %h0 : " << t << "\n  }\n  return %r : " << t << "\n}\n";
  std::vector<HostTensor> inputs = {RandomF32({kRows, kWidth}, 7), RandomF32({kWidth, kWidth}, 8, -0.6f, 0.6f)};
  std::vector<HostValue> args = Values(inputs);
  args.push_back(I64Scalar(5));
  auto single = OpenOrDie(CompileOrDie(s.str(), "loop_one", "cpu"), "cpu");
  HostTensor expected = CallOrDie(*single, "main", args)[0].tensor;
  for (auto [name, flags] : {std::pair{"loop_two", "--target=cpu"},
                             std::pair{"loop_two_copy", "--target=cpu --copy-shared-memory"}}) {
    INFO(flags);
    auto session = OpenTwoCpus(CompileOrDie(s.str(), name, "cpu", flags));
    hal::DeviceStats before1 = session->device(1).stats();
    RequireSameBytes(CallOrDie(*session, "main", args)[0].tensor, expected);
    CHECK(session->device(1).stats().dispatches_executed - before1.dispatches_executed == 5);
  }
}

// CPU + CUDA (compiled here, run on the GPU machine: tools/gpu/pack.sh precompiles them): the
// same models with device 1 a GPU. Values cross through queued transfers (upload from the
// CPU buffer's memory, download into it), both counted on the GPU.
TEST_CASE("models split across the CPU and a CUDA device give the CPU results [cpu+cuda]") {
  const std::vector<HostTensor> inputs = MlpInputs();
  std::string one = CompileOrDie(SplitMlpSource(), "split_mlp_one", "cpu");
  std::string split = CompileOrDie(SplitMlpSource(), "split_mlp_cuda", "cpu", "--target=cuda");
  std::vector<HostTensor> prepost_inputs = {RandomF32({kRows, kWidth}, 3),
                                            RandomF32({kWidth, kWidth}, 4, -0.5f, 0.5f),
                                            RandomF32({kWidth, kWidth}, 5, -0.5f, 0.5f)};
  std::string prepost_one = CompileOrDie(PrePostSource(), "prepost_one", "cpu");
  std::string prepost = CompileOrDie(PrePostSource(), "prepost_cuda", "cpu", "--target=cuda");
  try {
    RequireDevice("cuda");
  } catch (const DeviceUnavailable& e) {
    std::printf("HEXIR_SKIPPED: models split across the CPU and a CUDA device: %s\n", e.reason.c_str());
    return;
  }
  tools::InvocationOptions options;
  options.device_uris = {"cpu", "cuda"};
  // Transfers per call, all counted on the GPU: split, h1 up and the result down (w2, w3 are
  // arguments on device 1); pre/post, the layers' result down (x, w0 and w1, read only by the
  // GPU's dispatches, are placed on it and uploaded there by the caller).
  for (auto [single_path, split_path, in, transfers] :
       {std::tuple{one, split, inputs, 2}, std::tuple{prepost_one, prepost, prepost_inputs, 1}}) {
    INFO(split_path);
    auto single = OpenOrDie(single_path, "cpu");
    HostTensor expected = CallOrDie(*single, "main", Values(in))[0].tensor;
    auto session = tools::Session::Open(split_path, options);
    INFO(session.status().ToString());
    REQUIRE(session.ok());
    hal::DeviceStats before = (*session)->device(1).stats();
    for (int call = 0; call < 2; ++call)
      RequireClose(CallOrDie(**session, "main", Values(in))[0].tensor, expected, 1e-5, 1e-5);
    CHECK((*session)->device(1).stats().transfers_queued - before.transfers_queued == 2 * transfers);
  }
}

// The C API's rule (runtime/hexir_runtime.h, hexir_function_call): arguments are made on the
// device abi.arg_devices names; one made on the CPU device where the GPU expects it is refused
// by the CUDA HAL (not moved), naming the function; the context stays usable.
TEST_CASE("C API: an argument made on the CPU where abi.arg_devices names the GPU is refused, not moved [cpu+cuda]") {
  std::vector<HostTensor> inputs = {RandomF32({kRows, kWidth}, 3), RandomF32({kWidth, kWidth}, 4, -0.5f, 0.5f),
                                    RandomF32({kWidth, kWidth}, 5, -0.5f, 0.5f)};
  auto single = OpenOrDie(CompileOrDie(PrePostSource(), "prepost_one", "cpu"), "cpu");
  HostTensor expected = CallOrDie(*single, "main", Values(inputs))[0].tensor;
  std::string placed = CompileOrDie(PrePostSource(), "prepost_cuda", "cpu", "--target=cuda");
  try {
    RequireDevice("cuda");
  } catch (const DeviceUnavailable& e) {
    std::printf("HEXIR_SKIPPED: C API argument on the wrong device: %s\n", e.reason.c_str());
    return;
  }
  hexir_instance_t* instance = nullptr;
  REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
  hexir_device_t* devices[2] = {nullptr, nullptr};
  REQUIRE(hexir_device_create(instance, "cpu", &devices[0]) == HEXIR_OK);
  REQUIRE(hexir_device_create(instance, "cuda", &devices[1]) == HEXIR_OK);
  hexir_module_t* module = nullptr;
  REQUIRE(hexir_module_load_file(instance, placed.c_str(), &module) == HEXIR_OK);
  hexir_context_t* context = nullptr;
  REQUIRE(hexir_context_create_with_devices(instance, devices, 2, &context) == HEXIR_OK);
  REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
  hexir_function_t* fn = nullptr;
  REQUIRE(hexir_context_lookup_function(context, "main", &fn) == HEXIR_OK);
  REQUIRE(hexir_function_attr(fn, "abi.arg_devices") != nullptr);
  CHECK(std::string(hexir_function_attr(fn, "abi.arg_devices")) == "1;1;1");
  // Calls main with every argument made on devices[device]; the status and the result.
  auto call = [&](int device, HostTensor* result) {
    hexir_values_t* args = nullptr;
    hexir_values_t* results = nullptr;
    REQUIRE(hexir_values_create(&args) == HEXIR_OK);
    REQUIRE(hexir_values_create(&results) == HEXIR_OK);
    for (const HostTensor& t : inputs) {
      hexir_buffer_view_t* view = nullptr;
      REQUIRE(hexir_buffer_view_from_host(devices[device], HEXIR_ELEMENT_F32, t.dims.data(), t.dims.size(),
                                          t.bytes.data(), t.bytes.size(), &view) == HEXIR_OK);
      REQUIRE(hexir_values_push_buffer_view(args, view) == HEXIR_OK);
      hexir_buffer_view_release(view);
    }
    hexir_status_t status = hexir_function_call(context, fn, args, results);
    if (status == HEXIR_OK) {
      hexir_buffer_view_t* out = nullptr;
      REQUIRE(hexir_values_get_buffer_view(results, 0, &out) == HEXIR_OK);
      *result = ZerosF32({kRows, kWidth});
      REQUIRE(hexir_buffer_view_to_host(devices[0], out, result->bytes.data(), result->bytes.size()) == HEXIR_OK);
      hexir_buffer_view_release(out);
    }
    hexir_values_release(args);
    hexir_values_release(results);
    return status;
  };
  HostTensor result;
  REQUIRE(call(1, &result) == HEXIR_OK);
  RequireClose(result, expected, 1e-5, 1e-5);
  CHECK(call(0, &result) == HEXIR_INVALID_ARGUMENT);
  std::string error = hexir_last_error();
  INFO(error);
  CHECK(error.rfind("function 'main' @", 0) == 0);
  CHECK_THAT(error, Catch::Contains("not a CUDA buffer"));
  REQUIRE(call(1, &result) == HEXIR_OK);  // the context is still usable
  RequireClose(result, expected, 1e-5, 1e-5);
  hexir_function_release(fn);
  hexir_context_release(context);
  hexir_module_release(module);
  hexir_device_release(devices[0]);
  hexir_device_release(devices[1]);
  hexir_instance_release(instance);
}

// Two CUDA devices (two logical devices of one GPU: two streams, one context): the split
// model's crossings are peer copies (Device::QueuePeerCopy: device-to-device on the target's
// transfer stream; with HEXIR_CUDA_PEER_COPY=force cuMemcpyPeerAsync, the path of two GPUs
// with peer access) whose waits on the other device are ordered on the GPU
// (cuStreamWaitEvent), never held back on a host thread. Returns the last call's result.
struct SplitModules {
  std::string one, split;  // the model on one CPU device; split across two CUDA devices
};
// Compiled before the GPU check, so that the modules are saved for a GPU machine
// (HEXIR_SAVE_MODULES_DIR) where there is none.
SplitModules CompileSplitModules() {
  return {CompileOrDie(SplitMlpSource(), "split_mlp_one", "cpu"),
          CompileOrDie(SplitMlpSource(), "split_mlp_two_cuda", "cuda", "--target=cuda")};
}

HostTensor RunSplitOnTwoCudaDevices(const SplitModules& modules, const char* peer_copy_env,
                                    uint64_t peer_copies_per_call) {
  const std::vector<HostTensor> inputs = MlpInputs();
  const std::string &one = modules.one, &split = modules.split;
  auto single = OpenOrDie(one, "cpu");
  HostTensor expected = CallOrDie(*single, "main", Values(inputs))[0].tensor;
  tools::InvocationOptions options;
  options.device_uris = {"cuda", "cuda"};
  if (peer_copy_env) setenv("HEXIR_CUDA_PEER_COPY", peer_copy_env, 1);  // read at device creation
  auto session = tools::Session::Open(split, options);
  unsetenv("HEXIR_CUDA_PEER_COPY");
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  hal::Device &d0 = (*session)->device(0), &d1 = (*session)->device(1);
  CallOrDie(**session, "main", Values(inputs));  // warm-up: executables loaded, graphs built
  hal::DeviceStats before0 = d0.stats(), before1 = d1.stats();
  auto cuda_before0 = hal::cuda::GetCudaStats(d0), cuda_before1 = hal::cuda::GetCudaStats(d1);
  REQUIRE(cuda_before0.ok());
  REQUIRE(cuda_before1.ok());
  HostTensor last;
  for (int call = 0; call < 2; ++call) {
    last = CallOrDie(**session, "main", Values(inputs))[0].tensor;
    RequireClose(last, expected, 1e-5, 1e-5);
  }
  // Per call: h1 copied onto device 1 (counted there), the result back onto device 0.
  CHECK(d1.stats().transfers_queued - before1.transfers_queued == 2);
  CHECK(d0.stats().transfers_queued - before0.transfers_queued == 2);
  CHECK(d1.stats().transfers_peer - before1.transfers_peer == 2);
  CHECK(d0.stats().transfers_peer - before0.transfers_peer == 2);
  auto cuda_after0 = hal::cuda::GetCudaStats(d0), cuda_after1 = hal::cuda::GetCudaStats(d1);
  CHECK(cuda_after0->peer_copies - cuda_before0->peer_copies == 2 * peer_copies_per_call);
  CHECK(cuda_after1->peer_copies - cuda_before1->peer_copies == 2 * peer_copies_per_call);
  CHECK(cuda_after0->submissions_held_back == cuda_before0->submissions_held_back);
  CHECK(cuda_after1->submissions_held_back == cuda_before1->submissions_held_back);
  // No count of waits_on_device: a crossing whose producer finished before the consumer's
  // submission needs no wait at all (dropped at submission, or its timepoint already retired
  // when the stream is ordered), so how many of the 2 x 2 crossings wait on the GPU depends
  // on timing. What does not: none was held back on a host thread (above), and the results.
  return last;
}

bool SkipWithoutCuda(const char* what) {
  try {
    RequireDevice("cuda");
  } catch (const DeviceUnavailable& e) {
    std::printf("HEXIR_SKIPPED: %s: %s\n", what, e.reason.c_str());
    return true;
  }
  return false;
}

TEST_CASE("a model split across two CUDA devices gives the CPU results with waits ordered on the GPU [cuda+cuda]") {
  const SplitModules modules = CompileSplitModules();
  if (SkipWithoutCuda("a model split across two CUDA devices")) return;
  RunSplitOnTwoCudaDevices(modules, nullptr, 0);
}

TEST_CASE("a model split across two CUDA devices copying with cuMemcpyPeerAsync gives the same bytes [cuda+cuda]") {
  const SplitModules modules = CompileSplitModules();
  if (SkipWithoutCuda("a model split across two CUDA devices (forced peer copies)")) return;
  HostTensor device_to_device = RunSplitOnTwoCudaDevices(modules, nullptr, 0);
  RequireSameBytes(RunSplitOnTwoCudaDevices(modules, "force", 1), device_to_device);
}

TEST_CASE("hexir-run binds --device in order, names a missing device, lists devices; hexir-dump shows the list") {
  std::string two = CompileOrDie(SplitMlpSource(), "split_mlp_two", "cpu", "--target=cpu");
  std::string inputs = " --input=8x16xf32=0.5";
  for (int l = 0; l < kLayers; ++l) inputs += " --input=16x16xf32=0.25";
  CommandResult ok = RunCommand(HexirRun() + " --module=" + two + " --device=cpu --device=cpu:threads=1" + inputs);
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(ok.output.rfind("8x16xf32=", 0) == 0);

  CommandResult missing = RunCommand(HexirRun() + " --module=" + two + " --device=cpu" + inputs);
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("runs on 2 device(s) (0=cpu 1=cpu): device 1 (cpu) is not given (1 device(s) given: cpu)") !=
        std::string::npos);

  CommandResult list = RunCommand(HexirRun() + " --list-devices --device=cpu --device=cpu:threads=1");
  INFO(list.output);
  CHECK(list.exit_code == 0);
  CHECK(list.output.find("devices (2)\n  0: cpu\n  1: cpu:threads=1\n") != std::string::npos);
  CHECK(list.output.find("  0 -> 1: shared memory yes, peer access no, host memory, ") != std::string::npos);

  CommandResult bad = RunCommand(HexirRun() + " --list-devices --device=cpu:threads=x");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("expected cpu or cpu:threads=N") != std::string::npos);

  CommandResult dump = RunCommand("tools/hexir-dump/hexir-dump --no-code " + two);
  INFO(dump.output);
  CHECK(dump.output.find("\n  devices: 0=cpu 1=cpu\n") != std::string::npos);
}

}  // namespace
}  // namespace hexir::e2e
