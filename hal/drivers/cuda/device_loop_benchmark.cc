// What a device loop (CommandBuffer::RepeatWhile as a conditional WHILE node) saves over the
// host-driven loop that compiled decode loops use today (README.md, "Device loops").
//
//   device_loop_benchmark [steps=256] [kernels=16,64] [chunk=8] [calls=20]
//
// A decode-like step: `kernels` tiny dependent dispatches (tiny_inc, barriers between) and a
// condition update (affine_i32: flag -= 1), repeated until the flag reaches 0 (`steps`).
// Per kernel count, µs per step of:
//   device loop:   one command buffer holding RepeatWhile(step): one submission, one wait;
//   chunked host:  the step as one graph launch per step, the host reading the 4-byte flag
//                  after every `chunk` steps (ReadBufferAfterPendingWork), as @generate does;
//   stream host:   the device loop's command buffer in stream mode (the fallback where
//                  conditional nodes are unavailable: stream launches, one read per step).
// Each variant's counter is checked (steps x kernels increments). Run from a directory holding
// hal/drivers/cuda/testing/test_kernels.cubin. Without a GPU it prints
// "HEXIR_SKIPPED: device_loop_benchmark: <reason>" and exits 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace hexir::hal::cuda {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "device_loop_benchmark: %s\n", what.c_str());
  std::exit(1);
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(StrCat(what, ": ", s.ToString()));
}
template <typename T>
T Take(StatusOr<T> v, const char* what) {
  Check(v.status(), what);
  return std::move(v).value();
}

struct Bench {
  Device& d;
  vm::Ref<Executable> exe;
  vm::Ref<Buffer> counter, flag;
  int32_t steps;

  // The step: `kernels` dependent increments of counter (slot 0), then flag (slot 1) -= 1.
  vm::Ref<CommandBuffer> Step(uint32_t kernels) {
    auto cb = Take(d.CreateCommandBuffer(), "CreateCommandBuffer");
    for (uint32_t i = 0; i < kernels; ++i) {
      if (i) Check(cb->Barrier(), "barrier");
      Check(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0)}), "dispatch tiny_inc");
    }
    Check(cb->Dispatch(exe, 1, {1, 1, 1}, {BufferRef::Slot(1)}, {1, 1, uint32_t(-1)}),
          "dispatch affine_i32");
    Check(cb->Finalize(), "finalize step");
    return cb;
  }
  std::vector<BufferRef> Table() { return {BufferRef::Whole(counter), BufferRef::Whole(flag)}; }
  void Reset() {
    const uint32_t zero = 0;
    Check(d.WriteBuffer(*counter, 0, &zero, 4), "reset counter");
    Check(d.WriteBuffer(*flag, 0, &steps, 4), "reset flag");
  }
  void Expect(uint32_t kernels, const char* variant) {
    uint32_t got = 0;
    Check(d.ReadBuffer(*counter, 0, &got, 4), "read counter");
    if (got != uint32_t(steps) * kernels) {
      Die(StrCat(variant, ": counter ", got, ", expected ", uint32_t(steps) * kernels));
    }
  }
  // Median µs per step over `calls` whole loops (each: reset, run to the end).
  template <typename F>
  double Time(int calls, uint32_t kernels, const char* variant, F run) {
    std::vector<double> per_step;
    for (int c = 0; c < calls + 2; ++c) {  // two warm-up loops
      Reset();
      auto t0 = Clock::now();
      run();
      double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      Expect(kernels, variant);
      if (c >= 2) per_step.push_back(us / steps);
    }
    std::sort(per_step.begin(), per_step.end());
    return per_step[per_step.size() / 2];
  }
};

int Main(int argc, char** argv) {
  const int32_t steps = argc > 1 ? std::atoi(argv[1]) : 256;
  std::vector<uint32_t> kernel_counts = {16, 64};
  if (argc > 2) kernel_counts = {static_cast<uint32_t>(std::atoi(argv[2]))};
  const int32_t chunk = argc > 3 ? std::atoi(argv[3]) : 8;
  const int calls = argc > 4 ? std::atoi(argv[4]) : 20;
  auto device_or = CreateDevice("cuda");
  if (device_or.status().code() == StatusCode::kUnavailable ||
      !testing::KernelsMissingReason().empty()) {
    std::printf("HEXIR_SKIPPED: device_loop_benchmark: %s\n",
                device_or.ok() ? testing::KernelsMissingReason().c_str()
                               : device_or.status().message().c_str());
    return 0;
  }
  vm::Ref<Device> device = Take(std::move(device_or), "CreateDevice(cuda)");
  Device& d = *device;
  Bench b{d, Take(d.CreateExecutable(testing::CubinView({"tiny_inc", "affine_i32"})), "load"),
          Take(d.AllocateBuffer(256), "alloc"), Take(d.AllocateBuffer(256), "alloc"), steps};
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach a pipe as they are printed
  std::printf("== device loop vs host loops: %d steps, flag read every %d steps (chunked), "
              "median of %d loops ==\n", steps, chunk, calls);
  for (uint32_t kernels : kernel_counts) {
    vm::Ref<CommandBuffer> step = b.Step(kernels);
    auto make_loop = [&](vm::Ref<CommandBuffer> cb) {
      Check(cb->RepeatWhile(step, BufferRef::Slot(1), uint32_t(steps)), "repeat_while");
      Check(cb->Finalize(), "finalize loop");
      return cb;
    };
    auto graph_loop = make_loop(Take(d.CreateCommandBuffer(), "CreateCommandBuffer"));
    auto stream_loop =
        make_loop(Take(CreateCommandBuffer(d, CommandBufferMode::kStream), "stream cb"));
    auto sem = Take(d.CreateSemaphore(0), "CreateSemaphore");
    uint64_t value = 0;
    auto run_loop = [&](const vm::Ref<CommandBuffer>& cb) {
      Check(d.QueueExecute({}, cb, {{sem, ++value}}, b.Table()), "QueueExecute(loop)");
      Check(sem->Wait(value), "wait");
    };
    CudaStats s0 = Take(GetCudaStats(d), "stats");
    double device_us = b.Time(calls, kernels, "device loop", [&] { run_loop(graph_loop); });
    CudaStats s1 = Take(GetCudaStats(d), "stats");
    double chunked_us = b.Time(calls, kernels, "chunked host", [&] {
      int32_t flag = steps;
      while (flag != 0) {
        for (int32_t i = 0; i < chunk && i < flag; ++i) {
          Check(d.QueueExecute({}, step, {}, b.Table()), "QueueExecute(step)");
        }
        Check(d.ReadBufferAfterPendingWork(*b.flag, 0, &flag, 4), "read flag");
      }
    });
    double stream_us = b.Time(std::max(calls / 4, 2), kernels, "stream host",
                              [&] { run_loop(stream_loop); });
    const double loops = calls + 2;
    std::printf("  %3u kernels/step: device loop %8.2f us/step (%.2f us/kernel, %.1f graph "
                "launches and %.1f stream launches per loop)\n",
                kernels, device_us, device_us / (kernels + 1),
                (s1.graph_launches - s0.graph_launches) / loops,
                (s1.stream_launches - s0.stream_launches) / loops);
    std::printf("                    chunked host %8.2f us/step   stream host %8.2f us/step\n",
                chunked_us, stream_us);
    std::printf("  RATIO device loop / chunked host = %.3f (%u kernels/step)\n",
                device_us / chunked_us, kernels);
  }
  return 0;
}

}  // namespace
}  // namespace hexir::hal::cuda

int main(int argc, char** argv) { return hexir::hal::cuda::Main(argc, argv); }
