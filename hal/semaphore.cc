#include "hal/semaphore.h"

namespace hexir::hal {

Semaphore::Semaphore(uint64_t initial_value, std::shared_ptr<DeviceCounters> counters)
    : value_(initial_value), counters_(std::move(counters)) {}

StatusOr<uint64_t> Semaphore::Query() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) return failure_;
  return value_;
}

Status Semaphore::Signal(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.ok()) return failure_;
    if (value <= value_) {
      return InvalidArgument("semaphore signal: value ", value,
                             " is not greater than the current value ", value_,
                             " (timelines only move forward)");
    }
    value_ = value;
  }
  cv_.notify_all();
  return Status::Ok();
}

void Semaphore::Fail(Status status) {
  if (status.ok()) status = Internal("Semaphore::Fail called with an ok status");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.ok()) failure_ = std::move(status);
  }
  cv_.notify_all();
}

Status Semaphore::Wait(uint64_t value, Timeout timeout) {
  if (counters_) DeviceCounters::Add(counters_->host_waits);
  return WaitInternal(value, timeout);
}

Status Semaphore::WaitInternal(uint64_t value, Timeout timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !failure_.ok() || value_ >= value; };
  // Durations near max() overflow now()+timeout inside wait_for: treat them as infinite.
  if (timeout >= std::chrono::hours(24 * 365)) {
    cv_.wait(lock, ready);
  } else if (!cv_.wait_for(lock, timeout, ready)) {
    return DeadlineExceeded("semaphore wait for value ", value, " timed out after ",
                            std::chrono::duration_cast<std::chrono::microseconds>(timeout).count(),
                            " us (current value ", value_, ")");
  }
  if (!failure_.ok()) return failure_;
  return Status::Ok();
}

}  // namespace hexir::hal
