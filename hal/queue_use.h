// Which submission of which queue last used a buffer, so that a host read of the buffer waits
// only for that submission and not for later ones (Device::ReadBufferAfterPendingWork: a host
// loop can read a flag its previous work wrote while its next work is already queued).
//
// A driver whose queue numbers its submissions 1, 2, ... in queue order notes, when a
// submission is put in order (before it can start), every buffer it may touch: its binding
// table and its command buffer's direct buffers (CommandBuffer::direct_buffers). A later read
// on the same queue then waits until submission LastBy(queue) completed: every write of the
// buffer is at or before it (queue order), and no later submission touches it. Any other case
// (never noted, or noted by another queue since) answers "unknown", and the reader waits for
// all of its queue's work, as before.
//
// Thread-safety: Note and LastBy are atomic (one 64-bit word: queue tag and number packed).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace hexir::hal {

class QueueUse {
 public:
  // A process-unique tag for a new queue (wraps after 2^20 queues).
  static uint32_t NewQueueTag() {
    static std::atomic<uint32_t> next{0};
    return (next.fetch_add(1, std::memory_order_relaxed) % kMaxTag) + 1;
  }

  // Submission number `seq` (>= 1) of queue `tag` uses the buffer.
  void Note(uint32_t tag, uint64_t seq) {
    word_.store(uint64_t{tag} << kSeqBits | (seq & kSeqMask), std::memory_order_release);
  }
  // The number of queue `tag`'s last submission that used the buffer; nullopt when no
  // submission did, or another queue's did after it.
  std::optional<uint64_t> LastBy(uint32_t tag) const {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (w == 0 || (w >> kSeqBits) != tag) return std::nullopt;
    return w & kSeqMask;
  }

 private:
  static constexpr int kSeqBits = 44;  // 1.7e13 submissions per queue
  static constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
  static constexpr uint32_t kMaxTag = (1u << (64 - kSeqBits)) - 1;
  std::atomic<uint64_t> word_{0};
};

}  // namespace hexir::hal
