// The queue machinery every driver shares (the CPU and CUDA drivers both build on it):
// submission-time checks (null semaphores; the binding table resolved and each slot's buffer
// one the driver can use), the split of a submission's waits into dropped, kept and held-back
// ones (queue_waits.h classifies them), a held-back wait awaited in slices that notice a
// device being destroyed, and the WaitIdle error of failed submissions without signals.
//
// Thread-safety: the functions are stateless; AwaitHeldBackWait runs under the caller's queue
// lock (released while it sleeps); UnsignalledFailure is guarded by the driver's queue lock.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "hal/buffer.h"
#include "hal/command_buffer.h"
#include "hal/queue_waits.h"
#include "hal/semaphore.h"
#include "hal/stats.h"

namespace hexir::hal {

// InvalidArgument "<op>: wait semaphore <i> is null" (or "signal semaphore").
Status CheckQueueSemaphores(std::string_view op, const std::vector<SemaphoreValue>& waits,
                            const std::vector<SemaphoreValue>& signals);

// ResolveBindingTable (its checks and messages: InvalidArgument "queue execute: command buffer
// is null", FailedPrecondition for one still recording, the table's size and slots), then
// every slot's buffer must satisfy `usable`: InvalidArgument "queue execute: binding table
// slot <i>: <unusable>" otherwise. Drivers call it before they dereference `command_buffer`.
// `resolved` keeps its capacity (drivers reuse it across submissions).
Status ResolveQueueBindingTable(const CommandBuffer* command_buffer,
                                const std::vector<BufferRef>& table,
                                std::vector<BufferRef>* resolved,
                                bool (*usable)(const Buffer& buffer), std::string_view unusable);

// Notes submission `seq` of the queue tagged `tag` as the last one using each buffer of its
// resolved binding table and each direct buffer of `command_buffer` (hal/queue_use.h). Call
// it when the submission takes its place in queue order.
void NoteQueueUse(uint32_t tag, uint64_t seq, const CommandBuffer& command_buffer,
                  const std::vector<BufferRef>& table);

// Classifies every wait of a submission against the signals already queued (ClassifyQueueWait,
// which counts it), appends those not reached yet to *kept (a queue-ordered wait is kept for
// the failure check of its producer) and returns true when one must hold the submission back
// (kOrdered: nothing queued signals it).
bool KeepUnreachedWaits(const std::vector<SemaphoreValue>& waits, const PendingSignals& queued,
                        DeviceCounters& counters, std::vector<SemaphoreValue>* kept);

// How long a held-back wait sleeps before it looks at the device again.
inline constexpr std::chrono::milliseconds kHeldBackWaitSlice{20};

// Blocks the queue's held-back work until `ready()` holds, sleeping in Semaphore::WaitInternal
// slices of kHeldBackWaitSlice with `mu` (the queue lock, held on entry and on return)
// released. Returns the semaphore's failure, or Aborted "queue execute: the device was
// destroyed while a submission waited for a semaphore to reach <value>" when `stopping()`
// turns true first. `ready` and `stopping` run with `mu` held (callers annotate them
// REQUIRES(their mutex); the analysis cannot match that to `mu` inside this template, hence
// NO_THREAD_SAFETY_ANALYSIS here).
template <typename Ready, typename Stopping>
Status AwaitHeldBackWait(Mutex& mu, const SemaphoreValue& wait, Ready ready, Stopping stopping)
    REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
  while (!ready()) {
    if (stopping()) {
      return Aborted("queue execute: the device was destroyed while a submission waited for a "
                     "semaphore to reach ", wait.value);
    }
    mu.Unlock();
    Status status = wait.semaphore->WaitInternal(wait.value, kHeldBackWaitSlice);
    mu.Lock();
    if (!status.ok() && status.code() != StatusCode::kDeadlineExceeded) return status;
  }
  return Status::Ok();
}

// The first failure of a submission that had no signal semaphores, kept for the next WaitIdle.
// A submission with signals delivers its failure through them: reporting it again from WaitIdle
// would hand a stale error to a later, unrelated host read.
class UnsignalledFailure {
 public:
  void Keep(const Status& status, const std::vector<SemaphoreValue>& signals) {
    if (!status.ok() && signals.empty() && first_.ok()) first_ = status;
  }
  // The kept failure (Ok when none), cleared.
  Status Take() {
    Status first = std::move(first_);
    first_ = Status::Ok();
    return first;
  }

 private:
  Status first_;
};

}  // namespace hexir::hal
