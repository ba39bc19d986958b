// Transfer time through the HAL next to raw CUDA copies of the same bytes, measured alternately
// in one process (README.md, "Transfer benchmark"):
//
//   transfer_benchmark [MiB=256] [repeats=5]
//
// 1. One table ("TRANSFER" lines), a row per size x direction x host memory kind: sizes 4 B,
//    4 KiB, 64 KiB, 256 KiB, 1, 4, 16, 64 MiB and `MiB`; h2d (Device::QueueWrite) and d2h
//    (QueueRead); pageable host memory (the HAL stages it) and pinned memory (cuMemHostAlloc:
//    the HAL copies it directly). A round times one HAL transfer (the call plus the
//    Semaphore::Wait on its signal) and one raw cuMemcpyHtoDAsync / cuMemcpyDtoHAsync +
//    cuStreamSynchronize between the same host memory and the same device buffer, the order
//    swapped every round; a row gives both medians and ratio = raw time / HAL time (the HAL's
//    bandwidth as a fraction of raw: >= 1 is as fast). Then the smallest ratio ("RATIO").
// 2. The read path step by step (transfer_steps.h, "STEP" lines).
// 3. At `MiB` only: cuMemHostRegister + copy + cuMemHostUnregister of the pageable range (what
//    pinning per transfer would cost); the staged transfers with 4, 8 and 16 copy threads
//    (HEXIR_CUDA_TRANSFER_THREADS); one thread's host copy into pinned memory, memcpy vs
//    HostCopyPool::StreamingCopy; hal::MeasureCopyBandwidth between a CPU device and the CUDA
//    device and between two logical CUDA devices (device-to-device, and cuMemcpyPeerAsync under
//    HEXIR_CUDA_PEER_COPY=force) next to a raw cuMemcpyDtoDAsync.
// Not a test: prints figures.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/drivers/cuda/host_copy_pool.h"
#include "hal/drivers/cuda/transfer_steps.h"
#include "hal/topology.h"

namespace hexir::hal::cuda {
namespace {

using bench::AlternateMedians;
using bench::Check;
using bench::Die;
using bench::Seconds;

#define CU(call) Check(CudaStatus(api, (call), #call), "raw CUDA")

// Rounds for a size: small copies are noisier and cheap.
int RoundsFor(uint64_t bytes, int repeats) {
  if (bytes <= (64 << 10)) return std::max(repeats, 400);
  if (bytes <= (1 << 20)) return std::max(repeats, 150);
  if (bytes <= (16 << 20)) return std::max(repeats, 30);
  return std::max(repeats, 5);
}

// Memory both sides of a row use.
struct Memory {
  const CudaApi& api;
  Device& gpu;
  vm::Ref<Buffer> buffer;  // the HAL's device buffer; raw copies use its device address too
  CUdeviceptr device = 0;
  CUstream stream = nullptr;  // the raw copies' stream
  uint8_t* pinned_up = nullptr;
  uint8_t* pinned_down = nullptr;
  std::vector<uint8_t> pageable_up, pageable_down;
};

// One row: HAL and raw alternately; returns raw / HAL.
double Row(Memory& m, uint64_t bytes, bool to_device, bool pinned, int repeats) {
  const CudaApi& api = m.api;
  void* host = to_device ? (pinned ? m.pinned_up : m.pageable_up.data())
                         : (pinned ? m.pinned_down : m.pageable_down.data());
  auto done = m.gpu.CreateSemaphore(0);
  Check(done.status(), "CreateSemaphore");
  uint64_t value = 0;
  auto hal = [&] {
    ++value;
    Check(to_device ? m.gpu.QueueWrite({}, {{*done, value}}, host, bytes, m.buffer, 0)
                    : m.gpu.QueueRead({}, {{*done, value}}, m.buffer, 0, host, bytes),
          to_device ? "QueueWrite" : "QueueRead");
    Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait");
  };
  auto raw = [&] {
    CU(to_device ? api.cuMemcpyHtoDAsync(m.device, host, bytes, m.stream)
                 : api.cuMemcpyDtoHAsync(host, m.device, bytes, m.stream));
    CU(api.cuStreamSynchronize(m.stream));
  };
  const auto [hal_s, raw_s] = AlternateMedians(RoundsFor(bytes, repeats), hal, raw);
  std::printf("TRANSFER %10llu B  %s  %-8s  HAL %10.2f us  raw %10.2f us  ratio %6.3f  (HAL %6.2f GB/s)\n",
              (unsigned long long)bytes, to_device ? "h2d" : "d2h", pinned ? "pinned" : "pageable",
              hal_s * 1e6, raw_s * 1e6, raw_s / hal_s, bytes / hal_s / 1e9);
  std::fflush(stdout);
  return raw_s / hal_s;
}

void Table(Memory& m, uint64_t max_bytes, int repeats) {
  std::printf("== HAL transfer (call + Semaphore::Wait) vs raw cuMemcpy*Async + cuStreamSynchronize, "
              "alternating, medians; ratio = raw / HAL\n");
  std::vector<uint64_t> sizes = {4, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  while (!sizes.empty() && sizes.back() >= max_bytes) sizes.pop_back();
  sizes.push_back(max_bytes);
  double worst = 1e9;
  std::string worst_row;
  for (uint64_t bytes : sizes) {
    for (bool to_device : {true, false}) {
      for (bool pinned : {false, true}) {
        const double r = Row(m, bytes, to_device, pinned, repeats);
        if (r < worst) {
          worst = r;
          worst_row = StrCat(bytes, " B ", to_device ? "h2d " : "d2h ", pinned ? "pinned" : "pageable");
        }
      }
    }
  }
  std::printf("RATIO smallest raw / HAL over the table = %.3f (%s)\n", worst, worst_row.c_str());
}

// GB/s of `bytes` moved by `run`, best of `reps` after a warm-up.
double BestGbps(uint64_t bytes, int reps, const std::function<void()>& run) {
  run();
  double best = 0;
  for (int i = 0; i < reps; ++i) {
    const auto begin = bench::Clock::now();
    run();
    best = std::max(best, bytes / Seconds(begin, bench::Clock::now()) / 1e9);
  }
  return best;
}

void LargestSize(Memory& m, Device& cpu, uint64_t bytes, int reps) {
  const CudaApi& api = m.api;
  auto registered = [&](bool to_device, void* host) {
    return BestGbps(bytes, reps, [&] {
      CU(api.cuMemHostRegister(host, bytes, 0));
      CU(to_device ? api.cuMemcpyHtoDAsync(m.device, host, bytes, m.stream)
                   : api.cuMemcpyDtoHAsync(host, m.device, bytes, m.stream));
      CU(api.cuStreamSynchronize(m.stream));
      CU(api.cuMemHostUnregister(host));
    });
  };
  auto staged = [&](Device& d, bool to_device) {
    auto buffer = d.AllocateBuffer(bytes, kMemoryDeviceLocal);
    Check(buffer.status(), "AllocateBuffer");
    auto done = d.CreateSemaphore(0);
    Check(done.status(), "CreateSemaphore");
    uint64_t value = 0;
    return BestGbps(bytes, reps, [&] {
      ++value;
      Check(to_device ? d.QueueWrite({}, {{*done, value}}, m.pageable_up.data(), bytes, *buffer, 0)
                      : d.QueueRead({}, {{*done, value}}, *buffer, 0, m.pageable_down.data(), bytes),
            "queue transfer");
      Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait");
    });
  };
  std::printf("== at %llu MiB, GB/s (best of %d)\n", (unsigned long long)(bytes >> 20), reps);
  std::printf("  raw register+copy+unregister of the pageable range  h2d %7.1f   d2h %7.1f\n",
              registered(true, m.pageable_up.data()), registered(false, m.pageable_down.data()));
  // The transfer queue takes its thread count when the device's first transfer creates it:
  // one device per count.
  for (int threads : {4, 8, 16}) {
    setenv("HEXIR_CUDA_TRANSFER_THREADS", std::to_string(threads).c_str(), 1);
    auto d = CreateDevice("cuda");
    Check(d.status(), "CreateDevice(cuda)");
    const double up = staged(**d, true), down = staged(**d, false);
    std::printf("  HAL QueueWrite / QueueRead (pageable, staged, %2d copy threads) %7.1f / %7.1f\n",
                threads, up, down);
  }
  unsetenv("HEXIR_CUDA_TRANSFER_THREADS");
  auto host_copy = [&](bool streaming) {
    return BestGbps(bytes, reps, [&] {
      if (streaming) {
        HostCopyPool::StreamingCopy(m.pinned_up, m.pageable_up.data(), bytes);
      } else {
        std::memcpy(m.pinned_up, m.pageable_up.data(), bytes);
      }
    });
  };
  const double copy_memcpy = host_copy(false), copy_streaming = host_copy(true);
  std::printf("  host copy pageable -> pinned, one thread: memcpy %7.1f   streaming stores %7.1f\n",
              copy_memcpy, copy_streaming);
  auto module_path = [&](Device& from, Device& to) {
    auto gbps = MeasureCopyBandwidth(from, to, bytes);
    Check(gbps.status(), "MeasureCopyBandwidth");
    return *gbps;
  };
  CUdeviceptr second_buffer = 0;
  CU(api.cuMemAlloc(&second_buffer, bytes));
  const double raw_dtod = BestGbps(bytes, reps, [&] {
    CU(api.cuMemcpyDtoDAsync(second_buffer, m.device, bytes, m.stream));
    CU(api.cuStreamSynchronize(m.stream));
  });
  api.cuMemFree(second_buffer);
  const double up = module_path(cpu, m.gpu), down = module_path(m.gpu, cpu);
  auto second = CreateDevice("cuda");
  Check(second.status(), "CreateDevice(cuda)");
  const double gpu_to_gpu = module_path(m.gpu, **second);
  setenv("HEXIR_CUDA_PEER_COPY", "force", 1);
  auto forced_a = CreateDevice("cuda"), forced_b = CreateDevice("cuda");
  unsetenv("HEXIR_CUDA_PEER_COPY");
  Check(forced_a.status(), "CreateDevice(cuda)");
  Check(forced_b.status(), "CreateDevice(cuda)");
  const double gpu_to_gpu_peer = module_path(**forced_a, **forced_b);
  std::printf("  HAL cpu -> cuda (QueueDeviceTransfer) %7.1f   cuda -> cpu %7.1f\n", up, down);
  std::printf("  raw cuMemcpyDtoDAsync %7.1f   HAL cuda -> cuda (one GPU, device-to-device) %7.1f   "
              "(HEXIR_CUDA_PEER_COPY=force, cuMemcpyPeerAsync) %7.1f\n",
              raw_dtod, gpu_to_gpu, gpu_to_gpu_peer);
  std::printf("RATIO streaming / memcpy host copy = %.3f\n", copy_streaming / copy_memcpy);
  std::printf("RATIO cuda_to_cuda / raw_dtod = %.3f, forced peer copy / raw_dtod = %.3f\n",
              gpu_to_gpu / raw_dtod, gpu_to_gpu_peer / raw_dtod);
}

int Main(int argc, char** argv) {
  const uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (mib == 0 || repeats <= 0) Die("usage: transfer_benchmark [MiB > 0] [repeats > 0]");
  const uint64_t max_bytes = mib << 20;
  auto device_or = CreateDevice("cuda");
  if (device_or.status().code() == StatusCode::kUnavailable) {
    std::printf("HEXIR_SKIPPED: transfer_benchmark: %s\n", device_or.status().message().c_str());
    return 0;
  }
  Check(device_or.status(), "CreateDevice(cuda)");
  Device& gpu = **device_or;
  auto cpu_or = CreateDevice("cpu");
  Check(cpu_or.status(), "CreateDevice(cpu)");
  const CudaApi& api = **LoadCudaApi();  // the device made its context current here

  auto buffer = gpu.AllocateBuffer(max_bytes, kMemoryDeviceLocal);
  Check(buffer.status(), "AllocateBuffer");
  Check(gpu.WaitIdle(), "WaitIdle");  // allocated and zero-filled before raw copies touch it
  Memory m{api, gpu, *buffer, (*buffer)->device_address()};
  CU(api.cuStreamCreate(&m.stream, CU_STREAM_NON_BLOCKING));
  CU(api.cuMemHostAlloc(reinterpret_cast<void**>(&m.pinned_up), max_bytes, 0));
  CU(api.cuMemHostAlloc(reinterpret_cast<void**>(&m.pinned_down), max_bytes, 0));
  std::memset(m.pinned_up, 1, max_bytes);
  std::memset(m.pinned_down, 0, max_bytes);
  m.pageable_up.assign(max_bytes, 2);
  m.pageable_down.assign(max_bytes, 0);

  Table(m, max_bytes, repeats);
  bench::ReadSteps(api, gpu, m.buffer, m.stream, m.pinned_down, m.pageable_down.data());
  LargestSize(m, **cpu_or, max_bytes, repeats);
  api.cuMemFreeHost(m.pinned_up);
  api.cuMemFreeHost(m.pinned_down);
  api.cuStreamDestroy(m.stream);
  return 0;
}

}  // namespace
}  // namespace hexir::hal::cuda

int main(int argc, char** argv) { return hexir::hal::cuda::Main(argc, argv); }
