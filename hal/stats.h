// Device statistics: counters every device keeps so that tests and tools can check what the
// runtime really did (one recording replayed many times, executables loaded once, ...).
//
// DeviceCounters is shared (std::shared_ptr) between a device and the objects it creates so
// that a buffer freed after its device is gone still updates a live object. All counters are
// relaxed atomics: thread-safe, individually exact, not a consistent snapshot across fields.
#pragma once

#include <atomic>
#include <cstdint>

namespace hexir::hal {

class Profiler;  // hal/profiling.h

// A plain snapshot (see Device::stats()).
struct DeviceStats {
  uint64_t buffers_allocated = 0;      // total buffers ever allocated
  uint64_t buffer_bytes_allocated = 0; // total bytes ever allocated
  uint64_t buffers_live = 0;           // buffers allocated and not yet freed
  uint64_t buffer_bytes_live = 0;      // their bytes
  uint64_t executables_loaded = 0;     // successful CreateExecutable calls
  uint64_t command_buffers_recorded = 0;  // command buffers finalized
  uint64_t dispatches_executed = 0;    // dispatch commands executed (not workgroups)
  uint64_t queue_submissions = 0;      // QueueExecute calls accepted
  uint64_t host_waits = 0;             // host Semaphore::Wait and Device::WaitIdle calls (incl. polls)
  uint64_t buffer_bytes_peak = 0;      // highest buffer_bytes_live ever reached
  uint64_t pool_hits = 0;              // allocations served by a cached (previously freed) block
  uint64_t pool_misses = 0;            // pooled allocations that had to get new memory
  uint64_t pool_bytes_cached = 0;      // bytes of freed blocks the pool holds for reuse now
};

struct DeviceCounters {
  std::atomic<uint64_t> buffers_allocated{0};
  std::atomic<uint64_t> buffer_bytes_allocated{0};
  std::atomic<uint64_t> buffers_live{0};
  std::atomic<uint64_t> buffer_bytes_live{0};
  std::atomic<uint64_t> executables_loaded{0};
  std::atomic<uint64_t> command_buffers_recorded{0};
  std::atomic<uint64_t> dispatches_executed{0};
  std::atomic<uint64_t> queue_submissions{0};
  std::atomic<uint64_t> host_waits{0};
  std::atomic<uint64_t> buffer_bytes_peak{0};
  std::atomic<uint64_t> pool_hits{0};
  std::atomic<uint64_t> pool_misses{0};
  std::atomic<uint64_t> pool_bytes_cached{0};
  // Not a counter: the device's optional dispatch profiler (Device::SetProfiler), kept here
  // because every object of the device shares this struct.
  std::atomic<Profiler*> profiler{nullptr};

  static void Add(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }
  static void Sub(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_sub(n, std::memory_order_relaxed);
  }
  static void Max(std::atomic<uint64_t>& c, uint64_t v) {
    uint64_t cur = c.load(std::memory_order_relaxed);
    while (cur < v && !c.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
  DeviceStats Snapshot() const {
    auto g = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    DeviceStats s;
    s.buffers_allocated = g(buffers_allocated);
    s.buffer_bytes_allocated = g(buffer_bytes_allocated);
    s.buffers_live = g(buffers_live);
    s.buffer_bytes_live = g(buffer_bytes_live);
    s.executables_loaded = g(executables_loaded);
    s.command_buffers_recorded = g(command_buffers_recorded);
    s.dispatches_executed = g(dispatches_executed);
    s.queue_submissions = g(queue_submissions);
    s.host_waits = g(host_waits);
    s.buffer_bytes_peak = g(buffer_bytes_peak);
    s.pool_hits = g(pool_hits);
    s.pool_misses = g(pool_misses);
    s.pool_bytes_cached = g(pool_bytes_cached);
    return s;
  }
};

}  // namespace hexir::hal
