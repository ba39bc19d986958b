// hal.buffer: a byte range of device memory allocated by a Device.
//
// Drivers subclass Buffer (CPU: 64-byte aligned host memory). A host-visible buffer exposes
// host_data(); a device-only buffer returns nullptr there and is reached through
// Device::ReadBuffer/WriteBuffer or queue copies.
//
// Ownership: refcounted (vm::Ref<Buffer>). A buffer does not retain its device; it keeps the
// device's counters alive to report its own release. Thread-safety: the object is immutable
// (but for its atomic queue_use record); concurrent access to its bytes is the caller's
// business (queues order their own accesses).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "hal/queue_use.h"
#include "hal/semaphore.h"
#include "hal/stats.h"
#include "vm/ref.h"

namespace hexir::hal {

// Bit flags for Device::AllocateBuffer.
enum MemoryTypeBits : uint32_t {
  kMemoryDeviceLocal = 1u << 0,  // fast for the device (CPU: host memory)
  kMemoryHostVisible = 1u << 1,  // the host can map it: host_data() is non-null
  // With kMemoryHostVisible: a small buffer of dispatch parameters. Dispatches only read it,
  // and a submission reads its contents as of the submission (the host writes it before
  // submitting and never after). Drivers may copy it into device memory in queue order at
  // submission (CUDA: a device-side shadow per binding slot of a recorded graph, so kernels
  // read device memory and the recorded node never changes); others use it in place.
  kMemoryUniform = 1u << 2,
};

class Buffer : public vm::RefObject {
  HEXIR_REF_TYPE(Buffer, "hal.buffer")
 public:
  uint64_t byte_size() const { return byte_size_; }
  uint32_t memory_types() const { return memory_types_; }
  // Host pointer to byte 0 when host-visible, else nullptr.
  virtual uint8_t* host_data() const = 0;
  // The address of byte 0 as the device's kernels see it (host memory: host_data(); CUDA:
  // the CUdeviceptr), for handing the memory to another framework (DLPack). 0: none.
  virtual uint64_t device_address() const { return reinterpret_cast<uintptr_t>(host_data()); }
  // The last queue submission that used the buffer (noted by drivers; hal/queue_use.h).
  QueueUse& queue_use() const { return queue_use_; }

  // Argument readiness (hal/README.md "Argument readiness"): the bytes are valid only once
  // `ready` is reached (the write that fills them may be issued later, by another thread:
  // parameters uploaded while the first layers compute). Device::QueueExecute honours it for
  // the buffers a submission names: a driver that awaits arguments per command (CPU) waits
  // before each command reading the buffer, others add it to the submission's waits (except
  // a submission that signals it: the write filling the buffer). Set
  // it before the buffer is handed to any submission; not thread-safe against submissions.
  void SetReadyAfter(SemaphoreValue ready);
  // False when no readiness is pending (none set, or reached: then it is cleared for good, so
  // later submissions pay one atomic load); else *ready is the pending timepoint. A failed
  // semaphore counts as pending (the waiter sees its error). Thread-safe.
  bool PendingReady(SemaphoreValue* ready) const;

 protected:
  Buffer(uint64_t byte_size, uint32_t memory_types, std::shared_ptr<DeviceCounters> counters);
  ~Buffer() override;

 private:
  uint64_t byte_size_;
  uint32_t memory_types_;
  std::shared_ptr<DeviceCounters> counters_;
  mutable QueueUse queue_use_;
  mutable std::atomic<bool> ready_pending_{false};
  vm::Ref<Semaphore> ready_semaphore_;  // set by SetReadyAfter, then immutable
  uint64_t ready_value_ = 0;
};

}  // namespace hexir::hal
