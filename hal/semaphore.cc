#include "hal/semaphore.h"

#include <algorithm>
#include <vector>

namespace hexir::hal {

Semaphore::Semaphore(uint64_t initial_value, std::shared_ptr<DeviceCounters> counters)
    : spin_value_(initial_value), value_(initial_value), counters_(std::move(counters)) {}

StatusOr<uint64_t> Semaphore::Query() const {
  MutexLock lock(mu_);
  if (!failure_.ok()) return failure_;
  return value_;
}

Status Semaphore::Signal(uint64_t value) {
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return failure_;
    if (value <= value_) {
      return InvalidArgument("semaphore signal: value ", value,
                             " is not greater than the current value ", value_,
                             " (timelines only move forward)");
    }
    value_ = value;
    spin_value_.store(value, std::memory_order_release);
  }
  cv_.notify_all();
  return Status::Ok();
}

void Semaphore::Fail(Status status) {
  if (status.ok()) status = Internal("Semaphore::Fail called with an ok status");
  {
    MutexLock lock(mu_);
    if (failure_.ok()) failure_ = std::move(status);
    spin_failed_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

Status Semaphore::Wait(uint64_t value, Timeout timeout) {
  if (counters_) DeviceCounters::Add(counters_->host_waits);
  return WaitInternal(value, timeout);
}

Status Semaphore::Wait(uint64_t value, Timeout timeout, const Interrupt& interrupt) {
  if (!interrupt.can_fire()) return Wait(value, timeout);
  if (counters_) DeviceCounters::Add(counters_->host_waits);
  const bool infinite = timeout >= std::chrono::hours(24 * 365);
  const int64_t until = infinite ? Interrupt::kNoDeadline : Interrupt::NowNs() + timeout.count();
  while (true) {
    HEXIR_RETURN_IF_ERROR(interrupt.Check());
    Timeout slice = interrupt.NextWaitSlice();
    if (!infinite) slice = std::min(slice, Timeout(std::max<int64_t>(0, until - Interrupt::NowNs())));
    Status st = WaitInternal(value, slice);
    if (st.code() != StatusCode::kDeadlineExceeded) return st;
    if (!infinite && Interrupt::NowNs() >= until) {
      // Both may have passed: the call's own deadline is the one to report.
      HEXIR_RETURN_IF_ERROR(interrupt.Check());
      MutexLock lock(mu_);
      return TimedOut(value, timeout);
    }
  }
}

Status Semaphore::TimedOut(uint64_t value, Timeout timeout) const {
  return DeadlineExceeded("semaphore wait for value ", value, " timed out after ",
                          std::chrono::duration_cast<std::chrono::microseconds>(timeout).count(),
                          " us (current value ", value_, ")");
}

namespace {
// A small call's result often lands a few microseconds after the host starts waiting; a
// condition-variable sleep would add a wake-up (several us) to it. Bounded so that a long wait
// costs at most this much CPU before sleeping.
constexpr int64_t kSpinNs = 8000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

Status Semaphore::WaitInternal(uint64_t value, Timeout timeout) {
  if (timeout > Timeout::zero() && spin_value_.load(std::memory_order_acquire) < value &&
      !spin_failed_.load(std::memory_order_acquire)) {
    using Clock = std::chrono::steady_clock;
    const int64_t spin_ns = progress_ ? progress_->spin_ns() : kSpinNs;
    const Clock::time_point end =
        Clock::now() + std::min<Timeout>(timeout, std::chrono::nanoseconds(spin_ns));
    do {
      // A fraction of a microsecond between polls: a small call's wait ends within it.
      for (int i = 0; i < 8; ++i) CpuRelax();
      if (progress_) progress_->Poll();
    } while (spin_value_.load(std::memory_order_acquire) < value &&
             !spin_failed_.load(std::memory_order_acquire) && Clock::now() < end);
  }
  MutexLock lock(mu_);
  auto ready = [&]() REQUIRES(mu_) { return !failure_.ok() || value_ >= value; };
  // Durations near max() overflow now()+timeout inside wait_for: treat them as infinite.
  if (timeout >= std::chrono::hours(24 * 365)) {
    cv_.wait(lock.native(), ready);
  } else if (!cv_.wait_for(lock.native(), timeout, ready)) {
    return TimedOut(value, timeout);
  }
  if (!failure_.ok()) return failure_;
  return Status::Ok();
}

Status WaitSemaphores(const std::vector<SemaphoreValue>& list, WaitMode mode, Timeout timeout) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].semaphore) return InvalidArgument("wait semaphores: semaphore ", i, " is null");
  }
  if (list.empty()) return Status::Ok();
  if (list[0].semaphore->counters_) DeviceCounters::Add(list[0].semaphore->counters_->host_waits);
  using Clock = std::chrono::steady_clock;
  const bool infinite = timeout >= std::chrono::hours(24 * 365);
  const Clock::time_point deadline = infinite ? Clock::time_point::max() : Clock::now() + timeout;
  auto remaining = [&]() -> Timeout {
    if (infinite) return kInfiniteTimeout;
    return std::max(Timeout::zero(), std::chrono::duration_cast<Timeout>(deadline - Clock::now()));
  };
  if (mode == WaitMode::kAll || list.size() == 1) {
    // Each wait gets what is left of the one deadline.
    for (const SemaphoreValue& sv : list) {
      HEXIR_RETURN_IF_ERROR(sv.semaphore->WaitInternal(sv.value, remaining()));
    }
    return Status::Ok();
  }
  // kAny over several semaphores: semaphores have no shared condition variable, so poll them
  // and block on the first in short slices (the latency of noticing another one).
  constexpr Timeout kSlice = std::chrono::microseconds(500);
  while (true) {
    Status failure;
    const SemaphoreValue* pending = nullptr;  // one that may still be reached
    for (const SemaphoreValue& sv : list) {
      auto v = sv.semaphore->Query();
      if (!v.ok()) {
        if (failure.ok()) failure = v.status();
      } else if (*v >= sv.value) {
        return Status::Ok();
      } else if (!pending) {
        pending = &sv;
      }
    }
    if (!pending) return failure;
    Timeout left = remaining();
    if (left == Timeout::zero()) {
      return DeadlineExceeded("wait for any of ", list.size(), " semaphores timed out");
    }
    Status st = pending->semaphore->WaitInternal(pending->value, std::min(left, kSlice));
    if (st.ok()) return st;
  }
}

Status SignalOrFail(const std::vector<SemaphoreValue>& signals, Status status) {
  if (!status.ok()) {
    for (const SemaphoreValue& sv : signals) sv.semaphore->Fail(status);
    return status;
  }
  for (const SemaphoreValue& sv : signals) {
    Status st = sv.semaphore->Signal(sv.value);
    if (!st.ok()) {
      sv.semaphore->Fail(st);
      if (status.ok()) status = std::move(st);
    }
  }
  return status;
}

}  // namespace hexir::hal
