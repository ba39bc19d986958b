#include "hal/drivers/cuda/cuda_timepoints.h"

#include <algorithm>


namespace hexir::hal::cuda {

CudaTimepoints& CudaTimepoints::Process() {
  static CudaTimepoints* registry = new CudaTimepoints();  // never destroyed: queues outlive statics
  return *registry;
}

void CudaTimepoints::Add(const Semaphore* semaphore, uint64_t value, CUevent event,
                         CUstream stream) {
  {
    MutexLock lock(mu_);
    by_semaphore_[semaphore].push_back({value, event, stream});
    ++live_;
    ++added_;
  }
  added_cv_.notify_all();  // no syscall without a waiter (a gated launch's host wait)
}

uint64_t CudaTimepoints::HighestCovered(const Semaphore* semaphore) const {
  MutexLock lock(mu_);
  auto it = by_semaphore_.find(semaphore);
  uint64_t highest = 0;
  if (it != by_semaphore_.end())
    for (const Timepoint& t : it->second) highest = std::max(highest, t.value);
  return highest;
}

void CudaTimepoints::AwaitAdd(uint64_t* seen, Timeout timeout) const {
  MutexLock lock(mu_);
  added_cv_.wait_for(lock.native(), timeout, [&]() REQUIRES(mu_) { return added_ != *seen; });
  *seen = added_;
}

void CudaTimepoints::Remove(const Semaphore* semaphore, CUevent event) {
  MutexLock lock(mu_);
  auto it = by_semaphore_.find(semaphore);
  if (it == by_semaphore_.end()) return;
  auto& list = it->second;
  const size_t before = list.size();
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const Timepoint& t) { return t.event == event; }),
             list.end());
  live_ -= before - list.size();
  // An emptied list keeps its entry and capacity: the next Add for the same semaphore (a
  // timeline signalled once per call) allocates nothing. Bounded: past kKeptEntries, emptied
  // entries of semaphores no longer signalled are dropped.
  if (list.empty() && by_semaphore_.size() > kKeptEntries) by_semaphore_.erase(it);
}

bool CudaTimepoints::Covers(const SemaphoreValue& wait) const {
  MutexLock lock(mu_);
  auto it = by_semaphore_.find(wait.semaphore.get());
  if (it == by_semaphore_.end()) return false;
  for (const Timepoint& t : it->second)
    if (t.value >= wait.value) return true;
  return false;
}

Status CudaTimepoints::OrderStream(const CudaApi& api, const std::vector<SemaphoreValue>& waits,
                                   CUstream stream, uint64_t* ordered) const {
  MutexLock lock(mu_);
  if (live_ == 0) return Status::Ok();
  for (const SemaphoreValue& w : waits) {
    auto it = by_semaphore_.find(w.semaphore.get());
    if (it == by_semaphore_.end()) continue;
    // The first (earliest recorded) timepoint that gets the semaphore far enough.
    for (const Timepoint& t : it->second) {
      if (t.value < w.value) continue;
      if (t.stream == stream) break;  // stream order
      // cuStreamWaitEvent captures the event's current work: a later re-record (after
      // Remove) does not affect this wait.
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamWaitEvent(stream, t.event, 0),
                                 "cuStreamWaitEvent(another stream's work)");
      if (ordered) ++*ordered;
      break;
    }
  }
  return Status::Ok();
}

}  // namespace hexir::hal::cuda
