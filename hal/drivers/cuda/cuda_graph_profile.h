// Timing the kernels of a CUDA graph inside a replay (hal/profiling.h, CudaProfileMode::
// kGraphReplay): a copy of the graph gets, for each timed kernel node, an event record node
// after the kernel's prerequisites (the nodes it depends on) and one after the kernel. Neither
// is a prerequisite of anything, so the kernels keep their edges (programmatic ones included)
// and run as in the unprofiled replay; a kernel's interval is from the completion of its
// prerequisites to its own completion: what it adds to the graph's critical path where the
// graph is a chain, its whole run where kernels overlap. The copy is instantiated, launched
// and waited for on each call, then destroyed (the template's kernel parameters must be the
// launch's: the caller brings them up to date first).
//
// Ownership: owns its events (created on first use, reused). Thread-safety: none (the owning
// command buffer serializes calls).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "hal/drivers/cuda/cuda_shared.h"

namespace hexir::hal::cuda {

// With HEXIR_CUDA_PROFILE_VERBOSE set, prints (once per reason and process) why a profiled
// submission was timed as stream launches instead of inside graph replay.
void NoteStreamProfiling(const char* why);

class GraphProfile {
 public:
  explicit GraphProfile(std::shared_ptr<CudaShared> shared) : shared_(std::move(shared)) {}
  ~GraphProfile();
  GraphProfile(const GraphProfile&) = delete;
  GraphProfile& operator=(const GraphProfile&) = delete;

  // True when the driver has the functions a profiled copy needs (CUDA 12.3+).
  static bool Supported(const CudaApi& api);

  // Replays a copy of `graph` on `stream` with event record nodes around each of `kernels`
  // (nodes of `graph`), waits for it, and sets (*intervals)[i] to kernels[i]'s interval on the
  // host steady clock (ProfileClockNs); true. False, with nothing queued, where the driver
  // refuses to build or instantiate the copy (*refusal names the call and its error: the
  // caller times the submission another way); an error where the launch or its wait fails.
  StatusOr<bool> Replay(CUgraph graph, const std::vector<CUgraphNode>& kernels, CUstream stream,
                        std::vector<std::pair<int64_t, int64_t>>* intervals,
                        std::string* refusal);

 private:
  // Builds the copy's event nodes; `copy` is destroyed by the caller.
  Status AddEventNodes(CUgraph copy, const std::vector<CUgraphNode>& kernels);

  std::shared_ptr<CudaShared> shared_;
  std::vector<CUevent> events_;  // 2 per kernel (before, after), then the closing one
};

}  // namespace hexir::hal::cuda
