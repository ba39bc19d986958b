// hal.command_buffer: a list of device commands recorded once and submitted many times.
//
// Lifecycle: recording -> Finalize() -> executable. Recording calls after Finalize fail with
// FailedPrecondition; QueueExecute of a command buffer that is not finalized fails too. A
// finalized command buffer is immutable and may be submitted any number of times, also
// concurrently (no re-recording: Device stats count one recording per Finalize).
//
// Per-submission differences reach a recorded command buffer through a *binding table*: a
// dispatch binding may name a slot (BufferRef::Slot(i)) instead of a buffer; each QueueExecute
// supplies the table, so one recording runs on new inputs without re-recording.
//
// Validation happens at record time (entry ordinals, byte ranges, fill patterns, alignment),
// so execution only checks what it cannot know earlier (binding-table entries).
//
// Ownership: refcounted; retains every buffer and executable it references.
// Thread-safety: recording is single-threaded (one recorder); after Finalize, thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"
#include "hal/buffer.h"
#include "hal/channel.h"
#include "hal/executable.h"
#include "hal/stats.h"
#include "vm/ref.h"

namespace hexir::hal {

class CommandBuffer;

inline constexpr uint64_t kWholeBuffer = ~uint64_t{0};

// Bindings' byte offsets must be multiples of this (the CPU dispatch ABI promises kernels
// 64-byte aligned binding pointers).
inline constexpr uint64_t kBindingAlignment = 64;

// A byte range of a buffer, or a slot of the submission's binding table (is_slot()).
struct BufferRef {
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  vm::Ref<Buffer> buffer;          // must be non-null unless is_slot()
  // A multiple of kBindingAlignment in dispatch bindings. A slot's is added to its table
  // entry's offset (so dispatches may share one buffer at different offsets, as a region's
  // packed parameter words do); a CUDA binding must start inside its slot's range.
  uint64_t offset = 0;
  uint64_t length = kWholeBuffer;  // kWholeBuffer: to the end of the buffer
  uint32_t slot = kNoSlot;

  bool is_slot() const { return slot != kNoSlot; }
  static BufferRef Whole(vm::Ref<Buffer> b) { return {std::move(b), 0, kWholeBuffer, kNoSlot}; }
  static BufferRef Range(vm::Ref<Buffer> b, uint64_t offset, uint64_t length) {
    return {std::move(b), offset, length, kNoSlot};
  }
  static BufferRef Slot(uint32_t slot) { return {nullptr, 0, kWholeBuffer, slot}; }
};

// Checks `ref` (a direct buffer range) and returns its concrete length. `what` prefixes errors.
StatusOr<uint64_t> ResolveRange(const BufferRef& ref, std::string_view what);

// Submission-time checks every driver shares: `cb` is non-null and finalized, `table` has at
// least binding_table_size() entries, each a direct buffer range with a kBindingAlignment
// offset. Fills *resolved with the table, lengths made concrete. Errors start with
// "queue execute: " and name the slot.
Status ResolveBindingTable(const CommandBuffer* cb, const std::vector<BufferRef>& table,
                           std::vector<BufferRef>* resolved);

// False when x*y*z exceeds 2^40 workgroups (the limit every dispatch obeys).
bool WorkgroupCountFits(const std::array<uint32_t, 3>& workgroup_count);

// Indirect dispatches read their workgroup count at execution time from 3 little-endian
// uint32 (x, y, z) at a 4-byte aligned offset of a buffer (or binding-table slot).
inline constexpr uint64_t kIndirectParamsSize = 12;
inline constexpr uint64_t kIndirectParamsAlignment = 4;

struct DispatchCommand {
  vm::Ref<Executable> executable;
  uint32_t entry = 0;
  // Static count; for an indirect dispatch this is {0, 0, 0} and unused.
  std::array<uint32_t, 3> workgroup_count = {1, 1, 1};
  std::vector<BufferRef> bindings;  // lengths resolved at record time for direct buffers
  std::vector<uint32_t> push_constants;
  // Indirect: the workgroup count comes from `workgroup_count_ref` (a direct range of exactly
  // kIndirectParamsSize bytes, or a slot whose table entry is offset by
  // workgroup_count_ref.offset) when the command executes. Drivers that do not support
  // indirect dispatch must reject such commands at submission.
  bool indirect = false;
  BufferRef workgroup_count_ref;
};
struct BarrierCommand {};
struct CopyCommand {
  vm::Ref<Buffer> source;
  uint64_t source_offset = 0;
  vm::Ref<Buffer> target;
  uint64_t target_offset = 0;
  uint64_t length = 0;
};
struct FillCommand {
  vm::Ref<Buffer> target;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t pattern = 0;       // low pattern_size bytes are repeated
  uint32_t pattern_size = 1;  // 1, 2 or 4; offset and length are multiples of it
};
// A collective over `channel` (hal/channel.h gives each kind's buffer sizes). Ordered like a
// dispatch, by barriers, with one freedom: a driver may run the commands after a barrier that
// do not depend on it through memory (write neither its send nor its recv range, read not its
// recv range: hal/command_ranges.h) while it is still in flight (its own queue). Collectives run one after another in
// recording order (every rank issues them alike).
struct CollectiveCommand : CollectiveParams {
  vm::Ref<Channel> channel;
  BufferRef send;  // lengths resolved at record time (direct) or execution (slot)
  BufferRef recv;
};
// A device loop: `body` (a finalized command buffer of the same device, bindings resolved
// against this command buffer's binding table) runs again and again while the int32 at
// `condition` (4 bytes at a 4-byte aligned offset of a buffer or slot) is nonzero, at most
// `max_iterations` times. The condition is read before every iteration, the first included,
// on the device, after the previous iteration's commands completed: the body computes the
// next condition. Drivers run it alone, like a collective (an implicit barrier on both sides).
struct RepeatCommand {
  vm::Ref<CommandBuffer> body;
  BufferRef condition;  // length resolved to kRepeatConditionSize
  uint32_t max_iterations = 0;
};
inline constexpr uint64_t kRepeatConditionSize = 4;

using Command = std::variant<DispatchCommand, BarrierCommand, CopyCommand, FillCommand,
                             CollectiveCommand, RepeatCommand>;

class CommandBuffer : public vm::RefObject {
  HEXIR_REF_TYPE(CommandBuffer, "hal.command_buffer")
 public:
  explicit CommandBuffer(std::shared_ptr<DeviceCounters> counters);

  // Records a dispatch of entry `entry` of `executable` over workgroup_count[0]*[1]*[2]
  // workgroups. Errors: null executable, entry out of range (names the entry list), a null
  // or out-of-range or misaligned binding, not recording.
  Status Dispatch(vm::Ref<Executable> executable, uint32_t entry,
                  std::array<uint32_t, 3> workgroup_count, std::vector<BufferRef> bindings,
                  std::vector<uint32_t> push_constants = {});
  // Records a dispatch whose workgroup count (3 x uint32: x, y, z) is read when it executes
  // from `workgroup_count` (a buffer range; or a slot, whose `offset` is added to the table
  // entry's offset). The offset must be 4-byte aligned; the 12 bytes must lie in the buffer
  // (checked at record time for direct buffers, at execution for slots). Counts above 2^40
  // workgroups in total fail the dispatch at execution.
  Status DispatchIndirect(vm::Ref<Executable> executable, uint32_t entry, BufferRef workgroup_count,
                          std::vector<BufferRef> bindings,
                          std::vector<uint32_t> push_constants = {});
  // Every earlier command completes before any later one starts.
  Status Barrier();
  // Copies `length` bytes; ranges must lie inside both buffers (overlap is allowed).
  Status CopyBuffer(vm::Ref<Buffer> source, uint64_t source_offset, vm::Ref<Buffer> target,
                    uint64_t target_offset, uint64_t length);
  // Fills [offset, offset+length) with the low `pattern_size` bytes of `pattern`.
  Status FillBuffer(vm::Ref<Buffer> target, uint64_t offset, uint64_t length, uint32_t pattern,
                    uint32_t pattern_size);
  // Records a collective of `count` elements of `element_type` on `channel` (semantics and
  // buffer sizes: hal/channel.h). Ordered like a dispatch, by barriers, except that later
  // commands that do not depend on it through memory may run meanwhile (CollectiveCommand);
  // collectives run one after another in recording order. `send`/`recv` are buffer ranges
  // or slots; a kind without a send (recv) buffer ignores it. Errors: null channel, unknown element type or reduction,
  // a peer out of range (or equal to this rank for send/recv), a buffer range too small.
  Status Collective(vm::Ref<Channel> channel, CollectiveKind kind, ReductionOp reduction,
                    int32_t element_type, uint64_t count, int32_t peer, BufferRef send,
                    BufferRef recv);
  // Records a device loop (RepeatCommand): `body` runs while the int32 at `condition` is
  // nonzero, at most `max_iterations` times. Errors: a null, unfinalized or looping body
  // (repeat_while inside a body is not supported), a body holding collectives, a body that is
  // this command buffer, a condition offset not a multiple of 4, a direct condition range
  // past the buffer's end.
  Status RepeatWhile(vm::Ref<CommandBuffer> body, BufferRef condition, uint32_t max_iterations);
  // Ends recording. A second Finalize fails.
  Status Finalize();

  bool is_finalized() const { return finalized_; }
  const std::vector<Command>& commands() const { return commands_; }
  // 1 + the highest binding-table slot any dispatch, collective or repeat (its condition and
  // its body's commands) uses (0 when none).
  uint32_t binding_table_size() const { return binding_table_size_; }
  // True when a collective was recorded (only drivers that run collectives accept it).
  bool has_collectives() const { return has_collectives_; }
  // True when a RepeatCommand was recorded.
  bool has_repeats() const { return has_repeats_; }
  // Every distinct buffer its commands name directly (not through a slot), repeat bodies'
  // included; set by Finalize (drivers note them at submission: hal/queue_use.h).
  const std::vector<Buffer*>& direct_buffers() const { return direct_buffers_; }

  // Drivers' submission-time checks of a finalized command buffer's own contents (not the
  // binding table) give the same answer every time: a driver may remember that `device`
  // accepted it and skip them on later submissions. Thread-safe.
  bool IsValidatedFor(const void* device) const {
    return validated_for_.load(std::memory_order_acquire) == device;
  }
  void MarkValidatedFor(const void* device) const {
    validated_for_.store(device, std::memory_order_release);
  }

 protected:
  // The owning device's counters (and profiler hook); may be null for internal buffers.
  const std::shared_ptr<DeviceCounters>& device_counters() const { return counters_; }
  // Drivers hook here to build their native form (e.g. a CUDA graph) once.
  virtual Status OnFinalize() { return Status::Ok(); }

 private:
  Status CheckRecording(const char* command) const;
  Status RecordDispatch(DispatchCommand cmd);
  void CollectDirectBuffers();  // direct_buffers_, at Finalize

  std::shared_ptr<DeviceCounters> counters_;
  std::vector<Command> commands_;
  uint32_t binding_table_size_ = 0;
  bool has_collectives_ = false;
  bool has_repeats_ = false;
  bool finalized_ = false;
  std::vector<Buffer*> direct_buffers_;  // retained by commands_
  mutable std::atomic<const void*> validated_for_{nullptr};
};

}  // namespace hexir::hal
