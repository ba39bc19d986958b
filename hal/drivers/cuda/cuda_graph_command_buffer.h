// A CUDA command buffer replayed as one CUDA graph: built once at Finalize (kernel, memcpy and
// memset nodes; barriers become edges), instantiated at the first submission, launched with
// cuGraphLaunch. A new binding table or indirect count updates only the kernel nodes whose
// pointers or grid changed (cuGraphExecKernelNodeSetParams); never re-instantiated.
//
// A repeat_while is a conditional WHILE node (CUDA 12.4+, cuda_repeat_kernel.h): an enter
// kernel sets its handle from the condition before the node, the body graph holds the body's
// nodes and ends with a step kernel that sets it again; the whole loop is part of the one
// graph launch. Where conditional nodes are unavailable (RepeatConditionKernel's reasons), a
// command buffer holding a repeat runs as stream launches with a host loop instead.
//
// Collectives (NCCL) on direct buffers are captured into child graph nodes at Finalize.
// What a graph cannot express runs as stream launches of the same recording (cuda_recording.h):
// a direct indirect count in device memory or a collective on binding-table slots (every
// submission), a count in a slot bound to
// non-uniform memory or a zero count (that submission), and profiled submissions; the next graph
// launch then brings every node up to date again.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "hal/drivers/cuda/cuda_command_buffer.h"
#include "hal/drivers/cuda/cuda_graph_profile.h"

namespace hexir::hal::cuda {

// Above this many ops a recording keeps whole barriers (OrderCommands holds n^2 bits).
inline constexpr size_t kMaxOpsOrderedByRanges = 8192;

// How a graph's edges are built: HEXIR_CUDA_GRAPH_EDGES, read when a command buffer is
// finalized (README.md, "Graph edges from ranges").
enum class GraphEdges {
  // Unset, "ranges": edges from ranges (when every kernel states its writes), nodes created
  // level by level (LevelOrder), fan-ins between groups through join nodes (PlanJoins).
  kRanges,
  // "ranges-recording-order": edges from ranges, nodes created in recording order, no join
  // nodes (the graphs before level order, for comparison).
  kRangesRecordingOrder,
  // "barriers": every barrier whole (the order the recording states: --schedule=serial as one
  // chain), for comparison and debugging.
  kBarriers,
};
// The setting `value` names (null or empty: kRanges). Any other value gives kRanges and sets
// *warning to a message naming the value and the accepted ones (empty otherwise).
GraphEdges ParseGraphEdges(const char* value, std::string* warning);

// Programmatic dependent launch (PDL) between the kernels of a graph: HEXIR_CUDA_PDL, read
// when a command buffer is finalized (README.md, "Programmatic dependent launch").
enum class ProgrammaticLaunch {
  // Unset, "on", "programmatic": an edge from a kernel node into a kernel whose entry waits
  // for its prerequisites first (CudaEntry::programmatic_wait) is programmatic and leaves from
  // CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC: the next kernel launches once every block of this
  // one executed griddepcontrol.launch_dependents (or exited).
  kProgrammatic,
  // "launch-order": the same edges leave from CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER (once
  // every block of this one started), for comparison.
  kLaunchOrder,
  // "off": every edge full (completion and memory visibility), as before PDL.
  kOff,
};
// The setting `value` names (null or empty: kProgrammatic). Any other value gives
// kProgrammatic and sets *warning to a message naming the value and the accepted ones.
ProgrammaticLaunch ParseProgrammaticLaunch(const char* value, std::string* warning);

struct GraphInfo {
  size_t nodes = 0;
  size_t edges = 0;
  bool instantiated = false;
};

class CudaGraphCommandBuffer final : public CudaCommandBuffer {
 public:
  CudaGraphCommandBuffer(std::shared_ptr<DeviceCounters> counters,
                         std::shared_ptr<CudaShared> shared)
      : CudaCommandBuffer(std::move(counters), std::move(shared)) {}
  ~CudaGraphCommandBuffer() override;

  // Finalized: node and edge counts of the recorded graph.
  StatusOr<GraphInfo> Describe() const EXCLUDES(mu_);

 protected:
  Status OnRecorded() override REQUIRES(mu_);
  Status Launch(const std::vector<BufferRef>& table, CUstream stream) override REQUIRES(mu_);
  // CudaProfileMode::kGraphReplay: a copy of the graph with event nodes (cuda_graph_profile.h)
  // where the graph expresses the whole submission and holds no device loop or collective
  // (those stay profiled as stream launches, as do kStreamLaunches and drivers before 12.3).
  Status LaunchProfiled(const std::vector<BufferRef>& table, CUstream stream,
                        Profiler* profiler) override REQUIRES(mu_);
  void OnProfiledLaunch() override REQUIRES(mu_) { exec_stale_ = true; }

 private:
  // Per recorded kernel: its node, the grid of the next launch and the grid the node launches.
  struct KernelNode {
    CUgraphNode node = nullptr;
    Grid grid = {1, 1, 1};
    Grid exec_grid = {1, 1, 1};
  };
  // Kernel nodes of one recording: [0] the command buffer's own, then each repeat body's.
  struct GraphKernels {
    CudaRecording* recording = nullptr;
    std::vector<KernelNode> nodes;  // per recorded kernel
  };
  // A repeat's two condition kernels (enter before the WHILE node, step at its body's end) and
  // their parameters: handle, condition pointer, counter pointer, limit, first.
  struct RepeatNodes {
    CudaRecording* recording = nullptr;
    size_t index = 0;  // into recording->repeats()
    CUgraphNode enter = nullptr, step = nullptr;
    uint64_t handle = 0, condition = 0, counter = 0;
    uint32_t limit = 0, first = 1, not_first = 0;
  };
  Status BuildGraph() REQUIRES(mu_);
  // Adds the ops of graphs_[g].recording to `graph` after `deps`; `tail` receives the nodes
  // everything after them must wait for.
  Status AddOps(CUgraph graph, size_t g, std::vector<CUgraphNode> deps,
                std::vector<CUgraphNode>* tail) REQUIRES(mu_);
  // AddOps when by_ranges_: edges from OrderCommands over the ops' ranges; notes the slots
  // and direct ranges it assumed apart in stand_in_uses_.
  Status AddOpsByRanges(CUgraph graph, size_t g, const std::vector<CUgraphNode>& deps,
                        std::vector<CUgraphNode>* tail) REQUIRES(mu_);
  // The node(s) of one op of graphs_[g].recording (not a barrier) after `after`; returns the
  // node that later ones follow.
  StatusOr<CUgraphNode> AddOpNode(CUgraph graph, size_t g, const RecordedOp& op,
                                  const std::vector<CUgraphNode>& after) REQUIRES(mu_);
  // By ranges: true when this table's slots alias what the edges assumed apart
  // (StandInsAlias); the submission then runs as stream launches, in recording order.
  bool SlotsAlias(const std::vector<BufferRef>& table, const std::vector<CUdeviceptr>& pointers)
      REQUIRES(mu_);
  // A recorded kernel's node after `after`: the edges from kernel nodes programmatic when
  // pdl_port_ is set and the kernel waits first (a driver refusing them: full edges).
  StatusOr<CUgraphNode> AddKernelNode(CUgraph graph, const RecordedKernel& kernel,
                                      const CUDA_KERNEL_NODE_PARAMS& params,
                                      const std::vector<CUgraphNode>& after) REQUIRES(mu_);
  // The driver refused to instantiate the graph with programmatic edges: the graph is built
  // again with full edges only.
  Status RebuildWithFullEdges() REQUIRES(mu_);
  StatusOr<CUgraphNode> AddRepeatNode(CUgraph graph, size_t g, size_t index,
                                      const std::vector<CUgraphNode>& deps) REQUIRES(mu_);
  CUDA_KERNEL_NODE_PARAMS RepeatParams(RepeatNodes& r, bool first) const REQUIRES(mu_);
  Status Instantiate() REQUIRES(mu_);
  // Reads the indirect counts the host can read into the kernels' next grids; false when a
  // count only the device knows or an empty grid makes this submission stream launches.
  StatusOr<bool> ResolveHostGrids(const std::vector<BufferRef>& table) REQUIRES(mu_);
  // Brings the kernel nodes of graphs_[g] up to date in the executable graph for this launch
  // (slot pointers: last_table_); a refused update inside a repeat body sets reinstantiate_.
  Status UpdateKernels(size_t g, bool slots_changed) REQUIRES(mu_);
  // The template's kernel nodes of graphs_[g] take their current parameters, slot pointers
  // from `pointers` (RefreshAndInstantiate, profiled replays).
  Status SetTemplateKernels(size_t g, const std::vector<CUdeviceptr>& pointers) REQUIRES(mu_);
  Status RefreshAndInstantiate() REQUIRES(mu_);
  StatusOr<CUgraphNode> AddCollectiveNode(size_t index, const std::vector<CUgraphNode>& deps)
      REQUIRES(mu_);
  CUDA_KERNEL_NODE_PARAMS NodeParams(size_t g, size_t kernel) const REQUIRES(mu_);
  // Stream launches of the recording, which change the kernels' parameters under the graph.
  Status LaunchOnStream(const std::vector<BufferRef>& table, CUstream stream) REQUIRES(mu_) {
    exec_stale_ = true;
    return recording_.LaunchOnStream(table, stream);
  }

  std::vector<GraphKernels> graphs_ GUARDED_BY(mu_);
  std::vector<RepeatNodes> repeat_nodes_ GUARDED_BY(mu_);
  // A node of a repeat body could not be updated in the instantiated graph: the template was
  // updated instead and the next launch instantiates again.
  bool reinstantiate_ GUARDED_BY(mu_) = false;
  bool has_nodes_ GUARDED_BY(mu_) = false;
  // Collectives of the graph beside which nodes independent of them run (AddOps), counted
  // at each graph launch.
  uint64_t collectives_overlapped_ GUARDED_BY(mu_) = 0;
  // Slot pointers of the last graph launch.
  std::vector<CUdeviceptr> last_table_ GUARDED_BY(mu_);
  // A stream execution changed the kernels' parameters after instantiation: the next graph
  // launch updates every kernel node.
  bool exec_stale_ GUARDED_BY(mu_) = false;
  // The process's setting when this command buffer was finalized.
  GraphEdges edges_setting_ GUARDED_BY(mu_) = GraphEdges::kRanges;
  // Edges from ranges (AddOpsByRanges) rather than whole barriers; what they assumed apart;
  // the slot ranges last checked against that and the answer (SlotsAlias).
  bool by_ranges_ GUARDED_BY(mu_) = false;
  StandInUses stand_in_uses_ GUARDED_BY(mu_);
  // The port programmatic edges leave from (0: none, every edge full); the nodes of recorded
  // kernels (what a programmatic edge may leave from); the programmatic edges made.
  unsigned char pdl_port_ GUARDED_BY(mu_) = 0;
  std::unordered_set<CUgraphNode> kernel_nodes_ GUARDED_BY(mu_);
  uint64_t programmatic_edges_ GUARDED_BY(mu_) = 0;
  std::vector<ByteRange> checked_slot_ranges_ GUARDED_BY(mu_);
  bool slots_alias_ GUARDED_BY(mu_) = false;
  CUgraph graph_ GUARDED_BY(mu_) = nullptr;
  CUgraphExec exec_ GUARDED_BY(mu_) = nullptr;
  // Profiled replays (created at the first).
  std::unique_ptr<GraphProfile> profile_ GUARDED_BY(mu_);
};

}  // namespace hexir::hal::cuda
