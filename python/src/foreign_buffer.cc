#include "python/src/foreign_buffer.h"

#include <Python.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace hexir::python {
namespace {

struct Deferred {
  std::mutex mu;
  std::vector<std::pair<void*, ReleaseOwner>> items;
  std::atomic<bool> scheduled{false};
  std::atomic<bool> any{false};  // items is not empty (a lock-free check per call)
};

// Never destroyed: buffers can die during interpreter shutdown.
Deferred& deferred() {
  static Deferred* d = new Deferred();
  return *d;
}

int RunDeferredFromPendingCall(void*) {
  deferred().scheduled.store(false);
  RunDeferredReleases();
  return 0;
}

}  // namespace

StatusOr<vm::Ref<hal::Buffer>> WrapPythonOwnedMemory(hal::Device& device, uint64_t address,
                                                     uint64_t byte_size, void* owner,
                                                     ReleaseOwner release) {
  return device.WrapExternalMemory(address, byte_size,
                                   [owner, release] { ReleaseUnderGil(owner, release); });
}

void ReleaseUnderGil(void* owner, ReleaseOwner release) {
  if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to give back to
  if (PyGILState_Check()) {
    release(owner);
    return;
  }
  Deferred& d = deferred();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.items.emplace_back(owner, release);
    d.any.store(true, std::memory_order_release);
  }
  if (!d.scheduled.exchange(true) && Py_AddPendingCall(RunDeferredFromPendingCall, nullptr) != 0)
    d.scheduled.store(false);  // the pending-call queue is full: the next call drains instead
}

void RunDeferredReleases() {
  Deferred& d = deferred();
  if (!d.any.load(std::memory_order_acquire)) return;
  std::vector<std::pair<void*, ReleaseOwner>> items;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    items.swap(d.items);
    d.any.store(false, std::memory_order_relaxed);
  }
  for (auto& [owner, release] : items) release(owner);
}

}  // namespace hexir::python
