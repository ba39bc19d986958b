// Internal to the CUDA driver: the recorded form both command buffer classes replay
// (cuda_graph_command_buffer.h, cuda_stream_command_buffer.h). Built once at Finalize from the
// HAL commands: kernels (function, launch shape, parameter layout, direct pointers resolved,
// binding slots and indirect counts left to each submission), copies, fills and barriers in
// command order. It also runs them as stream launches, which stream command buffers always do
// and graph command buffers do for the submissions a graph cannot express (a count only the
// device knows, a zero count) and for profiling.
//
// Collectives run on a stream of their own (cuda_collective_stream.h) in stream launches; a
// graph command buffer captures them into its graph instead.
//
// Ownership: owns the collective stream, the overlap scratch buffer of self-overlapping copies, the pinned kernel
// status records (hal/kernel_status.h), the pinned indirect-count readback, the device-side shadows of uniform
// slots, each repeat's body recording, the repeat counters and the pinned condition readback; references (does not retain) the commands of its command buffer, which outlives it.
// Thread-safety: none; the owning command buffer serializes Build, launches and status checks.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/command_ranges.h"
#include "hal/kernel_status.h"
#include "hal/profiling.h"
#include "hal/drivers/cuda/cuda_collective_stream.h"
#include "hal/drivers/cuda/cuda_executable.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/drivers/cuda/nccl_channel.h"

namespace hexir::hal::cuda {

using Grid = std::array<uint32_t, 3>;

struct RecordedKernel {
  const DispatchCommand* command = nullptr;
  const CudaEntry* entry = nullptr;
  std::vector<uint64_t> values;  // one per kernel parameter (push constants in the low 32 bits)
  std::vector<void*> params;     // &values[i]
  std::vector<int32_t> slot_of;  // per binding: table slot, or -1 for a direct buffer
  // Per binding: its byte offset into the slot's range (dispatch_slots_at: a region's packed
  // parameter lists share one slot); 0 for a direct buffer.
  std::vector<uint64_t> slot_offset;
  bool uses_slots = false;
  int32_t status_index = -1;
  // Indirect: the count is read from the command's direct range (count_ptr on the device),
  // or from table[count_slot] + count_offset.
  bool indirect = false;
  CUdeviceptr count_ptr = 0;
  int32_t count_slot = -1;
  uint64_t count_offset = 0;

  const std::string& name() const { return command->executable->entry_name(command->entry); }
};
struct RecordedCopy {
  CUdeviceptr src = 0, dst = 0;
  uint64_t length = 0;
  bool via_scratch = false;  // source and target overlap: two copies through the scratch
  const Buffer* source = nullptr;  // retained by the command
};
struct RecordedFill {
  CUdeviceptr dst = 0;
  uint64_t length = 0;
  uint32_t pattern = 0, pattern_size = 1;
};
// A collective on an NCCL channel (nccl_channel.h): direct buffers resolved at Build, slot
// buffers at each launch. Recorded between two barriers: it starts after everything recorded
// before it; what is recorded after it waits for it only where it touches its buffers
// (cuda_collective_stream.h; graphs: CudaGraphCommandBuffer::AddOps).
struct RecordedCollective {
  const CollectiveCommand* command = nullptr;
  NcclChannel* channel = nullptr;
  CUdeviceptr send = 0, recv = 0;  // direct buffers (0 for a slot or no buffer)
  bool uses_slots = false;
};
class CudaRecording;
// A repeat_while (RepeatCommand): its body recorded on its own (owned), the condition (a
// direct device pointer, or a slot and offset resolved at each launch) and a device counter
// of the iterations run (cuda_repeat_kernel.h). Recorded between two barriers (it runs alone).
struct RecordedRepeat {
  const RepeatCommand* command = nullptr;
  std::unique_ptr<CudaRecording> body;
  CUdeviceptr condition = 0;  // direct condition; 0 for a slot
  int32_t condition_slot = -1;
  uint64_t condition_offset = 0;
  CUdeviceptr counter = 0;  // 4 bytes of the recording's counter block
};
struct RecordedOp {
  enum Kind { kKernel, kCopy, kFill, kBarrier, kCollective, kRepeat } kind;
  size_t index;  // into kernels() / copies() / fills() / collectives() / repeats()
};

// A stream launch's per-op hook (argument readiness awaited per command, cuda_argument_gate.h):
// called before each op is put on the stream, it may put waits on the stream first.
class RecordingGate {
 public:
  virtual ~RecordingGate() = default;
  // Before a kernel: the buffers its dispatch reads.
  virtual Status BeforeDispatch(const DispatchCommand& dispatch, CUstream stream) = 0;
  // Before a copy: its source.
  virtual Status BeforeBuffer(const Buffer* buffer, CUstream stream) = 0;
  // Before a collective or a repeat (their buffers are not looked at): everything.
  virtual Status BeforeAll(CUstream stream) = 0;
};

// InvalidArgument naming the dispatch when `grid` exceeds CUDA's (2^31-1)x65535x65535.
Status CheckGrid(const std::string& name, const Grid& grid);
inline bool IsEmptyGrid(const Grid& grid) { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }

class CudaRecording {
 public:
  explicit CudaRecording(std::shared_ptr<CudaShared> shared)
      : shared_(std::move(shared)), collective_stream_(shared_) {}
  ~CudaRecording();
  CudaRecording(const CudaRecording&) = delete;
  CudaRecording& operator=(const CudaRecording&) = delete;

  // Resolves everything that does not depend on the binding table, once (the context must be
  // current): checks each dispatch's executable (this driver, this GPU) and ABI, skips commands
  // that do nothing (no workgroups, zero bytes), allocates scratch and status records.
  Status Build(const std::vector<Command>& commands);

  const std::vector<RecordedOp>& ops() const { return ops_; }
  std::vector<RecordedKernel>& kernels() { return kernels_; }
  const std::vector<RecordedKernel>& kernels() const { return kernels_; }
  const std::vector<RecordedCopy>& copies() const { return copies_; }
  const std::vector<RecordedFill>& fills() const { return fills_; }
  const std::vector<RecordedCollective>& collectives() const { return collectives_; }
  std::vector<RecordedRepeat>& repeats() { return repeats_; }
  bool has_repeats() const { return !repeats_.empty(); }
  // The condition's device pointer of repeat `index` for this launch (`pointers`: each slot's,
  // StageUniforms). Errors: the 4 bytes lie outside the slot's range.
  StatusOr<CUdeviceptr> RepeatCondition(size_t index, const std::vector<BufferRef>& table,
                                        const std::vector<CUdeviceptr>& pointers) const;
  // Kernels per execution, repeat bodies' kernels counted once.
  size_t kernel_count() const;
  bool has_collectives() const { return !collectives_.empty(); }
  // A collective reads or writes a binding-table slot: a graph cannot hold it (its pointers
  // are captured), so such command buffers run as stream launches.
  bool has_slot_collectives() const { return has_slot_collectives_; }
  // Collective `index` with its slot buffers taken from `table` / `pointers` (StageUniforms;
  // both null when it has none) and range-checked.
  StatusOr<NcclChannel::Operation> ResolveCollective(size_t index,
                                                     const std::vector<BufferRef>* table,
                                                     const std::vector<CUdeviceptr>* pointers) const;
  // Issues collective `index` on `stream` (which may be capturing): ResolveCollective, then
  // the channel.
  Status IssueCollective(size_t index, const std::vector<BufferRef>* table,
                         const std::vector<CUdeviceptr>* pointers, CUstream stream);
  // The send and recv ranges of a resolved collective (empty for a missing buffer).
  static std::pair<ByteRange, ByteRange> CollectiveRanges(const RecordedCollective& r,
                                                          const NcclChannel::Operation& op);
  // The ranges `op` (a kernel, copy, fill or repeat) touches, appended to `out`, for ordering
  // it after collectives: slots resolved against `table`; without a table (a graph, built
  // once) a kernel on slots and a repeat touch everything.
  void OpRanges(const RecordedOp& op, const std::vector<BufferRef>* table,
                CommandRanges* out) const;
  // The recorded ops as OrderCommands orders them (hal/command_ranges.h): each with what it
  // reads and writes, slots as stand-ins (their table is not known yet); a copy through the
  // scratch also writes the scratch, a collective reads its send and writes its recv range, a
  // repeat touches everything.
  StatusOr<std::vector<OrderedCommand>> OrderedCommands() const;
  // Every kernel's module states which bindings it writes (CudaEntry::writes_stated).
  bool writes_stated() const;
  // Collectives of the last launch beside which independent commands ran (stream launches:
  // counted by the collective stream; a graph launch sets its graph's count).
  uint64_t collectives_overlapped() const { return collectives_overlapped_; }
  void set_collectives_overlapped(uint64_t n) { collectives_overlapped_ = n; }
  // After a launch on `stream`: each channel's watchdog waits for its collectives' end.
  Status TrackCollectives(CUstream stream);
  CUdeviceptr scratch() const { return scratch_; }
  bool has_indirect() const { return has_indirect_; }
  // A direct count in device memory: only stream launches can read it.
  bool indirect_on_device() const { return indirect_on_device_; }
  bool has_status_words() const { return status_count_ > 0 || body_status_words_; }

  // Copies the uniform entries of `table` (kMemoryUniform, host-visible, at most 64 KiB) into
  // their device-side shadows (stream order) and fills `pointers` with every slot's device
  // pointer (the shadow for a uniform slot, whose address never changes).
  Status StageUniforms(const std::vector<BufferRef>& table, CUstream stream,
                       std::vector<CUdeviceptr>* pointers);
  // A binding at a byte offset into a slot (dispatch_slots_at) must start inside the slot's
  // range: OutOfRange naming the entry, the slot and both sizes otherwise (repeat bodies'
  // kernels included). StageUniforms checks it at every submission.
  Status CheckSlotOffsets(const std::vector<BufferRef>& table) const;
  // Fills k's binding parameters from per-slot device pointers (+ each binding's offset into
  // its slot); true when any changed.
  static bool ResolveSlotPointers(RecordedKernel& k, const std::vector<CUdeviceptr>& pointers);
  // An indirect kernel's count for this submission, when the host can read it now (a uniform
  // buffer); nullopt when only the device knows it. Errors: the range is outside the slot, or
  // the count exceeds 2^40 workgroups.
  StatusOr<std::optional<Grid>> HostCount(const RecordedKernel& k,
                                          const std::vector<BufferRef>& table) const;

  // Every op as stream launches on `stream` (a count only the device knows is copied back, one
  // host synchronization each). Changes the kernels' slot parameters.
  // With a gate (until the next call: one launch, under its command buffer's lock), a stream
  // launch calls it before each op (not inside repeat bodies: a repeat waits for everything).
  void set_gate(RecordingGate* gate) { gate_ = gate; }
  // Loads every kernel's function now (cuFuncLoad, when the driver has it; once): under lazy
  // loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) a kernel is loaded at its
  // first launch, which may wait for the context's work: a gated launch (which waits for
  // uploads between its ops) loads them all before its first op instead.
  Status LoadKernels();
  Status LaunchOnStream(const std::vector<BufferRef>& table, CUstream stream) {
    return Launch(table, stream, /*profiling=*/false);
  }
  // Stream launches with an event pair around each kernel; waits for a closing event and
  // reports each kernel to `profiler` on the host clock (hal/profiling.h).
  Status LaunchProfiled(const std::vector<BufferRef>& table, CUstream stream, Profiler* profiler);

  // After an execution completed: the first kernel-reported failure (status records written
  // by kernels that take the optional status parameter), as the named error of its code
  // (hal/kernel_error.h: out_of_range for an index, invalid_argument for a division), or
  // Aborted naming the entry for any other code; resets them. Then a failed channel of a
  // recorded collective (its timeout or a peer's failure, nccl_channel.h).
  Status CheckKernelStatus();

 private:
  Status AddDispatch(const DispatchCommand& d);
  Status AddRepeat(const RepeatCommand& r);
  Status Launch(const std::vector<BufferRef>& table, CUstream stream, bool profiling);
  // Every op with the slot pointers already staged (a repeat body shares its parent's).
  Status LaunchOps(const std::vector<BufferRef>& table, const std::vector<CUdeviceptr>& pointers,
                   CUstream stream, bool profiling);
  // LaunchOps' loop; LaunchOps joins the collectives it leaves in flight.
  Status LaunchEachOp(const std::vector<BufferRef>& table,
                      const std::vector<CUdeviceptr>& pointers, CUstream stream, bool profiling);
  // gate_->Before* for `op` (set).
  Status GateOp(const RecordedOp& op, CUstream stream);
  // A repeat as a host loop: the condition copied back before each iteration (one host
  // synchronization each), the body launched on the stream.
  Status LaunchRepeatOnStream(size_t index, const std::vector<BufferRef>& table,
                              const std::vector<CUdeviceptr>& pointers, CUstream stream);
  // The count of an indirect kernel for a stream launch: read on the host, or copied back.
  StatusOr<Grid> StreamCount(const RecordedKernel& k, const std::vector<BufferRef>& table,
                             CUstream stream);

  std::shared_ptr<CudaShared> shared_;
  // The bindings at a nonzero offset into a slot, this recording's and its repeat bodies'
  // (CheckSlotOffsets): the slot, the offset and the dispatch (whose entry the error names).
  struct SlotOffsetUse {
    uint32_t slot;
    uint64_t offset;
    const DispatchCommand* command;  // the command buffer keeps it
  };
  std::vector<SlotOffsetUse> slot_offset_uses_;
  CollectiveStream collective_stream_;
  CommandRanges op_ranges_;  // LaunchOps' scratch
  RecordingGate* gate_ = nullptr;  // set_gate
  bool kernels_loaded_ = false;    // LoadKernels
  uint64_t collectives_overlapped_ = 0;
  std::vector<RecordedOp> ops_;
  std::vector<RecordedKernel> kernels_;
  std::vector<RecordedCopy> copies_;
  std::vector<RecordedFill> fills_;
  std::vector<RecordedCollective> collectives_;
  std::vector<RecordedRepeat> repeats_;
  CUdeviceptr repeat_counters_ = 0;   // 4 bytes per repeat
  int32_t* condition_host_ = nullptr;  // pinned: a repeat's condition read back on the host
  bool has_slot_collectives_ = false;
  bool body_status_words_ = false;  // a repeat body's kernels report status
  Status AddCollective(const CollectiveCommand& c);
  uint64_t scratch_size_ = 0;
  bool has_indirect_ = false;
  bool indirect_on_device_ = false;
  uint32_t* count_host_ = nullptr;  // pinned, 12 bytes: indirect count readback
  CUdeviceptr scratch_ = 0;         // for copies whose source and target overlap
  volatile hexir_kernel_status_t* status_host_ = nullptr;  // one record per status kernel
  CUdeviceptr status_device_ = 0;
  uint32_t status_count_ = 0;

  // Profiling: event pairs (2 per kernel + 1 closing), kernels launched this submission.
  std::vector<CUevent> profile_events_;
  std::vector<std::pair<size_t, Grid>> profiled_kernels_;

  struct Shadow {
    CUdeviceptr ptr = 0;
    uint64_t capacity = 0;
  };
  std::vector<Shadow> shadows_;  // per slot
  std::vector<size_t> staged_slots_;  // StageUniforms: this launch's staged slots
};

}  // namespace hexir::hal::cuda
