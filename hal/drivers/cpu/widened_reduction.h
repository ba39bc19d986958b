// f16 and bf16 reductions on backends that reduce no half types (MPI, Gloo): the send elements
// widened to f32 before the collective, its f32 result narrowed into the caller's recv buffer
// after it (rounding to nearest even). Other operations pass through untouched.
//
//   WidenedReduction wide(op, count());
//   ... run the collective over wide.send() / wide.recv(), f32 when wide.widened() ...
//   wide.NarrowResult();
//
// Owns the f32 copies; not thread-safe (one per running collective).
#pragma once

#include <cstdint>
#include <vector>

#include "hal/channel.h"

namespace hexir::hal::cpu {

class WidenedReduction {
 public:
  // `op` on one rank of `rank_count` (a reduce_scatter sends count elements per rank).
  WidenedReduction(const HostChannel::Operation& op, int32_t rank_count);

  // True when `op` reduces f16 or bf16 elements: send() and recv() are f32 copies.
  bool widened() const { return widened_; }
  // The buffers the backend reads and writes: the f32 copies when widened, else op's own.
  const void* send() const { return send_; }
  void* recv() const { return recv_; }
  // Writes the f32 result into op.recv in op's element type (nothing when not widened). Call
  // once the collective completed.
  void NarrowResult() const;

 private:
  const HostChannel::Operation& op_;
  bool widened_ = false;
  std::vector<float> wide_send_, wide_recv_;
  const void* send_ = nullptr;
  void* recv_ = nullptr;
};

}  // namespace hexir::hal::cpu
