#include "hal/drivers/cuda/cuda_recording.h"

#include <algorithm>
#include <cstring>

#include "hal/kernel_error.h"

namespace hexir::hal::cuda {
namespace {

CUdeviceptr DevicePtr(const Buffer& b) {
  const CudaBuffer* cb = AsCudaBuffer(&b);
  return cb ? cb->device_ptr() : 0;
}

// CUDA dispatch ABI v1: B 8-byte pointers, P 4-byte push constants, then optionally one
// 8-byte status pointer. Sizes make the optional parameter unambiguous.
Status CheckAbi(const std::string& name, const CudaEntry& e, size_t bindings, size_t pushes) {
  if (e.param_count < 0) return Status::Ok();  // the driver cannot tell
  size_t declared = static_cast<size_t>(e.param_count);
  bool ok = declared == bindings + pushes || declared == bindings + pushes + 1;
  for (size_t i = 0; ok && i < declared && i < e.param_sizes.size(); ++i) {
    uint32_t want = i < bindings ? 8 : i < bindings + pushes ? 4 : 8;
    ok = e.param_sizes[i] == want;
  }
  if (ok) return Status::Ok();
  std::string sizes;
  for (uint32_t s : e.param_sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(s);
  return InvalidArgument("cuda command buffer: dispatch of '", name, "' passes ", bindings,
                         " binding(s) + ", pushes, " push constant(s) but the kernel declares ",
                         declared, " parameter(s) of sizes [", sizes,
                         "] (CUDA dispatch ABI v1: 8-byte binding pointers, 4-byte push "
                         "constants, optional 8-byte hexir_kernel_status_t* status)");
}

Status CountOutsideSlot(const RecordedKernel& k, uint64_t slot_length) {
  return OutOfRange("dispatch_indirect of '", k.name(), "': the workgroup count at byte ",
                    k.count_offset, " of binding table slot ", k.count_slot, " lies outside its ",
                    slot_length, "-byte range");
}

Status CountTooLarge(const RecordedKernel& k, const Grid& wg) {
  return InvalidArgument("dispatch of '", k.name(), "': workgroup count ", wg[0], "x", wg[1], "x",
                         wg[2], " read from the buffer exceeds 2^40 workgroups");
}

}  // namespace

Status CheckGrid(const std::string& name, const Grid& wg) {
  if (wg[0] > 0x7fffffffu || wg[1] > 65535 || wg[2] > 65535) {
    return InvalidArgument("cuda command buffer: dispatch of '", name, "': workgroup count ",
                           wg[0], "x", wg[1], "x", wg[2],
                           " exceeds the CUDA grid limit (2^31-1)x65535x65535");
  }
  return Status::Ok();
}

CudaRecording::~CudaRecording() {
  if (!shared_->MakeCurrent().ok()) return;
  const CudaApi& api = *shared_->api;
  if (scratch_) api.cuMemFree(scratch_);
  if (status_host_) api.cuMemFreeHost(const_cast<hexir_kernel_status_t*>(status_host_));
  if (count_host_) api.cuMemFreeHost(count_host_);
  if (condition_host_) api.cuMemFreeHost(condition_host_);
  if (repeat_counters_) api.cuMemFree(repeat_counters_);
  for (CUevent e : profile_events_) api.cuEventDestroy(e);
  // Launches that read them are ordered before these frees on the device stream.
  for (const Shadow& sh : shadows_)
    if (sh.ptr) api.cuMemFreeAsync(sh.ptr, shared_->stream);
}

Status CudaRecording::AddDispatch(const DispatchCommand& d) {
  const std::string& name = d.executable->entry_name(d.entry);
  if (d.executable->driver() != kCudaDriverName) {
    return InvalidArgument("cuda command buffer: dispatch of '", name,
                           "' uses an executable of driver '", d.executable->driver(), "'");
  }
  const auto& exe = static_cast<const CudaExecutable&>(*d.executable);
  if (exe.shared()->context != shared_->context) {
    return InvalidArgument("cuda command buffer: dispatch of '", name,
                           "' uses an executable loaded on another GPU");
  }
  if (!d.indirect) {
    if (IsEmptyGrid(d.workgroup_count)) return Status::Ok();  // no workgroups: nothing runs
    HEXIR_RETURN_IF_ERROR(CheckGrid(name, d.workgroup_count));
  }
  RecordedKernel k;
  if (d.indirect) {
    has_indirect_ = true;
    k.indirect = true;
    const BufferRef& r = d.workgroup_count_ref;
    if (r.is_slot()) {
      k.count_slot = static_cast<int32_t>(r.slot);
      k.count_offset = r.offset;
    } else {
      if (!AsCudaBuffer(r.buffer.get())) {
        return InvalidArgument("cuda command buffer: dispatch of '", name,
                               "': the workgroup count buffer is not a CUDA buffer");
      }
      k.count_ptr = DevicePtr(*r.buffer) + r.offset;
      indirect_on_device_ |=
          !(r.buffer->memory_types() & kMemoryUniform) || r.buffer->host_data() == nullptr;
    }
  }
  k.command = &d;
  k.entry = &exe.entry(d.entry);
  HEXIR_RETURN_IF_ERROR(CheckAbi(name, *k.entry, d.bindings.size(), d.push_constants.size()));
  for (const BufferRef& b : d.bindings) {
    if (b.is_slot()) {
      k.slot_of.push_back(static_cast<int32_t>(b.slot));
      k.slot_offset.push_back(b.offset);
      if (b.offset != 0) slot_offset_uses_.push_back({b.slot, b.offset, &d});
      k.values.push_back(0);
      k.uses_slots = true;
    } else {
      if (!AsCudaBuffer(b.buffer.get())) {
        return InvalidArgument("cuda command buffer: dispatch of '", name,
                               "': a binding is not a CUDA buffer");
      }
      k.slot_of.push_back(-1);
      k.slot_offset.push_back(0);
      k.values.push_back(DevicePtr(*b.buffer) + b.offset);
    }
  }
  for (uint32_t v : d.push_constants) k.values.push_back(v);
  const int32_t declared = k.entry->param_count;
  if (declared >= 0 &&
      static_cast<size_t>(declared) == d.bindings.size() + d.push_constants.size() + 1) {
    k.status_index = static_cast<int32_t>(status_count_++);
    k.values.push_back(0);  // patched in Build once the status records exist
  }
  ops_.push_back({RecordedOp::kKernel, kernels_.size()});
  kernels_.push_back(std::move(k));
  return Status::Ok();
}

Status CudaRecording::Build(const std::vector<Command>& commands) {
  const CudaApi& api = *shared_->api;
  for (const Command& c : commands) {
    if (std::holds_alternative<BarrierCommand>(c)) {
      ops_.push_back({RecordedOp::kBarrier, 0});
    } else if (auto* d = std::get_if<DispatchCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(AddDispatch(*d));
    } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
      if (cp->length == 0) continue;
      if (!AsCudaBuffer(cp->source.get()) || !AsCudaBuffer(cp->target.get())) {
        return InvalidArgument("cuda command buffer: copy_buffer between non-CUDA buffers");
      }
      RecordedCopy op{DevicePtr(*cp->source) + cp->source_offset,
                      DevicePtr(*cp->target) + cp->target_offset, cp->length, false,
                      cp->source.get()};
      // memcpy nodes do not allow overlap; the HAL's copy is a memmove.
      op.via_scratch = op.src < op.dst + op.length && op.dst < op.src + op.length;
      if (op.via_scratch) scratch_size_ = std::max(scratch_size_, op.length);
      ops_.push_back({RecordedOp::kCopy, copies_.size()});
      copies_.push_back(op);
    } else if (auto* col = std::get_if<CollectiveCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(AddCollective(*col));
    } else if (auto* f = std::get_if<FillCommand>(&c)) {
      if (f->length == 0) continue;
      if (!AsCudaBuffer(f->target.get())) {
        return InvalidArgument("cuda command buffer: fill_buffer of a non-CUDA buffer");
      }
      uint32_t mask = f->pattern_size == 4 ? ~0u : (1u << (8 * f->pattern_size)) - 1;
      ops_.push_back({RecordedOp::kFill, fills_.size()});
      fills_.push_back({DevicePtr(*f->target) + f->offset, f->length, f->pattern & mask,
                        f->pattern_size});
    } else if (auto* r = std::get_if<RepeatCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(AddRepeat(*r));
    }
  }
  HEXIR_RETURN_IF_ERROR(collective_stream_.Prepare(collectives_.size()));
  if (!repeats_.empty()) {
    const size_t bytes = 4 * repeats_.size();
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemAlloc(&repeat_counters_, bytes),
                               "cuMemAlloc(", bytes, " bytes, repeat counters)");
    for (size_t i = 0; i < repeats_.size(); ++i) repeats_[i].counter = repeat_counters_ + 4 * i;
    void* host = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemHostAlloc(&host, 64, 0),
                               "cuMemHostAlloc(repeat condition readback)");
    condition_host_ = static_cast<int32_t*>(host);
  }
  if (has_indirect_) {
    void* host = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemHostAlloc(&host, 64, 0),
                               "cuMemHostAlloc(indirect count readback)");
    count_host_ = static_cast<uint32_t*>(host);
  }
  if (scratch_size_) {
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemAlloc(&scratch_, scratch_size_),
                               "cuMemAlloc(", scratch_size_, " bytes, copy overlap scratch)");
  }
  if (status_count_) {
    const size_t bytes = status_count_ * sizeof(hexir_kernel_status_t);
    void* host = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
        "cuMemHostAlloc(", bytes, " bytes, kernel status records)");
    std::memset(host, 0, bytes);
    status_host_ = static_cast<volatile hexir_kernel_status_t*>(host);
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemHostGetDevicePointer(&status_device_, host, 0),
                               "cuMemHostGetDevicePointer(kernel status records)");
  }
  for (RecordedKernel& k : kernels_) {
    if (k.status_index >= 0)
      k.values.back() = status_device_ + sizeof(hexir_kernel_status_t) * k.status_index;
    k.params.resize(k.values.size());
    for (size_t i = 0; i < k.values.size(); ++i) k.params[i] = &k.values[i];
  }
  return Status::Ok();
}

Status CudaRecording::AddRepeat(const RepeatCommand& r) {
  RecordedRepeat rep;
  rep.command = &r;
  if (r.condition.is_slot()) {
    rep.condition_slot = static_cast<int32_t>(r.condition.slot);
    rep.condition_offset = r.condition.offset;
  } else {
    if (!AsCudaBuffer(r.condition.buffer.get())) {
      return InvalidArgument("cuda command buffer: repeat_while: the condition buffer is not a "
                             "CUDA buffer");
    }
    rep.condition = DevicePtr(*r.condition.buffer) + r.condition.offset;
  }
  rep.body = std::make_unique<CudaRecording>(shared_);
  HEXIR_RETURN_IF_ERROR(rep.body->Build(r.body->commands()).WithContext("repeat_while body"));
  has_indirect_ |= rep.body->has_indirect_;
  slot_offset_uses_.insert(slot_offset_uses_.end(), rep.body->slot_offset_uses_.begin(),
                           rep.body->slot_offset_uses_.end());
  body_status_words_ |= rep.body->has_status_words();
  indirect_on_device_ |= rep.body->indirect_on_device_;
  ops_.push_back({RecordedOp::kBarrier, 0});  // it runs alone
  ops_.push_back({RecordedOp::kRepeat, repeats_.size()});
  ops_.push_back({RecordedOp::kBarrier, 0});
  repeats_.push_back(std::move(rep));
  return Status::Ok();
}

StatusOr<CUdeviceptr> CudaRecording::RepeatCondition(
    size_t index, const std::vector<BufferRef>& table,
    const std::vector<CUdeviceptr>& pointers) const {
  const RecordedRepeat& rep = repeats_[index];
  if (rep.condition_slot < 0) return rep.condition;
  const BufferRef& r = table[rep.condition_slot];
  if (r.length < rep.condition_offset + kRepeatConditionSize) {
    return OutOfRange("repeat_while: the condition at byte ", rep.condition_offset,
                      " of binding table slot ", rep.condition_slot, " lies outside its ",
                      r.length, "-byte range");
  }
  return pointers[rep.condition_slot] + rep.condition_offset;
}

size_t CudaRecording::kernel_count() const {
  size_t n = kernels_.size();
  for (const RecordedRepeat& rep : repeats_) n += rep.body->kernel_count();
  return n;
}

Status CudaRecording::LaunchRepeatOnStream(size_t index, const std::vector<BufferRef>& table,
                                           const std::vector<CUdeviceptr>& pointers,
                                           CUstream stream) {
  const CudaApi& api = *shared_->api;
  RecordedRepeat& rep = repeats_[index];
  HEXIR_ASSIGN_OR_RETURN(CUdeviceptr condition, RepeatCondition(index, table, pointers));
  for (uint32_t i = 0; i < rep.command->max_iterations; ++i) {
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuMemcpyDtoHAsync(condition_host_, condition, kRepeatConditionSize, stream),
        "cuMemcpyDtoHAsync(repeat_while condition)");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamSynchronize(stream),
                               "cuStreamSynchronize(repeat_while condition)");
    shared_->counters.transfer_synchronizations.fetch_add(1, std::memory_order_relaxed);
    if (*condition_host_ == 0) break;
    HEXIR_RETURN_IF_ERROR(rep.body->LaunchOps(table, pointers, stream, /*profiling=*/false));
  }
  return Status::Ok();
}

Status CudaRecording::AddCollective(const CollectiveCommand& c) {
  auto* channel = dynamic_cast<NcclChannel*>(c.channel.get());
  if (channel == nullptr) {
    return InvalidArgument(CollectiveName(c.kind), " on a ", c.channel->backend(),
                           " channel cannot run on a cuda device");
  }
  if (channel->shared()->context != shared_->context) {
    return InvalidArgument(CollectiveName(c.kind), " on the ", channel->Describe(),
                           " of another GPU cannot run on this one");
  }
  HEXIR_RETURN_IF_ERROR(NcclChannel::CheckSupported(c.kind, c.element_type));
  RecordedCollective r;
  r.command = &c;
  r.channel = channel;
  for (const BufferRef* ref : {&c.send, &c.recv}) {
    if (ref->is_slot()) {
      r.uses_slots = true;
    } else if (ref->buffer) {
      if (!AsCudaBuffer(ref->buffer.get())) {
        return InvalidArgument(CollectiveName(c.kind), ": a buffer is not a CUDA buffer");
      }
      (ref == &c.send ? r.send : r.recv) = DevicePtr(*ref->buffer) + ref->offset;
    }
  }
  has_slot_collectives_ |= r.uses_slots;
  ops_.push_back({RecordedOp::kBarrier, 0});  // it runs alone
  ops_.push_back({RecordedOp::kCollective, collectives_.size()});
  ops_.push_back({RecordedOp::kBarrier, 0});
  collectives_.push_back(r);
  return Status::Ok();
}

StatusOr<NcclChannel::Operation> CudaRecording::ResolveCollective(
    size_t index, const std::vector<BufferRef>* table,
    const std::vector<CUdeviceptr>* pointers) const {
  const RecordedCollective& r = collectives_[index];
  const CollectiveCommand& c = *r.command;
  NcclChannel::Operation op;
  static_cast<CollectiveParams&>(op) = c;
  op.send = r.send;
  op.recv = r.recv;
  const BufferRef* refs[2] = {&c.send, &c.recv};
  for (int side = 0; side < 2; ++side) {
    const BufferRef& ref = *refs[side];
    if (!ref.is_slot() || ref.length == 0) continue;
    const BufferRef& actual = (*table)[ref.slot];
    if (ref.offset > actual.length || actual.length - ref.offset < ref.length) {
      return OutOfRange(CollectiveName(c.kind), " ", side == 0 ? "send" : "recv",
                        " buffer (binding table slot ", ref.slot, "): ", ref.length,
                        " bytes needed, the slot holds ",
                        actual.length - std::min(actual.length, ref.offset));
    }
    (side == 0 ? op.send : op.recv) = (*pointers)[ref.slot] + ref.offset;
  }
  return op;
}

Status CudaRecording::IssueCollective(size_t index, const std::vector<BufferRef>* table,
                                      const std::vector<CUdeviceptr>* pointers, CUstream stream) {
  HEXIR_ASSIGN_OR_RETURN(NcclChannel::Operation op, ResolveCollective(index, table, pointers));
  return collectives_[index].channel->Issue(op, stream);
}

std::pair<ByteRange, ByteRange> CudaRecording::CollectiveRanges(const RecordedCollective& r,
                                                                const NcclChannel::Operation& op) {
  const CollectiveCommand& c = *r.command;
  return {ByteRange::Of(op.send, op.send ? c.send.length : 0),
          ByteRange::Of(op.recv, op.recv ? c.recv.length : 0)};
}

void CudaRecording::OpRanges(const RecordedOp& op, const std::vector<BufferRef>* table,
                             CommandRanges* out) const {
  static const std::vector<BufferRef> kNoTable;
  if (op.kind == RecordedOp::kKernel) {
    const RecordedKernel& k = kernels_[op.index];
    if (table == nullptr && (k.uses_slots || k.count_slot >= 0)) {
      out->AddEverything();
    } else {
      AppendDispatchRanges(*k.command, table ? *table : kNoTable, out);
    }
  } else if (op.kind == RecordedOp::kRepeat) {
    out->AddEverything();
  } else if (op.kind == RecordedOp::kCopy) {
    const RecordedCopy& c = copies_[op.index];
    out->reads.push_back(ByteRange::Of(c.src, c.length));
    out->writes.push_back(ByteRange::Of(c.dst, c.length));
  } else if (op.kind == RecordedOp::kFill) {
    out->writes.push_back(ByteRange::Of(fills_[op.index].dst, fills_[op.index].length));
  }
}

StatusOr<std::vector<OrderedCommand>> CudaRecording::OrderedCommands() const {
  std::vector<OrderedCommand> out(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) {
    const RecordedOp& op = ops_[i];
    CommandRanges& r = out[i].ranges;
    switch (op.kind) {
      case RecordedOp::kBarrier:
        out[i].kind = OrderedCommand::kBarrier;
        break;
      case RecordedOp::kKernel:
        AppendDispatchStandInRanges(*kernels_[op.index].command, &r);
        break;
      case RecordedOp::kCopy: {
        const RecordedCopy& c = copies_[op.index];
        r.reads.push_back(ByteRange::Of(c.src, c.length));
        r.writes.push_back(ByteRange::Of(c.dst, c.length));
        if (c.via_scratch) r.writes.push_back(ByteRange::Of(scratch_, c.length));
        break;
      }
      case RecordedOp::kFill:
        r.writes.push_back(ByteRange::Of(fills_[op.index].dst, fills_[op.index].length));
        break;
      case RecordedOp::kCollective: {
        out[i].kind = OrderedCommand::kCollective;
        HEXIR_ASSIGN_OR_RETURN(NcclChannel::Operation c, ResolveCollective(op.index, nullptr, nullptr));
        auto [send, recv] = CollectiveRanges(collectives_[op.index], c);
        r.reads.push_back(send);
        r.writes.push_back(recv);
        break;
      }
      case RecordedOp::kRepeat:
        r.AddEverything();
        break;
    }
  }
  return out;
}

bool CudaRecording::writes_stated() const {
  for (const RecordedKernel& k : kernels_) {
    if (!k.entry->writes_stated) return false;
  }
  return true;
}

Status CudaRecording::TrackCollectives(CUstream stream) {
  for (size_t i = 0; i < collectives_.size(); ++i) {
    NcclChannel* channel = collectives_[i].channel;
    bool seen = false;
    uint64_t count = 0;
    for (size_t j = 0; j < collectives_.size(); ++j) {
      if (collectives_[j].channel != channel) continue;
      seen |= j < i;
      ++count;
    }
    if (seen) continue;  // tracked with this channel's first collective
    HEXIR_RETURN_IF_ERROR(channel->Track(stream, collectives_[i].command->kind, count));
  }
  return Status::Ok();
}

bool CudaRecording::ResolveSlotPointers(RecordedKernel& k,
                                        const std::vector<CUdeviceptr>& pointers) {
  bool changed = false;
  for (size_t i = 0; i < k.slot_of.size(); ++i) {
    if (k.slot_of[i] < 0) continue;
    uint64_t v = pointers[k.slot_of[i]] + k.slot_offset[i];
    if (k.values[i] != v) {
      k.values[i] = v;
      changed = true;
    }
  }
  return changed;
}

Status CudaRecording::CheckSlotOffsets(const std::vector<BufferRef>& table) const {
  for (const SlotOffsetUse& u : slot_offset_uses_) {
    const uint64_t length = u.slot < table.size() ? table[u.slot].length : 0;
    if (u.offset >= length) {
      return OutOfRange("dispatch of '", u.command->executable->entry_name(u.command->entry),
                        "': a binding at byte offset ", u.offset, " into binding table slot ",
                        u.slot, " lies outside its ", length, "-byte range");
    }
  }
  return Status::Ok();
}

// A uniform slot's shadow is reused by every launch: the copy for launch N+1 is queued after
// launch N on the same stream. Host memory stays valid until the copy ran because the
// submission retains its binding table until it completes. A range bound in several slots (a
// recorded callee's parameter buffer shared by its call sites) is copied once, into the first
// slot's shadow (kernels only read uniform slots, so sharing one shadow aliases nothing
// written).
Status CudaRecording::StageUniforms(const std::vector<BufferRef>& table, CUstream stream,
                                    std::vector<CUdeviceptr>* pointers) {
  constexpr uint64_t kMaxUniformBytes = 64 * 1024;
  HEXIR_RETURN_IF_ERROR(CheckSlotOffsets(table));
  const CudaApi& api = *shared_->api;
  if (shadows_.size() < table.size()) shadows_.resize(table.size());
  pointers->resize(table.size());
  std::vector<size_t>& staged = staged_slots_;
  staged.clear();
  for (size_t i = 0; i < table.size(); ++i) {
    const BufferRef& r = table[i];
    const Buffer& b = *r.buffer;
    (*pointers)[i] = DevicePtr(b) + r.offset;
    if (!(b.memory_types() & kMemoryUniform) || b.host_data() == nullptr || r.length == 0 ||
        r.length > kMaxUniformBytes)
      continue;
    auto same = std::find_if(staged.begin(), staged.end(), [&](size_t j) {
      return table[j].buffer.get() == &b && table[j].offset == r.offset && table[j].length == r.length;
    });
    if (same != staged.end()) {
      (*pointers)[i] = (*pointers)[*same];
      continue;
    }
    staged.push_back(i);
    Shadow& sh = shadows_[i];
    if (sh.capacity < r.length) {
      if (sh.ptr) api.cuMemFreeAsync(sh.ptr, stream);
      sh = Shadow();
      uint64_t capacity = std::max<uint64_t>(r.length, 256);
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemAllocAsync(&sh.ptr, capacity, stream),
                                 "cuMemAllocAsync(", capacity, " bytes, uniform slot ", i, ")");
      sh.capacity = capacity;
    }
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuMemcpyHtoDAsync(sh.ptr, b.host_data() + r.offset, r.length, stream),
        "cuMemcpyHtoDAsync(", r.length, " bytes, uniform slot ", i, ")");
    (*pointers)[i] = sh.ptr;
  }
  return Status::Ok();
}

StatusOr<std::optional<Grid>> CudaRecording::HostCount(const RecordedKernel& k,
                                                       const std::vector<BufferRef>& table) const {
  const Buffer* buffer = k.command->workgroup_count_ref.buffer.get();
  uint64_t offset = k.command->workgroup_count_ref.offset;
  if (k.count_slot >= 0) {
    const BufferRef& r = table[k.count_slot];
    if (r.length < k.count_offset + kIndirectParamsSize) return CountOutsideSlot(k, r.length);
    buffer = r.buffer.get();
    offset = r.offset + k.count_offset;
  }
  if (!(buffer->memory_types() & kMemoryUniform) || buffer->host_data() == nullptr) {
    return std::optional<Grid>();
  }
  Grid wg;
  std::memcpy(wg.data(), buffer->host_data() + offset, kIndirectParamsSize);
  if (!WorkgroupCountFits(wg)) return CountTooLarge(k, wg);
  return std::optional<Grid>(wg);
}

StatusOr<Grid> CudaRecording::StreamCount(const RecordedKernel& k,
                                          const std::vector<BufferRef>& table, CUstream stream) {
  HEXIR_ASSIGN_OR_RETURN(std::optional<Grid> host_count, HostCount(k, table));
  if (host_count) return *host_count;
  const CudaApi& api = *shared_->api;
  CUdeviceptr src = k.count_ptr;
  if (k.count_slot >= 0) {
    const BufferRef& r = table[k.count_slot];  // its range was checked by HostCount
    src = DevicePtr(*r.buffer) + r.offset + k.count_offset;
  }
  HEXIR_CUDA_RETURN_IF_ERROR(
      api, api.cuMemcpyDtoHAsync(count_host_, src, kIndirectParamsSize, stream),
      "cuMemcpyDtoHAsync(indirect count of '", k.name(), "')");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamSynchronize(stream),
                             "cuStreamSynchronize(indirect count of '", k.name(), "')");
  shared_->counters.transfer_synchronizations.fetch_add(1, std::memory_order_relaxed);
  Grid wg = {count_host_[0], count_host_[1], count_host_[2]};
  if (!WorkgroupCountFits(wg)) return CountTooLarge(k, wg);
  return wg;
}

// Profiling mode (hal/profiling.h): stream launches with an event pair around each kernel;
// the submitting thread waits for a closing event and maps every event onto the host clock
// through it (elapsed time from the event to the closing event, subtracted from the host time
// at which the closing event was seen complete).
Status CudaRecording::LaunchProfiled(const std::vector<BufferRef>& table, CUstream stream,
                                     Profiler* profiler) {
  const CudaApi& api = *shared_->api;
  const size_t needed = 2 * kernels_.size() + 1;
  while (profile_events_.size() < needed) {
    CUevent e = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&e, CU_EVENT_DEFAULT),
                               "cuEventCreate(profiling)");
    profile_events_.push_back(e);
  }
  profiled_kernels_.clear();
  HEXIR_RETURN_IF_ERROR(Launch(table, stream, /*profiling=*/true));
  CUevent closing = profile_events_[2 * kernels_.size()];
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(closing, stream), "cuEventRecord(profiling)");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventSynchronize(closing),
                             "cuEventSynchronize(profiling)");
  const int64_t closing_ns = ProfileClockNs();
  for (size_t i = 0; i < profiled_kernels_.size(); ++i) {
    const RecordedKernel& k = kernels_[profiled_kernels_[i].first];
    float to_end_begin = 0, to_end_end = 0;
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuEventElapsedTime(&to_end_begin, profile_events_[2 * i], closing),
        "cuEventElapsedTime(profiling)");
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuEventElapsedTime(&to_end_end, profile_events_[2 * i + 1], closing),
        "cuEventElapsedTime(profiling)");
    DispatchTiming t;
    t.executable = k.command->executable.get();
    t.entry = k.command->entry;
    t.workgroup_count = profiled_kernels_[i].second;
    t.begin_ns = closing_ns - static_cast<int64_t>(double(to_end_begin) * 1e6);
    t.end_ns = closing_ns - static_cast<int64_t>(double(to_end_end) * 1e6);
    t.device_events = true;
    profiler->OnDispatch(t);
  }
  for (size_t index : collective_stream_.issued()) {
    float to_end_begin = 0, to_end_end = 0;
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuEventElapsedTime(&to_end_begin, collective_stream_.begin_event(index), closing),
        "cuEventElapsedTime(collective profiling)");
    HEXIR_CUDA_RETURN_IF_ERROR(
        api, api.cuEventElapsedTime(&to_end_end, collective_stream_.end_event(index), closing),
        "cuEventElapsedTime(collective profiling)");
    profiler->OnCollective(CollectiveName(collectives_[index].command->kind).data(),
                           closing_ns - static_cast<int64_t>(double(to_end_begin) * 1e6),
                           closing_ns - static_cast<int64_t>(double(to_end_end) * 1e6));
  }
  return Status::Ok();
}

Status CudaRecording::Launch(const std::vector<BufferRef>& table, CUstream stream,
                             bool profiling) {
  // Uniform slots read from their device shadows here too, so stream launches (and the
  // profiled launches hexir-bench times) run the kernels exactly as a graph launch does.
  std::vector<CUdeviceptr> pointers;
  HEXIR_RETURN_IF_ERROR(StageUniforms(table, stream, &pointers));
  HEXIR_RETURN_IF_ERROR(LaunchOps(table, pointers, stream, profiling));
  return TrackCollectives(stream);
}

// One stream serializes everything, so barriers need no work here; collectives go to the
// collective stream, and a later op waits there only for those whose buffers it touches
// (cuda_collective_stream.h). A repeat body's kernels are launched unprofiled (the profiler
// sees the kernels outside device loops).
Status CudaRecording::LaunchOps(const std::vector<BufferRef>& table,
                                const std::vector<CUdeviceptr>& pointers, CUstream stream,
                                bool profiling) {
  collective_stream_.BeginLaunch();
  Status launched = LaunchEachOp(table, pointers, stream, profiling);
  // Joined even after a failure: the compute stream's later work and the buffers' release
  // stay behind the collectives already issued.
  Status joined = collective_stream_.Join(stream);
  collectives_overlapped_ = collective_stream_.overlapped();
  return launched.ok() ? joined : launched;
}

Status CudaRecording::LaunchEachOp(const std::vector<BufferRef>& table,
                                   const std::vector<CUdeviceptr>& pointers, CUstream stream,
                                   bool profiling) {
  const CudaApi& api = *shared_->api;
  for (const RecordedOp& op : ops_) {
    if (op.kind == RecordedOp::kBarrier) continue;
    if (gate_) HEXIR_RETURN_IF_ERROR(GateOp(op, stream));
    if (op.kind == RecordedOp::kRepeat) {
      HEXIR_RETURN_IF_ERROR(collective_stream_.Join(stream));  // it touches everything
    } else if (op.kind != RecordedOp::kCollective && collective_stream_.in_flight()) {
      op_ranges_.clear();
      OpRanges(op, &table, &op_ranges_);
      HEXIR_RETURN_IF_ERROR(collective_stream_.OrderCommand(op_ranges_, stream));
    }
    if (op.kind == RecordedOp::kKernel) {
      RecordedKernel& k = kernels_[op.index];
      if (k.uses_slots) ResolveSlotPointers(k, pointers);
      Grid wg = k.command->workgroup_count;
      if (k.indirect) {
        HEXIR_ASSIGN_OR_RETURN(wg, StreamCount(k, table, stream));
        if (IsEmptyGrid(wg)) continue;
        HEXIR_RETURN_IF_ERROR(CheckGrid(k.name(), wg));
      }
      const auto& bs = k.entry->block_size;
      const size_t profiled = profiled_kernels_.size();
      if (profiling) {
        HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(profile_events_[2 * profiled], stream),
                                   "cuEventRecord(profiling)");
      }
      HEXIR_CUDA_RETURN_IF_ERROR(
          api,
          api.cuLaunchKernel(k.entry->function, wg[0], wg[1], wg[2], bs[0], bs[1], bs[2],
                             k.entry->shared_bytes, stream, k.params.data(), nullptr),
          "cuLaunchKernel('", k.name(), "', grid ", wg[0], "x", wg[1], "x", wg[2], ")");
      shared_->counters.stream_launches.fetch_add(1, std::memory_order_relaxed);
      if (profiling) {
        HEXIR_CUDA_RETURN_IF_ERROR(api,
                                   api.cuEventRecord(profile_events_[2 * profiled + 1], stream),
                                   "cuEventRecord(profiling)");
        profiled_kernels_.emplace_back(op.index, wg);
      }
    } else if (op.kind == RecordedOp::kCopy) {
      const RecordedCopy& c = copies_[op.index];
      if (c.via_scratch) {
        HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemcpyAsync(scratch_, c.src, c.length, stream),
                                   "cuMemcpyAsync(", c.length, " bytes to scratch)");
        HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemcpyAsync(c.dst, scratch_, c.length, stream),
                                   "cuMemcpyAsync(", c.length, " bytes from scratch)");
      } else {
        HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuMemcpyAsync(c.dst, c.src, c.length, stream),
                                   "cuMemcpyAsync(", c.length, " bytes)");
      }
    } else if (op.kind == RecordedOp::kCollective) {
      HEXIR_ASSIGN_OR_RETURN(NcclChannel::Operation c,
                             ResolveCollective(op.index, &table, &pointers));
      HEXIR_ASSIGN_OR_RETURN(CUstream side, collective_stream_.Before(op.index, stream, profiling));
      HEXIR_RETURN_IF_ERROR(collectives_[op.index].channel->Issue(c, side));
      auto [send, recv] = CollectiveRanges(collectives_[op.index], c);
      HEXIR_RETURN_IF_ERROR(collective_stream_.After(op.index, send, recv, profiling));
    } else if (op.kind == RecordedOp::kRepeat) {
      HEXIR_RETURN_IF_ERROR(LaunchRepeatOnStream(op.index, table, pointers, stream));
    } else if (op.kind == RecordedOp::kFill) {
      const RecordedFill& f = fills_[op.index];
      CUresult r = f.pattern_size == 1
                       ? api.cuMemsetD8Async(f.dst, static_cast<unsigned char>(f.pattern),
                                             f.length, stream)
                   : f.pattern_size == 2
                       ? api.cuMemsetD16Async(f.dst, static_cast<unsigned short>(f.pattern),
                                              f.length / 2, stream)
                       : api.cuMemsetD32Async(f.dst, f.pattern, f.length / 4, stream);
      HEXIR_CUDA_RETURN_IF_ERROR(api, r, "cuMemsetD", 8 * f.pattern_size, "Async(", f.length,
                                 " bytes)");
    }
  }
  return Status::Ok();
}

Status CudaRecording::LoadKernels() {
  const CudaApi& api = *shared_->api;
  if (kernels_loaded_ || api.cuFuncLoad == nullptr) return Status::Ok();
  for (const RecordedKernel& k : kernels_) {
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuFuncLoad(k.entry->function), "cuFuncLoad('", k.name(), "')");
  }
  kernels_loaded_ = true;
  return Status::Ok();
}

Status CudaRecording::GateOp(const RecordedOp& op, CUstream stream) {
  switch (op.kind) {
    case RecordedOp::kKernel:
      return gate_->BeforeDispatch(*kernels_[op.index].command, stream);
    case RecordedOp::kCopy:
      return gate_->BeforeBuffer(copies_[op.index].source, stream);
    case RecordedOp::kCollective:
    case RecordedOp::kRepeat:
      return gate_->BeforeAll(stream);
    default:
      return Status::Ok();  // a fill reads nothing
  }
}

Status CudaRecording::CheckKernelStatus() {
  Status first;
  for (const RecordedKernel& k : kernels_) {
    if (k.status_index < 0) continue;
    // Read after the submission's event completed: the kernel's writes to this mapped
    // memory are visible (no copy, no host round trip).
    volatile hexir_kernel_status_t& record = status_host_[k.status_index];
    const uint32_t code = record.code;
    if (code == 0) continue;
    const int64_t a = record.values[0], b = record.values[1];
    record.values[0] = 0;
    record.values[1] = 0;
    record.code = 0;
    if (!first.ok()) continue;
    first = KnownKernelError(code)
                ? KernelError(k.name(), code, a, b)
                : Aborted("dispatch of entry '", k.name(), "' failed: a workgroup reported status ",
                          code);
  }
  for (const RecordedCollective& r : collectives_) {
    if (!first.ok()) break;
    first = r.channel->failure();
  }
  for (RecordedRepeat& rep : repeats_) {
    Status body = rep.body->CheckKernelStatus();  // also resets the body's records
    if (first.ok()) first = std::move(body);
  }
  return first;
}

}  // namespace hexir::hal::cuda
