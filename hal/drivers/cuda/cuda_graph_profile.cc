#include "hal/drivers/cuda/cuda_graph_profile.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>

#include "base/mutex.h"
#include "hal/profiling.h"

namespace hexir::hal::cuda {

// HEXIR_CUDA_PROFILE_VERBOSE set: why a profiled submission ran as stream launches, once per
// reason and process.
void NoteStreamProfiling(const char* why) {
  static const bool verbose = std::getenv("HEXIR_CUDA_PROFILE_VERBOSE") != nullptr;
  if (!verbose) return;
  static Mutex mu;
  static std::unordered_set<std::string>* seen = new std::unordered_set<std::string>();
  MutexLock lock(mu);
  if (seen->insert(why).second) std::fprintf(stderr, "hexir: cuda profiling as stream launches: %s\n", why);
}

GraphProfile::~GraphProfile() {
  if (events_.empty() || !shared_->MakeCurrent().ok()) return;
  for (CUevent e : events_) shared_->api->cuEventDestroy(e);
}

bool GraphProfile::Supported(const CudaApi& api) {
  return api.cuGraphClone && api.cuGraphNodeFindInClone && api.cuGraphNodeGetDependencies &&
         api.cuGraphAddEventRecordNode;
}

Status GraphProfile::AddEventNodes(CUgraph copy, const std::vector<CUgraphNode>& kernels) {
  const CudaApi& api = *shared_->api;
  std::vector<CUgraphNode> deps;
  // The edges' data must be asked for (a programmatic edge makes a query without it
  // CUDA_ERROR_LOSSY_QUERY). A graph with programmatic edges is refused: on the H100
  // (session 35, TinyLlama's decode and prefill graphs, ~900 kernels) event nodes around
  // kernels whose programmatic edges were made full gave per-kernel times summing to 3x the
  // call's wall and intervals ending before they began; such graphs are timed as stream
  // launches. (A graph without them, a 2048^3 GEMM, was timed within 10% of its replay.)
  std::vector<CUgraphEdgeData> edges;
  for (size_t i = 0; i < kernels.size(); ++i) {
    CUgraphNode node = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphNodeFindInClone(&node, kernels[i], copy),
                               "cuGraphNodeFindInClone(profiled kernel ", i, ")");
    size_t count = 0;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphNodeGetDependencies(node, nullptr, nullptr, &count),
                               "cuGraphNodeGetDependencies(profiled kernel ", i, ")");
    deps.resize(count);
    edges.resize(count);
    if (count > 0) {
      HEXIR_CUDA_RETURN_IF_ERROR(
          api, api.cuGraphNodeGetDependencies(node, deps.data(), edges.data(), &count),
          "cuGraphNodeGetDependencies(profiled kernel ", i, ")");
    }
    for (size_t k = 0; k < count; ++k) {
      if (edges[k].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT || edges[k].from_port != 0) {
        return Status(StatusCode::kFailedPrecondition,
                      StrCat("profiled kernel ", i, " follows a programmatic edge (a launch that may "
                             "overlap its predecessor), which event nodes do not time"));
      }
    }
    CUgraphNode before = nullptr, after = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuGraphAddEventRecordNode(&before, copy, deps.data(), count, events_[2 * i]),
        "cuGraphAddEventRecordNode(before profiled kernel ", i, ")");
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuGraphAddEventRecordNode(&after, copy, &node, 1, events_[2 * i + 1]),
        "cuGraphAddEventRecordNode(after profiled kernel ", i, ")");
  }
  return Status::Ok();
}

StatusOr<bool> GraphProfile::Replay(CUgraph graph, const std::vector<CUgraphNode>& kernels,
                                    CUstream stream,
                                    std::vector<std::pair<int64_t, int64_t>>* intervals,
                                    std::string* refusal) {
  const CudaApi& api = *shared_->api;
  while (events_.size() < 2 * kernels.size() + 1) {
    CUevent e = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&e, CU_EVENT_DEFAULT),
                               "cuEventCreate(graph profiling)");
    events_.push_back(e);
  }
  CUgraph copy = nullptr;
  Status built = CudaStatus(api, api.cuGraphClone(&copy, graph), "cuGraphClone(profiling)");
  CUgraphExec exec = nullptr;
  if (built.ok()) built = AddEventNodes(copy, kernels);
  if (built.ok()) {
    built = CudaStatus(api, api.cuGraphInstantiate(&exec, copy, 0),
                       "cuGraphInstantiate(profiled copy)");
  }
  if (copy) api.cuGraphDestroy(copy);  // the executable graph keeps what it needs
  if (!built.ok()) {
    *refusal = built.ToString();
    return false;
  }
  CUevent closing = events_[2 * kernels.size()];
  Status st = CudaStatus(api, api.cuGraphLaunch(exec, stream), "cuGraphLaunch(profiled copy)");
  if (st.ok()) st = CudaStatus(api, api.cuEventRecord(closing, stream), "cuEventRecord(profiling)");
  if (st.ok()) {
    st = CudaStatus(api, api.cuEventSynchronize(closing), "cuEventSynchronize(profiling)");
  }
  const int64_t closing_ns = ProfileClockNs();
  api.cuGraphExecDestroy(exec);  // the launch completed (or was never queued)
  if (!st.ok()) return st;
  intervals->resize(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    float before_ms = 0, after_ms = 0;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventElapsedTime(&before_ms, events_[2 * i], closing),
                               "cuEventElapsedTime(graph profiling)");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventElapsedTime(&after_ms, events_[2 * i + 1], closing),
                               "cuEventElapsedTime(graph profiling)");
    (*intervals)[i] = {closing_ns - static_cast<int64_t>(double(before_ms) * 1e6),
                       closing_ns - static_cast<int64_t>(double(after_ms) * 1e6)};
  }
  // With full edges a kernel ends after its prerequisites; events resolve ~0.5 us, so an
  // interval may end a little before it begins: an empty one. (The replay ran the work: it is
  // not redone on the stream.) One clearly reversed is reported once, and empty too.
  constexpr int64_t kEventResolutionNs = 2000;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto& [begin, end] = (*intervals)[i];
    if (end >= begin) continue;
    static std::atomic<bool> warned{false};
    if (begin - end > kEventResolutionNs && !warned.exchange(true)) {
      std::fprintf(stderr,
                   "hexir: cuda graph profiling: a kernel's replay interval ends %lld ns before "
                   "its prerequisites' event; reported as empty\n",
                   static_cast<long long>(begin - end));
    }
    end = begin;
  }
  return true;
}

}  // namespace hexir::hal::cuda
