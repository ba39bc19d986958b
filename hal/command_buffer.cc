#include "hal/command_buffer.h"

#include <algorithm>

#include "hal/element_type.h"

namespace hexir::hal {

StatusOr<uint64_t> ResolveRange(const BufferRef& ref, std::string_view what) {
  if (!ref.buffer) return InvalidArgument(what, ": buffer is null");
  uint64_t size = ref.buffer->byte_size();
  if (ref.offset > size) {
    return OutOfRange(what, ": offset ", ref.offset, " is past the end of a ", size,
                      "-byte buffer");
  }
  uint64_t length = ref.length == kWholeBuffer ? size - ref.offset : ref.length;
  if (length > size - ref.offset) {
    return OutOfRange(what, ": range [", ref.offset, ", ", ref.offset + length,
                      ") exceeds the buffer size ", size);
  }
  return length;
}

Status ResolveBindingTable(const CommandBuffer* cb, const std::vector<BufferRef>& table,
                           std::vector<BufferRef>* resolved) {
  if (!cb) return InvalidArgument("queue execute: command buffer is null");
  if (!cb->is_finalized()) {
    return FailedPrecondition(
        "queue execute: the command buffer is still recording; finalize it before submitting");
  }
  if (table.size() < cb->binding_table_size()) {
    return InvalidArgument("queue execute: the command buffer uses ", cb->binding_table_size(),
                           " binding table slot(s) but ", table.size(), " were supplied");
  }
  resolved->clear();
  resolved->reserve(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    BufferRef r = table[i];
    // Fast path (every submission of a replayed command buffer): no message is built.
    if (!r.is_slot() && r.buffer && r.offset % kBindingAlignment == 0 &&
        r.offset <= r.buffer->byte_size()) {
      uint64_t rest = r.buffer->byte_size() - r.offset;
      if (r.length == kWholeBuffer || r.length <= rest) {
        if (r.length == kWholeBuffer) r.length = rest;
        resolved->push_back(std::move(r));
        continue;
      }
    }
    std::string what = StrCat("queue execute: binding table slot ", i);
    if (r.is_slot()) return InvalidArgument(what, ": must name a buffer, not another slot");
    if (r.offset % kBindingAlignment != 0) {
      return InvalidArgument(what, ": offset ", r.offset, " is not a multiple of ",
                             kBindingAlignment);
    }
    HEXIR_ASSIGN_OR_RETURN(r.length, ResolveRange(r, what));
    resolved->push_back(std::move(r));
  }
  return Status::Ok();
}

CommandBuffer::CommandBuffer(std::shared_ptr<DeviceCounters> counters)
    : counters_(std::move(counters)) {}

Status CommandBuffer::CheckRecording(const char* command) const {
  if (finalized_) {
    return FailedPrecondition("command buffer ", command,
                              ": the command buffer is finalized; record a new one");
  }
  return Status::Ok();
}

// Checks and records one dispatch; `indirect` commands carry their count reference.
Status CommandBuffer::RecordDispatch(DispatchCommand cmd) {
  HEXIR_RETURN_IF_ERROR(CheckRecording(cmd.indirect ? "dispatch_indirect" : "dispatch"));
  if (!cmd.executable) return InvalidArgument("dispatch: executable is null");
  if (cmd.entry >= cmd.executable->entry_count()) {
    return OutOfRange("dispatch: entry ordinal ", cmd.entry,
                      " is out of range; the executable has ", cmd.executable->entry_count(),
                      " entry point(s): ", cmd.executable->EntryList());
  }
  const std::string& name = cmd.executable->entry_name(cmd.entry);
  const auto& wg = cmd.workgroup_count;
  if (!WorkgroupCountFits(wg)) {
    return InvalidArgument("dispatch of '", name, "': workgroup count ", wg[0], "x", wg[1], "x",
                           wg[2], " exceeds 2^40 workgroups");
  }
  for (size_t i = 0; i < cmd.bindings.size(); ++i) {
    BufferRef& b = cmd.bindings[i];
    std::string what = StrCat("dispatch of '", name, "': binding ", i);
    if (b.offset % kBindingAlignment != 0) {
      return InvalidArgument(what, ": offset ", b.offset, " is not a multiple of ",
                             kBindingAlignment);
    }
    if (b.is_slot()) {
      if (b.slot >= binding_table_size_) binding_table_size_ = b.slot + 1;
      continue;
    }
    HEXIR_ASSIGN_OR_RETURN(b.length, ResolveRange(b, what));
  }
  if (cmd.indirect) {
    BufferRef& r = cmd.workgroup_count_ref;
    std::string what = StrCat("dispatch_indirect of '", name, "': workgroup count buffer");
    if (r.offset % kIndirectParamsAlignment != 0) {
      return InvalidArgument(what, ": offset ", r.offset, " is not a multiple of ",
                             kIndirectParamsAlignment);
    }
    r.length = kIndirectParamsSize;
    if (r.is_slot()) {
      if (r.slot >= binding_table_size_) binding_table_size_ = r.slot + 1;
    } else {
      HEXIR_RETURN_IF_ERROR(ResolveRange(r, what).status());
    }
  }
  commands_.emplace_back(std::move(cmd));
  return Status::Ok();
}

bool WorkgroupCountFits(const std::array<uint32_t, 3>& wg) {
  // Keeps the linear workgroup index (x + X*(y + Y*z)) far from uint64 overflow.
  uint64_t groups = uint64_t{wg[0]} * wg[1];
  return groups <= (uint64_t{1} << 40) && groups * wg[2] <= (uint64_t{1} << 40);
}

Status CommandBuffer::Dispatch(vm::Ref<Executable> executable, uint32_t entry,
                               std::array<uint32_t, 3> workgroup_count,
                               std::vector<BufferRef> bindings,
                               std::vector<uint32_t> push_constants) {
  DispatchCommand cmd;
  cmd.executable = std::move(executable);
  cmd.entry = entry;
  cmd.workgroup_count = workgroup_count;
  cmd.bindings = std::move(bindings);
  cmd.push_constants = std::move(push_constants);
  return RecordDispatch(std::move(cmd));
}

Status CommandBuffer::DispatchIndirect(vm::Ref<Executable> executable, uint32_t entry,
                                       BufferRef workgroup_count, std::vector<BufferRef> bindings,
                                       std::vector<uint32_t> push_constants) {
  DispatchCommand cmd;
  cmd.executable = std::move(executable);
  cmd.entry = entry;
  cmd.workgroup_count = {0, 0, 0};
  cmd.bindings = std::move(bindings);
  cmd.push_constants = std::move(push_constants);
  cmd.indirect = true;
  cmd.workgroup_count_ref = std::move(workgroup_count);
  return RecordDispatch(std::move(cmd));
}

Status CommandBuffer::Barrier() {
  HEXIR_RETURN_IF_ERROR(CheckRecording("barrier"));
  commands_.emplace_back(BarrierCommand{});
  return Status::Ok();
}

Status CommandBuffer::CopyBuffer(vm::Ref<Buffer> source, uint64_t source_offset,
                                 vm::Ref<Buffer> target, uint64_t target_offset,
                                 uint64_t length) {
  HEXIR_RETURN_IF_ERROR(CheckRecording("copy_buffer"));
  HEXIR_ASSIGN_OR_RETURN(uint64_t n, ResolveRange(BufferRef::Range(source, source_offset, length),
                                                  "copy_buffer source"));
  HEXIR_RETURN_IF_ERROR(
      ResolveRange(BufferRef::Range(target, target_offset, n), "copy_buffer target").status());
  commands_.emplace_back(
      CopyCommand{std::move(source), source_offset, std::move(target), target_offset, n});
  return Status::Ok();
}

Status CommandBuffer::FillBuffer(vm::Ref<Buffer> target, uint64_t offset, uint64_t length,
                                 uint32_t pattern, uint32_t pattern_size) {
  HEXIR_RETURN_IF_ERROR(CheckRecording("fill_buffer"));
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4) {
    return InvalidArgument("fill_buffer: pattern size ", pattern_size, " is not 1, 2 or 4");
  }
  HEXIR_ASSIGN_OR_RETURN(uint64_t resolved,
                         ResolveRange(BufferRef::Range(target, offset, length), "fill_buffer"));
  if (offset % pattern_size != 0 || resolved % pattern_size != 0) {
    return InvalidArgument("fill_buffer: offset ", offset, " and length ", resolved,
                           " must be multiples of the pattern size ", pattern_size);
  }
  commands_.emplace_back(FillCommand{std::move(target), offset, resolved, pattern, pattern_size});
  return Status::Ok();
}

Status CommandBuffer::Collective(vm::Ref<Channel> channel, CollectiveKind kind,
                                 ReductionOp reduction, int32_t element_type, uint64_t count,
                                 int32_t peer, BufferRef send, BufferRef recv) {
  HEXIR_RETURN_IF_ERROR(CheckRecording("collective"));
  if (!IsCollectiveKind(static_cast<int64_t>(kind))) {
    return InvalidArgument("collective: unknown kind ", static_cast<int32_t>(kind));
  }
  const std::string name(CollectiveName(kind));
  if (!channel) return InvalidArgument(name, ": channel is null");
  if (!IsReductionOp(static_cast<int64_t>(reduction))) {
    return InvalidArgument(name, ": unknown reduction ", static_cast<int32_t>(reduction),
                           " (sum 0, max 1, min 2, prod 3)");
  }
  const int64_t element_bytes = ElementTypeByteSize(element_type);
  if (element_bytes == 0) return InvalidArgument(name, ": unknown element type ", element_type);
  if (CollectiveReduces(kind) && element_type == static_cast<int32_t>(ElementType::kI1)) {
    return InvalidArgument(name, ": i1 values cannot be reduced");
  }
  if (count > (uint64_t{1} << 40)) {
    return InvalidArgument(name, ": ", count, " elements is more than 2^40");
  }
  if (CollectiveHasPeer(kind)) {
    if (peer < 0 || peer >= channel->count()) {
      return OutOfRange(name, ": peer rank ", peer, " is not a rank of the ", channel->Describe());
    }
    if (kind != CollectiveKind::kBroadcast && peer == channel->rank()) {
      return InvalidArgument(name, ": peer rank ", peer, " is this rank (", channel->Describe(),
                             ")");
    }
  }
  const CollectiveBytes bytes = CollectiveByteSizes(kind, count, element_bytes, channel->rank(),
                                                    channel->count(), peer);
  auto check = [&](BufferRef& ref, uint64_t needed, const char* role) -> Status {
    if (needed == 0) {
      ref = BufferRef{};
      return Status::Ok();
    }
    std::string what = StrCat(name, " ", role, " buffer");
    if (ref.is_slot()) {
      if (ref.slot >= binding_table_size_) binding_table_size_ = ref.slot + 1;
      ref.length = needed;
      return Status::Ok();
    }
    HEXIR_ASSIGN_OR_RETURN(uint64_t length, ResolveRange(ref, what));
    if (length < needed) {
      return OutOfRange(what, ": ", needed, " bytes needed (", count, " x ",
                        ElementTypeName(element_type), " on ", channel->count(),
                        " ranks) but the range holds ", length);
    }
    ref.length = needed;
    return Status::Ok();
  };
  HEXIR_RETURN_IF_ERROR(check(send, bytes.send, "send"));
  HEXIR_RETURN_IF_ERROR(check(recv, bytes.recv, "recv"));
  commands_.emplace_back(CollectiveCommand{{kind, reduction, element_type, count, peer},
                                           std::move(channel), std::move(send), std::move(recv)});
  has_collectives_ = true;
  return Status::Ok();
}

Status CommandBuffer::RepeatWhile(vm::Ref<CommandBuffer> body, BufferRef condition,
                                  uint32_t max_iterations) {
  HEXIR_RETURN_IF_ERROR(CheckRecording("repeat_while"));
  if (!body) return InvalidArgument("repeat_while: body is null");
  if (body.get() == this) return InvalidArgument("repeat_while: the body is this command buffer");
  if (!body->is_finalized()) {
    return FailedPrecondition("repeat_while: the body is still recording; finalize it first");
  }
  if (body->has_repeats()) {
    return InvalidArgument("repeat_while: the body holds a repeat_while (loops do not nest)");
  }
  if (body->has_collectives()) {
    return InvalidArgument("repeat_while: the body holds collectives, which cannot repeat on "
                           "the device");
  }
  const std::string what = "repeat_while: condition";
  if (condition.offset % 4 != 0) {
    return InvalidArgument(what, ": offset ", condition.offset, " is not a multiple of 4");
  }
  condition.length = kRepeatConditionSize;
  if (condition.is_slot()) {
    if (condition.slot >= binding_table_size_) binding_table_size_ = condition.slot + 1;
  } else {
    HEXIR_RETURN_IF_ERROR(ResolveRange(condition, what).status());
  }
  binding_table_size_ = std::max(binding_table_size_, body->binding_table_size());
  commands_.emplace_back(RepeatCommand{std::move(body), std::move(condition), max_iterations});
  has_repeats_ = true;
  return Status::Ok();
}

Status CommandBuffer::Finalize() {
  HEXIR_RETURN_IF_ERROR(CheckRecording("finalize"));
  HEXIR_RETURN_IF_ERROR(OnFinalize());
  finalized_ = true;
  CollectDirectBuffers();
  if (counters_) {
    DeviceCounters::Add(counters_->command_buffers_recorded);
    uint64_t barriers = 0;
    for (const Command& c : commands_) barriers += std::holds_alternative<BarrierCommand>(c);
    DeviceCounters::Add(counters_->barriers_recorded, barriers);
  }
  return Status::Ok();
}

void CommandBuffer::CollectDirectBuffers() {
  auto add = [&](Buffer* b) {
    if (b) direct_buffers_.push_back(b);
  };
  auto add_ref = [&](const BufferRef& r) {
    if (!r.is_slot()) add(r.buffer.get());
  };
  for (const Command& c : commands_) {
    if (auto* d = std::get_if<DispatchCommand>(&c)) {
      for (const BufferRef& r : d->bindings) add_ref(r);
      if (d->indirect) add_ref(d->workgroup_count_ref);
    } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
      add(cp->source.get());
      add(cp->target.get());
    } else if (auto* f = std::get_if<FillCommand>(&c)) {
      add(f->target.get());
    } else if (auto* col = std::get_if<CollectiveCommand>(&c)) {
      add_ref(col->send);
      add_ref(col->recv);
    } else if (auto* r = std::get_if<RepeatCommand>(&c)) {
      add_ref(r->condition);
      for (Buffer* b : r->body->direct_buffers()) add(b);
    }
  }
  std::sort(direct_buffers_.begin(), direct_buffers_.end());
  direct_buffers_.erase(std::unique(direct_buffers_.begin(), direct_buffers_.end()),
                        direct_buffers_.end());
}

}  // namespace hexir::hal
