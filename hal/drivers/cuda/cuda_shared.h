// Internal to the CUDA driver: the state every object of one CUDA device shares, and buffers.
//
// CudaShared is held (std::shared_ptr) by the device and by every buffer, executable and
// command buffer it creates, so that objects outliving their device can still free their CUDA
// resources on the right context and stream. The primary context of a GPU is retained once
// per process and never released (devices come and go cheaply; releasing the last reference
// would tear the context down and make the next device pay ~100 ms to rebuild it).
//
// Thread-safety: immutable after creation apart from the atomic counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "hal/buffer.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/stats.h"

namespace hexir::hal::cuda {

inline constexpr const char kCudaDriverName[] = "cuda";

struct CudaCounters {
  std::atomic<uint64_t> module_loads{0};
  std::atomic<uint64_t> graph_instantiations{0};
  std::atomic<uint64_t> graph_launches{0};
  std::atomic<uint64_t> kernel_node_updates{0};
  std::atomic<uint64_t> stream_launches{0};
  std::atomic<uint64_t> transfer_synchronizations{0};
};

struct CudaShared {
  const CudaApi* api = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;    // the device's one in-order queue (non-blocking stream)
  CUmemoryPool pool = nullptr;  // the GPU's default pool (cuMemAllocAsync); keeps freed memory
  CudaCounters counters;

  ~CudaShared();
  // Makes the device's context current on the calling thread (cheap; needed per thread).
  Status MakeCurrent() const;
};

// Device-local buffers: stream-ordered pool memory (cuMemAllocAsync on the device's
// stream, freed with cuMemFreeAsync). Host-visible-only buffers: pinned, device-mapped host
// memory (cuMemHostAlloc), host_data() non-null and device_ptr() its device address.
class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(uint64_t size, uint32_t types, std::shared_ptr<DeviceCounters> counters,
             std::shared_ptr<CudaShared> shared, CUdeviceptr ptr, void* host)
      : Buffer(size, types, std::move(counters)),
        shared_(std::move(shared)),
        ptr_(ptr),
        host_(host) {}
  ~CudaBuffer() override;

  uint8_t* host_data() const override { return static_cast<uint8_t*>(host_); }
  CUdeviceptr device_ptr() const { return ptr_; }
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }

 private:
  std::shared_ptr<CudaShared> shared_;
  CUdeviceptr ptr_;
  void* host_;
};

// The buffer's CUDA pointer, or null when `buffer` is not a CudaBuffer.
inline const CudaBuffer* AsCudaBuffer(const Buffer* buffer) {
  return dynamic_cast<const CudaBuffer*>(buffer);
}

}  // namespace hexir::hal::cuda
