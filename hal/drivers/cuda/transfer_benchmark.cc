// Transfer bandwidth through the HAL next to raw CUDA copies of the same size, in one run
// (README.md, "Transfer benchmark"):
//
//   transfer_benchmark [MiB=256] [repeats=5]
//
// GB/s (1e9 bytes/s), best of `repeats` (more for small sizes) after one warm-up, each from the
// first call to the completion it waits for:
//   sizes 64 KiB, 256 KiB, 1, 4, 16, 64 MiB and `MiB`, each direction:
//     raw   cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on a stream + cuStreamSynchronize, from/to
//           pinned host memory (cuMemHostAlloc: the link's ceiling) and from/to the pageable
//           memory the HAL is given
//     HAL   Device::QueueWrite / QueueRead (+ one Semaphore::Wait) of that pageable memory (the
//           staging ring, cuda_transfer_queue.h)
//     then RATIO lines: HAL / raw pageable and HAL / raw pinned
//   at `MiB` only: cuMemHostRegister + copy + cuMemHostUnregister of the pageable range (what
//     pinning per transfer would cost); QueueWrite/QueueRead of pinned memory (direct); the
//     staged transfers with 4, 8 and 16 copy threads (HEXIR_CUDA_TRANSFER_THREADS); the host
//     copy into pinned memory on one thread, memcpy vs HostCopyPool::StreamingCopy;
//     hal::MeasureCopyBandwidth between a CPU device and the CUDA device and between two
//     logical CUDA devices (device-to-device, and cuMemcpyPeerAsync under
//     HEXIR_CUDA_PEER_COPY=force) next to a raw cuMemcpyDtoDAsync.
// Not a test: prints figures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/drivers/cuda/host_copy_pool.h"
#include "hal/topology.h"

namespace hexir::hal::cuda {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "transfer_benchmark: %s\n", what.c_str());
  std::exit(1);
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(StrCat(what, ": ", s.ToString()));
}
#define CU(call) Check(CudaStatus(api, (call), #call), "raw CUDA")

// GB/s of `bytes` moved by `run` (which returns once they arrived), best of `repeats`.
double BestGbps(uint64_t bytes, int repeats, const std::function<void()>& run) {
  run();  // warm-up: staging, events, page mappings
  double best = 0;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point begin = Clock::now();
    run();
    const double s = std::chrono::duration<double>(Clock::now() - begin).count();
    if (s > 0 && bytes / s / 1e9 > best) best = bytes / s / 1e9;
  }
  return best;
}

// Best-of count for a size: small copies are noisier.
int RepeatsFor(uint64_t bytes, int repeats) {
  return bytes <= (1 << 20) ? std::max(repeats, 50) : bytes <= (16 << 20) ? std::max(repeats, 20) : repeats;
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
  Device& cpu = **cpu_or;
  const CudaApi& api = **LoadCudaApi();  // the device made its context current here

  CUdeviceptr raw_device = 0, raw_device2 = 0;
  void* pinned = nullptr;
  CUstream stream = nullptr;
  CU(api.cuMemAlloc(&raw_device, max_bytes));
  CU(api.cuMemAlloc(&raw_device2, max_bytes));
  CU(api.cuMemHostAlloc(&pinned, max_bytes, 0));
  CU(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::memset(pinned, 1, max_bytes);
  std::vector<uint8_t> pageable(max_bytes, 2), back(max_bytes, 0);
  auto raw = [&](uint64_t bytes, bool to_device, void* host) {
    return BestGbps(bytes, RepeatsFor(bytes, repeats), [&] {
      CU(to_device ? api.cuMemcpyHtoDAsync(raw_device, host, bytes, stream)
                   : api.cuMemcpyDtoHAsync(host, raw_device, bytes, stream));
      CU(api.cuStreamSynchronize(stream));
    });
  };
  auto hal = [&](Device& d, uint64_t bytes, bool write, void* host) {
    auto buffer = d.AllocateBuffer(bytes, kMemoryDeviceLocal);
    Check(buffer.status(), "AllocateBuffer");
    auto done = d.CreateSemaphore(0);
    Check(done.status(), "CreateSemaphore");
    uint64_t value = 0;
    return BestGbps(bytes, RepeatsFor(bytes, repeats), [&] {
      ++value;
      Check(write ? d.QueueWrite({}, {{*done, value}}, host, bytes, *buffer, 0)
                  : d.QueueRead({}, {{*done, value}}, *buffer, 0, host, bytes),
            write ? "QueueWrite" : "QueueRead");
      Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait");
    });
  };

  // ---- pageable memory through staging, by size -------------------------------------------
  std::printf("== pageable host memory through the HAL's staging vs raw copies, GB/s (best of %d+)\n", repeats);
  std::printf("%10s  %9s %9s %9s  %9s %9s %9s  %8s %8s %8s %8s\n", "bytes", "h2d pin", "h2d page",
              "HAL write", "d2h pin", "d2h page", "HAL read", "w/page", "w/pin", "r/page", "r/pin");
  std::vector<uint64_t> sizes = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  while (!sizes.empty() && sizes.back() >= max_bytes) sizes.pop_back();
  sizes.push_back(max_bytes);
  double worst_write = 1e9, worst_read = 1e9;
  for (uint64_t bytes : sizes) {
    const double up_pinned = raw(bytes, true, pinned), down_pinned = raw(bytes, false, pinned);
    const double up_pageable = raw(bytes, true, pageable.data());
    const double down_pageable = raw(bytes, false, back.data());
    const double write = hal(gpu, bytes, true, pageable.data()), read = hal(gpu, bytes, false, back.data());
    std::printf("%10llu  %9.2f %9.2f %9.2f  %9.2f %9.2f %9.2f  %8.3f %8.3f %8.3f %8.3f\n",
                (unsigned long long)bytes, up_pinned, up_pageable, write, down_pinned,
                down_pageable, read, write / up_pageable, write / up_pinned, read / down_pageable,
                read / down_pinned);
    std::printf("RATIO %llu bytes: hal_write_pageable / raw_htod_pageable = %.3f, / raw_htod_pinned = %.3f; "
                "hal_read_pageable / raw_dtoh_pageable = %.3f, / raw_dtoh_pinned = %.3f\n",
                (unsigned long long)bytes, write / up_pageable, write / up_pinned,
                read / down_pageable, read / down_pinned);
    worst_write = std::min(worst_write, write / up_pageable);
    worst_read = std::min(worst_read, read / down_pageable);
  }
  std::printf("RATIO smallest over sizes: hal_write_pageable / raw_htod_pageable = %.3f, "
              "hal_read_pageable / raw_dtoh_pageable = %.3f\n", worst_write, worst_read);

  // ---- at the largest size ----------------------------------------------------------------
  const uint64_t bytes = max_bytes;
  const int reps = RepeatsFor(bytes, repeats);
  auto raw_registered = [&](bool to_device, void* host) {
    return BestGbps(bytes, reps, [&] {
      CU(api.cuMemHostRegister(host, bytes, 0));
      CU(to_device ? api.cuMemcpyHtoDAsync(raw_device, host, bytes, stream)
                   : api.cuMemcpyDtoHAsync(host, raw_device, bytes, stream));
      CU(api.cuStreamSynchronize(stream));
      CU(api.cuMemHostUnregister(host));
    });
  };
  const double raw_htod_pinned = raw(bytes, true, pinned), raw_dtoh_pinned = raw(bytes, false, pinned);
  const double raw_htod_register = raw_registered(true, pageable.data());
  const double raw_dtoh_register = raw_registered(false, back.data());
  auto mapped = gpu.AllocateBuffer(bytes, kMemoryHostVisible);
  Check(mapped.status(), "AllocateBuffer(host visible)");
  void* pinned_hal = (*mapped)->host_data();
  const double hal_write_pinned = hal(gpu, bytes, true, pinned_hal);
  const double hal_read_pinned = hal(gpu, bytes, false, pinned_hal);
  struct Staged {
    int threads;
    double write, read;
  };
  std::vector<Staged> staged;
  // The transfer queue takes its thread count when the device's first transfer creates it:
  // one device per count.
  for (int threads : {4, 8, 16}) {
    setenv("HEXIR_CUDA_TRANSFER_THREADS", std::to_string(threads).c_str(), 1);
    auto d = CreateDevice("cuda");
    Check(d.status(), "CreateDevice(cuda)");
    staged.push_back({threads, hal(**d, bytes, true, pageable.data()), hal(**d, bytes, false, back.data())});
  }
  unsetenv("HEXIR_CUDA_TRANSFER_THREADS");
  // One thread's host copy into pinned memory: what each staging piece costs.
  auto host_copy = [&](bool streaming) {
    return BestGbps(bytes, reps, [&] {
      if (streaming) {
        HostCopyPool::StreamingCopy(pinned, pageable.data(), bytes);
      } else {
        std::memcpy(pinned, pageable.data(), bytes);
      }
    });
  };
  const double copy_memcpy = host_copy(false), copy_streaming = host_copy(true);
  auto module_path = [&](Device& from, Device& to) {
    auto gbps = MeasureCopyBandwidth(from, to, bytes);
    Check(gbps.status(), "MeasureCopyBandwidth");
    return *gbps;
  };
  const double module_up = module_path(cpu, gpu), module_down = module_path(gpu, cpu);
  const double raw_dtod = BestGbps(bytes, reps, [&] {
    CU(api.cuMemcpyDtoDAsync(raw_device2, raw_device, bytes, stream));
    CU(api.cuStreamSynchronize(stream));
  });
  auto second = CreateDevice("cuda");
  Check(second.status(), "CreateDevice(cuda)");
  const double gpu_to_gpu = module_path(gpu, **second);
  setenv("HEXIR_CUDA_PEER_COPY", "force", 1);
  auto forced_a = CreateDevice("cuda"), forced_b = CreateDevice("cuda");
  unsetenv("HEXIR_CUDA_PEER_COPY");
  Check(forced_a.status(), "CreateDevice(cuda)");
  Check(forced_b.status(), "CreateDevice(cuda)");
  const double gpu_to_gpu_peer = module_path(**forced_a, **forced_b);

  std::printf("== at %llu MiB, GB/s (best of %d)\n", (unsigned long long)mib, reps);
  std::printf("  raw register+copy+unregister of the pageable range  h2d %7.1f   d2h %7.1f\n",
              raw_htod_register, raw_dtoh_register);
  std::printf("  HAL QueueWrite / QueueRead of pinned memory (direct) %7.1f / %7.1f\n",
              hal_write_pinned, hal_read_pinned);
  for (const Staged& st : staged) {
    std::printf("  HAL QueueWrite / QueueRead (pageable, staged, %d copy threads) %7.1f / %7.1f\n",
                st.threads, st.write, st.read);
  }
  std::printf("  host copy pageable -> pinned, one thread: memcpy %7.1f   streaming stores %7.1f\n",
              copy_memcpy, copy_streaming);
  std::printf("  HAL cpu -> cuda (QueueDeviceTransfer)   %7.1f\n", module_up);
  std::printf("  HAL cuda -> cpu (QueueDeviceTransfer)   %7.1f\n", module_down);
  std::printf("  raw cuMemcpyDtoDAsync %7.1f   HAL cuda -> cuda (one GPU, device-to-device) %7.1f   "
              "(HEXIR_CUDA_PEER_COPY=force, cuMemcpyPeerAsync) %7.1f\n",
              raw_dtod, gpu_to_gpu, gpu_to_gpu_peer);
  std::printf("RATIO hal_write_pinned / raw_htod_pinned = %.3f\n", hal_write_pinned / raw_htod_pinned);
  std::printf("RATIO hal_read_pinned / raw_dtoh_pinned = %.3f\n", hal_read_pinned / raw_dtoh_pinned);
  std::printf("RATIO streaming / memcpy host copy = %.3f\n", copy_streaming / copy_memcpy);
  std::printf("RATIO cpu_to_cuda / raw_htod_pinned = %.3f\n", module_up / raw_htod_pinned);
  std::printf("RATIO cuda_to_cpu / raw_dtoh_pinned = %.3f\n", module_down / raw_dtoh_pinned);
  std::printf("RATIO cuda_to_cuda / raw_dtod = %.3f, forced peer copy / raw_dtod = %.3f\n",
              gpu_to_gpu / raw_dtod, gpu_to_gpu_peer / raw_dtod);
  api.cuStreamDestroy(stream);
  api.cuMemFreeHost(pinned);
  api.cuMemFree(raw_device);
  api.cuMemFree(raw_device2);
  return 0;
}

}  // namespace
}  // namespace hexir::hal::cuda

int main(int argc, char** argv) { return hexir::hal::cuda::Main(argc, argv); }
