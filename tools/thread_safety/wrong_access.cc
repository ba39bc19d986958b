// Must NOT compile under tools/check_thread_safety.sh: proves the check is live (a guarded
// member written after the lock was released, and a REQUIRES function called without it).
#include "base/mutex.h"

namespace {

class Counter {
 public:
  void Bump() {
    hexir::MutexLock lock(mu_);
    ++count_;
    lock.Unlock();
    ++count_;  // expected: writing variable 'count_' requires holding mutex 'mu_'
    BumpLocked();  // expected: calling function 'BumpLocked' requires holding mutex 'mu_'
  }

 private:
  void BumpLocked() REQUIRES(mu_) { ++count_; }

  hexir::Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Counter c;
  c.Bump();
  return 0;
}
