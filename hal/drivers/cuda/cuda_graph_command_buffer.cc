#include "hal/drivers/cuda/cuda_graph_command_buffer.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hal/drivers/cuda/cuda_repeat_kernel.h"

namespace hexir::hal::cuda {
namespace {

CUDA_MEMCPY3D Copy1D(CUdeviceptr dst, CUdeviceptr src, uint64_t n) {
  CUDA_MEMCPY3D p;
  std::memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;  // UVA: pool memory and mapped pinned memory alike
  p.srcDevice = src;
  p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.dstDevice = dst;
  p.WidthInBytes = n;
  p.Height = 1;
  p.Depth = 1;
  return p;
}

// The environment's setting, read at each Finalize (cheap next to building a graph, and a
// benchmark may compare settings in one process); an unknown value is reported once.
GraphEdges GraphEdgesFromEnvironment() {
  std::string warning;
  const GraphEdges edges = ParseGraphEdges(std::getenv("HEXIR_CUDA_GRAPH_EDGES"), &warning);
  static std::atomic<bool> warned{false};
  if (!warning.empty() && !warned.exchange(true)) std::fprintf(stderr, "hexir: %s\n", warning.c_str());
  return edges;
}

ProgrammaticLaunch ProgrammaticLaunchFromEnvironment() {
  std::string warning;
  const ProgrammaticLaunch pdl = ParseProgrammaticLaunch(std::getenv("HEXIR_CUDA_PDL"), &warning);
  static std::atomic<bool> warned{false};
  if (!warning.empty() && !warned.exchange(true)) std::fprintf(stderr, "hexir: %s\n", warning.c_str());
  return pdl;
}

}  // namespace

ProgrammaticLaunch ParseProgrammaticLaunch(const char* value, std::string* warning) {
  warning->clear();
  if (value == nullptr || *value == '\0' || std::strcmp(value, "on") == 0 ||
      std::strcmp(value, "programmatic") == 0) {
    return ProgrammaticLaunch::kProgrammatic;
  }
  if (std::strcmp(value, "launch-order") == 0) return ProgrammaticLaunch::kLaunchOrder;
  if (std::strcmp(value, "off") == 0) return ProgrammaticLaunch::kOff;
  *warning = StrCat("HEXIR_CUDA_PDL='", value,
                    "' is not a setting (accepted: on, programmatic, launch-order, off); "
                    "using programmatic");
  return ProgrammaticLaunch::kProgrammatic;
}

GraphEdges ParseGraphEdges(const char* value, std::string* warning) {
  warning->clear();
  if (value == nullptr || *value == '\0' || std::strcmp(value, "ranges") == 0) return GraphEdges::kRanges;
  if (std::strcmp(value, "ranges-recording-order") == 0) return GraphEdges::kRangesRecordingOrder;
  if (std::strcmp(value, "barriers") == 0) return GraphEdges::kBarriers;
  *warning = StrCat("HEXIR_CUDA_GRAPH_EDGES='", value,
                    "' is not a setting (accepted: ranges, ranges-recording-order, barriers); "
                    "using ranges");
  return GraphEdges::kRanges;
}

CudaGraphCommandBuffer::~CudaGraphCommandBuffer() {
  if (!shared_->MakeCurrent().ok()) return;
  MutexLock lock(mu_);  // no one else holds it: the last reference is gone
  const CudaApi& api = *shared_->api;
  if (exec_) api.cuGraphExecDestroy(exec_);
  if (graph_) api.cuGraphDestroy(graph_);
}

Status CudaGraphCommandBuffer::OnRecorded() {
  // Always stream launches: a count only the device knows, or a collective on slot buffers.
  if (recording_.indirect_on_device() || recording_.has_slot_collectives()) return Status::Ok();
  // ... or a repeat where conditional nodes are unavailable (the host loops instead).
  if (recording_.has_repeats() && !RepeatConditionKernel(*shared_).ok()) return Status::Ok();
  graphs_.push_back({&recording_, {}});
  for (size_t r = 0; r < recording_.repeats().size(); ++r) {
    graphs_.push_back({recording_.repeats()[r].body.get(), {}});
  }
  // Ordered by ranges when every kernel's module states its writes (a hand-written kernel's
  // may write any binding: barriers stay whole), within OrderCommands' n^2 bits.
  edges_setting_ = GraphEdgesFromEnvironment();
  by_ranges_ = edges_setting_ != GraphEdges::kBarriers;
  // Programmatic edges are added with cuGraphAddNode (CUDA 12.3+; absent: full edges).
  switch (shared_->api->cuGraphAddNode ? ProgrammaticLaunchFromEnvironment()
                                       : ProgrammaticLaunch::kOff) {
    case ProgrammaticLaunch::kProgrammatic: pdl_port_ = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC; break;
    case ProgrammaticLaunch::kLaunchOrder: pdl_port_ = CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER; break;
    case ProgrammaticLaunch::kOff: pdl_port_ = 0; break;
  }
  for (GraphKernels& g : graphs_) {
    by_ranges_ = by_ranges_ && g.recording->writes_stated() &&
                 g.recording->ops().size() <= kMaxOpsOrderedByRanges;
  }
  for (GraphKernels& g : graphs_) {
    g.nodes.resize(g.recording->kernels().size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const RecordedKernel& k = g.recording->kernels()[i];
      if (!k.indirect) g.nodes[i].grid = g.nodes[i].exec_grid = k.command->workgroup_count;
    }
  }
  return BuildGraph();
}

CUDA_KERNEL_NODE_PARAMS CudaGraphCommandBuffer::NodeParams(size_t g, size_t kernel) const {
  const RecordedKernel& k = graphs_[g].recording->kernels()[kernel];
  const Grid& grid = graphs_[g].nodes[kernel].grid;
  CUDA_KERNEL_NODE_PARAMS p;
  std::memset(&p, 0, sizeof(p));
  p.func = k.entry->function;
  p.gridDimX = grid[0];
  p.gridDimY = grid[1];
  p.gridDimZ = grid[2];
  p.blockDimX = k.entry->block_size[0];
  p.blockDimY = k.entry->block_size[1];
  p.blockDimZ = k.entry->block_size[2];
  p.sharedMemBytes = k.entry->shared_bytes;
  p.kernelParams = const_cast<void**>(k.params.data());
  return p;
}

Status CudaGraphCommandBuffer::BuildGraph() {
  const CudaApi& api = *shared_->api;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphCreate(&graph_, 0), "cuGraphCreate");
  std::vector<CUgraphNode> tail;
  HEXIR_RETURN_IF_ERROR(AddOps(graph_, 0, {}, &tail));
  size_t nodes = 0, edges = 0;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphGetNodes(graph_, nullptr, &nodes), "cuGraphGetNodes");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphGetEdges(graph_, nullptr, nullptr, nullptr, &edges),
                             "cuGraphGetEdges");
  shared_->counters.graph_nodes.fetch_add(nodes, std::memory_order_relaxed);
  shared_->counters.graph_edges.fetch_add(edges, std::memory_order_relaxed);
  shared_->counters.programmatic_edges.fetch_add(programmatic_edges_, std::memory_order_relaxed);
  return Status::Ok();
}

Status CudaGraphCommandBuffer::RebuildWithFullEdges() {
  const CudaApi& api = *shared_->api;
  api.cuGraphDestroy(graph_);
  graph_ = nullptr;
  pdl_port_ = 0;
  kernel_nodes_.clear();
  repeat_nodes_.clear();
  stand_in_uses_ = StandInUses();
  collectives_overlapped_ = 0;
  programmatic_edges_ = 0;
  has_nodes_ = false;
  return BuildGraph();
}

StatusOr<CUgraphNode> CudaGraphCommandBuffer::AddKernelNode(CUgraph graph,
                                                            const RecordedKernel& kernel,
                                                            const CUDA_KERNEL_NODE_PARAMS& p,
                                                            const std::vector<CUgraphNode>& after) {
  const CudaApi& api = *shared_->api;
  CUgraphNode node = nullptr;
  if (pdl_port_ != 0 && kernel.entry->programmatic_wait) {
    std::vector<CUgraphEdgeData> edges(after.size());  // value-initialized: full edges
    size_t programmatic = 0;
    for (size_t i = 0; i < after.size(); ++i) {
      if (kernel_nodes_.count(after[i]) == 0) continue;  // a copy, fill, join or loop: full
      edges[i].from_port = pdl_port_;
      edges[i].type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      ++programmatic;
    }
    if (programmatic > 0) {
      CUgraphNodeParams params;
      std::memset(&params, 0, sizeof(params));
      params.type = CU_GRAPH_NODE_TYPE_KERNEL;
      params.kernel.func = p.func;
      params.kernel.gridDimX = p.gridDimX;
      params.kernel.gridDimY = p.gridDimY;
      params.kernel.gridDimZ = p.gridDimZ;
      params.kernel.blockDimX = p.blockDimX;
      params.kernel.blockDimY = p.blockDimY;
      params.kernel.blockDimZ = p.blockDimZ;
      params.kernel.sharedMemBytes = p.sharedMemBytes;
      params.kernel.kernelParams = p.kernelParams;
      const CUresult r = api.cuGraphAddNode(&node, graph, after.data(), edges.data(),
                                            after.size(), &params);
      if (r == CUDA_SUCCESS) {
        programmatic_edges_ += programmatic;
        return node;
      }
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        std::fprintf(stderr, "hexir: cuda graph: programmatic edges into '%s' refused (%s); "
                     "full edges instead\n", kernel.name().c_str(), CudaErrorText(api, r).c_str());
      }
    }
  }
  HEXIR_CUDA_RETURN_IF_ERROR(
      api, api.cuGraphAddKernelNode(&node, graph, after.data(), after.size(), &p),
      "cuGraphAddKernelNode('", kernel.name(), "')");
  return node;
}

// Without stated writes (by_ranges_ false), barriers become edges: every node depends on the
// nodes of the previous barrier segment;
// nodes between two barriers get no edges among themselves and may run concurrently. A
// segment of several nodes is joined through one empty node, so a barrier between N and M
// nodes costs N + M edges rather than N * M.
//
// Collectives (recorded between two barriers) are parallel branches, as on the collective
// stream of stream launches (cuda_collective_stream.h): a collective depends on the segment
// before it and on the previous collective (they run in recording order on every rank); a
// later node depends on it only when the node touches its send or recv range (a kernel on
// slots touches everything: its buffers are known only at launch), so the nodes in between
// run beside it and count it as overlapped. The graph's tail includes the last collective.
Status CudaGraphCommandBuffer::AddOps(CUgraph graph, size_t g, std::vector<CUgraphNode> deps,
                                      std::vector<CUgraphNode>* tail) {
  if (by_ranges_) return AddOpsByRanges(graph, g, deps, tail);
  const CudaApi& api = *shared_->api;
  CudaRecording& recording = *graphs_[g].recording;
  std::vector<CUgraphNode> segment;
  struct Branch {
    CUgraphNode node;
    ByteRange send, recv;
    bool overlapped = false;
  };
  std::vector<Branch> branches;  // collectives, in recording order
  size_t joined = 0;             // branches[0, joined) precede every later node
  CommandRanges ranges;
  for (const RecordedOp& op : recording.ops()) {
    CUgraphNode node = nullptr;
    std::vector<CUgraphNode> after = deps;
    if (op.kind != RecordedOp::kBarrier && op.kind != RecordedOp::kCollective &&
        joined < branches.size()) {
      ranges.clear();
      recording.OpRanges(op, nullptr, &ranges);
      for (size_t i = branches.size(); i-- > joined;) {
        if (!DependsOnCollective(ranges, branches[i].send, branches[i].recv)) continue;
        after.push_back(branches[i].node);  // the earlier ones precede it
        joined = i + 1;
        break;
      }
      for (size_t i = joined; i < branches.size(); ++i) branches[i].overlapped = true;
    }
    if (op.kind == RecordedOp::kBarrier) {
      if (segment.size() > 1) {
        HEXIR_CUDA_RETURN_IF_ERROR(
            api, api.cuGraphAddEmptyNode(&node, graph, segment.data(), segment.size()),
            "cuGraphAddEmptyNode(barrier)");
        deps = {node};
      } else if (segment.size() == 1) {
        deps = segment;
      }
      segment.clear();
      continue;
    }
    if (op.kind == RecordedOp::kCollective) {
      if (!branches.empty()) after.push_back(branches.back().node);
      HEXIR_ASSIGN_OR_RETURN(node, AddCollectiveNode(op.index, after));
      HEXIR_ASSIGN_OR_RETURN(NcclChannel::Operation c,
                             recording.ResolveCollective(op.index, nullptr, nullptr));
      auto [send, recv] = CudaRecording::CollectiveRanges(recording.collectives()[op.index], c);
      branches.push_back({node, send, recv});
      has_nodes_ = true;
      continue;  // a branch, not a member of its segment
    }
    HEXIR_ASSIGN_OR_RETURN(node, AddOpNode(graph, g, op, after));
    segment.push_back(node);
    has_nodes_ = true;
  }
  *tail = segment.empty() ? deps : segment;
  if (joined < branches.size()) tail->push_back(branches.back().node);
  for (const Branch& b : branches) collectives_overlapped_ += b.overlapped ? 1 : 0;
  return Status::Ok();
}

StatusOr<CUgraphNode> CudaGraphCommandBuffer::AddOpNode(CUgraph graph, size_t g,
                                                         const RecordedOp& op,
                                                         const std::vector<CUgraphNode>& after) {
  const CudaApi& api = *shared_->api;
  CudaRecording& recording = *graphs_[g].recording;
  CUgraphNode node = nullptr;
  switch (op.kind) {
    case RecordedOp::kKernel: {
      CUDA_KERNEL_NODE_PARAMS p = NodeParams(g, op.index);
      HEXIR_ASSIGN_OR_RETURN(node, AddKernelNode(graph, recording.kernels()[op.index], p, after));
      graphs_[g].nodes[op.index].node = node;
      kernel_nodes_.insert(node);
      return node;
    }
    case RecordedOp::kCopy: {
      const RecordedCopy& c = recording.copies()[op.index];
      if (!c.via_scratch) {
        CUDA_MEMCPY3D a = Copy1D(c.dst, c.src, c.length);
        HEXIR_CUDA_RETURN_IF_ERROR(api,
                                   api.cuGraphAddMemcpyNode(&node, graph, after.data(),
                                                            after.size(), &a, shared_->context),
                                   "cuGraphAddMemcpyNode(", c.length, " bytes)");
        return node;
      }
      CUgraphNode first = nullptr;
      CUDA_MEMCPY3D a = Copy1D(recording.scratch(), c.src, c.length);
      HEXIR_CUDA_RETURN_IF_ERROR(api,
                                 api.cuGraphAddMemcpyNode(&first, graph, after.data(),
                                                          after.size(), &a, shared_->context),
                                 "cuGraphAddMemcpyNode(", c.length, " bytes to scratch)");
      CUDA_MEMCPY3D b = Copy1D(c.dst, recording.scratch(), c.length);
      HEXIR_CUDA_RETURN_IF_ERROR(
          api, api.cuGraphAddMemcpyNode(&node, graph, &first, 1, &b, shared_->context),
          "cuGraphAddMemcpyNode(", c.length, " bytes from scratch)");
      return node;
    }
    case RecordedOp::kRepeat:
      return AddRepeatNode(graph, g, op.index, after);
    case RecordedOp::kFill: {
      const RecordedFill& f = recording.fills()[op.index];
      CUDA_MEMSET_NODE_PARAMS p;
      std::memset(&p, 0, sizeof(p));
      p.dst = f.dst;
      p.value = f.pattern;
      p.elementSize = f.pattern_size;
      p.width = f.length / f.pattern_size;
      p.height = 1;
      HEXIR_CUDA_RETURN_IF_ERROR(api,
                                 api.cuGraphAddMemsetNode(&node, graph, after.data(),
                                                          after.size(), &p, shared_->context),
                                 "cuGraphAddMemsetNode(", f.length, " bytes)");
      return node;
    }
    case RecordedOp::kCollective:
      return AddCollectiveNode(op.index, after);
    case RecordedOp::kBarrier:
      break;
  }
  return Internal("cuda graph: a barrier has no node");
}

// Edges from ranges (hal/command_ranges.h OrderCommands): each node follows exactly the
// earlier nodes it conflicts with across a barrier (or with a collective), none implied by a
// path through another. Slots are stand-ins here; Launch checks each new table against them
// (SlotsAlias). Nodes are created level by level (LevelOrder), and a group of nodes with the
// same several dependences follows them through one empty node (PlanJoins), unless
// HEXIR_CUDA_GRAPH_EDGES=ranges-recording-order. The tail: every node no other node follows.
Status CudaGraphCommandBuffer::AddOpsByRanges(CUgraph graph, size_t g,
                                              const std::vector<CUgraphNode>& deps,
                                              std::vector<CUgraphNode>* tail) {
  const CudaApi& api = *shared_->api;
  CudaRecording& recording = *graphs_[g].recording;
  HEXIR_ASSIGN_OR_RETURN(std::vector<OrderedCommand> commands, recording.OrderedCommands());
  const std::vector<std::vector<uint32_t>> order = OrderCommands(commands);
  for (const OrderedCommand& c : commands) stand_in_uses_.Add(c.ranges);
  const std::vector<RecordedOp>& ops = recording.ops();
  const bool by_level = edges_setting_ == GraphEdges::kRanges;
  std::vector<uint32_t> creation;
  JoinPlan joins;
  if (by_level) {
    creation = LevelOrder(order);
    joins = PlanJoins(order);
  } else {
    for (uint32_t i = 0; i < ops.size(); ++i) creation.push_back(i);
    joins.join_of.assign(ops.size(), -1);
  }
  std::vector<CUgraphNode> node_of(ops.size(), nullptr), join_node(joins.joins.size(), nullptr);
  std::vector<bool> followed(ops.size(), false);
  std::vector<CUgraphNode> after;
  for (uint32_t i : creation) {
    if (ops[i].kind == RecordedOp::kBarrier) continue;
    after.clear();
    if (order[i].empty()) after = deps;
    for (uint32_t d : order[i]) {
      after.push_back(node_of[d]);
      followed[d] = true;
    }
    if (const int32_t j = joins.join_of[i]; j >= 0) {
      // The first of the group creates the join (its dependences all exist: lower levels).
      if (join_node[j] == nullptr) {
        HEXIR_CUDA_RETURN_IF_ERROR(
            api, api.cuGraphAddEmptyNode(&join_node[j], graph, after.data(), after.size()),
            "cuGraphAddEmptyNode(join of ", after.size(), " nodes)");
      }
      after.assign(1, join_node[j]);
    }
    HEXIR_ASSIGN_OR_RETURN(node_of[i], AddOpNode(graph, g, ops[i], after));
    has_nodes_ = true;
  }
  for (size_t c = 0; c < ops.size(); ++c) {
    if (ops[c].kind != RecordedOp::kCollective) continue;
    // Descendants of c, in recording order (a node's dependences come before it).
    std::vector<bool> descends(ops.size(), false);
    bool overlapped = false;
    // Overlapped: a later node (not a collective) runs beside it, not after it.
    for (size_t j = c + 1; j < ops.size() && !overlapped; ++j) {
      for (uint32_t d : order[j]) descends[j] = descends[j] || d == c || descends[d];
      overlapped = ops[j].kind != RecordedOp::kBarrier &&
                   ops[j].kind != RecordedOp::kCollective && !descends[j];
    }
    collectives_overlapped_ += overlapped ? 1 : 0;
  }
  tail->clear();
  for (size_t i = 0; i < ops.size(); ++i)
    if (node_of[i] != nullptr && !followed[i]) tail->push_back(node_of[i]);
  if (tail->empty()) *tail = deps;
  return Status::Ok();
}

CUDA_KERNEL_NODE_PARAMS CudaGraphCommandBuffer::RepeatParams(RepeatNodes& r, bool first) const {
  CUDA_KERNEL_NODE_PARAMS p;
  std::memset(&p, 0, sizeof(p));
  p.func = *RepeatConditionKernel(*shared_);  // checked in OnRecorded
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = p.blockDimY = p.blockDimZ = 1;
  // Parameters are copied when the node is added or updated: pointers into `r` suffice.
  thread_local void* params[2][5];
  void** q = params[first ? 0 : 1];
  q[0] = &r.handle;
  q[1] = &r.condition;
  q[2] = &r.counter;
  q[3] = &r.limit;
  q[4] = first ? &r.first : &r.not_first;
  p.kernelParams = q;
  return p;
}

// enter -> WHILE{ body ops..., step }: see cuda_repeat_kernel.h.
StatusOr<CUgraphNode> CudaGraphCommandBuffer::AddRepeatNode(CUgraph graph, size_t g,
                                                            size_t index,
                                                            const std::vector<CUgraphNode>& deps) {
  const CudaApi& api = *shared_->api;
  CudaRecording& recording = *graphs_[g].recording;
  const RecordedRepeat& rep = recording.repeats()[index];
  size_t body_graph = 0;  // graphs_ index of the body: bodies follow their parent, in order
  for (size_t i = 1; i < graphs_.size(); ++i)
    if (graphs_[i].recording == rep.body.get()) body_graph = i;
  RepeatNodes r;
  r.recording = &recording;
  r.index = index;
  r.condition = rep.condition;  // a slot's pointer is set at the first launch
  r.counter = rep.counter;
  r.limit = rep.command->max_iterations;
  CUgraphConditionalHandle handle = 0;
  HEXIR_CUDA_RETURN_IF_ERROR(
      api, api.cuGraphConditionalHandleCreate(&handle, graph, shared_->context, 0, 0),
      "cuGraphConditionalHandleCreate(repeat_while)");
  r.handle = handle;
  CUDA_KERNEL_NODE_PARAMS enter = RepeatParams(r, /*first=*/true);
  HEXIR_CUDA_RETURN_IF_ERROR(
      api, api.cuGraphAddKernelNode(&r.enter, graph, deps.data(), deps.size(), &enter),
      "cuGraphAddKernelNode(repeat_while condition)");
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof(params));
  params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  params.conditional.handle = handle;
  params.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  params.conditional.size = 1;
  params.conditional.ctx = shared_->context;
  CUgraphNode node = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphAddNode(&node, graph, &r.enter, nullptr, 1, &params),
                             "cuGraphAddNode(repeat_while WHILE node)");
  CUgraph body = params.conditional.phGraph_out[0];
  std::vector<CUgraphNode> tail;
  HEXIR_RETURN_IF_ERROR(AddOps(body, body_graph, {}, &tail));
  CUDA_KERNEL_NODE_PARAMS step = RepeatParams(r, /*first=*/false);
  HEXIR_CUDA_RETURN_IF_ERROR(
      api, api.cuGraphAddKernelNode(&r.step, body, tail.data(), tail.size(), &step),
      "cuGraphAddKernelNode(repeat_while step)");
  repeat_nodes_.push_back(r);
  return node;
}

// NCCL calls become graph nodes by stream capture: the collective is issued on a capturing
// side stream and the captured graph is added as a child node (its buffers are direct, so the
// captured pointers stay valid for every replay).
StatusOr<CUgraphNode> CudaGraphCommandBuffer::AddCollectiveNode(
    size_t index, const std::vector<CUgraphNode>& deps) {
  const CudaApi& api = *shared_->api;
  CUstream side = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamCreate(&side, CU_STREAM_NON_BLOCKING),
                             "cuStreamCreate(collective capture)");
  CUgraph captured = nullptr;
  Status st = CudaStatus(api, api.cuStreamBeginCapture(side, CU_STREAM_CAPTURE_MODE_RELAXED),
                         "cuStreamBeginCapture(collective)");
  if (st.ok()) {
    st = recording_.IssueCollective(index, nullptr, nullptr, side);
    CUresult end = api.cuStreamEndCapture(side, &captured);
    if (st.ok()) st = CudaStatus(api, end, "cuStreamEndCapture(collective)");
  }
  CUgraphNode node = nullptr;
  if (st.ok()) {
    st = CudaStatus(api, api.cuGraphAddChildGraphNode(&node, graph_, deps.data(), deps.size(),
                                                      captured),
                    "cuGraphAddChildGraphNode(collective)");
  }
  if (captured) api.cuGraphDestroy(captured);  // the node holds a copy
  api.cuStreamDestroy(side);
  if (!st.ok()) return st;
  return node;
}

Status CudaGraphCommandBuffer::Launch(const std::vector<BufferRef>& table, CUstream stream) {
  if (graphs_.empty()) return LaunchOnStream(table, stream);  // OnRecorded chose the stream
  if (!has_nodes_) return Status::Ok();  // nothing to run (CUDA graphs may not be empty)
  HEXIR_ASSIGN_OR_RETURN(bool graph_grids, ResolveHostGrids(table));
  if (!graph_grids) return LaunchOnStream(table, stream);
  const CudaApi& api = *shared_->api;
  CudaCounters& counters = shared_->counters;
  if (exec_ == nullptr) HEXIR_RETURN_IF_ERROR(Instantiate());
  // Steady state: the same buffers in every slot (uniform slots: their shadows), so no kernel
  // node needs looking at: one comparison per slot, into per-thread scratch (no allocation).
  thread_local std::vector<CUdeviceptr> pointers;
  HEXIR_RETURN_IF_ERROR(recording_.StageUniforms(table, stream, &pointers));
  if (by_ranges_ && SlotsAlias(table, pointers)) return LaunchOnStream(table, stream);
  bool slots_changed = last_table_ != pointers || exec_stale_;
  if (slots_changed) last_table_.assign(pointers.begin(), pointers.end());
  for (RepeatNodes& r : repeat_nodes_) {
    HEXIR_ASSIGN_OR_RETURN(CUdeviceptr condition,
                           r.recording->RepeatCondition(r.index, table, pointers));
    if (condition == r.condition && !exec_stale_) continue;
    r.condition = condition;
    for (bool first : {true, false}) {
      CUDA_KERNEL_NODE_PARAMS p = RepeatParams(r, first);
      if (api.cuGraphExecKernelNodeSetParams(exec_, first ? r.enter : r.step, &p) ==
          CUDA_SUCCESS) {
        counters.kernel_node_updates.fetch_add(1, std::memory_order_relaxed);
      } else {
        reinstantiate_ = true;  // the step kernel lives in the WHILE node's body
      }
    }
  }
  for (size_t g = 0; g < graphs_.size() && !reinstantiate_; ++g) {
    HEXIR_RETURN_IF_ERROR(UpdateKernels(g, slots_changed));
  }
  if (reinstantiate_) HEXIR_RETURN_IF_ERROR(RefreshAndInstantiate());
  exec_stale_ = false;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphLaunch(exec_, stream), "cuGraphLaunch");
  counters.graph_launches.fetch_add(1, std::memory_order_relaxed);
  recording_.set_collectives_overlapped(collectives_overlapped_);
  return recording_.TrackCollectives(stream);
}

// Indirect counts are read on the host now; a count only the device knows (a slot bound to
// non-uniform memory) or an empty grid (a kernel node cannot launch none) runs this
// submission as stream launches.
StatusOr<bool> CudaGraphCommandBuffer::ResolveHostGrids(const std::vector<BufferRef>& table) {
  for (GraphKernels& g : graphs_) {
    std::vector<RecordedKernel>& kernels = g.recording->kernels();
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (!kernels[i].indirect) continue;
      HEXIR_ASSIGN_OR_RETURN(std::optional<Grid> wg, g.recording->HostCount(kernels[i], table));
      if (!wg || IsEmptyGrid(*wg)) return false;
      HEXIR_RETURN_IF_ERROR(CheckGrid(kernels[i].name(), *wg));
      g.nodes[i].grid = *wg;
    }
  }
  return true;
}

// The template's kernel nodes take this launch's parameters (as RefreshAndInstantiate does),
// a copy with event nodes replays them, and the executable graph refreshes every node at its
// next launch (exec_stale_).
Status CudaGraphCommandBuffer::LaunchProfiled(const std::vector<BufferRef>& table,
                                              CUstream stream, Profiler* profiler) {
  const CudaApi& api = *shared_->api;
  auto on_stream = [&](const char* why) REQUIRES(mu_) {
    NoteStreamProfiling(why);
    return CudaCommandBuffer::LaunchProfiled(table, stream, profiler);
  };
  if (profiler->cuda_mode() != CudaProfileMode::kGraphReplay) return on_stream("stream mode asked");
  if (graphs_.empty()) return on_stream("not a graph (a device count or slot collective)");
  if (graphs_.size() != 1) return on_stream("a device loop");
  if (recording_.has_collectives()) return on_stream("a collective");
  if (!GraphProfile::Supported(api)) return on_stream("driver before CUDA 12.3");
  if (!has_nodes_) return Status::Ok();
  HEXIR_ASSIGN_OR_RETURN(bool graph_grids, ResolveHostGrids(table));
  if (!graph_grids) return on_stream("an indirect count only the device knows, or none");
  thread_local std::vector<CUdeviceptr> pointers;
  HEXIR_RETURN_IF_ERROR(recording_.StageUniforms(table, stream, &pointers));
  if (by_ranges_ && SlotsAlias(table, pointers)) return on_stream("slots that alias");
  exec_stale_ = true;
  HEXIR_RETURN_IF_ERROR(SetTemplateKernels(0, pointers));
  std::vector<RecordedKernel>& kernels = recording_.kernels();
  std::vector<CUgraphNode> nodes(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) nodes[i] = graphs_[0].nodes[i].node;
  if (!profile_) profile_ = std::make_unique<GraphProfile>(shared_);
  std::vector<std::pair<int64_t, int64_t>> intervals;
  std::string refusal;
  HEXIR_ASSIGN_OR_RETURN(bool replayed, profile_->Replay(graph_, nodes, stream, &intervals, &refusal));
  if (!replayed) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::fprintf(stderr, "hexir: cuda graph profiling: %s; profiled as stream launches\n",
                   refusal.c_str());
    }
    return CudaCommandBuffer::LaunchProfiled(table, stream, profiler);
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    DispatchTiming t;
    t.executable = kernels[i].command->executable.get();
    t.entry = kernels[i].command->entry;
    t.workgroup_count = graphs_[0].nodes[i].grid;
    t.begin_ns = intervals[i].first;
    t.end_ns = intervals[i].second;
    t.device_events = true;
    t.in_graph = true;
    profiler->OnDispatch(t);
  }
  return Status::Ok();
}

// Checked again only when a slot's range moved (steady state: one comparison per slot).
bool CudaGraphCommandBuffer::SlotsAlias(const std::vector<BufferRef>& table,
                                        const std::vector<CUdeviceptr>& pointers) {
  thread_local std::vector<ByteRange> ranges;
  ranges.resize(pointers.size());
  for (size_t s = 0; s < pointers.size(); ++s) ranges[s] = ByteRange::Of(pointers[s], table[s].length);
  bool same = ranges.size() == checked_slot_ranges_.size();
  for (size_t s = 0; same && s < ranges.size(); ++s) {
    same = ranges[s].begin == checked_slot_ranges_[s].begin &&
           ranges[s].end == checked_slot_ranges_[s].end;
  }
  if (same) return slots_alias_;
  checked_slot_ranges_.assign(ranges.begin(), ranges.end());
  slots_alias_ = StandInsAlias(stand_in_uses_, ranges);
  return slots_alias_;
}

Status CudaGraphCommandBuffer::Instantiate() {
  const CudaApi& api = *shared_->api;
  CUresult r = api.cuGraphInstantiate(&exec_, graph_, 0);
  if (r != CUDA_SUCCESS && programmatic_edges_ > 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::fprintf(stderr, "hexir: cuda graph: instantiation with %llu programmatic edges "
                   "refused (%s); built again with full edges\n",
                   static_cast<unsigned long long>(programmatic_edges_),
                   CudaErrorText(api, r).c_str());
    }
    HEXIR_RETURN_IF_ERROR(RebuildWithFullEdges());
    r = api.cuGraphInstantiate(&exec_, graph_, 0);
  }
  HEXIR_CUDA_RETURN_IF_ERROR(api, r, "cuGraphInstantiate(", recording_.kernel_count(),
                             " kernel nodes)");
  shared_->counters.graph_instantiations.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status CudaGraphCommandBuffer::UpdateKernels(size_t g, bool slots_changed) {
  const CudaApi& api = *shared_->api;
  CudaCounters& counters = shared_->counters;
  GraphKernels& graph = graphs_[g];
  std::vector<RecordedKernel>& kernels = graph.recording->kernels();
  if (!slots_changed && !graph.recording->has_indirect()) return Status::Ok();
  for (size_t i = 0; i < kernels.size(); ++i) {
    RecordedKernel& k = kernels[i];
    KernelNode& n = graph.nodes[i];
    bool update = slots_changed && k.uses_slots && CudaRecording::ResolveSlotPointers(k, last_table_);
    update |= exec_stale_ || n.grid != n.exec_grid;
    if (!update) continue;
    n.exec_grid = n.grid;
    CUDA_KERNEL_NODE_PARAMS p = NodeParams(g, i);
    CUresult r = api.cuGraphExecKernelNodeSetParams(exec_, n.node, &p);
    if (r != CUDA_SUCCESS && g > 0) {
      reinstantiate_ = true;  // a repeat body's node: RefreshAndInstantiate
      continue;
    }
    HEXIR_CUDA_RETURN_IF_ERROR(api, r, "cuGraphExecKernelNodeSetParams('", k.name(), "')");
    counters.kernel_node_updates.fetch_add(1, std::memory_order_relaxed);
  }
  return Status::Ok();
}

// The driver refused to update a node inside a conditional body of the instantiated graph:
// every node of the template takes its current parameters and the graph is instantiated
// again (launches already queued keep the old executable graph until they ran).
Status CudaGraphCommandBuffer::SetTemplateKernels(size_t g,
                                                  const std::vector<CUdeviceptr>& pointers) {
  const CudaApi& api = *shared_->api;
  std::vector<RecordedKernel>& kernels = graphs_[g].recording->kernels();
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].uses_slots) CudaRecording::ResolveSlotPointers(kernels[i], pointers);
    CUDA_KERNEL_NODE_PARAMS p = NodeParams(g, i);
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphKernelNodeSetParams(graphs_[g].nodes[i].node, &p),
                               "cuGraphKernelNodeSetParams('", kernels[i].name(), "')");
  }
  return Status::Ok();
}

Status CudaGraphCommandBuffer::RefreshAndInstantiate() {
  const CudaApi& api = *shared_->api;
  for (size_t g = 0; g < graphs_.size(); ++g) {
    for (KernelNode& n : graphs_[g].nodes) n.exec_grid = n.grid;
    HEXIR_RETURN_IF_ERROR(SetTemplateKernels(g, last_table_));
  }
  for (RepeatNodes& r : repeat_nodes_) {
    for (bool first : {true, false}) {
      CUDA_KERNEL_NODE_PARAMS p = RepeatParams(r, first);
      HEXIR_CUDA_RETURN_IF_ERROR(api,
                                 api.cuGraphKernelNodeSetParams(first ? r.enter : r.step, &p),
                                 "cuGraphKernelNodeSetParams(repeat_while condition)");
    }
  }
  api.cuGraphExecDestroy(exec_);
  exec_ = nullptr;
  reinstantiate_ = false;
  return Instantiate();
}

StatusOr<GraphInfo> CudaGraphCommandBuffer::Describe() const {
  if (!is_finalized()) {
    return FailedPrecondition("describe graph: not a finalized graph-mode command buffer");
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  const CudaApi& api = *shared_->api;
  MutexLock lock(mu_);
  GraphInfo info;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphGetNodes(graph_, nullptr, &info.nodes),
                             "cuGraphGetNodes");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphGetEdges(graph_, nullptr, nullptr, nullptr,
                                                      &info.edges),
                             "cuGraphGetEdges");
  info.instantiated = exec_ != nullptr;
  return info;
}

}  // namespace hexir::hal::cuda
