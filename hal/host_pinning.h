// Host memory a GPU's copy engine reads and writes directly ("pinned", page-locked). A GPU
// driver whose transfers are faster from pinned memory (CUDA: one DMA instead of the staging
// ring) installs a HostPinner when it opens a device; host-memory drivers (CPU) then pin the
// blocks of at least kPinnedBlockMinBytes they allocate (PinHostBlock) and unpin them before
// freeing (UnpinHostBlock), so transfers between a CPU device and the GPU in one process run
// at the copy engine's rate. Pinning costs time once per block (CUDA: tens of ms per GiB); the
// drivers' block pools keep blocks for reuse, so it is not paid per transfer.
//
// Ownership: an installed pinner is not owned and must outlive every block it pinned (drivers
// install a process-lifetime object). Thread-safety: every function is thread-safe.
#pragma once

#include <cstdint>

namespace hexir::hal {

class HostPinner {
 public:
  virtual ~HostPinner() = default;
  // Pins [p, p + bytes) (p and bytes multiples of 4096); false leaves it pageable.
  virtual bool Pin(void* p, uint64_t bytes) = 0;
  virtual void Unpin(void* p) = 0;
};

inline constexpr uint64_t kPinnedBlockMinBytes = uint64_t{1} << 20;

// Installs `pinner` for blocks allocated from now on (nullptr: none); blocks pinned before
// keep the pinner that pinned them.
void InstallHostPinner(HostPinner* pinner);

// Pins a block a host-memory driver just allocated when a pinner is installed and the block
// holds at least kPinnedBlockMinBytes (the caller aligns such blocks to 4096 bytes and sizes
// them in multiples of it); remembers it.
void PinHostBlock(void* p, uint64_t bytes);
// Before freeing a block: unpins it if PinHostBlock pinned it.
void UnpinHostBlock(void* p);
// How many blocks are pinned now (tests).
uint64_t PinnedHostBlocks();

}  // namespace hexir::hal
