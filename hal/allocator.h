// BlockPool: a driver-independent caching allocator of raw memory blocks, used by drivers to
// back their buffers (CPU: aligned host memory; a GPU driver can pass its own alloc/free).
//
// Sizes are rounded to a size class (powers of two up to 1 MiB, then multiples of 1 MiB), so
// a freed block is reused by any later request of the same class. Freed blocks stay cached
// until the cache would exceed `max_cached_bytes`; then the block is returned to the system.
// `max_cached_bytes == 0` disables caching (every Release frees).
//
// Statistics go to the shared DeviceCounters: pool_hits (served from the cache), pool_misses
// (new memory), pool_bytes_cached (bytes held by the cache now).
//
// Ownership: the pool owns cached blocks and frees them on destruction; a block handed out by
// Acquire belongs to the caller until Release. Hold the pool through std::shared_ptr from
// every buffer using it, so buffers may outlive their device.
// Thread-safety: Acquire/Release/Trim are thread-safe (one mutex, held only for list updates;
// the raw alloc/free callbacks run outside it).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "hal/stats.h"

namespace hexir::hal {

class BlockPool {
 public:
  struct Block {
    void* ptr = nullptr;
    uint64_t capacity = 0;  // the size class; >= the requested size
  };
  using AllocFn = std::function<void*(uint64_t capacity)>;  // nullptr on failure
  using FreeFn = std::function<void(void* ptr, uint64_t capacity)>;

  BlockPool(AllocFn alloc, FreeFn free, uint64_t max_cached_bytes,
            std::shared_ptr<DeviceCounters> counters);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The size class of a request (>= 64).
  static uint64_t SizeClass(uint64_t byte_size);

  // A block of at least `byte_size` bytes: a cached one of the same class, or new memory.
  // ResourceExhausted (naming the size) when the allocation fails even after trimming the
  // cache. `*reused` (optional) says whether it came from the cache.
  StatusOr<Block> Acquire(uint64_t byte_size, bool* reused = nullptr);
  // Gives a block back: cached for reuse, or freed when the cache is full.
  void Release(Block block);
  // Frees every cached block.
  void Trim();

  uint64_t cached_bytes() const;

 private:
  AllocFn alloc_;
  FreeFn free_;
  const uint64_t max_cached_bytes_;
  std::shared_ptr<DeviceCounters> counters_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::vector<void*>> cached_;  // size class -> cached blocks
  uint64_t cached_bytes_ = 0;
};

}  // namespace hexir::hal
