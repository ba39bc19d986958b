#include "hal/queue_submission.h"

namespace hexir::hal {

Status CheckQueueSemaphores(std::string_view op, const std::vector<SemaphoreValue>& waits,
                            const std::vector<SemaphoreValue>& signals) {
  for (size_t i = 0; i < waits.size(); ++i) {
    if (!waits[i].semaphore) return InvalidArgument(op, ": wait semaphore ", i, " is null");
  }
  for (size_t i = 0; i < signals.size(); ++i) {
    if (!signals[i].semaphore) return InvalidArgument(op, ": signal semaphore ", i, " is null");
  }
  return Status::Ok();
}

Status ResolveQueueBindingTable(const CommandBuffer* command_buffer,
                                const std::vector<BufferRef>& table,
                                std::vector<BufferRef>* resolved,
                                bool (*usable)(const Buffer& buffer), std::string_view unusable) {
  HEXIR_RETURN_IF_ERROR(ResolveBindingTable(command_buffer, table, resolved));
  for (size_t i = 0; i < resolved->size(); ++i) {
    if (!usable(*(*resolved)[i].buffer)) {
      return InvalidArgument("queue execute: binding table slot ", i, ": ", unusable);
    }
  }
  return Status::Ok();
}

void NoteQueueUse(uint32_t tag, uint64_t seq, const CommandBuffer& command_buffer,
                  const std::vector<BufferRef>& table) {
  for (const BufferRef& r : table) {
    if (r.buffer) r.buffer->queue_use().Note(tag, seq);
  }
  for (Buffer* b : command_buffer.direct_buffers()) b->queue_use().Note(tag, seq);
}

bool KeepUnreachedWaits(const std::vector<SemaphoreValue>& waits, const PendingSignals& queued,
                        DeviceCounters& counters, std::vector<SemaphoreValue>* kept) {
  bool hold = false;
  for (const SemaphoreValue& w : waits) {
    QueueWait kind = ClassifyQueueWait(w, queued, counters);
    if (kind == QueueWait::kReached) continue;  // nothing to do for it, now or later
    kept->push_back(w);
    hold |= kind == QueueWait::kOrdered;
  }
  return hold;
}

}  // namespace hexir::hal
