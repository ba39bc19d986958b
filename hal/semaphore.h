// hal.semaphore: a timeline semaphore, a monotonically increasing uint64 shared by the host and
// device queues. Queue submissions wait for values and signal values; the host waits only
// where it reads a result.
//
// Failure: Fail(status) puts the semaphore in a sticky failed state; every current and future
// Wait/Query returns that status (this is how a failed dispatch reaches the host and how it
// propagates to submissions that wait on the semaphore).
//
// Thread-safety: every method is thread-safe. Ownership: refcounted (vm::Ref<Semaphore>);
// it does not retain the device that created it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/interrupt.h"
#include "base/mutex.h"
#include "base/status.h"
#include "hal/stats.h"
#include "vm/ref.h"

namespace hexir::hal {

struct SemaphoreValue;
enum class WaitMode;

// How long a wait may block; kInfiniteTimeout never times out.
using Timeout = std::chrono::nanoseconds;
inline constexpr Timeout kInfiniteTimeout = Timeout::max();

// What a waiting host thread may do while it spins, so that the queue that will signal the
// semaphore makes progress on that thread instead of waking it from another one (the CUDA
// driver retires its finished submissions there: README "Queue and timeline semaphores").
// Poll() must not block; it may signal semaphores.
class WaitProgress {
 public:
  virtual ~WaitProgress() = default;
  virtual void Poll() = 0;
  // How long a waiter spins, calling Poll, before it sleeps.
  virtual int64_t spin_ns() const = 0;
};

class Semaphore final : public vm::RefObject {
  HEXIR_REF_TYPE(Semaphore, "hal.semaphore")
 public:
  // `counters` (may be null) receives host-wait counts for device statistics.
  Semaphore(uint64_t initial_value, std::shared_ptr<DeviceCounters> counters);

  // The current value, or the failure status.
  StatusOr<uint64_t> Query() const;

  // Advances the value to `value` (must be greater than the current value) and wakes waiters.
  // Signalling a failed semaphore returns its failure.
  Status Signal(uint64_t value);

  // Enters the failed state (first failure wins); wakes all waiters. `status` must be an error.
  void Fail(Status status);

  // Blocks the calling thread until the value is >= `value`. Returns DeadlineExceeded when
  // `timeout` passes first (a zero timeout polls), or the failure status if the semaphore
  // fails. Counts as a host wait in the device statistics.
  Status Wait(uint64_t value, Timeout timeout = kInfiniteTimeout);
  // The same, also stopping when `interrupt` fires (its status: DeadlineExceeded "deadline
  // exceeded after ...", or Aborted "call cancelled"); the sleep is sliced so that a cancel
  // is seen within Interrupt::kWaitSliceNs. Counts one host wait.
  Status Wait(uint64_t value, Timeout timeout, const Interrupt& interrupt);

  // Like Wait, but not counted as a host wait (used by device queue threads).
  Status WaitInternal(uint64_t value, Timeout timeout);

  // Set once by the creating device, before the semaphore is shared (null: plain spin).
  void SetWaitProgress(std::shared_ptr<WaitProgress> progress) { progress_ = std::move(progress); }

 private:
  friend Status WaitSemaphores(const std::vector<SemaphoreValue>&, WaitMode, Timeout);
  Status TimedOut(uint64_t value, Timeout timeout) const REQUIRES(mu_);

  // Polled without the lock by the bounded spin at the start of a wait; written under mu_.
  std::atomic<uint64_t> spin_value_;
  std::atomic<bool> spin_failed_{false};
  mutable Mutex mu_;
  std::condition_variable cv_;
  uint64_t value_ GUARDED_BY(mu_);
  Status failure_ GUARDED_BY(mu_);
  std::shared_ptr<DeviceCounters> counters_;
  std::shared_ptr<WaitProgress> progress_;  // immutable once shared
};

// A (semaphore, value) pair in a queue wait or signal list.
struct SemaphoreValue {
  vm::Ref<Semaphore> semaphore;
  uint64_t value = 0;
};

enum class WaitMode { kAll, kAny };

// Host wait on a list: kAll returns when every semaphore reached its value, kAny when at
// least one did (an empty list is reached at once). Returns DeadlineExceeded when `timeout`
// passes first (zero polls), the failure of a failed semaphore it waits for (kAll: any of
// them; kAny: only if no other one is reached), InvalidArgument for a null semaphore. Counts
// one host wait (on the first semaphore's device statistics). Thread-safe.
Status WaitSemaphores(const std::vector<SemaphoreValue>& list, WaitMode mode,
                      Timeout timeout = kInfiniteTimeout);

// The end of a submission, for every driver: when `status` is ok, signals each semaphore of
// `signals` to its value (one that cannot be signalled is failed with the reason, and the
// first such reason is returned); otherwise fails them all with `status` and returns it.
Status SignalOrFail(const std::vector<SemaphoreValue>& signals, Status status);

}  // namespace hexir::hal
