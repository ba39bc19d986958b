#include "hal/drivers/cuda/cuda_graph_command_buffer.h"

#include <cstring>

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

}  // namespace

CudaGraphCommandBuffer::~CudaGraphCommandBuffer() {
  if (!shared_->MakeCurrent().ok()) return;
  MutexLock lock(mu_);  // no one else holds it: the last reference is gone
  const CudaApi& api = *shared_->api;
  if (exec_) api.cuGraphExecDestroy(exec_);
  if (graph_) api.cuGraphDestroy(graph_);
}

Status CudaGraphCommandBuffer::OnRecorded() {
  nodes_.resize(recording_.kernels().size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const RecordedKernel& k = recording_.kernels()[i];
    if (!k.indirect) nodes_[i].grid = nodes_[i].exec_grid = k.command->workgroup_count;
  }
  // Always stream launches: a count only the device knows, or a collective on slot buffers.
  if (recording_.indirect_on_device() || recording_.has_slot_collectives()) return Status::Ok();
  return BuildGraph();
}

CUDA_KERNEL_NODE_PARAMS CudaGraphCommandBuffer::NodeParams(size_t kernel) const {
  const RecordedKernel& k = recording_.kernels()[kernel];
  const Grid& grid = nodes_[kernel].grid;
  CUDA_KERNEL_NODE_PARAMS p;
  std::memset(&p, 0, sizeof(p));
  p.func = k.entry->function;
  p.gridDimX = grid[0];
  p.gridDimY = grid[1];
  p.gridDimZ = grid[2];
  p.blockDimX = k.entry->block_size[0];
  p.blockDimY = k.entry->block_size[1];
  p.blockDimZ = k.entry->block_size[2];
  p.kernelParams = const_cast<void**>(k.params.data());
  return p;
}

// Barriers become edges: every node depends on the nodes of the previous barrier segment;
// nodes between two barriers get no edges among themselves and may run concurrently (a
// collective overlaps the kernels of its segment), except collectives: each depends on the
// previous collective of its segment too, so they run in recording order on every rank. A
// segment of several nodes is joined through one empty node, so a barrier between N and M
// nodes costs N + M edges rather than N * M.
Status CudaGraphCommandBuffer::BuildGraph() {
  const CudaApi& api = *shared_->api;
  const CUdeviceptr scratch = recording_.scratch();
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphCreate(&graph_, 0), "cuGraphCreate");
  std::vector<CUgraphNode> deps, segment;
  CUgraphNode segment_collective = nullptr;  // the segment's last collective
  for (const RecordedOp& op : recording_.ops()) {
    CUgraphNode node = nullptr;
    switch (op.kind) {
      case RecordedOp::kBarrier:
        if (segment.size() > 1) {
          HEXIR_CUDA_RETURN_IF_ERROR(
              api, api.cuGraphAddEmptyNode(&node, graph_, segment.data(), segment.size()),
              "cuGraphAddEmptyNode(barrier)");
          deps = {node};
        } else if (segment.size() == 1) {
          deps = segment;
        }
        segment.clear();
        segment_collective = nullptr;
        continue;
      case RecordedOp::kKernel: {
        CUDA_KERNEL_NODE_PARAMS p = NodeParams(op.index);
        HEXIR_CUDA_RETURN_IF_ERROR(
            api, api.cuGraphAddKernelNode(&node, graph_, deps.data(), deps.size(), &p),
            "cuGraphAddKernelNode('", recording_.kernels()[op.index].name(), "')");
        nodes_[op.index].node = node;
        break;
      }
      case RecordedOp::kCopy: {
        const RecordedCopy& c = recording_.copies()[op.index];
        if (c.via_scratch) {
          CUgraphNode first = nullptr;
          CUDA_MEMCPY3D a = Copy1D(scratch, c.src, c.length);
          HEXIR_CUDA_RETURN_IF_ERROR(api,
                                     api.cuGraphAddMemcpyNode(&first, graph_, deps.data(),
                                                              deps.size(), &a, shared_->context),
                                     "cuGraphAddMemcpyNode(", c.length, " bytes to scratch)");
          CUDA_MEMCPY3D b = Copy1D(c.dst, scratch, c.length);
          HEXIR_CUDA_RETURN_IF_ERROR(
              api, api.cuGraphAddMemcpyNode(&node, graph_, &first, 1, &b, shared_->context),
              "cuGraphAddMemcpyNode(", c.length, " bytes from scratch)");
        } else {
          CUDA_MEMCPY3D a = Copy1D(c.dst, c.src, c.length);
          HEXIR_CUDA_RETURN_IF_ERROR(api,
                                     api.cuGraphAddMemcpyNode(&node, graph_, deps.data(),
                                                              deps.size(), &a, shared_->context),
                                     "cuGraphAddMemcpyNode(", c.length, " bytes)");
        }
        break;
      }
      case RecordedOp::kCollective: {
        std::vector<CUgraphNode> after = deps;
        if (segment_collective) after.push_back(segment_collective);
        HEXIR_ASSIGN_OR_RETURN(node, AddCollectiveNode(op.index, after));
        segment_collective = node;
        break;
      }
      case RecordedOp::kFill: {
        const RecordedFill& f = recording_.fills()[op.index];
        CUDA_MEMSET_NODE_PARAMS p;
        std::memset(&p, 0, sizeof(p));
        p.dst = f.dst;
        p.value = f.pattern;
        p.elementSize = f.pattern_size;
        p.width = f.length / f.pattern_size;
        p.height = 1;
        HEXIR_CUDA_RETURN_IF_ERROR(api,
                                   api.cuGraphAddMemsetNode(&node, graph_, deps.data(),
                                                            deps.size(), &p, shared_->context),
                                   "cuGraphAddMemsetNode(", f.length, " bytes)");
        break;
      }
    }
    segment.push_back(node);
    has_nodes_ = true;
  }
  return Status::Ok();
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
  if (recording_.indirect_on_device() || recording_.has_slot_collectives()) {
    return LaunchOnStream(table, stream);
  }
  if (!has_nodes_) return Status::Ok();  // nothing to run (CUDA graphs may not be empty)
  std::vector<RecordedKernel>& kernels = recording_.kernels();
  // Indirect counts are read on the host now; a count only the device knows (a slot bound to
  // non-uniform memory) or an empty grid (a kernel node cannot launch none) runs this
  // submission as stream launches.
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels[i].indirect) continue;
    HEXIR_ASSIGN_OR_RETURN(std::optional<Grid> wg, recording_.HostCount(kernels[i], table));
    if (!wg || IsEmptyGrid(*wg)) return LaunchOnStream(table, stream);
    HEXIR_RETURN_IF_ERROR(CheckGrid(kernels[i].name(), *wg));
    nodes_[i].grid = *wg;
  }
  const CudaApi& api = *shared_->api;
  CudaCounters& counters = shared_->counters;
  if (exec_ == nullptr) {
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphInstantiate(&exec_, graph_, 0),
                               "cuGraphInstantiate(", kernels.size(), " kernel nodes)");
    counters.graph_instantiations.fetch_add(1, std::memory_order_relaxed);
  }
  // Steady state: the same buffers in every slot (uniform slots: their shadows), so no kernel
  // node needs looking at: one comparison per slot, into per-thread scratch (no allocation).
  thread_local std::vector<CUdeviceptr> pointers;
  HEXIR_RETURN_IF_ERROR(recording_.StageUniforms(table, stream, &pointers));
  bool slots_changed = last_table_ != pointers || exec_stale_;
  if (slots_changed) last_table_.assign(pointers.begin(), pointers.end());
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!slots_changed && !recording_.has_indirect()) break;
    RecordedKernel& k = kernels[i];
    KernelNode& n = nodes_[i];
    bool update = slots_changed && k.uses_slots && CudaRecording::ResolveSlotPointers(k, pointers);
    update |= exec_stale_ || n.grid != n.exec_grid;
    if (!update) continue;
    n.exec_grid = n.grid;
    CUDA_KERNEL_NODE_PARAMS p = NodeParams(i);
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphExecKernelNodeSetParams(exec_, n.node, &p),
                               "cuGraphExecKernelNodeSetParams('", k.name(), "')");
    counters.kernel_node_updates.fetch_add(1, std::memory_order_relaxed);
  }
  exec_stale_ = false;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuGraphLaunch(exec_, stream), "cuGraphLaunch");
  counters.graph_launches.fetch_add(1, std::memory_order_relaxed);
  return recording_.TrackCollectives(stream);
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
