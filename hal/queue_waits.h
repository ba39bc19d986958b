// Run-time wait elision for a driver's in-order queue (the run-time half of timepoint
// elision): a submission's wait on (semaphore, value) needs no work when the value is already
// reached at submission, or when an earlier submission of the same queue signals it (queue
// order implies it: that submission completes, signalling, before this one starts). Drivers
// classify each wait with ClassifyQueueWait, which also counts it in
// DeviceStats::queue_waits_elided or queue_waits.
//
// A wait implied by queue order must still see a failure of the submission that signals it
// (it fails the semaphore before the next submission starts), so drivers keep such waits for
// a failure check; reached waits can be dropped.
//
// Thread-safety: PendingSignals is not synchronized; drivers guard it with their queue lock.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hal/semaphore.h"
#include "hal/stats.h"

namespace hexir::hal {

// The highest value each semaphore gets from submissions queued and not yet completed. A
// handful of semaphores are live at a time, so a flat vector (no allocation once warm).
class PendingSignals {
 public:
  void Add(const Semaphore* semaphore, uint64_t value) {
    for (auto& [s, v] : entries_) {
      if (s == semaphore) {
        if (value > v) v = value;
        return;
      }
    }
    entries_.emplace_back(semaphore, value);
  }
  // True when a queued submission will signal `semaphore` to at least `value`.
  bool Covers(const Semaphore* semaphore, uint64_t value) const {
    for (const auto& [s, v] : entries_) {
      if (s == semaphore) return v >= value;
    }
    return false;
  }
  // A submission signalled `semaphore` to `value`: forget it unless a later one signals more.
  void Retire(const Semaphore* semaphore, uint64_t value) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first == semaphore) {
        if (entries_[i].second <= value) {
          entries_[i] = entries_.back();
          entries_.pop_back();
        }
        return;
      }
    }
  }

 private:
  std::vector<std::pair<const Semaphore*, uint64_t>> entries_;
};

enum class QueueWait {
  kReached,       // the value is reached at submission: nothing to wait for
  kQueueOrdered,  // an earlier submission of this queue signals it: implied by queue order
  kOrdered,       // the queue must hold the submission back until the value is reached
};

// Classifies one wait of a submission and counts it (queue_waits_elided for the first two
// classes, queue_waits for kOrdered). A failed semaphore is kOrdered: the queue's wait then
// fails the submission with its status.
inline QueueWait ClassifyQueueWait(const SemaphoreValue& wait, const PendingSignals& pending,
                                   DeviceCounters& counters) {
  QueueWait kind = QueueWait::kOrdered;
  auto value = wait.semaphore->Query();
  if (value.ok() && *value >= wait.value) {
    kind = QueueWait::kReached;
  } else if (value.ok() && pending.Covers(wait.semaphore.get(), wait.value)) {
    kind = QueueWait::kQueueOrdered;
  }
  DeviceCounters::Add(kind == QueueWait::kOrdered ? counters.queue_waits
                                                  : counters.queue_waits_elided);
  return kind;
}

}  // namespace hexir::hal
