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
// Both host copies are split over a HostCopyPool (host_copy_pool.h): one thread alone copies
// at a fraction of the copy engine's rate. A block is reused only after its chunk's event was
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
// Statistics: transfers_direct counts direct transfers; transfer_staging_bytes_busy is the
// staging held by chunks in flight (back to 0 once every transfer completed).
//
// Thread-safety: every method is thread-safe. Lock order: the device's lock, then this queue's.
#pragma once

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
  using ComputeOrder =
      std::function<StatusOr<TransferWaits>(const std::vector<SemaphoreValue>& waits, CUevent event)>;

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

 private:
  struct Op;
  struct Chunk {
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
  // True when [host, host + size) lies in one pinned allocation of this process.
  bool IsPinned(const void* host, uint64_t size) const;
  StatusOr<int> TakeBlock();
  void GiveBlock(int block) REQUIRES(mu_);
  StatusOr<CUevent> TakeEvent();
  void Finish(const std::shared_ptr<Op>& op, Status status);
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

  mutable Mutex mu_;
  std::condition_variable cv_;  // chunks queued / completed, blocks freed, held-back ops, stop
  std::vector<int> free_blocks_ GUARDED_BY(mu_);
  CudaEventPool events_ GUARDED_BY(mu_);
  std::deque<Chunk> inflight_ GUARDED_BY(mu_);  // on the stream, in order
  // Waiting for host-side signals, in order.
  std::deque<std::shared_ptr<Op>> held_back_ GUARDED_BY(mu_);
  int issuing_ GUARDED_BY(mu_) = 0;    // ops between acceptance and their last chunk (or failure)
  int finishing_ GUARDED_BY(mu_) = 0;  // ops whose signals the completion thread is signalling
  Status lost_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread completion_thread_, held_back_thread_;
};

}  // namespace hexir::hal::cuda
