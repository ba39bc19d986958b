// A std::mutex the thread-safety analysis understands (base/thread_annotations.h), and the
// scoped lock that holds it.
//
//   Mutex mu_;
//   bool ready_ GUARDED_BY(mu_) = false;
//   std::condition_variable cv_;
//   ...
//   MutexLock lock(mu_);
//   cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return ready_; });
//   lock.Unlock();  // work off the lock; guarded members are now refused by the analysis
//   lock.Lock();
//
// A function that must drop and retake a lock its caller holds is REQUIRES(mu_) and calls
// mu_.Unlock() / mu_.Lock() itself (it must hold the lock again when it returns).
// Thread-safety: as std::mutex.
#pragma once

#include <mutex>

#include "base/thread_annotations.h"

namespace hexir {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // True when the lock was taken (then the caller holds it; MutexLock(mu, std::adopt_lock)).
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // The std::mutex, for std::unique_lock / std::condition_variable (through MutexLock).
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.native()) {}
  // Takes over a lock the caller already holds (after Mutex::TryLock).
  MutexLock(Mutex& mu, std::adopt_lock_t) REQUIRES(mu) : lock_(mu.native(), std::adopt_lock) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }

  // For std::condition_variable::wait / wait_for (which release and retake the lock).
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace hexir
