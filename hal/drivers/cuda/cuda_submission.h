// One queue submission of the CUDA device, and the two containers that keep the submission
// path free of heap allocation in the steady state (README "Queue and timeline semaphores"):
//
// - SubmissionPool recycles Submission objects: a retired submission is cleared (its buffer,
//   command-buffer and semaphore references dropped) but its vectors keep their capacity, so
//   the next submission's binding table, waits and signals are copied into storage that
//   already exists.
// - SubmissionFifo is a ring of owned submissions (the device's held-back and in-flight
//   queues): push and pop move one pointer; the ring grows by doubling and never shrinks.
//
// Thread-safety: none; the device guards both with its queue lock.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "hal/command_buffer.h"
#include "hal/drivers/cuda/cuda_command_buffer.h"
#include "hal/semaphore.h"

namespace hexir::hal::cuda {

struct Submission {
  // Waits kept after submission: held-back ones, and those implied by queue order (checked
  // for a failed producer when the submission retires). Reached waits are dropped.
  std::vector<SemaphoreValue> waits;
  vm::Ref<CudaCommandBuffer> command_buffer;  // null: a staging copy of a read
  std::vector<SemaphoreValue> signals;
  std::vector<BufferRef> binding_table;
  // Pending argument readiness awaited per command (cuda_argument_gate.h), one
  // per semaphore at its highest value: the execution is gated (stream launches with waits),
  // and a failed one fails the submission when it retires.
  std::vector<SemaphoreValue> argument_waits;
  CUevent event = nullptr;
  bool pooled_event = true;  // false: the staging event, which stays with the device
  uint64_t seq = 0;          // position on the stream (1, 2, ...), set when enqueued

  // Drops every reference and resets the fields; the vectors keep their capacity.
  void Clear() {
    waits.clear();
    command_buffer.reset();
    signals.clear();
    binding_table.clear();
    argument_waits.clear();
    event = nullptr;
    pooled_event = true;
    seq = 0;
  }
};

// Cleared submissions ready for reuse; keeps at most `max_kept` (more are freed).
class SubmissionPool {
 public:
  explicit SubmissionPool(size_t max_kept) : max_kept_(max_kept) {}

  // A cleared submission: a recycled one when there is one, else a new one.
  std::unique_ptr<Submission> Take() {
    if (free_.empty()) return std::make_unique<Submission>();
    std::unique_ptr<Submission> s = std::move(free_.back());
    free_.pop_back();
    return s;
  }
  // `s` must be cleared (Submission::Clear), so that no reference outlives its submission.
  void Give(std::unique_ptr<Submission> s) {
    if (free_.size() < max_kept_) free_.push_back(std::move(s));
  }
  size_t kept() const { return free_.size(); }

 private:
  size_t max_kept_;
  std::vector<std::unique_ptr<Submission>> free_;
};

// First in, first out, over a power-of-two ring of owned submissions.
class SubmissionFifo {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  Submission& front() { return *slots_[head_]; }
  const Submission& front() const { return *slots_[head_]; }
  Submission& back() { return *slots_[(head_ + count_ - 1) & (slots_.size() - 1)]; }

  void push_back(std::unique_ptr<Submission> s) {
    if (count_ == slots_.size()) Grow();
    slots_[(head_ + count_) & (slots_.size() - 1)] = std::move(s);
    ++count_;
  }
  std::unique_ptr<Submission> pop_front() {
    std::unique_ptr<Submission> s = std::move(slots_[head_]);
    head_ = (head_ + 1) & (slots_.size() - 1);
    --count_;
    return s;
  }

 private:
  void Grow() {
    std::vector<std::unique_ptr<Submission>> bigger(slots_.empty() ? 16 : 2 * slots_.size());
    for (size_t i = 0; i < count_; ++i)
      bigger[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<std::unique_ptr<Submission>> slots_;  // size 0 or a power of two
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace hexir::hal::cuda
