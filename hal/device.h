// hal.device: one device of one driver, and the factory for everything that lives on it.
//
// A device owns one in-order queue: QueueExecute submissions run in submission order, each
// after its wait semaphores reach their values; on completion the signal semaphores are
// advanced, or failed with the error if the submission failed. A failed submission without
// signal semaphores is reported by the next WaitIdle instead. Submissions are asynchronous
// unless the device runs in inline mode.
//
// Ownership: refcounted. Objects a device creates (buffers, executables, command buffers,
// semaphores) do not retain it and may outlive it; queued submissions retain what they use.
// Destroying a device drains its queue; submissions still blocked on a semaphore then fail
// with Aborted.
// Thread-safety: every Device method is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "base/interrupt.h"
#include "base/status.h"
#include "hal/buffer.h"
#include "hal/channel.h"
#include "hal/command_buffer.h"
#include "hal/executable.h"
#include "hal/profiling.h"
#include "hal/semaphore.h"
#include "hal/stats.h"
#include "vm/native_module.h"
#include "vm/ref.h"

namespace hexir::hal {

// The most CPU worker threads CreateDevice accepts (a larger count is refused up front
// rather than failing thread creation half way).
inline constexpr int32_t kMaxCpuWorkers = 1024;

// Options for CreateDevice; each driver reads the fields named after it.
struct DeviceOptions {
  // CPU: threads that execute dispatch workgroups. -1 = std::thread::hardware_concurrency();
  // 0 or 1 = the thread executing the submission runs every workgroup itself.
  // At most kMaxCpuWorkers.
  int32_t cpu_worker_count = -1;
  // CPU inline mode: QueueExecute executes on the calling thread and returns when done
  // (errors are returned directly and also fail the signal semaphores). No queue thread.
  bool cpu_inline = false;
  // Back-pressure (CPU queued mode, CUDA): QueueExecute blocks while this many submissions
  // are queued or executing, so a host loop cannot run more than this far ahead of the
  // device (nor keep more than this many submissions' buffers alive). Lifted while the queue
  // waits for a semaphore: the submitting thread may be the one that will signal it.
  // 0 = no cap.
  uint32_t queue_max_in_flight = 64;
  // Buffer pool (drivers that pool): freed buffers' memory is kept for reuse by later
  // allocations of the same size class, up to this many bytes; 0 disables pooling.
  uint64_t pool_max_cached_bytes = uint64_t{1} << 30;
};

class Device : public vm::RefObject {
  HEXIR_REF_TYPE(Device, "hal.device")
 public:
  // The uri the device was created with ("cpu").
  virtual std::string_view uri() const = 0;

  // ---- topology (hal/topology.h describes pairs of devices) ---------------------------------
  // Where the device's buffers live: host memory (the CPU driver: any CPU device can use them)
  // or the memory of one physical GPU (`ordinal`). Default: from the uri ("cuda:N" -> GPU N,
  // anything else -> host).
  struct MemorySpace {
    enum class Kind { kHost, kGpu };
    Kind kind = Kind::kHost;
    int32_t ordinal = 0;
    bool operator==(const MemorySpace& o) const { return kind == o.kind && ordinal == o.ordinal; }
  };
  virtual MemorySpace memory_space() const;
  // What the driver reports about reaching `other`, a device of another memory space: peer
  // access (this GPU reads and writes the other GPU's memory without staging through the
  // host: CUDA's cuDeviceCanAccessPeer) and whether that link is NVLink. Default: neither.
  struct PeerLink {
    bool access = false;
    bool nvlink = false;
  };
  virtual PeerLink PeerLinkTo(const Device& other) const { return {}; }

  // A new zero-filled buffer of `byte_size` bytes (MemoryTypeBits flags). 0 bytes is allowed.
  // kMemoryHostVisible buffers are mapped for their whole life: host_data() is the mapping
  // (coherent; order host accesses with queue work through semaphores). Drivers may pool
  // memory (stats().pool_*); a pooled buffer is still zero-filled.
  virtual StatusOr<vm::Ref<Buffer>> AllocateBuffer(
      uint64_t byte_size, uint32_t memory_types = kMemoryDeviceLocal | kMemoryHostVisible) = 0;

  // Loads an executable once (format checked; every entry point resolved, a missing one named).
  virtual StatusOr<vm::Ref<Executable>> CreateExecutable(const vm::ExecutableView& view) = 0;

  virtual StatusOr<vm::Ref<CommandBuffer>> CreateCommandBuffer();
  virtual StatusOr<vm::Ref<Semaphore>> CreateSemaphore(uint64_t initial_value);

  // Submits a finalized command buffer: runs after every wait (semaphore >= value), then
  // signals every signal. `binding_table` fills the command buffer's slot bindings (it must
  // have at least binding_table_size() direct-buffer entries). Returns errors it can detect
  // at submission (null or unfinalized command buffer, bad binding table, foreign executable);
  // execution errors fail the signal semaphores. Drivers implement Submit; this wrapper
  // reports the host time of the submission to the device's profiler when one is set.
  // Argument readiness: a buffer of the table or named by the commands whose readiness is
  // pending (Buffer::SetReadyAfter) is awaited before the first command using it when the
  // driver AwaitsArgumentsPerCommand(), else its timepoint is added to `waits`; each such
  // wait counts stats argument_waits.
  Status QueueExecute(const std::vector<SemaphoreValue>& waits,
                      const vm::Ref<CommandBuffer>& command_buffer,
                      const std::vector<SemaphoreValue>& signals,
                      const std::vector<BufferRef>& binding_table = {});

  // True when the driver's execution awaits, before each command, the pending readiness of
  // the buffers that command uses (Buffer::PendingReady): QueueExecute then passes such a
  // submission on unchanged. Such a driver must not need anything queued after the
  // submission to reach the timepoint (a readiness signalled by a later write of its own
  // in-order queue would deadlock): the writer signals from elsewhere (a host thread, another
  // queue). Default false: the timepoints become submission waits (one per semaphore, its
  // highest value). Callers may ask it: an uploader can then submit a call before the writes.
  virtual bool AwaitsArgumentsPerCommand() const { return false; }

  // ---- stream-ordered queue operations --------------------------------------------------------
  // Each is a queue submission like QueueExecute: it runs in queue order after `waits` and
  // signals `signals` when done (failures fail the signals). Arguments are checked at the call.
  // The defaults record a one-command (or empty) command buffer, not counted in
  // stats().command_buffers_recorded, and submit it with QueueExecute; drivers may override.

  // A buffer of `byte_size` bytes whose contents may be used by work ordered after `signals`
  // (CPU: the memory exists at return; it comes from the device pool when one is enabled).
  // Its contents are UNDEFINED (not zero-filled, unlike AllocateBuffer): transient buffers
  // are written before they are read, and zeroing would cost a pass over the memory.
  virtual StatusOr<vm::Ref<Buffer>> QueueAlloca(const std::vector<SemaphoreValue>& waits,
                                                const std::vector<SemaphoreValue>& signals,
                                                uint64_t byte_size,
                                                uint32_t memory_types = kMemoryDeviceLocal);
  // Releases the queue's hold of `buffer` after `waits`: the memory returns to the pool once
  // the submission completes and no other reference remains. Using the buffer in work not
  // ordered before `signals` is the caller's error.
  virtual Status QueueDealloca(const std::vector<SemaphoreValue>& waits,
                               const std::vector<SemaphoreValue>& signals,
                               vm::Ref<Buffer> buffer);
  // An empty queue operation: runs after `waits` and signals `signals`, in queue order. With a
  // signal it is a fence another device's queue can wait on (hal/device_transfer.h QueueFence).
  virtual Status QueueBarrier(const std::vector<SemaphoreValue>& waits,
                              const std::vector<SemaphoreValue>& signals);
  // CommandBuffer::FillBuffer / CopyBuffer as queue operations (same checks and errors).
  virtual Status QueueFill(const std::vector<SemaphoreValue>& waits,
                           const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> target,
                           uint64_t offset, uint64_t length, uint32_t pattern,
                           uint32_t pattern_size);
  virtual Status QueueCopy(const std::vector<SemaphoreValue>& waits,
                           const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                           uint64_t source_offset, vm::Ref<Buffer> target,
                           uint64_t target_offset, uint64_t length);
  // A copy of the first `length` bytes of `source`, a buffer of `from` (another device of this
  // process), into `target`, a buffer of this device, when this device's driver reaches
  // `from`'s memory without the host (CUDA: a GPU with peer access, or another logical device
  // of the same GPU): queued on this device after `waits`, ordered on the devices, signalling
  // `signals` when the bytes have arrived; it counts one transfers_queued and one
  // transfers_peer here, and holds both buffers until then. Returns false, queuing nothing,
  // when the driver has no such path to `from` (hal/device_transfer.h then takes another).
  // Ranges are the caller's to check (QueueDeviceTransfer does). Default: false.
  virtual StatusOr<bool> QueuePeerCopy(Device& from, const std::vector<SemaphoreValue>& waits,
                                       const std::vector<SemaphoreValue>& signals,
                                       vm::Ref<Buffer> source, vm::Ref<Buffer> target,
                                       uint64_t length) {
    return false;
  }

  // ---- queue transfers (host <-> device copies ordered like queue operations) ---------------
  // Each runs in queue order after `waits`, returns at once, and signals `signals` when the
  // bytes have arrived; a failure (range, null pointer, lost device) fails the signals with a
  // message naming the buffer and the range, or is returned at the call when detectable then.
  // Both count stats().transfers_queued / transfer_bytes_queued (and queue_submissions).
  //
  // Host memory: QueueRead's `host` must stay valid and untouched until its signals are
  // reached. QueueWrite's `host` must stay valid until its signals are reached with
  // HostLifetime::kUntilSignaled; with kCopyAtCall the bytes are copied into staging before
  // the call returns, so the caller may reuse its memory at once (meant for small sources).
  //
  // Drivers: the defaults run on any driver whose queue copies reach host memory (CPU: a
  // memcpy on the queue thread, through a buffer borrowing the host range; kCopyAtCall through
  // a host-visible staging buffer). CUDA overrides both (a transfer stream, pinned staging).
  enum class HostLifetime { kUntilSignaled, kCopyAtCall };
  virtual Status QueueWrite(const std::vector<SemaphoreValue>& waits,
                            const std::vector<SemaphoreValue>& signals, const void* host,
                            uint64_t size, vm::Ref<Buffer> buffer, uint64_t offset,
                            HostLifetime lifetime = HostLifetime::kUntilSignaled);
  virtual Status QueueRead(const std::vector<SemaphoreValue>& waits,
                           const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> buffer,
                           uint64_t offset, void* host, uint64_t size);

  // Blocks until every submission so far has completed, or returns DeadlineExceeded. Returns
  // (and clears) the first error since the previous WaitIdle of a failed submission that had
  // no signal semaphores (errors of the others are delivered through their semaphores).
  Status WaitIdle(Timeout timeout = kInfiniteTimeout);
  // The same, also stopping when `interrupt` fires (its status; sliced like Semaphore::Wait).
  // The submissions stay queued: they complete later, and a later WaitIdle still waits for
  // them and reports their errors.
  Status WaitIdle(const Interrupt& interrupt);

  // Synchronous host <-> buffer copies. They do not wait for queued work: order them with
  // semaphores or WaitIdle. Ranges are checked.
  virtual Status WriteBuffer(Buffer& buffer, uint64_t offset, const void* data,
                             uint64_t size) = 0;
  virtual Status ReadBuffer(const Buffer& buffer, uint64_t offset, void* data,
                            uint64_t size) = 0;

  // Reads a result: waits for every submission made before the call (as WaitIdle(interrupt),
  // returning and clearing its error) and copies `size` bytes of `buffer` at `offset` into
  // `data` (ranges checked). On an error `data` is unspecified; when `interrupt` fires first
  // its status is returned and the pending work stays queued. Default: WaitIdle, then
  // ReadBuffer. Drivers may fold the wait into the copy (CUDA: the copy is queued behind the
  // pending work, then one host synchronization covers both).
  virtual Status ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                            uint64_t size,
                                            const Interrupt& interrupt = kNoInterrupt);

  // ---- collectives (hal/channel.h) ------------------------------------------------------------
  // A channel whose collectives this device runs when recorded into its command buffers
  // (CPU: CreateHostChannel, the MPI world under mpirun or a local channel of one rank).
  // Default: Unimplemented naming the device; QueueExecute then also refuses command buffers
  // holding collectives.
  virtual StatusOr<vm::Ref<Channel>> CreateChannel();
  virtual bool SupportsCollectives() const { return false; }
  // Channels for a group of devices driven by this process (`group` holds this device and
  // the others, all of this driver): channel i belongs to group[i], whose rank is i of the
  // group (of the launch, for a multi-process launch: hal/channel.h CreateHostChannels). A
  // context bound to several devices asks its first device (hal.channel.default). Default:
  // Unimplemented naming the device.
  virtual StatusOr<std::vector<vm::Ref<Channel>>> CreateGroupChannels(
      const std::vector<Device*>& group);

  // ---- memory owned elsewhere (DLPack: a framework's tensors) --------------------------------
  // A buffer over `byte_size` bytes at `address` that someone else allocated and keeps alive
  // until `release` runs: host memory on a host-memory device (memory_space() kHost), memory
  // of this GPU's context on CUDA (checked: an address of another GPU or of no GPU is refused
  // by name). `release` runs once, on whichever thread drops the buffer's last reference; a
  // queued submission holds its buffers until it has completed, so by then no queued work
  // uses the memory. Not counted in stats() (the memory is not the device's). On an error
  // `release` is not called. Default: host memory for host-memory devices, else
  // Unimplemented naming the device.
  virtual StatusOr<vm::Ref<Buffer>> WrapExternalMemory(uint64_t address, uint64_t byte_size,
                                                       std::function<void()> release);
  // The native handle of the device's queue, for a framework that orders its own work
  // against it (DLPack's `stream`): CUDA's CUstream; 0 for devices whose work is ordered by
  // host waits only (CPU).
  virtual uintptr_t NativeQueueHandle() const { return 0; }

  // Returns cached pool memory to the system (no effect on live buffers; stats().
  // pool_bytes_cached drops to 0). Default: nothing to trim.
  virtual void TrimPool() {}

  DeviceStats stats() const { return counters_->Snapshot(); }

  // Installs (or, with nullptr, removes) a dispatch profiler (hal/profiling.h). Affects
  // submissions made after the call; the caller keeps `profiler` alive while installed.
  void SetProfiler(Profiler* profiler) {
    counters_->profiler.store(profiler, std::memory_order_release);
  }
  Profiler* profiler() const { return counters_->profiler.load(std::memory_order_relaxed); }
  const std::shared_ptr<DeviceCounters>& counters() const { return counters_; }

 protected:
  Device() : counters_(std::make_shared<DeviceCounters>()) {}

  // The driver's part of WaitIdle (same contract; the wrapper counts the host wait).
  virtual Status AwaitIdle(Timeout timeout) = 0;


  // The driver's part of QueueExecute (same contract).
  virtual Status Submit(const std::vector<SemaphoreValue>& waits,
                        const vm::Ref<CommandBuffer>& command_buffer,
                        const std::vector<SemaphoreValue>& signals,
                        const std::vector<BufferRef>& binding_table) = 0;

 private:
  std::shared_ptr<DeviceCounters> counters_;
};

}  // namespace hexir::hal
