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

// A plain snapshot (see Device::stats()); fields are the rows of hal/device_stats.def.
struct DeviceStats {
#define HEXIR_DEVICE_STAT(name, meaning) uint64_t name = 0;
#include "hal/device_stats.def"
};

struct DeviceCounters {
#define HEXIR_DEVICE_STAT(name, meaning) std::atomic<uint64_t> name{0};
#include "hal/device_stats.def"
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
    DeviceStats s;
#define HEXIR_DEVICE_STAT(name, meaning) s.name = name.load(std::memory_order_relaxed);
#include "hal/device_stats.def"
    return s;
  }
};

}  // namespace hexir::hal
