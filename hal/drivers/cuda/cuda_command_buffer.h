// CUDA command buffers: a CUDA graph built once at Finalize, instantiated once at the first
// submission and replayed with cuGraphLaunch (graph mode, the default), or direct launches on
// the device stream for one-shot work (stream mode). See README.md for the mapping of
// commands to graph nodes, barriers to edges, and binding tables to in-place node updates.
//
// Ownership: refcounted; owns its CUgraph / CUgraphExec, an overlap scratch buffer for
// self-overlapping copies and the pinned kernel-status words. Retains (through its commands)
// every buffer and executable it references.
// Indirect dispatches: a count in a uniform buffer (kMemoryUniform: written by the host before
// the submission, never by kernels, e.g. a compiled dispatch's parameter buffer) is read on
// the host at submission; a graph then updates only the kernel nodes whose grid changed. Any
// other count is known only to the device: that submission runs as stream launches, copying
// each such count back when its dispatch is reached (one host synchronization each).
// Thread-safety: recording is single-threaded; Enqueue/CheckKernelStatus are serialized by an
// internal mutex (a command buffer may be submitted from several threads).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/profiling.h"
#include "hal/drivers/cuda/cuda_executable.h"
#include "hal/drivers/cuda/cuda_shared.h"

namespace hexir::hal::cuda {

enum class CommandBufferMode { kGraph, kStream };

struct GraphInfo {
  size_t nodes = 0;
  size_t edges = 0;
  bool instantiated = false;
};

class CudaCommandBuffer final : public CommandBuffer {
 public:
  CudaCommandBuffer(std::shared_ptr<DeviceCounters> counters, std::shared_ptr<CudaShared> shared,
                    CommandBufferMode mode);
  ~CudaCommandBuffer() override;

  CommandBufferMode mode() const { return mode_; }
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }

  // Enqueues one execution on `stream` with `table` (already validated, lengths resolved).
  // Graph mode: instantiates on first use, updates only the kernel nodes whose binding
  // pointers or (indirect) grid changed since the last launch
  // (cuGraphExecKernelNodeSetParams), launches.
  Status Enqueue(const std::vector<BufferRef>& table, CUstream stream);

  // After an execution completed: the first kernel-reported failure (status words written by
  // kernels that take the optional status parameter), as Aborted naming the entry; resets them.
  Status CheckKernelStatus();
  bool has_status_words() const { return status_count_ > 0; }
  // Dispatch commands executed per submission (dispatches of zero workgroups excluded).
  size_t dispatch_count() const { return kernels_.size(); }

  // Graph mode, finalized: node and edge counts of the recorded graph.
  StatusOr<GraphInfo> Describe() const;

 protected:
  Status OnFinalize() override;

 private:
  using Grid = std::array<uint32_t, 3>;
  struct KernelOp {
    const DispatchCommand* command = nullptr;
    const CudaEntry* entry = nullptr;
    std::vector<uint64_t> values;  // one per kernel parameter (push constants in the low 32 bits)
    std::vector<void*> params;     // &values[i]
    std::vector<int32_t> slot_of;  // per binding: table slot, or -1 for a direct buffer
    bool uses_slots = false;
    int32_t status_index = -1;
    // Indirect: the count is read from the command's direct range (count_ptr on the device),
    // or from table[count_slot] + count_offset.
    bool indirect = false;
    CUdeviceptr count_ptr = 0;
    int32_t count_slot = -1;
    uint64_t count_offset = 0;
    Grid grid = {1, 1, 1};       // of the next launch
    Grid exec_grid = {1, 1, 1};  // graph mode: what the node launches
    CUgraphNode node = nullptr;
  };
  struct CopyOp {
    CUdeviceptr src = 0, dst = 0;
    uint64_t length = 0;
    bool via_scratch = false;
  };
  struct FillOp {
    CUdeviceptr dst = 0;
    uint64_t length = 0;
    uint32_t pattern = 0, pattern_size = 1;
  };
  struct Op {
    enum Kind { kKernel, kCopy, kFill, kBarrier } kind;
    size_t index;  // into kernels_ / copies_ / fills_
  };

  Status BuildOps();
  Status BuildGraph();
  CUDA_KERNEL_NODE_PARAMS NodeParams(KernelOp& k) const;
  // Fills k.values' binding entries from per-slot device pointers; true when any changed.
  bool ResolveSlotPointers(KernelOp& k, const std::vector<CUdeviceptr>& pointers) const;
  Status EnqueueStream(const std::vector<BufferRef>& table, CUstream stream,
                       bool profiling = false);
  // An indirect kernel's count for this submission, when the host can read it now (a
  // uniform buffer); nullopt when only the device knows it. Errors: the range is outside
  // the slot, or the count exceeds 2^40 workgroups.
  StatusOr<std::optional<Grid>> HostCount(const KernelOp& k,
                                          const std::vector<BufferRef>& table) const;
  Status EnqueueProfiled(const std::vector<BufferRef>& table, CUstream stream,
                         Profiler* profiler);

  std::shared_ptr<CudaShared> shared_;
  const CommandBufferMode mode_;
  std::vector<Op> ops_;
  std::vector<KernelOp> kernels_;
  std::vector<CopyOp> copies_;
  std::vector<FillOp> fills_;
  bool has_indirect_ = false;
  bool indirect_on_device_ = false;  // a direct count in device memory: always stream launches
  uint32_t* count_host_ = nullptr;  // pinned, 12 bytes: indirect count readback
  CUdeviceptr scratch_ = 0;  // for copies whose source and target overlap
  volatile uint32_t* status_host_ = nullptr;
  CUdeviceptr status_device_ = 0;
  uint32_t status_count_ = 0;

  // Profiling mode: event pairs (2 per kernel + 1 closing), kernels launched this submission.
  std::vector<CUevent> profile_events_;
  std::vector<std::pair<size_t, std::array<uint32_t, 3>>> profiled_kernels_;

  // Uniform slots (kMemoryUniform buffers) are copied into a device-side shadow per slot
  // before each launch (graph or stream) and the kernels bind the shadow, whose address
  // never changes.
  struct Shadow {
    CUdeviceptr ptr = 0;
    uint64_t capacity = 0;
  };
  // Copies the uniform entries of `table` into their shadows (stream order); fills
  // `pointers` with every slot's device pointer (shadows for uniform slots).
  Status StageUniforms(const std::vector<BufferRef>& table, CUstream stream,
                       std::vector<CUdeviceptr>* pointers);

  std::mutex mu_;
  bool has_nodes_ = false;
  std::vector<Shadow> shadows_;          // per slot
  std::vector<CUdeviceptr> last_table_;  // slot pointers of the last graph launch
  // A stream execution changed KernelOp::values after instantiation: the next graph launch
  // updates every kernel node.
  bool exec_stale_ = false;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace hexir::hal::cuda
