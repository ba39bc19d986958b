// Interrupt: when a call, and every host wait it makes, must stop.
//
// An Interrupt carries an absolute deadline on the monotonic clock (std::chrono::steady_clock,
// CLOCK_MONOTONIC on Linux; kNoDeadline = none) and an optional cancellation flag set by
// another thread. Check() is cheap: one relaxed atomic load, plus a clock read when a
// deadline is set. Long-running code (the interpreter's back-edges and calls, HAL host waits)
// calls it and stops with its status:
//   cancelled:         Aborted("call cancelled")
//   deadline passed:   DeadlineExceeded("deadline exceeded after 2.000 s")  (deadline - start)
//
// Ownership: an Interrupt does not own the flag; whoever builds one keeps the flag alive
// while it is used. Thread-safety: Check() may run on any thread; the flag is atomic.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "base/status.h"

namespace hexir {

class Interrupt {
 public:
  static constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();
  // Longest a host wait blocks between two checks: the latency of a cancel during a wait.
  static constexpr int64_t kWaitSliceNs = 5'000'000;

  // Never fires.
  Interrupt() = default;
  // Fires at `deadline_ns` (NowNs() clock; kNoDeadline = never) or once `*cancelled` is true
  // (null = cannot be cancelled). `start_ns` is when the call began (for the message).
  Interrupt(int64_t deadline_ns, const std::atomic<bool>* cancelled, int64_t start_ns)
      : deadline_ns_(deadline_ns), start_ns_(start_ns), cancelled_(cancelled) {}

  // The monotonic clock deadlines are expressed on, in nanoseconds.
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // `seconds` from now (saturating; seconds <= 0 is already due).
  static int64_t DeadlineAfter(double seconds) {
    const int64_t now = NowNs();
    if (!(seconds > 0)) return now;
    double ns = seconds * 1e9;
    if (ns >= static_cast<double>(kNoDeadline - now)) return kNoDeadline;
    return now + static_cast<int64_t>(ns);
  }

  // True when it can ever fire (a deadline or a flag): otherwise waits need not slice.
  bool can_fire() const { return deadline_ns_ != kNoDeadline || cancelled_ != nullptr; }
  int64_t deadline_ns() const { return deadline_ns_; }

  // True once the flag is set or the deadline has passed: Check()'s test without building a
  // Status (the per-import test of the interpreter).
  bool Fired() const {
    return (cancelled_ && cancelled_->load(std::memory_order_relaxed)) ||
           (deadline_ns_ != kNoDeadline && NowNs() >= deadline_ns_);
  }

  // Ok while neither the flag nor the deadline has fired (cancellation wins when both have).
  Status Check() const {
    if (cancelled_ && cancelled_->load(std::memory_order_relaxed)) return Cancelled();
    if (deadline_ns_ != kNoDeadline && NowNs() >= deadline_ns_) return Expired();
    return Status::Ok();
  }

  // How long a wait may block before it must call Check() again: the time left to the
  // deadline, at most kWaitSliceNs when a flag could cancel it, never negative.
  std::chrono::nanoseconds NextWaitSlice() const {
    int64_t left = std::numeric_limits<int64_t>::max();
    if (deadline_ns_ != kNoDeadline) left = std::max<int64_t>(0, deadline_ns_ - NowNs());
    if (cancelled_) left = std::min(left, kWaitSliceNs);
    return std::chrono::nanoseconds(left);
  }

 private:
  Status Cancelled() const;
  Status Expired() const;

  int64_t deadline_ns_ = kNoDeadline;
  int64_t start_ns_ = 0;
  const std::atomic<bool>* cancelled_ = nullptr;
};

// The interrupt of code that was given none (never fires).
inline constexpr Interrupt kNoInterrupt{};

// Runs `wait(slice)`, a host wait that returns kDeadlineExceeded when `slice` passes first,
// until it returns anything else or the interrupt fires (its status is returned then). With
// an interrupt that cannot fire it is one unbounded wait.
template <typename WaitFn>
Status WaitInterruptibly(const Interrupt& interrupt, WaitFn&& wait) {
  if (!interrupt.can_fire()) return wait(std::chrono::nanoseconds::max());
  while (true) {
    HEXIR_RETURN_IF_ERROR(interrupt.Check());
    Status st = wait(interrupt.NextWaitSlice());
    if (st.code() != StatusCode::kDeadlineExceeded) return st;
  }
}

}  // namespace hexir
