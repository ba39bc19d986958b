#include "hal/allocator.h"

#include <algorithm>

namespace hexir::hal {

BlockPool::BlockPool(AllocFn alloc, FreeFn free, uint64_t max_cached_bytes,
                     std::shared_ptr<DeviceCounters> counters)
    : alloc_(std::move(alloc)),
      free_(std::move(free)),
      max_cached_bytes_(max_cached_bytes),
      counters_(std::move(counters)) {}

BlockPool::~BlockPool() { Trim(); }

uint64_t BlockPool::SizeClass(uint64_t n) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  if (n <= 64) return 64;
  if (n >= kMiB) return (n + kMiB - 1) / kMiB * kMiB;  // waste < 1 MiB, i.e. < 50%, small for big
  uint64_t c = 64;
  while (c < n) c <<= 1;
  return c;
}

StatusOr<BlockPool::Block> BlockPool::Acquire(uint64_t byte_size, bool* reused) {
  const uint64_t capacity = SizeClass(byte_size);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cached_.find(capacity);
    if (it != cached_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= capacity;
      if (counters_) {
        DeviceCounters::Add(counters_->pool_hits);
        DeviceCounters::Sub(counters_->pool_bytes_cached, capacity);
      }
      if (reused) *reused = true;
      return Block{p, capacity};
    }
  }
  void* p = alloc_(capacity);
  if (p == nullptr) {
    // Cached blocks of other classes may be what is missing.
    Trim();
    p = alloc_(capacity);
    if (p == nullptr) {
      return ResourceExhausted("out of memory allocating ", byte_size, " bytes (size class ",
                               capacity, ")");
    }
  }
  if (counters_) DeviceCounters::Add(counters_->pool_misses);
  if (reused) *reused = false;
  return Block{p, capacity};
}

void BlockPool::Release(Block block) {
  if (block.ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + block.capacity <= max_cached_bytes_) {
      cached_[block.capacity].push_back(block.ptr);
      cached_bytes_ += block.capacity;
      if (counters_) DeviceCounters::Add(counters_->pool_bytes_cached, block.capacity);
      return;
    }
  }
  free_(block.ptr, block.capacity);
}

void BlockPool::Trim() {
  std::map<uint64_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(cached_);
    if (counters_) DeviceCounters::Sub(counters_->pool_bytes_cached, cached_bytes_);
    cached_bytes_ = 0;
  }
  for (auto& [capacity, list] : blocks) {
    for (void* p : list) free_(p, capacity);
  }
}

uint64_t BlockPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

}  // namespace hexir::hal
