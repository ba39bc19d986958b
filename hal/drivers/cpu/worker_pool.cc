#include "hal/drivers/cpu/worker_pool.h"

#include <algorithm>

namespace hexir::hal::cpu {

WorkerPool::WorkerPool(int32_t thread_count) {
  for (int32_t i = 1; i < thread_count; ++i) {
    threads_.emplace_back([this, i] { WorkerMain(static_cast<uint32_t>(i)); });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::RunJob(Job& job, uint32_t thread_index) {
  while (!job.stop.load(std::memory_order_relaxed)) {
    uint64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.count) return;
    uint64_t end = std::min(job.count, begin + job.chunk);
    for (uint64_t i = begin; i < end; ++i) {
      if (!(*job.body)(i, thread_index)) {
        job.stop.store(true, std::memory_order_relaxed);
        return;
      }
    }
  }
}

void WorkerPool::WorkerMain(uint32_t thread_index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    start_cv_.wait(lock, [&] { return shutdown_ || generation_ != seen; });
    if (shutdown_) return;
    seen = generation_;
    Job* job = job_;
    lock.unlock();
    RunJob(*job, thread_index);
    lock.lock();
    if (--active_ == 0) done_cv_.notify_all();
  }
}

void WorkerPool::ParallelFor(uint64_t count,
                             const std::function<bool(uint64_t, uint32_t)>& body) {
  if (count == 0) return;
  std::lock_guard<std::mutex> call_lock(call_mu_);
  Job job;
  job.body = &body;
  job.count = count;
  // Small chunks balance uneven workgroups; several per thread keeps the atomic cheap.
  job.chunk = std::max<uint64_t>(1, count / (uint64_t{thread_count()} * 8));
  if (threads_.empty() || count == 1) {
    RunJob(job, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &job;
    active_ = static_cast<uint32_t>(threads_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  RunJob(job, 0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return active_ == 0; });
  job_ = nullptr;
}

}  // namespace hexir::hal::cpu
