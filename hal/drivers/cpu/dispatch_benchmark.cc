// CPU driver benchmarks (not tests; numbers for the closing note).
//
//   bazel run //hal/drivers/cpu:dispatch_benchmark   (.bazelrc builds everything -O2)
//
// (a) Host cost per dispatch of a replayed command buffer: 1000 single-workgroup dispatches
//     of an empty kernel (2 binding-table slots, 2 push constants), recorded once, submitted
//     many times; one worker thread. Goal <= 2 us per dispatch.
// (b) Elementwise f32 kernel (y = 2x + 1) over 256 MiB: achieved bandwidth as a ratio of
//     memcpy of the same bytes in the same run. Goal >= 0.8. The kernels are hand-written C
//     built with -O3 -march=native (benchmark_kernels.c): they stand in for the compiler's
//     vectorized codegen, which does not exist yet.
// (c) Host round trip of one call (submit + wait), queued and inline.
// (d) As (a) with 16 workgroups per dispatch on every hardware thread: the worker-pool hand-off.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "hal/device.h"
#include "hal/drivers/cpu/cpu_device.h"

namespace hexir::hal {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

#define CHECK_OK(expr)                                                    \
  do {                                                                    \
    Status _s = (expr);                                                   \
    if (!_s.ok()) {                                                       \
      std::fprintf(stderr, "%s failed: %s\n", #expr, _s.ToString().c_str()); \
      std::exit(1);                                                       \
    }                                                                     \
  } while (0)

template <typename T>
T Unwrap(StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, v.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(v).value();
}

std::vector<uint8_t> g_kernels;

vm::Ref<Executable> LoadKernels(Device& d) {
  vm::ExecutableView view;
  view.format = "cpu-elf-x86_64";
  view.data = g_kernels.data();
  view.size = g_kernels.size();
  view.entry_points = {"noop", "scale_f32", "scale_f32_plain"};
  return Unwrap(d.CreateExecutable(view), "CreateExecutable");
}

// Returns seconds per dispatch.
double DispatchCost(bool inline_mode, int32_t workers = 1, uint32_t workgroups = 1) {
  DeviceOptions o;
  o.cpu_worker_count = workers;
  o.cpu_inline = inline_mode;
  auto dev = Unwrap(cpu::CreateCpuDevice(o), "CreateDevice");
  auto exe = LoadKernels(*dev);
  auto a = Unwrap(dev->AllocateBuffer(256), "alloc"), b = Unwrap(dev->AllocateBuffer(256), "alloc");
  constexpr int kDispatches = 1000;
  auto cb = Unwrap(dev->CreateCommandBuffer(), "CreateCommandBuffer");
  for (int i = 0; i < kDispatches; ++i) {
    CHECK_OK(cb->Dispatch(exe, 0, {workgroups, 1, 1}, {BufferRef::Slot(0), BufferRef::Slot(1)},
                          {64, static_cast<uint32_t>(i)}));
  }
  CHECK_OK(cb->Finalize());
  auto sem = Unwrap(dev->CreateSemaphore(0), "CreateSemaphore");
  const std::vector<BufferRef> table = {BufferRef::Whole(a), BufferRef::Whole(b)};
  uint64_t value = 0;
  auto run = [&](int submits) {
    for (int s = 0; s < submits; ++s) {
      CHECK_OK(dev->QueueExecute({}, cb, {{sem, ++value}}, table));
    }
    CHECK_OK(sem->Wait(value));
  };
  run(20);  // warm up
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    constexpr int kSubmits = 200;
    auto t0 = Clock::now();
    run(kSubmits);
    best = std::min(best, Seconds(Clock::now() - t0) / (double(kSubmits) * kDispatches));
  }
  if (dev->stats().command_buffers_recorded != 1) std::exit(1);
  return best;
}

// Host round trip of one call: submit a 1-dispatch command buffer with a binding table, wait.
double RoundTrip(bool inline_mode) {
  DeviceOptions o;
  o.cpu_worker_count = 1;
  o.cpu_inline = inline_mode;
  auto dev = Unwrap(cpu::CreateCpuDevice(o), "CreateDevice");
  auto exe = LoadKernels(*dev);
  auto a = Unwrap(dev->AllocateBuffer(256), "alloc");
  auto cb = Unwrap(dev->CreateCommandBuffer(), "CreateCommandBuffer");
  CHECK_OK(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0)}, {}));
  CHECK_OK(cb->Finalize());
  auto sem = Unwrap(dev->CreateSemaphore(0), "CreateSemaphore");
  uint64_t value = 0;
  const std::vector<BufferRef> table = {BufferRef::Whole(a)};
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    constexpr int kCalls = 2000;
    auto t0 = Clock::now();
    for (int i = 0; i < kCalls; ++i) {
      CHECK_OK(dev->QueueExecute({}, cb, {{sem, ++value}}, table));
      CHECK_OK(sem->Wait(value));
    }
    best = std::min(best, Seconds(Clock::now() - t0) / kCalls);
  }
  return best;
}

struct Bandwidth {
  double memcpy_s, kernel_s;
};

Bandwidth Elementwise(int32_t workers, const char* entry_name, uint32_t entry) {
  DeviceOptions o;
  o.cpu_worker_count = workers;
  auto dev = Unwrap(cpu::CreateCpuDevice(o), "CreateDevice");
  auto exe = LoadKernels(*dev);
  constexpr uint64_t kBytes = uint64_t{256} << 20;
  constexpr uint32_t kN = kBytes / 4, kTile = 1 << 16;  // 256 KiB per workgroup
  auto x = Unwrap(dev->AllocateBuffer(kBytes), "alloc"), y = Unwrap(dev->AllocateBuffer(kBytes), "alloc");
  float* hx = reinterpret_cast<float*>(x->host_data());
  for (uint32_t i = 0; i < kN; ++i) hx[i] = static_cast<float>(i & 1023);
  std::memset(y->host_data(), 1, kBytes);  // fault every page in before timing

  auto cb = Unwrap(dev->CreateCommandBuffer(), "CreateCommandBuffer");
  CHECK_OK(cb->Dispatch(exe, entry, {kN / kTile, 1, 1}, {BufferRef::Slot(0), BufferRef::Slot(1)},
                        {kN, kTile}));
  CHECK_OK(cb->Finalize());
  auto sem = Unwrap(dev->CreateSemaphore(0), "CreateSemaphore");
  uint64_t value = 0;
  Bandwidth bw{1e9, 1e9};
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    std::memcpy(y->host_data(), x->host_data(), kBytes);
    bw.memcpy_s = std::min(bw.memcpy_s, Seconds(Clock::now() - t0));
    t0 = Clock::now();
    CHECK_OK(dev->QueueExecute({}, cb, {{sem, ++value}}, {BufferRef::Whole(x), BufferRef::Whole(y)}));
    CHECK_OK(sem->Wait(value));
    bw.kernel_s = std::min(bw.kernel_s, Seconds(Clock::now() - t0));
  }
  const float* hy = reinterpret_cast<const float*>(y->host_data());
  for (uint32_t i = 0; i < kN; i += 4099) {
    if (hy[i] != hx[i] * 2 + 1) {
      std::fprintf(stderr, "%s: wrong result at %u\n", entry_name, i);
      std::exit(1);
    }
  }
  return bw;
}

int Main() {
  std::ifstream f("hal/drivers/cpu/benchmark_kernels.so", std::ios::binary);
  g_kernels.assign(std::istreambuf_iterator<char>(f), {});
  if (g_kernels.empty()) {
    std::fprintf(stderr, "benchmark_kernels.so not found (run through bazel run)\n");
    return 1;
  }
  double queued = DispatchCost(false), inl = DispatchCost(true);
  std::printf("(a) replayed command buffer, 1000 empty dispatches, 1 worker thread:\n");
  std::printf("    queued device: %.3f us/dispatch   inline device: %.3f us/dispatch   (goal <= 2 us)\n",
              queued * 1e6, inl * 1e6);
  const double gib = double(uint64_t{256} << 20) * 2 / double(1 << 30);  // bytes read + written
  const int32_t hw = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("(b) y = 2x + 1 over 256 MiB f32 vs memcpy of 256 MiB (same run, best of 5):\n");
  for (int32_t workers : {1, hw}) {
    for (auto [name, entry] : {std::pair<const char*, uint32_t>{"scale_f32 (streaming stores)", 1},
                               {"scale_f32_plain (plain stores)", 2}}) {
      Bandwidth bw = Elementwise(workers, name, entry);
      std::printf("    %d worker(s), %-31s kernel %.2f GiB/s, memcpy %.2f GiB/s, ratio %.2f (goal >= 0.8)\n",
                  workers, name, gib / bw.kernel_s, gib / bw.memcpy_s, bw.memcpy_s / bw.kernel_s);
    }
    if (hw == 1) break;
  }
  std::printf("(c) one call = submit a 1-dispatch command buffer + host wait: queued %.2f us, inline %.2f us\n",
              RoundTrip(false) * 1e6, RoundTrip(true) * 1e6);
  const int32_t workers = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("(d) same as (a) with 16 workgroups per dispatch, %d workers (pool hand-off per dispatch): %.3f us/dispatch\n",
              workers, DispatchCost(false, workers, 16) * 1e6);
  return 0;
}

}  // namespace
}  // namespace hexir::hal

int main() { return hexir::hal::Main(); }
