// Internal to the CUDA driver: which CUDA event a semaphore value will be reached by, for every
// queue of every CUDA device in the process (compute streams and transfer streams). A queue
// that puts work signalling (semaphore, value) on its stream records an event after it and
// adds a timepoint; a queue whose work waits for that value then orders its own stream after
// the event (cuStreamWaitEvent: on the GPU, no host thread) instead of holding the work back
// on the host. Streams of different devices and contexts may wait on each other's events.
//
// Protocol (what keeps a timepoint's event valid while another stream waits on it):
//   Add     after cuEventRecord succeeded, before the work is reported as queued;
//   Remove  after the semaphore was signalled or failed, before the event is recorded again
//           or destroyed (owners keep their events until then);
//   OrderStream / Covers  read under the registry's lock, so a Remove cannot interleave.
// A semaphore value that is already reached needs no timepoint: callers Query first.
//
// Thread-safety: every method is thread-safe; the registry's lock is a leaf (taken under a
// device's or a transfer queue's lock, never the other way round).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/semaphore.h"

namespace hexir::hal::cuda {

class CudaTimepoints {
 public:
  // The process's registry (CUDA devices of every ordinal share it).
  static CudaTimepoints& Process();

  void Add(const Semaphore* semaphore, uint64_t value, CUevent event, CUstream stream);
  // Forgets every timepoint of `semaphore` recorded with `event`.
  void Remove(const Semaphore* semaphore, CUevent event);

  // True when work already on some stream signals wait.semaphore to at least wait.value.
  bool Covers(const SemaphoreValue& wait) const;
  // Makes `stream` wait for the earliest timepoint reaching each wait's value, except those
  // recorded on `stream` itself (stream order already covers them); `*ordered` (optional)
  // counts the cuStreamWaitEvent calls made.
  Status OrderStream(const CudaApi& api, const std::vector<SemaphoreValue>& waits,
                     CUstream stream, uint64_t* ordered = nullptr) const;

  // The highest value a timepoint of `semaphore` reaches (0: none), for a waiter that
  // measures progress (cuda_argument_gate.h).
  uint64_t HighestCovered(const Semaphore* semaphore) const;
  // Blocks until a timepoint is added (any semaphore) or `timeout` passed; `*seen` is the
  // count of timepoints added so far, returned by the previous call (start with 0).
  void AwaitAdd(uint64_t* seen, Timeout timeout) const;

 private:
  struct Timepoint {
    uint64_t value;
    CUevent event;
    CUstream stream;
  };
  // Entries (semaphores) kept with an empty list, so that re-adding allocates nothing.
  static constexpr size_t kKeptEntries = 64;
  mutable Mutex mu_;
  std::unordered_map<const Semaphore*, std::vector<Timepoint>> by_semaphore_ GUARDED_BY(mu_);
  size_t live_ GUARDED_BY(mu_) = 0;  // timepoints in all lists
  uint64_t added_ GUARDED_BY(mu_) = 0;  // timepoints ever added (AwaitAdd)
  mutable std::condition_variable added_cv_;
};

}  // namespace hexir::hal::cuda
