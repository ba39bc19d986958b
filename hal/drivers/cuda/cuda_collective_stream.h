// Internal to the CUDA driver: the collectives of one recording's stream launches run on a
// stream of their own, ordered by events against the compute stream (the device stream), so
// compute that does not depend on a collective through memory runs while NCCL works
// (hal/command_ranges.h: a command that writes neither its send nor its recv range and does
// not read its recv range need not wait for it).
//
//   compute:     k0 --E_before--. k1(y -> z) ----------------. wait E_after . k2(s) ... join
//   collective:                 `-> all_reduce(x -> s) -> E_after -------'
//
// Per collective: E_before recorded on the compute stream after the work queued before it
// (its barrier: everything recorded before it), the collective stream waits for it, NCCL is
// issued there, E_after recorded. Before each later command the compute stream waits for the
// last in-flight collective the command depends on (DependsOnCollective; the collective
// stream runs them in order, so the earlier ones are done then); a command that depends on
// none of them does not wait, and the collectives in flight beside it count as
// overlapped (`collectives_overlapped`: a property of the recording and the buffers, as on the
// CPU lane, not of timing). The launch ends by joining: the compute stream waits for the last
// collective, so the submission's completion event, the watchdog's event and the next
// submission come after every collective, and collectives keep their order across launches.
//
// Profiling: a timing event pair around each collective on the collective stream; the
// recording maps them onto the host clock with its kernels' (CudaRecording::LaunchProfiled).
//
// Ownership: owns the stream and the events (created at Prepare, destroyed with it).
// Thread-safety: none; the owning recording's command buffer serializes launches.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "hal/command_ranges.h"
#include "hal/drivers/cuda/cuda_shared.h"

namespace hexir::hal::cuda {

class CollectiveStream {
 public:
  explicit CollectiveStream(std::shared_ptr<CudaShared> shared) : shared_(std::move(shared)) {}
  ~CollectiveStream();
  CollectiveStream(const CollectiveStream&) = delete;
  CollectiveStream& operator=(const CollectiveStream&) = delete;

  // Creates the stream and the ordering events of `collectives` collectives (the context must
  // be current). Nothing to do for none.
  Status Prepare(size_t collectives);
  // A launch starts: nothing in flight, nothing counted.
  void BeginLaunch();
  // Orders collective `index` (the next one, in recording order) after the work already on
  // `compute` and returns the stream to issue it on; `profiling`: its begin event is recorded.
  StatusOr<CUstream> Before(size_t index, CUstream compute, bool profiling);
  // After the collective was issued: records its end; `send`/`recv` are its ranges.
  Status After(size_t index, ByteRange send, ByteRange recv, bool profiling);
  // Before a command touching `ranges` goes onto `compute` (see the header comment).
  Status OrderCommand(const CommandRanges& ranges, CUstream compute);
  // `compute` waits for every collective issued in this launch.
  Status Join(CUstream compute);
  // True while a collective of this launch is in flight (not joined).
  bool in_flight() const { return joined_ < issued_.size(); }
  // Collectives of the last launch beside which independent commands were launched.
  uint64_t overlapped() const { return overlapped_; }
  // The profiling events of collective `index` (valid after a profiled launch).
  CUevent begin_event(size_t index) const { return profile_events_[2 * index]; }
  CUevent end_event(size_t index) const { return profile_events_[2 * index + 1]; }
  // The collectives issued in the last launch, in order.
  const std::vector<size_t>& issued() const { return issued_; }

 private:
  struct Flight {
    ByteRange send, recv;
    bool overlapped = false;
  };
  Status Wait(CUstream compute, size_t flight);

  std::shared_ptr<CudaShared> shared_;
  CUstream stream_ = nullptr;
  std::vector<CUevent> before_, after_;  // per collective
  std::vector<CUevent> profile_events_;  // 2 per collective, created on the first profiling
  std::vector<size_t> issued_;           // this launch's collectives (indices), in order
  std::vector<Flight> flights_;          // parallel to issued_
  size_t joined_ = 0;                    // flights_[0, joined_) were waited for
  uint64_t overlapped_ = 0;
};

}  // namespace hexir::hal::cuda
