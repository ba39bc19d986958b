// Internal to the CUDA driver: the device's queue transfers (Device::QueueWrite/QueueRead) on a
// transfer stream of their own, so that uploads and downloads overlap the compute stream.
//
// Direct: a host range inside one pinned allocation (cuMemHostAlloc, cuMemHostRegister: a
// CUDA host-visible buffer's mapping, for instance) is copied by one cuMemcpy*Async with no
// staging (not for kCopyAtCall writes, which must read their source at the call); the host
// memory is then read or written by the DMA until the signals are reached.
//
// Peer copies (CopyFromPeer): another CUDA device's buffer into this device's, one
// cuMemcpyPeerAsync / cuMemcpyDtoDAsync on the transfer stream, ordered like the others.
//
// Staging (pageable host memory): a ring of kStagingBlocks pinned blocks of kStagingBlockBytes
// (allocated once, on the first transfer, freed with the queue), chunks of StagingChunkBytes.
// A write copies each chunk
// host -> block on the calling thread and queues cuMemcpyHtoDAsync on the transfer stream, so
// the DMA of chunk k overlaps the host copy of chunk k+1; a read queues cuMemcpyDtoHAsync into
// a block and the completion thread copies block -> host when the chunk's event is reached.
// Host copies of kCachedCopyMaxBytes and more are split over a HostCopyPool (host_copy_pool.h):
// one thread alone copies at a fraction of the copy engine's rate; smaller ones are one
// memcpy on the copying thread (waking workers and streaming stores cost more than they save
// there, and a read's caller reads its bytes next). A block is reused only after its chunk's event was
// reached (and, for a read, copied out); never freed per copy. A staged write's host memory is
// therefore fully read when the call returns, unless the write was held back (below), which is
// why kCopyAtCall only copies for held-back writes.
//
// Ordering, always on the GPU: waits that work already on the compute stream will signal
// become an event recorded there (by the device, under its lock) and cuStreamWaitEvent on the
// transfer stream; an issued transfer adds its last event as the timepoint of its signals
// (cuda_timepoints.h), so compute streams (of this or another device) and other transfer
// streams order their work after it with cuStreamWaitEvent, and a transfer waiting for work
// of another CUDA queue waits for that queue's timepoint the same way. A semaphore signalled
// by a transfer is reached when the transfer's last event is. Waits nothing queued on the GPU
// will signal (host signals, work held back) hold the transfer, and every later one, back on
// a worker thread.
//
// Completion, by whoever gets there first, chunk by chunk in order: a host thread waiting on a
// transfer's signal (Semaphore::Wait on a semaphore of this device: RetireReachedForWaiter,
// called from the device's wait-progress hook) polls the front chunk's event and completes it
// on its own thread (copy out, block freed, signals), so a small transfer's wait needs no
// wake-up from another thread; otherwise the completion thread does (it keeps off the lock and
// the driver while a waiter retires, kHostRetiringNs). Each chunk is completed once (`retiring_`).
// The threads sleep on condition variables of their own (completion thread, held-back thread,
// block and idle waiters), so queueing a chunk wakes no thread that does not need it.
//
// Statistics: transfers_direct counts direct transfers; transfer_staging_bytes_busy is the
// staging held by chunks in flight (back to 0 once every transfer completed).
//
// Thread-safety: every method is thread-safe. Lock order: the device's lock, then this queue's.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "base/mutex.h"
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "hal/device.h"
#include "hal/drivers/cuda/cuda_event_pool.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/drivers/cuda/host_copy_pool.h"

namespace hexir::hal::cuda {

inline constexpr uint64_t kStagingBlockBytes = 8ull << 20;
inline constexpr int kStagingBlocks = 8;
inline constexpr uint64_t kMinStagingChunkBytes = 1ull << 20;
// Staging copies below this many bytes are one memcpy on the copying thread; larger ones go
// through the HostCopyPool (split over threads, streaming stores).
inline constexpr uint64_t kCachedCopyMaxBytes = 512ull << 10;

// The bytes of each staged chunk of a `size`-byte transfer (the last may be shorter): a
// quarter of it rounded up to 64 KiB, within [kMinStagingChunkBytes, kStagingBlockBytes], so
// that transfers of a few MiB also overlap the host copy of one chunk with the DMA of
// another; each chunk holds one staging block while in flight.
uint64_t StagingChunkBytes(uint64_t size);

// Where a transfer's waits stand, as the compute queue sees them.
enum class TransferWaits {
  kReady,              // reached, or signalled by a transfer already on the transfer stream
  kAfterComputeEvent,  // some are signalled by compute work: the given event was recorded after it
  kHostPending,        // some are signalled by nothing on the GPU yet
};

class CudaTransferQueue {
 public:
  // Answers for `waits` (none failed) without this queue's locks held; records `event` on the
  // compute stream for kAfterComputeEvent. An error means the device is lost.
  // `buffer` is the transfer's buffer on this device (its allocation must be ordered first).
  using ComputeOrder = std::function<StatusOr<TransferWaits>(
      const std::vector<SemaphoreValue>& waits, const Buffer* buffer, CUevent event)>;

  CudaTransferQueue(std::shared_ptr<CudaShared> shared, std::shared_ptr<DeviceCounters> counters,
                    std::string uri, ComputeOrder compute_order);
  // Issued transfers complete; held-back ones fail their signals with Aborted; the threads
  // stop. Idempotent. After it the compute-queue hooks below still answer (nothing pending),
  // so the owning device calls it first and destroys the queue after its own threads stopped.
  void Shutdown();
  // Shutdown(), then the stream, events and staging are released.
  ~CudaTransferQueue();

  Status Write(const std::vector<SemaphoreValue>& waits, const std::vector<SemaphoreValue>& signals,
               const void* host, uint64_t size, vm::Ref<Buffer> buffer, uint64_t offset,
               Device::HostLifetime lifetime);
  Status Read(const std::vector<SemaphoreValue>& waits, const std::vector<SemaphoreValue>& signals,
              vm::Ref<Buffer> buffer, uint64_t offset, void* host, uint64_t size);
  // The first `size` bytes of `source` (a CUDA buffer of any device) into `target` (this
  // device's), on the transfer stream with no host staging: cuMemcpyPeerAsync from
  // `source_context`, the source's context (between two GPUs peer access must be enabled
  // already, cuda_peer_link.h), or cuMemcpyDtoDAsync when it is null (one context). Ordered and signalled as
  // Write/Read; counts transfers_peer (and CudaStats::peer_copies for cuMemcpyPeerAsync).
  Status CopyFromPeer(const std::vector<SemaphoreValue>& waits,
                      const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                      CUcontext source_context, vm::Ref<Buffer> target, uint64_t size);

  // Until every transfer accepted so far completed (DeadlineExceeded after `timeout`).
  Status AwaitIdle(Timeout timeout);

  // For a host thread spinning in Semaphore::Wait: completes, on this thread and in order,
  // the chunks whose events were reached, unless another thread holds the lock or is
  // completing one; stops at an op whose waits are not yet reached on the host (the
  // completion thread awaits those). Never blocks. Lock order: called with no lock of this
  // queue held.
  void RetireReachedForWaiter();

 private:
  struct Op;
  struct Chunk {
    uint64_t seq = 0;  // position in the queue's order of chunks
    std::shared_ptr<Op> op;
    int block = -1;
    CUevent event = nullptr;
    uint64_t done = 0, bytes = 0;  // the chunk's range within the op
    bool last = false;             // the op's signals are reached with this chunk
  };

  Status Accept(std::shared_ptr<Op> op);
  // issue_mu_ held. Puts the op on the transfer stream after `compute_event` (may be null);
  // on an error fails the op's signals and returns the error.
  Status IssueLocked(const std::shared_ptr<Op>& op, CUevent compute_event) REQUIRES(issue_mu_);
  Status IssueChunksLocked(const std::shared_ptr<Op>& op, CUevent compute_event)
      REQUIRES(issue_mu_);
  Status EnsureStreamLocked() REQUIRES(issue_mu_);
  // True when [host, host + size) lies in one pinned allocation of this process. The
  // context must be current. No driver call for a range inside a pageable span seen within
  // kPageableAnswerNs, one for a range inside a span of a pinned allocation seen before
  // (pinned_spans_) or for other pageable memory, three otherwise.
  bool IsPinned(const void* host, uint64_t size);
  StatusOr<int> TakeBlock();
  void GiveBlock(int block) REQUIRES(mu_);
  StatusOr<CUevent> TakeEvent();
  // memcpy below kCachedCopyMaxBytes, else the HostCopyPool.
  void CopyStaged(void* dst, const void* src, uint64_t bytes);
  void Finish(const std::shared_ptr<Op>& op, Status status);
  // mu_ held, retiring_ set by the caller: completes the front chunk, whose event was reached
  // (`status` ok) or failed: copies a read chunk out, frees its block and, with an op's last
  // chunk, signals or fails the op's semaphores (mu_ is released meanwhile and re-taken).
  void RetireFrontLocked(Status status) REQUIRES(mu_);
  // True when every wait of `op` is reached (or failed) on the host.
  static bool WaitsReachedOnHost(const Op& op);
  void NoteHostRetiring();
  bool HostRetiring() const;
  // Until `w` is reached on the host (at most kHostSignalSlices x 20 ms); a failed semaphore's
  // error goes to *status.
  static void AwaitReachedOnHost(const SemaphoreValue& w, Status* status);
  static constexpr int kHostSignalSlices = 500;
  void CompletionMain();
  void HeldBackMain();

  std::shared_ptr<CudaShared> shared_;
  const CudaApi& api_;
  std::shared_ptr<DeviceCounters> counters_;
  std::string uri_;
  ComputeOrder compute_order_;

  Mutex issue_mu_;  // one op at a time onto the stream, in acceptance order
  CUstream stream_ = nullptr;   // created on first use (under issue_mu_)
  uint8_t* staging_ = nullptr;  // kStagingBlocks * kStagingBlockBytes pinned bytes
  HostCopyPool copies_;         // staging copies (the issuing and the completion thread)

  // A pinned allocation's span verified by IsPinned (both ends had buffer id `id`).
  struct PinnedSpan {
    unsigned long long id = 0;
    uintptr_t begin = 0, end = 0;
  };
  static constexpr size_t kPinnedSpans = 16;  // the most recent ones
  // A pageable range seen by IsPinned (the query of its first byte failed: ~0.9 us on the
  // H200, against ~0.1 us for pinned memory), trusted for kPageableAnswerNs: memory
  // registered meanwhile is staged until then (correct, only not direct).
  struct PageableSpan {
    uintptr_t begin = 0, end = 0;
    int64_t until_ns = 0;
  };
  static constexpr int64_t kPageableAnswerNs = 1'000'000;
  Mutex pinned_mu_;
  std::vector<PinnedSpan> pinned_spans_ GUARDED_BY(pinned_mu_);
  std::vector<PageableSpan> pageable_spans_ GUARDED_BY(pinned_mu_);

  mutable Mutex mu_;
  std::condition_variable work_cv_;   // the completion thread: chunks queued, retiring done, stop
  std::condition_variable held_cv_;   // the held-back thread: ops held back, stop
  std::condition_variable space_cv_;  // TakeBlock: blocks freed, lost
  std::condition_variable idle_cv_;   // AwaitIdle: chunks, ops or held-back ones finished
  std::vector<int> free_blocks_ GUARDED_BY(mu_);
  CudaEventPool events_ GUARDED_BY(mu_);
  std::deque<Chunk> inflight_ GUARDED_BY(mu_);  // on the stream, in order
  // Waiting for host-side signals, in order.
  std::deque<std::shared_ptr<Op>> held_back_ GUARDED_BY(mu_);
  int issuing_ GUARDED_BY(mu_) = 0;    // ops between acceptance and their last chunk (or failure)
  int finishing_ GUARDED_BY(mu_) = 0;  // ops whose signals are being signalled
  bool retiring_ GUARDED_BY(mu_) = false;  // a thread is completing the front chunk
  bool completion_sleeping_ GUARDED_BY(mu_) = false;  // the completion thread waits on work_cv_
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  std::atomic<int> inflight_count_{0};  // inflight_.size(), read without the lock
  std::atomic<int64_t> host_retiring_until_ns_{0};  // NoteHostRetiring
  Status lost_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread completion_thread_, held_back_thread_;
};

}  // namespace hexir::hal::cuda
