// The CPU driver's collective queue: one thread per device (started with the device's first
// collective) runs the device's collectives in issue order, while the queue thread goes on with
// the commands recorded after them. Dependences come from memory, like the compiler's barriers
// (passes/schedule/ScheduleConcurrency.cpp): before the queue thread starts a command it waits
// (WaitForConflicts) for the in-flight collectives it depends on (it writes their send or
// recv range, or reads their recv range: hal/command_ranges.h); any other command, one that
// reads a collective's input among them, runs while the collective waits for its peers. The commands of a collective's own wave are unordered with it (HAL semantics) and
// never wait for it.
//
//   queue thread:  issue all_reduce(x -> s) | dispatch f(y) -> z | wait for s | dispatch g(s)
//   lane thread:   ----- all_reduce --------------------------->|
//
// Counting: a collective is `collectives_overlapped` when the queue thread started commands
// independent of it after issuing it and before the first command that depends on it (or on a
// later collective) was reached: a property of the recording and the buffers, not of timing
// (a collective that already completed is joined by its first dependent command all the same,
// without a wait; whether it was still running beside the independent ones is the trace's to
// show); every collective is counted in `collectives_executed` at Drain. Profiling: each collective's interval
// (from the lane thread's start of it to its end) reaches the profiler's OnCollective at Drain,
// on the queue thread.
//
// Failures: every issued collective runs (a broken channel fails the later ones at once, and
// the channel's timeout bounds each); Drain returns the first failure.
//
// Ownership and threads: a lane belongs to one device; Issue, WaitForConflicts,
// NoteIndependentWork and Drain are called by the device's executing thread only; the lane's
// own thread runs the collectives. The destructor waits for the running collective.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "hal/channel.h"
#include "hal/command_buffer.h"
#include "hal/command_ranges.h"
#include "hal/profiling.h"
#include "hal/stats.h"

namespace hexir::hal::cpu {

class CollectiveLane {
 public:
  explicit CollectiveLane(std::shared_ptr<DeviceCounters> counters);
  ~CollectiveLane();
  CollectiveLane(const CollectiveLane&) = delete;
  CollectiveLane& operator=(const CollectiveLane&) = delete;

  // Queues `op` (addresses resolved; `send_bytes`/`recv_bytes` long) on `channel`, which the
  // lane keeps alive until it ran. Returns at once.
  void Issue(vm::Ref<Channel> channel, const HostChannel::Operation& op, uint64_t send_bytes,
             uint64_t recv_bytes);
  // The number of collectives issued since the last Drain (the next one's index).
  size_t issued() const;
  // Joins the latest collective issued before index `issued_before` and not yet joined that
  // commands with `ranges` depend on (hal/command_ranges.h: they write its send or recv range,
  // or read its recv range), and every one before it: blocks until they have completed.
  void WaitForConflicts(const CommandRanges& ranges, size_t issued_before);
  // The queue thread starts commands independent of every collective it has not joined.
  void NoteIndependentWork();
  // True while a collective issued since the last Drain has not been joined.
  bool unjoined() const;
  // Waits for every issued collective, counts them, reports their intervals to `profiler`
  // (may be null) and returns the first failure.
  Status Drain(Profiler* profiler);

 private:
  struct Entry {
    vm::Ref<Channel> channel;
    HostChannel::Operation op;
    ByteRange send, recv;
    bool overlapped = false;
    Status status;
    int64_t begin_ns = 0, end_ns = 0;
  };
  void Main();

  std::shared_ptr<DeviceCounters> counters_;
  mutable Mutex mu_;
  std::condition_variable issued_cv_;  // a collective was issued, or stopping
  std::condition_variable done_cv_;    // a collective completed
  std::vector<Entry> entries_ GUARDED_BY(mu_);  // issued since the last Drain, in order
  size_t done_ GUARDED_BY(mu_) = 0;             // entries_[0, done_) have completed
  size_t joined_ GUARDED_BY(mu_) = 0;  // entries_[0, joined_): a command depended on them
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace hexir::hal::cpu
