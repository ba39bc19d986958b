// A fixed pool of threads that runs one parallel loop at a time (the CPU driver's workgroups).
//
// WorkerPool(n) starts n-1 threads; the thread calling ParallelFor joins in as thread index 0,
// so thread indices are in [0, max(n,1)). n <= 1 starts no thread: ParallelFor runs inline.
//
// Hand-off: ParallelFor publishes the loop and runs it itself; workers that arrive while the
// loop is open claim indices too. When the caller runs out of indices it closes the loop and
// waits only for workers that joined it, never for workers that have not woken up yet (so a
// descheduled worker on a busy machine costs nothing). Idle workers spin briefly before
// sleeping on a condition variable, so back-to-back loops avoid futex round trips.
//
// Bursts: between BeginBurst and EndBurst (the CPU device opens one around each submission
// it executes, whichever thread runs it) idle workers
// keep spinning past their usual spin, up to `burst_spin_ns` (default 2 ms) without a loop,
// and BeginBurst wakes sleeping ones. So the loops of one submission, however far apart
// (single-thread dispatches between them), find the workers awake: a sleeping worker's futex
// wake-up takes tens of microseconds on a virtual machine, longer than many a dispatch it was
// woken for, which the caller then ran alone.
//
// Thread-safety: ParallelFor may be called from any thread; concurrent calls are serialized.
// The destructor must not run concurrently with ParallelFor.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace hexir::hal::cpu {

class WorkerPool {
 public:
  // `burst_spin_ns`: an idle worker's longest spin inside a burst (0: no burst spin, and
  // BeginBurst wakes no worker).
  explicit WorkerPool(int32_t thread_count, int64_t burst_spin_ns = kDefaultBurstSpinNs);

  // Default of HEXIR_CPU_BURST_SPIN_NS (below).
  static constexpr int64_t kDefaultBurstSpinNs = 2'000'000;
  // The burst spin in effect: HEXIR_CPU_BURST_SPIN_NS when set to an integer >= 0 (0 = workers
  // sleep after their usual spin, as before bursts), else the default.
  static int64_t BurstSpinNsFromEnvironment();
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  uint32_t thread_count() const { return static_cast<uint32_t>(threads_.size()) + 1; }

  // Calls body(i, thread_index) for every i in [0, count), spread over at most `max_threads`
  // threads (the caller and workers 1..max_threads-1; 1 or less: the caller alone, no worker
  // is woken), and returns when all calls finished. A body returning false stops the loop
  // early (indices not yet started are skipped).
  void ParallelFor(uint64_t count, const std::function<bool(uint64_t, uint32_t)>& body,
                   uint32_t max_threads = UINT32_MAX) EXCLUDES(call_mu_);

  // Opens / closes a burst (above). Calls nest; any thread may call them.
  void BeginBurst() EXCLUDES(mu_);
  void EndBurst();

  // How many times a worker blocked on the condition variable, each wake-up that found
  // nothing to do counted again (tests, diagnostics).
  uint64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }

 private:
  struct Job {
    const std::function<bool(uint64_t, uint32_t)>* body = nullptr;
    uint64_t count = 0;
    uint64_t chunk = 1;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> stop{false};
    // Workers with a thread index >= this skip the loop. Atomic: a worker may read it while
    // the next loop is being set up (it then fails to join this one anyway).
    std::atomic<uint32_t> max_threads{UINT32_MAX};
  };
  // state_ packs: generation (bits 33..63) | open flag (bit 32) | joined workers (bits 0..31).
  static constexpr uint64_t kOpen = uint64_t{1} << 32;
  static constexpr uint64_t kGenerationUnit = uint64_t{1} << 33;
  static constexpr uint64_t kJoinedMask = kOpen - 1;
  static constexpr int kSpinIterations = 2000;  // an idle worker's, before it sleeps
  // The caller's, waiting for workers that joined, before it sleeps: short, because a worker
  // woken onto the caller's core runs only once the caller stops spinning (2000 pauses, ~47 us
  // on a Zen 5, made a 4.5 us dispatch of MobileNetV3 take 60 us on a loaded 2-core machine).
  static constexpr int kJoinWaitSpinIterations = 250;
  // Loops of up to this many indices per thread are claimed one index at a time.
  static constexpr uint64_t kIndicesPerThreadForChunks = 64;

  static void RunJob(Job& job, uint32_t thread_index);
  void WorkerMain(uint32_t thread_index);

  Mutex call_mu_;  // serializes ParallelFor
  Mutex mu_;       // sleeping: state_ is published and shutdown_ set under it
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  Job job_;  // the current loop; reused only after every joined worker left it
  std::atomic<uint64_t> state_{0};
  std::atomic<bool> shutdown_{false};
  std::atomic<uint32_t> bursts_{0};            // open bursts
  std::atomic<uint64_t> burst_generation_{0};  // BeginBurst calls; changed under mu_
  std::atomic<uint64_t> sleeps_{0};
  // An idle worker's longest spin inside a burst (a long single-thread dispatch, a collective
  // waiting for its peers): past it the worker sleeps until the next loop or burst.
  const int64_t burst_spin_ns_;
  std::vector<std::thread> threads_;
};

}  // namespace hexir::hal::cpu
