#include "hal/host_pinning.h"

#include <atomic>
#include <unordered_map>

#include "base/mutex.h"

namespace hexir::hal {
namespace {

std::atomic<HostPinner*> installed{nullptr};

struct PinnedBlocks {
  Mutex mu;
  std::unordered_map<void*, HostPinner*> by_pointer GUARDED_BY(mu);
};

PinnedBlocks& Blocks() {
  static PinnedBlocks* blocks = new PinnedBlocks();  // outlives blocks freed at exit
  return *blocks;
}

}  // namespace

void InstallHostPinner(HostPinner* pinner) { installed.store(pinner, std::memory_order_release); }

void PinHostBlock(void* p, uint64_t bytes) {
  HostPinner* pinner = installed.load(std::memory_order_acquire);
  if (!pinner || !p || bytes < kPinnedBlockMinBytes || !pinner->Pin(p, bytes)) return;
  PinnedBlocks& blocks = Blocks();
  MutexLock lock(blocks.mu);
  blocks.by_pointer[p] = pinner;
}

void UnpinHostBlock(void* p) {
  HostPinner* pinner = nullptr;
  {
    PinnedBlocks& blocks = Blocks();
    MutexLock lock(blocks.mu);
    auto it = blocks.by_pointer.find(p);
    if (it == blocks.by_pointer.end()) return;
    pinner = it->second;
    blocks.by_pointer.erase(it);
  }
  pinner->Unpin(p);
}

uint64_t PinnedHostBlocks() {
  PinnedBlocks& blocks = Blocks();
  MutexLock lock(blocks.mu);
  return blocks.by_pointer.size();
}

}  // namespace hexir::hal
