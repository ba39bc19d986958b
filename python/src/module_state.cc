#include "python/src/module_state.h"

namespace hexir::python {

void Worker::Post(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  jobs_.push_back(std::move(job));
  cv_.notify_one();
}

void Worker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    cv_.notify_one();
  }
  thread_.join();
  stopping_ = false;
}

void Worker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // destroy the captured arguments outside the lock
    lock.lock();
  }
}

}  // namespace hexir::python
