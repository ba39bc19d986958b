#include "hal/buffer.h"

namespace hexir::hal {

Buffer::Buffer(uint64_t byte_size, uint32_t memory_types,
               std::shared_ptr<DeviceCounters> counters)
    : byte_size_(byte_size), memory_types_(memory_types), counters_(std::move(counters)) {
  if (counters_) {
    DeviceCounters::Add(counters_->buffers_allocated);
    DeviceCounters::Add(counters_->buffer_bytes_allocated, byte_size_);
    DeviceCounters::Add(counters_->buffers_live);
    uint64_t live = counters_->buffer_bytes_live.fetch_add(byte_size_, std::memory_order_relaxed);
    DeviceCounters::Max(counters_->buffer_bytes_peak, live + byte_size_);
  }
}

Buffer::~Buffer() {
  if (counters_) {
    DeviceCounters::Sub(counters_->buffers_live);
    DeviceCounters::Sub(counters_->buffer_bytes_live, byte_size_);
  }
}

void Buffer::SetReadyAfter(SemaphoreValue ready) {
  ready_semaphore_ = std::move(ready.semaphore);
  ready_value_ = ready.value;
  ready_pending_.store(static_cast<bool>(ready_semaphore_), std::memory_order_release);
}

bool Buffer::PendingReady(SemaphoreValue* ready) const {
  if (!ready_pending_.load(std::memory_order_acquire)) return false;
  StatusOr<uint64_t> value = ready_semaphore_->Query();
  if (value.ok() && *value >= ready_value_) {
    ready_pending_.store(false, std::memory_order_release);
    return false;
  }
  *ready = {ready_semaphore_, ready_value_};
  return true;
}

}  // namespace hexir::hal
