// Transfer bandwidth through the HAL next to raw CUDA copies of the same size, in one run
// (README.md, "Transfer benchmark"):
//
//   transfer_benchmark [MiB=256] [repeats=5]
//
// GB/s (1e9 bytes/s), best of `repeats` after one warm-up, each from the first call to the
// completion it waits for:
//   raw   cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on a stream + cuStreamSynchronize, from/to
//         pinned host memory (cuMemHostAlloc: the link's ceiling) and from/to pageable memory
//         and, from/to pageable memory, cuMemHostRegister + copy + cuMemHostUnregister (what
//         pinning a caller's range per transfer would cost)
//   HAL   Device::QueueWrite / QueueRead (+ one Semaphore::Wait) of pinned memory (a
//         host-visible CUDA buffer's mapping: the direct path) and of pageable memory (the
//         staging ring, its host copies over 1, 2, 4, 8, 12, 16 threads and the default count:
//         HEXIR_CUDA_TRANSFER_THREADS, host_copy_pool.h); and hal::MeasureCopyBandwidth
//         between a CPU device and the CUDA device (QueueDeviceTransfer: the path a compiled
//         module's transfers take)
// then RATIO lines, HAL over raw of the same kind of host memory, for each direction. Not a
// test: prints figures.
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

int Main(int argc, char** argv) {
  const uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (mib == 0 || repeats <= 0) Die("usage: transfer_benchmark [MiB > 0] [repeats > 0]");
  const uint64_t bytes = mib << 20;
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

  // ---- raw ------------------------------------------------------------------------------
  CUdeviceptr raw_device = 0;
  void* pinned = nullptr;
  CUstream stream = nullptr;
  CU(api.cuMemAlloc(&raw_device, bytes));
  CU(api.cuMemHostAlloc(&pinned, bytes, 0));
  CU(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::memset(pinned, 1, bytes);
  std::vector<uint8_t> pageable(bytes, 2), back(bytes, 0);
  auto raw = [&](bool to_device, void* host) {
    return BestGbps(bytes, repeats, [&] {
      CU(to_device ? api.cuMemcpyHtoDAsync(raw_device, host, bytes, stream)
                   : api.cuMemcpyDtoHAsync(host, raw_device, bytes, stream));
      CU(api.cuStreamSynchronize(stream));
    });
  };
  const double raw_htod_pinned = raw(true, pinned), raw_dtoh_pinned = raw(false, pinned);
  const double raw_htod_pageable = raw(true, pageable.data());
  const double raw_dtoh_pageable = raw(false, back.data());
  auto raw_registered = [&](bool to_device, void* host) {
    return BestGbps(bytes, repeats, [&] {
      CU(api.cuMemHostRegister(host, bytes, 0));
      CU(to_device ? api.cuMemcpyHtoDAsync(raw_device, host, bytes, stream)
                   : api.cuMemcpyDtoHAsync(host, raw_device, bytes, stream));
      CU(api.cuStreamSynchronize(stream));
      CU(api.cuMemHostUnregister(host));
    });
  };
  const double raw_htod_register = raw_registered(true, pageable.data());
  const double raw_dtoh_register = raw_registered(false, back.data());

  // ---- HAL --------------------------------------------------------------------------------
  // The transfer queue takes its thread count when the device's first transfer creates it:
  // one device per count.
  auto hal = [&](Device& d, bool write, void* host) {
    auto buffer = d.AllocateBuffer(bytes, kMemoryDeviceLocal);
    Check(buffer.status(), "AllocateBuffer");
    auto done = d.CreateSemaphore(0);
    Check(done.status(), "CreateSemaphore");
    uint64_t value = 0;
    return BestGbps(bytes, repeats, [&] {
      ++value;
      Check(write ? d.QueueWrite({}, {{*done, value}}, host, bytes, *buffer, 0)
                  : d.QueueRead({}, {{*done, value}}, *buffer, 0, host, bytes),
            write ? "QueueWrite" : "QueueRead");
      Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait");
    });
  };
  auto mapped = gpu.AllocateBuffer(bytes, kMemoryHostVisible);
  Check(mapped.status(), "AllocateBuffer(host visible)");
  void* pinned_hal = (*mapped)->host_data();
  const double hal_write_pinned = hal(gpu, true, pinned_hal), hal_read_pinned = hal(gpu, false, pinned_hal);
  struct Staged {
    int threads;
    double write, read;
  };
  std::vector<Staged> staged;
  for (int threads : {1, 2, 4, 8, 12, 16, 0}) {
    if (threads) {
      setenv("HEXIR_CUDA_TRANSFER_THREADS", std::to_string(threads).c_str(), 1);
    } else {
      unsetenv("HEXIR_CUDA_TRANSFER_THREADS");
    }
    auto d = CreateDevice("cuda");
    Check(d.status(), "CreateDevice(cuda)");
    staged.push_back({threads ? threads : HostCopyPool::DefaultThreads(),
                      hal(**d, true, pageable.data()), hal(**d, false, back.data())});
  }
  const double hal_write = staged.back().write, hal_read = staged.back().read;
  auto module_path = [&](Device& from, Device& to) {
    auto gbps = MeasureCopyBandwidth(from, to, bytes);
    Check(gbps.status(), "MeasureCopyBandwidth");
    return *gbps;
  };
  const double module_up = module_path(cpu, gpu), module_down = module_path(gpu, cpu);

  std::printf("== transfers of %llu MiB, GB/s (best of %d)\n", (unsigned long long)mib, repeats);
  std::printf("  raw cuMemcpyHtoDAsync  pinned %7.1f   pageable %7.1f   register+copy+unregister %7.1f\n",
              raw_htod_pinned, raw_htod_pageable, raw_htod_register);
  std::printf("  raw cuMemcpyDtoHAsync  pinned %7.1f   pageable %7.1f   register+copy+unregister %7.1f\n",
              raw_dtoh_pinned, raw_dtoh_pageable, raw_dtoh_register);
  std::printf("  HAL QueueWrite (pinned source, direct)  %7.1f\n", hal_write_pinned);
  std::printf("  HAL QueueRead  (pinned target, direct)  %7.1f\n", hal_read_pinned);
  for (const Staged& s : staged) {
    std::printf("  HAL QueueWrite / QueueRead (pageable, staged, %d copy threads%s) %7.1f / %7.1f\n",
                s.threads, &s == &staged.back() ? ", default" : "", s.write, s.read);
  }
  std::printf("  HAL cpu -> cuda (QueueDeviceTransfer)   %7.1f\n", module_up);
  std::printf("  HAL cuda -> cpu (QueueDeviceTransfer)   %7.1f\n", module_down);
  std::printf("RATIO hal_write_pinned / raw_htod_pinned = %.3f\n", hal_write_pinned / raw_htod_pinned);
  std::printf("RATIO hal_read_pinned / raw_dtoh_pinned = %.3f\n", hal_read_pinned / raw_dtoh_pinned);
  std::printf("RATIO hal_write_pageable / raw_htod_pinned = %.3f  (/ raw pageable %.3f)\n",
              hal_write / raw_htod_pinned, hal_write / raw_htod_pageable);
  std::printf("RATIO hal_read_pageable / raw_dtoh_pinned = %.3f  (/ raw pageable %.3f)\n",
              hal_read / raw_dtoh_pinned, hal_read / raw_dtoh_pageable);
  std::printf("RATIO cpu_to_cuda / raw_htod_pinned = %.3f\n", module_up / raw_htod_pinned);
  std::printf("RATIO cuda_to_cpu / raw_dtoh_pinned = %.3f\n", module_down / raw_dtoh_pinned);
  api.cuStreamDestroy(stream);
  api.cuMemFreeHost(pinned);
  api.cuMemFree(raw_device);
  return 0;
}

}  // namespace
}  // namespace hexir::hal::cuda

int main(int argc, char** argv) { return hexir::hal::cuda::Main(argc, argv); }
