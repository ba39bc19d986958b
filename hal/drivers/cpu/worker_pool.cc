#include "hal/drivers/cpu/worker_pool.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

#include "base/interrupt.h"

namespace hexir::hal::cpu {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

int64_t WorkerPool::BurstSpinNsFromEnvironment() {
  const char* env = std::getenv("HEXIR_CPU_BURST_SPIN_NS");
  if (env == nullptr || *env == '\0') return kDefaultBurstSpinNs;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  return *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : kDefaultBurstSpinNs;
}

WorkerPool::WorkerPool(int32_t thread_count, int64_t burst_spin_ns) : burst_spin_ns_(burst_spin_ns) {
  for (int32_t i = 1; i < thread_count; ++i) {
    threads_.emplace_back([this, i] { WorkerMain(static_cast<uint32_t>(i)); });
  }
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(mu_);
    shutdown_.store(true);
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
  uint64_t seen = 0;  // generation bits of the last loop this worker joined or skipped
  auto joinable = [&](uint64_t s) {
    return (s & kOpen) && (s & ~kJoinedMask & ~kOpen) != seen;
  };
  // The burst in which this worker last spun to the limit: a sleep is not ended by it.
  uint64_t burst_slept = burst_generation_.load(std::memory_order_relaxed);
  while (true) {
    uint64_t s = state_.load(std::memory_order_acquire);
    // The burst spin's limit counts from the last loop published (joined or not: a loop of
    // tiny workgroups can open and close between two polls).
    int64_t burst_spin_start = -1;
    uint64_t last_generation = s & ~kJoinedMask & ~kOpen;
    for (int i = 0; !joinable(s) && !shutdown_.load(std::memory_order_relaxed); ++i) {
      if (i >= kSpinIterations) {
        // Past the usual spin: go on only inside a burst, for at most the limit.
        if (bursts_.load(std::memory_order_relaxed) == 0) break;
        // A worker sharing its core with the thread that runs the submission (the scheduler
        // puts them together at times, for tens of milliseconds) gives that thread the core.
        if ((i & 63) == 0) sched_yield();
        if ((i & 255) == 0) {
          const int64_t now = Interrupt::NowNs();
          const uint64_t generation = s & ~kJoinedMask & ~kOpen;
          if (burst_spin_start < 0 || generation != last_generation) {
            burst_spin_start = now;
            last_generation = generation;
          }
          if (now - burst_spin_start > burst_spin_ns_) {
            burst_slept = burst_generation_.load(std::memory_order_relaxed);
            break;
          }
        }
      }
      CpuRelax();
      s = state_.load(std::memory_order_acquire);
    }
    if (!joinable(s) && !shutdown_.load(std::memory_order_relaxed)) {
      // state_ and burst_generation_ change under mu_, so this check-then-sleep misses
      // neither a loop nor a burst.
      MutexLock lock(mu_);
      auto wake = [&] {
        s = state_.load(std::memory_order_acquire);
        return shutdown_.load(std::memory_order_relaxed) || joinable(s) ||
               (bursts_.load(std::memory_order_relaxed) > 0 &&
                burst_generation_.load(std::memory_order_relaxed) != burst_slept);
      };
      while (!wake()) {
        sleeps_.fetch_add(1, std::memory_order_relaxed);
        start_cv_.wait(lock.native());
      }
      if (!joinable(s)) continue;  // woken for a burst (or shutdown): spin again
    }
    if (shutdown_.load(std::memory_order_acquire)) return;
    if (thread_index >= job_.max_threads.load(std::memory_order_relaxed)) {
      seen = s & ~kJoinedMask & ~kOpen;  // not wanted in this loop: wait for the next one
      continue;
    }
    // Join only the open loop of generation s: the CAS fails if it closed meanwhile.
    if (!state_.compare_exchange_strong(s, s + 1, std::memory_order_acq_rel)) continue;
    seen = s & ~kJoinedMask & ~kOpen;
    RunJob(job_, thread_index);
    uint64_t after = state_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    if ((after & kJoinedMask) == 0 && !(after & kOpen)) {
      MutexLock lock(mu_);
      done_cv_.notify_all();
    }
  }
}

// Without workers or burst spin a burst is nothing: bursts_ stays 0.
void WorkerPool::BeginBurst() {
  if (threads_.empty() || burst_spin_ns_ == 0) return;
  bursts_.fetch_add(1, std::memory_order_relaxed);
  {
    MutexLock lock(mu_);
    burst_generation_.fetch_add(1, std::memory_order_relaxed);
  }
  start_cv_.notify_all();
}

void WorkerPool::EndBurst() {
  if (threads_.empty() || burst_spin_ns_ == 0) return;
  bursts_.fetch_sub(1, std::memory_order_relaxed);
}

void WorkerPool::ParallelFor(uint64_t count, const std::function<bool(uint64_t, uint32_t)>& body,
                             uint32_t max_threads) {
  if (count == 0) return;
  MutexLock call_lock(call_mu_);
  job_.body = &body;
  job_.count = count;
  // One index per claim up to kIndicesPerThreadForChunks a thread: a thread that stalls
  // (descheduled on a busy machine) then holds back only the workgroup it is in, and the last
  // workgroups spread over every thread. A compiled dispatch has at most 64 workgroups (the
  // compiler's default) of at least ~a microsecond each, so the atomic is noise; only long
  // loops (waves of many small commands) claim chunks.
  const uint32_t threads = std::max<uint32_t>(1, std::min(max_threads, thread_count()));
  job_.chunk = std::max<uint64_t>(1, count / (uint64_t{threads} * kIndicesPerThreadForChunks));
  job_.next.store(0, std::memory_order_relaxed);
  job_.stop.store(false, std::memory_order_relaxed);
  job_.max_threads.store(threads, std::memory_order_relaxed);
  if (threads == 1 || count == 1) {
    RunJob(job_, 0);
    return;
  }
  {
    MutexLock lock(mu_);
    uint64_t generation = (state_.load(std::memory_order_relaxed) & ~kJoinedMask & ~kOpen) +
                          kGenerationUnit;
    state_.store(generation | kOpen, std::memory_order_release);
  }
  start_cv_.notify_all();
  RunJob(job_, 0);
  // No index is left to claim: close the loop to latecomers, then wait for those that joined.
  uint64_t s = state_.fetch_and(~kOpen, std::memory_order_acq_rel) & ~kOpen;
  auto done = [&] { return (state_.load(std::memory_order_acquire) & kJoinedMask) == 0; };
  if ((s & kJoinedMask) == 0) return;
  for (int i = 0; i < kJoinWaitSpinIterations && !done(); ++i) CpuRelax();
  if (!done()) {
    MutexLock lock(mu_);
    done_cv_.wait(lock.native(), done);
  }
}

}  // namespace hexir::hal::cpu
