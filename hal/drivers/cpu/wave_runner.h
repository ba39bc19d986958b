// Concurrent waves: the commands between two barriers of a command buffer have no ordering
// among themselves (hal/command_buffer.h), so the CPU driver runs them as ONE parallel loop
// over the concatenation of their index spaces: dispatch d contributes its workgroups
// [first_d, first_d + count_d), a copy or fill contributes one index. Two single-workgroup
// dispatches of one wave thus run on two workers at once; a barrier ends the wave, so commands
// it separates stay ordered. A wave whose estimated work is small (work_estimate.h) runs on
// the executing thread alone, its commands in recording order.
//
// Collectives are not the runner's: the device's collective lane (collective_lane.h) runs
// them, and Run skips them.
//
// Failures: the first failing workgroup (or indirect count) wins and names its dispatch; the
// loop stops handing out indices. Profiling: each dispatch is reported, in command order,
// from the first of its workgroups to start to the last to end.
//
// Ownership: a WaveRunner belongs to one device and is used by its executing thread only
// (the queue thread); it keeps its scratch (items, binding arrays) between waves, so a
// replay allocates nothing once the largest wave has been seen.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/drivers/cpu/dispatch_abi.h"
#include "hal/drivers/cpu/worker_pool.h"
#include "hal/profiling.h"
#include "hal/stats.h"

namespace hexir::hal::cpu {

class CpuExecutable;

class WaveRunner {
 public:
  // `min_work_per_thread_ns`: a wave gets one thread per this much estimated work
  // (work_estimate.h); a smaller wave runs on the executing thread alone.
  WaveRunner(WorkerPool& pool, std::shared_ptr<DeviceCounters> counters,
             double min_work_per_thread_ns);
  WaveRunner(const WaveRunner&) = delete;
  WaveRunner& operator=(const WaveRunner&) = delete;

  // Runs commands [begin, end) (no barrier among them; collectives skipped) concurrently over the pool, bindings
  // resolved against `table`; returns when all finished, or the first failure.
  Status Run(const Command* begin, const Command* end, const std::vector<BufferRef>& table,
             Profiler* profiler);

 private:
  struct Item {
    const Command* command = nullptr;
    const DispatchCommand* dispatch = nullptr;  // null for copies and fills
    const CpuExecutable* executable = nullptr;
    hexir_cpu_entry_fn_t fn = nullptr;
    hexir_cpu_dispatch_state_t state = {};
    uint64_t first = 0;  // first index of this item in the wave's index space
    uint64_t count = 0;  // workgroups (1 for a copy or fill)
    // Profiling only: earliest workgroup start and latest end on ProfileClockNs().
    std::atomic<int64_t> begin_ns{0};
    std::atomic<int64_t> end_ns{0};
  };

  bool RunIndex(uint64_t index, uint32_t thread_index);
  size_t ItemOf(uint64_t index) const;
  void RecordError(Status status);

  WorkerPool& pool_;
  std::shared_ptr<DeviceCounters> counters_;
  const double min_work_per_thread_ns_;
  // Built once: capturing only `this` keeps std::function from allocating per wave.
  std::function<bool(uint64_t, uint32_t)> body_;
  std::unique_ptr<Item[]> items_;
  size_t item_capacity_ = 0;
  size_t item_count_ = 0;
  std::vector<void*> binding_ptrs_;  // every dispatch's bindings, back to back
  std::vector<uint64_t> binding_lengths_;
  bool profiling_ = false;
  std::atomic<bool> failed_{false};
  Mutex error_mu_;
  Status error_ GUARDED_BY(error_mu_);
};

}  // namespace hexir::hal::cpu
