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
#include <functional>
#include <memory>
#include <mutex>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
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
  std::atomic<uint64_t> graph_nodes{0};  // of the graphs built (CudaStats)
  std::atomic<uint64_t> graph_edges{0};
  std::atomic<uint64_t> programmatic_edges{0};
  std::atomic<uint64_t> stream_launches{0};
  std::atomic<uint64_t> transfer_synchronizations{0};
  std::atomic<uint64_t> waits_on_device{0};        // cuStreamWaitEvent on another stream's timepoint
  std::atomic<uint64_t> submissions_held_back{0};  // held on the host for an unreached wait
  std::atomic<uint64_t> peer_copies{0};            // cuMemcpyPeerAsync calls (cuda_peer_link.h)
  std::atomic<uint64_t> argument_issue_waits{0};   // host waits for an argument's write issue
};

// Pinned, device-mapped host blocks (cuMemHostAlloc) kept for reuse: pinning and unpinning
// cost tens of microseconds each, and compiled programs allocate a small host-visible
// parameter buffer per dispatch per call. Blocks come in power-of-two classes (>= 256 bytes);
// a freed buffer's block returns here (its last reference is dropped only after every
// submission using it completed) until `max_cached_bytes` are cached.
struct PinnedHostPool {
  Mutex mu;
  // class bytes -> blocks
  std::unordered_map<uint64_t, std::vector<void*>> free_blocks GUARDED_BY(mu);
  uint64_t cached_bytes GUARDED_BY(mu) = 0;
  uint64_t max_cached_bytes = 64ull << 20;

  static uint64_t ClassBytes(uint64_t size) {
    uint64_t c = 256;
    while (c < size) c <<= 1;
    return c;
  }
  // A cached block of `class_bytes`, or null.
  void* Take(uint64_t class_bytes);
  // Keeps the block, or returns false when the cache is full (the caller frees it).
  bool Give(void* block, uint64_t class_bytes);
};

struct CudaShared {
  const CudaApi* api = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;    // the device's one in-order queue (non-blocking stream)
  CUmemoryPool pool = nullptr;  // the GPU's default pool (cuMemAllocAsync); keeps freed memory
  CudaCounters counters;
  PinnedHostPool host_pool;

  ~CudaShared();
  // Makes the device's context current on the calling thread (cheap; needed per thread).
  Status MakeCurrent() const;
};

// Device-local buffers: stream-ordered pool memory (cuMemAllocAsync on the device's
// stream, freed with cuMemFreeAsync). Host-visible-only buffers: pinned, device-mapped host
// memory (cuMemHostAlloc), host_data() non-null and device_ptr() its device address.
// External buffers (Device::WrapExternalMemory: a framework's tensor): device memory someone
// else allocated; the buffer frees nothing and runs the owner's release instead.
class CudaBuffer final : public Buffer {
 public:
  // `host_class_bytes`: for host-visible buffers, the pool class of the pinned block (the
  // block returns to shared->host_pool when the buffer dies).
  CudaBuffer(uint64_t size, uint32_t types, std::shared_ptr<DeviceCounters> counters,
             std::shared_ptr<CudaShared> shared, CUdeviceptr ptr, void* host,
             uint64_t host_class_bytes = 0)
      : Buffer(size, types, counters),
        allocation_serial_(counters ? counters->buffers_allocated.load(std::memory_order_relaxed) : 0),
        shared_(std::move(shared)),
        ptr_(ptr),
        host_(host),
        host_class_bytes_(host_class_bytes) {}
  ~CudaBuffer() override;

  uint8_t* host_data() const override { return static_cast<uint8_t*>(host_); }
  uint64_t device_address() const override { return ptr_; }
  CUdeviceptr device_ptr() const { return ptr_; }
  // Makes this an external buffer: `release` replaces the free when the buffer dies.
  void SetExternalRelease(std::function<void()> release) { external_release_ = std::move(release); }
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }
  // The device's buffers_allocated count just after this buffer was counted (0 without
  // counters): a transfer into it must be ordered after the compute stream's allocations up
  // to this count (CudaDevice::OrderAfterCompute), not after later ones.
  uint64_t allocation_serial() const { return allocation_serial_; }

 private:
  const uint64_t allocation_serial_;
  std::shared_ptr<CudaShared> shared_;
  CUdeviceptr ptr_;
  void* host_;
  uint64_t host_class_bytes_;
  std::function<void()> external_release_;  // set: external memory, not ours to free
};

// The buffer's CUDA pointer, or null when `buffer` is not a CudaBuffer.
// CudaBuffer is final, so comparing the dynamic type is exact (and cheaper than a dynamic_cast
// on every slot of every submission).
inline const CudaBuffer* AsCudaBuffer(const Buffer* buffer) {
  if (buffer == nullptr || typeid(*buffer) != typeid(CudaBuffer)) return nullptr;
  return static_cast<const CudaBuffer*>(buffer);
}

}  // namespace hexir::hal::cuda
