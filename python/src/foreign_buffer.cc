#include "python/src/foreign_buffer.h"

#include <Python.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace hexir::python {
namespace {

class ForeignHostBuffer final : public hal::Buffer {
 public:
  ForeignHostBuffer(uint8_t* data, uint64_t byte_size, void* owner, ReleaseOwner release)
      : Buffer(byte_size, hal::kMemoryDeviceLocal | hal::kMemoryHostVisible, nullptr),
        data_(data), owner_(owner), release_(release) {}
  ~ForeignHostBuffer() override { ReleaseUnderGil(owner_, release_); }
  uint8_t* host_data() const override { return data_; }

 private:
  uint8_t* data_;
  void* owner_;
  ReleaseOwner release_;
};

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

vm::Ref<hal::Buffer> WrapForeignHostMemory(uint8_t* data, uint64_t byte_size, void* owner,
                                           ReleaseOwner release) {
  return vm::Ref<hal::Buffer>::Adopt(new ForeignHostBuffer(data, byte_size, owner, release));
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
