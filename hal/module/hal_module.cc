#include "hal/module/hal_module.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "hal/buffer_view.h"
#include "hal/command_buffer.h"
#include "hal/device_transfer.h"
#include "hal/element_type.h"
#include "hal/semaphore.h"
#include "vm/byte_buffer.h"

namespace hexir::hal {
namespace {

using vm::NativeCall;

// ---- argument access: every error names the argument index ----------------------------------
// (not the import: the interpreter prefixes every import's error with its name, vm/README.md)

Status ArgError(const NativeCall& c, size_t i, std::string_view what) {
  return InvalidArgument("argument ", i, ": ", what);
}

Status CheckCounts(const NativeCall& c, size_t min_args, size_t results) {
  if (c.args.size() < min_args) {
    return InvalidArgument("expected at least ", min_args, " arguments, got ", c.args.size());
  }
  if (c.results.size() < results) {
    return InvalidArgument("expected room for ", results, " result(s), got ", c.results.size());
  }
  return Status::Ok();
}

// The ref argument i as a T; null is an error unless allow_null (then returns nullptr).
template <typename T>
StatusOr<T*> RefArg(const NativeCall& c, size_t i, bool allow_null = false) {
  vm::RefObject* o = c.args[i].ref.get();
  if (o == nullptr) {
    if (allow_null) return static_cast<T*>(nullptr);
    return ArgError(c, i, StrCat("expected ", T::StaticTypeName(), ", got null"));
  }
  T* t = vm::RefCast<T>(o);
  if (t == nullptr) return ArgError(c, i, StrCat("expected ", T::StaticTypeName(), ", got ", o->type_name()));
  return t;
}

int64_t IntArg(const NativeCall& c, size_t i) { return c.args[i].bits; }

Status NonNegative(const NativeCall& c, size_t i, const char* what) {
  if (IntArg(c, i) < 0) return ArgError(c, i, StrCat(what, " must be >= 0, got ", IntArg(c, i)));
  return Status::Ok();
}

// Argument i as a byte offset or size (`what` names it when negative).
StatusOr<uint64_t> SizeArg(const NativeCall& c, size_t i, const char* what) {
  HEXIR_RETURN_IF_ERROR(NonNegative(c, i, what));
  return static_cast<uint64_t>(IntArg(c, i));
}

// The argument kinds of the call's exact signature ("" when the caller did not pass one).
std::string_view ArgKinds(const NativeCall& c) {
  return c.signature.substr(0, c.signature.find('_'));
}

template <typename T>
void SetRef(NativeCall& c, vm::Ref<T> ref) { c.results[0].ref = std::move(ref); }

// ---- the imports (declared from hal_imports.def) ------------------------------------------

#define HAL_IMPORT(Id, name, sig, meaning) Status Id(HalModuleState& s, NativeCall& c);
#include "hal/module/hal_imports.def"
#undef HAL_IMPORT

// Device arguments must be one of the context's devices: executables and buffers it hands out
// are cached per context and device.
StatusOr<Device*> DeviceArg(HalModuleState& s, const NativeCall& c, size_t i) {
  HEXIR_ASSIGN_OR_RETURN(Device * d, RefArg<Device>(c, i));
  if (s.OrdinalOf(d) < 0) return ArgError(c, i, "is not one of this context's devices");
  return d;
}

Status DeviceDefault(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 0, 1));
  SetRef(c, s.device_ref());
  return Status::Ok();
}

Status DeviceAt(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  int64_t ordinal = IntArg(c, 0);
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= s.devices().size()) {
    return ArgError(c, 0, StrCat("device ordinal ", ordinal, " is not bound (this context has ",
                                 s.devices().size(), " device(s))"));
  }
  SetRef(c, s.devices()[static_cast<size_t>(ordinal)]);
  return Status::Ok();
}

Status ExecutableLookup(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  if (c.caller == nullptr) return FailedPrecondition("no calling module");
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Executable> exe,
                         s.LookupExecutable(*c.caller, s.OrdinalOf(device), IntArg(c, 1)));
  SetRef(c, std::move(exe));
  return Status::Ok();
}

// (device, byte size) -> a new buffer of `types` (the allocator.allocate* imports).
Status AllocateOfTypes(HalModuleState& s, NativeCall& c, uint32_t types) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 1, "byte size"));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Buffer> b,
                         device->AllocateBuffer(static_cast<uint64_t>(IntArg(c, 1)), types));
  SetRef(c, std::move(b));
  return Status::Ok();
}

Status AllocatorAllocate(HalModuleState& s, NativeCall& c) {
  return AllocateOfTypes(s, c, kMemoryDeviceLocal);
}

Status AllocatorAllocateInitialized(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(vm::ByteBuffer * bytes, RefArg<vm::ByteBuffer>(c, 1));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Buffer> b,
                         device->AllocateBuffer(bytes->size(), kMemoryDeviceLocal));
  if (bytes->size()) {
    HEXIR_RETURN_IF_ERROR(device->WriteBuffer(*b, 0, bytes->data(), bytes->size()));
  }
  SetRef(c, std::move(b));
  return Status::Ok();
}

Status BufferViewCreate(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Buffer * buffer, RefArg<Buffer>(c, 0));
  std::vector<int64_t> dims;
  for (size_t i = 2; i < c.args.size(); ++i) dims.push_back(IntArg(c, i));
  int64_t type = IntArg(c, 1);
  if (ElementTypeByteSize(type) == 0) {
    return ArgError(c, 1, StrCat("unknown element type code ", type));
  }
  auto view = BufferView::Create(vm::Ref<Buffer>::Retain(buffer), static_cast<int32_t>(type),
                                 std::move(dims));
  if (!view.ok()) return std::move(view).status();
  SetRef(c, std::move(view).value());
  return Status::Ok();
}

Status BufferViewAssert(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 3, 0));
  HEXIR_ASSIGN_OR_RETURN(BufferView * view, RefArg<BufferView>(c, 0));
  int64_t input = IntArg(c, 1);
  int64_t type = IntArg(c, 2);
  const size_t rank = c.args.size() - 3;
  // The shape strings are built only for the error: this runs on every call of every function.
  auto want = [&] {
    std::vector<int64_t> expected(rank);
    for (size_t i = 0; i < rank; ++i) expected[i] = IntArg(c, 3 + i);
    return FormatShape(expected, type);
  };
  if (rank != view->rank()) {
    return InvalidArgument("input ", input, ": expected rank ", rank, " (", want(),
                           "), got rank ", view->rank(), " (", view->ShapeString(), ")");
  }
  for (size_t i = 0; i < rank; ++i) {
    // -1 is the contract's dynamic marker; any negative value is treated the same so that a
    // raw MLIR kDynamic (INT64_MIN) also means "any".
    const int64_t expected = IntArg(c, 3 + i);
    if (expected >= 0 && expected != view->dim(i)) {
      return InvalidArgument("input ", input, ": expected ", want(), ", got ", view->ShapeString());
    }
  }
  if (type != view->element_type()) {
    std::string_view want_type = ElementTypeName(type);
    return InvalidArgument("input ", input, ": expected element type ",
                           want_type.empty() ? StrCat("type<", type, ">") : std::string(want_type),
                           ", got ", ElementTypeName(view->element_type()));
  }
  return Status::Ok();
}

Status BufferViewBuffer(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(BufferView * view, RefArg<BufferView>(c, 0));
  SetRef(c, view->buffer_ref());
  return Status::Ok();
}

Status BufferViewDim(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(BufferView * view, RefArg<BufferView>(c, 0));
  int64_t index = IntArg(c, 1);
  if (index < 0 || static_cast<size_t>(index) >= view->rank()) {
    return OutOfRange("dim index ", index, " is out of range for ", view->ShapeString(), " (rank ",
                      view->rank(), ")");
  }
  c.results[0].bits = view->dim(static_cast<size_t>(index));
  return Status::Ok();
}

Status CommandBufferCreate(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<CommandBuffer> cb, device->CreateCommandBuffer());
  SetRef(c, std::move(cb));
  return Status::Ok();
}

// How a dispatch import names its bindings (and, for indirect ones, its workgroup count).
enum class BindingKind { kBuffers, kSlots, kSlotsAt };

Status ParseSlot(const NativeCall& c, size_t i, uint32_t* slot) {
  int64_t v = IntArg(c, i);
  if (v < 0 || v >= int64_t{BufferRef::kNoSlot}) {
    return ArgError(c, i, StrCat("binding table slot ", v, " is outside [0, 2^32-1)"));
  }
  *slot = static_cast<uint32_t>(v);
  return Status::Ok();
}

// Parses "binding count N, N bindings, push constants" starting at argument `count_index`
// (kSlotsAt: each binding a slot ordinal and a byte offset into its table entry).
Status ParseBindings(const NativeCall& c, size_t count_index, BindingKind kind,
                     std::vector<BufferRef>* bindings, std::vector<uint32_t>* push_constants) {
  const size_t first = count_index + 1;
  int64_t binding_count = IntArg(c, count_index);
  const uint64_t per_binding = kind == BindingKind::kSlotsAt ? 2 : 1;
  if (binding_count < 0 ||
      static_cast<uint64_t>(binding_count) > (c.args.size() - first) / per_binding) {
    return ArgError(c, count_index, StrCat("binding count ", binding_count, " does not fit the ",
                                           c.args.size() - first, " trailing argument(s)"));
  }
  std::string_view kinds = ArgKinds(c);
  bool check_kinds = kinds.size() == c.args.size();
  bindings->reserve(binding_count);
  const size_t end = first + per_binding * static_cast<size_t>(binding_count);
  for (size_t i = first; i < end; i += per_binding) {
    if (kind == BindingKind::kSlotsAt) {
      if (check_kinds && (kinds[i] != 'i' || kinds[i + 1] != 'i')) {
        return ArgError(c, i, "binding table slots and offsets must be 'i' values");
      }
      uint32_t slot;
      HEXIR_RETURN_IF_ERROR(ParseSlot(c, i, &slot));
      HEXIR_RETURN_IF_ERROR(NonNegative(c, i + 1, "binding byte offset"));
      BufferRef r = BufferRef::Slot(slot);
      r.offset = static_cast<uint64_t>(IntArg(c, i + 1));
      bindings->push_back(std::move(r));
    } else if (kind == BindingKind::kBuffers) {
      HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, i));
      bindings->push_back(BufferRef::Whole(vm::Ref<Buffer>::Retain(b)));
    } else {
      if (check_kinds && kinds[i] != 'i') {
        return ArgError(c, i, StrCat("binding table slots must be 'i' values, got '", kinds[i], "'"));
      }
      uint32_t slot;
      HEXIR_RETURN_IF_ERROR(ParseSlot(c, i, &slot));
      bindings->push_back(BufferRef::Slot(slot));
    }
  }
  for (size_t i = end; i < c.args.size(); ++i) {
    if (check_kinds && kinds[i] != 'i') {
      return ArgError(c, i, StrCat("push constants must be 'i' values, got '", kinds[i], "'"));
    }
    push_constants->push_back(static_cast<uint32_t>(IntArg(c, i)));
  }
  return Status::Ok();
}

Status DispatchStatic(NativeCall& c, BindingKind kind) {
  constexpr size_t kFixed = 7;  // cb, executable, entry, wg x, wg y, wg z, binding count
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, kFixed, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(Executable * exe, RefArg<Executable>(c, 1));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "entry ordinal"));
  std::array<uint32_t, 3> workgroups;
  for (size_t i = 0; i < 3; ++i) {
    int64_t n = IntArg(c, 3 + i);
    if (n < 0 || n > int64_t{UINT32_MAX}) {
      return ArgError(c, 3 + i, StrCat("workgroup count ", n, " is outside [0, 2^32)"));
    }
    workgroups[i] = static_cast<uint32_t>(n);
  }
  std::vector<BufferRef> bindings;
  std::vector<uint32_t> push_constants;
  HEXIR_RETURN_IF_ERROR(ParseBindings(c, 6, kind, &bindings, &push_constants));
  return cb->Dispatch(vm::Ref<Executable>::Retain(exe), static_cast<uint32_t>(IntArg(c, 2)),
                      workgroups, std::move(bindings), std::move(push_constants));
}

Status DispatchIndirect(NativeCall& c, BindingKind kind) {
  constexpr size_t kFixed = 6;  // cb, executable, entry, count buffer|slot, offset, binding count
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, kFixed, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(Executable * exe, RefArg<Executable>(c, 1));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "entry ordinal"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 4, "workgroup count byte offset"));
  BufferRef count;
  if (kind == BindingKind::kBuffers) {
    HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, 3));
    count = BufferRef::Range(vm::Ref<Buffer>::Retain(b), static_cast<uint64_t>(IntArg(c, 4)),
                             kIndirectParamsSize);
  } else {
    uint32_t slot;
    HEXIR_RETURN_IF_ERROR(ParseSlot(c, 3, &slot));
    count = BufferRef::Slot(slot);
    count.offset = static_cast<uint64_t>(IntArg(c, 4));
  }
  std::vector<BufferRef> bindings;
  std::vector<uint32_t> push_constants;
  HEXIR_RETURN_IF_ERROR(ParseBindings(c, 5, kind, &bindings, &push_constants));
  return cb->DispatchIndirect(vm::Ref<Executable>::Retain(exe),
                              static_cast<uint32_t>(IntArg(c, 2)), std::move(count),
                              std::move(bindings), std::move(push_constants));
}

Status CommandBufferDispatch(HalModuleState&, NativeCall& c) {
  return DispatchStatic(c, BindingKind::kBuffers);
}

Status ChannelDefault(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Channel> channel, s.DefaultChannel(*device));
  SetRef(c, std::move(channel));
  return Status::Ok();
}

Status ChannelRank(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(Channel * channel, RefArg<Channel>(c, 0));
  c.results[0].bits = channel->rank();
  return Status::Ok();
}

Status ChannelCount(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(Channel * channel, RefArg<Channel>(c, 0));
  c.results[0].bits = channel->count();
  return Status::Ok();
}

// (cb, channel, kind, reduction, element type, count, peer, send, send offset, recv, recv
// offset): send/recv are buffers (or null) or slots (or -1).
Status RecordCollective(NativeCall& c, BindingKind kind) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 11, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(Channel * channel, RefArg<Channel>(c, 1));
  if (!IsCollectiveKind(IntArg(c, 2))) {
    return ArgError(c, 2, StrCat("unknown collective kind ", IntArg(c, 2)));
  }
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 5, "element count"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 8, "send offset"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 10, "recv offset"));
  auto ref = [&](size_t i) -> StatusOr<BufferRef> {
    BufferRef r;
    if (kind == BindingKind::kBuffers) {
      HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, i, /*allow_null=*/true));
      if (b == nullptr) return BufferRef{};
      r = BufferRef::Range(vm::Ref<Buffer>::Retain(b), static_cast<uint64_t>(IntArg(c, i + 1)),
                           kWholeBuffer);
    } else {
      if (IntArg(c, i) == -1) return BufferRef{};
      uint32_t slot;
      HEXIR_RETURN_IF_ERROR(ParseSlot(c, i, &slot));
      r = BufferRef::Slot(slot);
      r.offset = static_cast<uint64_t>(IntArg(c, i + 1));
    }
    return r;
  };
  HEXIR_ASSIGN_OR_RETURN(BufferRef send, ref(7));
  HEXIR_ASSIGN_OR_RETURN(BufferRef recv, ref(9));
  int64_t peer = IntArg(c, 6);
  if (peer < INT32_MIN || peer > INT32_MAX) return ArgError(c, 6, StrCat("peer rank ", peer));
  return cb->Collective(vm::Ref<Channel>::Retain(channel),
                        static_cast<CollectiveKind>(IntArg(c, 2)),
                        static_cast<ReductionOp>(IntArg(c, 3)), static_cast<int32_t>(IntArg(c, 4)),
                        static_cast<uint64_t>(IntArg(c, 5)), static_cast<int32_t>(peer),
                        std::move(send), std::move(recv));
}

Status CommandBufferCollective(HalModuleState&, NativeCall& c) {
  return RecordCollective(c, BindingKind::kBuffers);
}

Status CommandBufferCollectiveSlots(HalModuleState&, NativeCall& c) {
  return RecordCollective(c, BindingKind::kSlots);
}

Status CommandBufferBarrier(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  return cb->Barrier();
}

Status CommandBufferFinalize(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  return cb->Finalize();
}

Status SemaphoreCreate(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 1, "initial value"));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Semaphore> sem,
                         device->CreateSemaphore(static_cast<uint64_t>(IntArg(c, 1))));
  SetRef(c, std::move(sem));
  return Status::Ok();
}

// Parses "wait sem or null, wait value, signal sem or null, signal value" at `first`.
Status ParseWaitSignal(const NativeCall& c, size_t first, std::vector<SemaphoreValue>* waits,
                       std::vector<SemaphoreValue>* signals) {
  HEXIR_ASSIGN_OR_RETURN(Semaphore * wait, RefArg<Semaphore>(c, first, /*allow_null=*/true));
  HEXIR_ASSIGN_OR_RETURN(Semaphore * signal, RefArg<Semaphore>(c, first + 2, /*allow_null=*/true));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, first + 1, "wait value"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, first + 3, "signal value"));
  if (wait) {
    waits->push_back({vm::Ref<Semaphore>::Retain(wait), static_cast<uint64_t>(IntArg(c, first + 1))});
  }
  if (signal) {
    signals->push_back(
        {vm::Ref<Semaphore>::Retain(signal), static_cast<uint64_t>(IntArg(c, first + 3))});
  }
  return Status::Ok();
}

// The common head of the queue operations (device, wait pair, signal pair, then their own
// arguments): checks the counts and the device, parses the pairs.
// The head every queue operation shares: (device, wait semaphore, wait value, signal
// semaphore, signal value, ...operands from argument 5).
struct QueueOperation {
  Device* device = nullptr;
  std::vector<SemaphoreValue> waits, signals;
};
StatusOr<QueueOperation> ParseQueueOperation(HalModuleState& s, const NativeCall& c, size_t args,
                                             size_t results) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, args, results));
  QueueOperation q;
  HEXIR_ASSIGN_OR_RETURN(q.device, DeviceArg(s, c, 0));
  HEXIR_RETURN_IF_ERROR(ParseWaitSignal(c, 1, &q.waits, &q.signals));
  return q;
}

Status QueueExecute(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 6, 0));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 1));
  std::vector<SemaphoreValue> waits, signals;
  HEXIR_RETURN_IF_ERROR(ParseWaitSignal(c, 2, &waits, &signals));
  std::vector<BufferRef> table;
  table.reserve(c.args.size() - 6);
  for (size_t i = 6; i < c.args.size(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, i));
    table.push_back(BufferRef::Whole(vm::Ref<Buffer>::Retain(b)));
  }
  return device->QueueExecute(waits, vm::Ref<CommandBuffer>::Retain(cb), signals, table);
}

Status SemaphoreWait(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 0));
  HEXIR_ASSIGN_OR_RETURN(Semaphore * sem, RefArg<Semaphore>(c, 0));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 1, "value"));
  // A failure here is the error of the device work that should have signalled: pass it on
  // unchanged so that the message names the failing dispatch.
  return sem->Wait(static_cast<uint64_t>(IntArg(c, 1)), kInfiniteTimeout, *c.interrupt);
}

Status BufferLength(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, 0));
  c.results[0].bits = static_cast<int64_t>(b->byte_size());
  return Status::Ok();
}

Status AllocatorAllocateHost(HalModuleState& s, NativeCall& c) {
  return AllocateOfTypes(s, c, kMemoryHostVisible);
}

Status BufferViewRank(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(BufferView * view, RefArg<BufferView>(c, 0));
  c.results[0].bits = static_cast<int64_t>(view->rank());
  return Status::Ok();
}

Status BufferViewElementType(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(BufferView * view, RefArg<BufferView>(c, 0));
  c.results[0].bits = view->element_type();
  return Status::Ok();
}

Status CommandBufferDispatchSlots(HalModuleState&, NativeCall& c) {
  return DispatchStatic(c, BindingKind::kSlots);
}

Status CommandBufferDispatchIndirect(HalModuleState&, NativeCall& c) {
  return DispatchIndirect(c, BindingKind::kBuffers);
}

Status CommandBufferDispatchIndirectSlots(HalModuleState&, NativeCall& c) {
  return DispatchIndirect(c, BindingKind::kSlots);
}

Status CommandBufferDispatchSlotsAt(HalModuleState&, NativeCall& c) {
  return DispatchStatic(c, BindingKind::kSlotsAt);
}

Status CommandBufferDispatchIndirectSlotsAt(HalModuleState&, NativeCall& c) {
  return DispatchIndirect(c, BindingKind::kSlotsAt);
}

Status CommandBufferRepeatWhileSlot(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 5, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * body, RefArg<CommandBuffer>(c, 1));
  BufferRef condition;
  uint32_t slot;
  HEXIR_RETURN_IF_ERROR(ParseSlot(c, 2, &slot));
  condition = BufferRef::Slot(slot);
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 3, "condition byte offset"));
  condition.offset = static_cast<uint64_t>(IntArg(c, 3));
  const int64_t max_iterations = IntArg(c, 4);
  if (max_iterations < 0 || max_iterations > int64_t{UINT32_MAX}) {
    return ArgError(c, 4, StrCat("max iterations ", max_iterations, " is outside [0, 2^32)"));
  }
  return cb
      ->RepeatWhile(vm::Ref<CommandBuffer>::Retain(body), std::move(condition),
                    static_cast<uint32_t>(max_iterations));
}

Status CommandBufferCopy(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 6, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * src, RefArg<Buffer>(c, 1));
  HEXIR_ASSIGN_OR_RETURN(Buffer * dst, RefArg<Buffer>(c, 3));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "source offset"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 4, "target offset"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 5, "length"));
  return cb
      ->CopyBuffer(vm::Ref<Buffer>::Retain(src), static_cast<uint64_t>(IntArg(c, 2)),
                   vm::Ref<Buffer>::Retain(dst), static_cast<uint64_t>(IntArg(c, 4)),
                   static_cast<uint64_t>(IntArg(c, 5)));
}

Status CommandBufferFill(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 6, 0));
  HEXIR_ASSIGN_OR_RETURN(CommandBuffer * cb, RefArg<CommandBuffer>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * dst, RefArg<Buffer>(c, 1));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "offset"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 3, "length"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 5, "pattern size"));
  return cb
      ->FillBuffer(vm::Ref<Buffer>::Retain(dst), static_cast<uint64_t>(IntArg(c, 2)),
                   static_cast<uint64_t>(IntArg(c, 3)), static_cast<uint32_t>(IntArg(c, 4)),
                   static_cast<uint32_t>(std::min<int64_t>(IntArg(c, 5), 1 << 30)));
}

Status QueueExecuteBound(HalModuleState& s, NativeCall& c) { return QueueExecute(s, c); }

Status QueueAlloca(HalModuleState& s, NativeCall& c) {
  HEXIR_ASSIGN_OR_RETURN(QueueOperation q, ParseQueueOperation(s, c, 6, 1));
  HEXIR_ASSIGN_OR_RETURN(uint64_t size, SizeArg(c, 5, "byte size"));
  auto b = q.device->QueueAlloca(q.waits, q.signals, size);
  if (!b.ok()) return std::move(b).status();
  SetRef(c, std::move(b).value());
  return Status::Ok();
}

Status AllocatorAllocateUniform(HalModuleState& s, NativeCall& c) {
  return AllocateOfTypes(s, c, kMemoryHostVisible | kMemoryUniform);
}

// Arguments first.. of `c` (each an i) as 8-byte little-endian words appended to `bytes`.
Status I64WordsFrom(NativeCall& c, size_t first, std::vector<uint8_t>* bytes) {
  std::string_view kinds = ArgKinds(c);
  size_t at = bytes->size();
  // Sized once and written a word at a time (a region's list is ~100 words, built every call
  // whose words changed: a decode step's position).
  bytes->resize(at + 8 * (c.args.size() - std::min(first, c.args.size())));
  for (size_t i = first; i < c.args.size(); ++i, at += 8) {
    if (i < kinds.size() && kinds[i] != 'i') return ArgError(c, i, "values must be i");
    uint64_t v = static_cast<uint64_t>(IntArg(c, i));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(bytes->data() + at, &v, 8);
#else
    for (int k = 0; k < 8; ++k) (*bytes)[at + k] = static_cast<uint8_t>(v >> (8 * k));
#endif
  }
  return Status::Ok();
}

// True when arguments first.. of `c` (each an i) are, as 8-byte little-endian words, the
// bytes at `data` (a non-i argument: false; I64WordsFrom then reports it).
bool SameI64Words(NativeCall& c, size_t first, const uint8_t* data) {
  std::string_view kinds = ArgKinds(c);
  for (size_t i = first; i < c.args.size(); ++i, data += 8) {
    if (i < kinds.size() && kinds[i] != 'i') return false;
    uint64_t v = static_cast<uint64_t>(IntArg(c, i));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // One load per word (a region's packed list is ~100 words, compared every call).
    uint64_t held;
    std::memcpy(&held, data, 8);
    if (held != v) return false;
#else
    for (int k = 0; k < 8; ++k)
      if (data[k] != static_cast<uint8_t>(v >> (8 * k))) return false;
#endif
  }
  return true;
}

// A recorded callee's parameter buffer (passes/vm/LowerRecordedCalls.cpp): the previous call
// site's when its words are equal, so equal parameter lists of one execution share one buffer
// as they do when inlined. `previous` is only read: a uniform buffer is never written once the
// submissions that read it may run.
// (Also every execution of a CPU executable's region, passes/vm/LowerExecutionRegions.cpp:
// the words are compared in place, so a repeated list costs no allocation at all.)
Status AllocatorReuseUniform(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * previous, RefArg<Buffer>(c, 1, /*allow_null=*/true));
  if (previous != nullptr && (previous->memory_types() & kMemoryUniform) &&
      previous->host_data() != nullptr && previous->byte_size() == 8 * (c.args.size() - 2) &&
      SameI64Words(c, 2, previous->host_data())) {
    SetRef(c, vm::Ref<Buffer>::Retain(previous));
    return Status::Ok();
  }
  std::vector<uint8_t> bytes;
  HEXIR_RETURN_IF_ERROR(I64WordsFrom(c, 2, &bytes));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Buffer> b, device->AllocateBuffer(
                                                bytes.size(), kMemoryHostVisible | kMemoryUniform));
  if (!bytes.empty()) HEXIR_RETURN_IF_ERROR(device->WriteBuffer(*b, 0, bytes.data(), bytes.size()));
  SetRef(c, std::move(b));
  return Status::Ok();
}

Status DeviceTransient(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 3, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * held, RefArg<Buffer>(c, 1, /*allow_null=*/true));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "byte size"));
  uint64_t size = static_cast<uint64_t>(IntArg(c, 2));
  if (held != nullptr && held->byte_size() >= size) {
    SetRef(c, vm::Ref<Buffer>::Retain(held));
    return Status::Ok();
  }
  // Grow geometrically: a dynamic size that creeps up (a decode position) reallocates
  // O(log n) times, and each reallocation changes the recorded binding once.
  if (held != nullptr) size = std::max(size, 2 * held->byte_size());
  auto b = device->QueueAlloca({}, {}, size);
  if (!b.ok()) return std::move(b).status();
  SetRef(c, std::move(b).value());
  return Status::Ok();
}

Status QueueDealloca(HalModuleState& s, NativeCall& c) {
  HEXIR_ASSIGN_OR_RETURN(QueueOperation q, ParseQueueOperation(s, c, 6, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, 5));
  return q.device->QueueDealloca(q.waits, q.signals, vm::Ref<Buffer>::Retain(b));
}

Status QueueFill(HalModuleState& s, NativeCall& c) {
  HEXIR_ASSIGN_OR_RETURN(QueueOperation q, ParseQueueOperation(s, c, 10, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, 5));
  HEXIR_ASSIGN_OR_RETURN(uint64_t offset, SizeArg(c, 6, "offset"));
  HEXIR_ASSIGN_OR_RETURN(uint64_t length, SizeArg(c, 7, "length"));
  HEXIR_ASSIGN_OR_RETURN(uint64_t pattern_size, SizeArg(c, 9, "pattern size"));
  return q.device
      ->QueueFill(q.waits, q.signals, vm::Ref<Buffer>::Retain(b), offset, length,
                  static_cast<uint32_t>(IntArg(c, 8)),
                  static_cast<uint32_t>(std::min<uint64_t>(pattern_size, 1 << 30)));
}

Status QueueCopy(HalModuleState& s, NativeCall& c) {
  HEXIR_ASSIGN_OR_RETURN(QueueOperation q, ParseQueueOperation(s, c, 10, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * src, RefArg<Buffer>(c, 5));
  HEXIR_ASSIGN_OR_RETURN(Buffer * dst, RefArg<Buffer>(c, 7));
  HEXIR_ASSIGN_OR_RETURN(uint64_t src_offset, SizeArg(c, 6, "source offset"));
  HEXIR_ASSIGN_OR_RETURN(uint64_t dst_offset, SizeArg(c, 8, "target offset"));
  HEXIR_ASSIGN_OR_RETURN(uint64_t length, SizeArg(c, 9, "length"));
  return q.device
      ->QueueCopy(q.waits, q.signals, vm::Ref<Buffer>::Retain(src), src_offset,
                  vm::Ref<Buffer>::Retain(dst), dst_offset, length);
}

Status QueueFence(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 0));
  HEXIR_ASSIGN_OR_RETURN(Device * from, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(Device * to, DeviceArg(s, c, 1));
  return hal::QueueFence(*from, *to);
}

Status QueueTransfer(HalModuleState& s, NativeCall& c) {
  HEXIR_ASSIGN_OR_RETURN(QueueOperation q, ParseQueueOperation(s, c, 9, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * source, RefArg<Buffer>(c, 5));
  HEXIR_ASSIGN_OR_RETURN(Device * to, DeviceArg(s, c, 6));
  HEXIR_ASSIGN_OR_RETURN(Buffer * target, RefArg<Buffer>(c, 7));
  HEXIR_ASSIGN_OR_RETURN(uint64_t length, SizeArg(c, 8, "length"));
  // A copy through a host pointer signals a semaphore of ours too, so that both buffers are
  // kept until it has run (the program may release them right after this call).
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Semaphore> done, to->CreateSemaphore(0));
  q.signals.push_back({done, 1});
  bool by_pointer = false;
  HEXIR_RETURN_IF_ERROR(QueueDeviceTransfer(*q.device, *to, q.waits, q.signals,
                                            vm::Ref<Buffer>::Retain(source),
                                            vm::Ref<Buffer>::Retain(target), length, &by_pointer));
  if (by_pointer) {
    s.RetainUntil(vm::Ref<Buffer>::Retain(source), {done, 1});
    s.RetainUntil(vm::Ref<Buffer>::Retain(target), {done, 1});
  }
  return Status::Ok();
}

Status SemaphoreQuery(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 1));
  HEXIR_ASSIGN_OR_RETURN(Semaphore * sem, RefArg<Semaphore>(c, 0));
  HEXIR_ASSIGN_OR_RETURN(uint64_t v, sem->Query());
  c.results[0].bits = static_cast<int64_t>(v);
  return Status::Ok();
}

Status SemaphoreWaitTimeout(HalModuleState&, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 3, 1));
  HEXIR_ASSIGN_OR_RETURN(Semaphore * sem, RefArg<Semaphore>(c, 0));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 1, "value"));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "timeout"));
  Status st = sem->Wait(static_cast<uint64_t>(IntArg(c, 1)), Timeout(IntArg(c, 2)), *c.interrupt);
  // The program's own timeout is a result; the call's deadline (checked again) is an error.
  if (st.code() == StatusCode::kDeadlineExceeded && c.interrupt->Check().ok()) {
    c.results[0].bits = 0;
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(std::move(st));
  c.results[0].bits = 1;
  return Status::Ok();
}

Status DeviceWaitIdle(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 1, 0));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  return device->WaitIdle(*c.interrupt);
}

// ---- issue 6: kernel parameter buffers and host reads of device-computed scalars ------------

Status BufferStoreI64(HalModuleState& s, NativeCall& c) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 2, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, 0));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 1, "byte offset"));
  std::vector<uint8_t> bytes;
  HEXIR_RETURN_IF_ERROR(I64WordsFrom(c, 2, &bytes));
  if (bytes.empty()) return Status::Ok();
  // With several devices the buffer may be another device's: a host-visible buffer is written
  // through its mapping (the contract above: no queued work uses the range).
  const uint64_t offset = static_cast<uint64_t>(IntArg(c, 1));
  if (s.devices().size() > 1 && b->host_data() != nullptr) {
    if (offset > b->byte_size() || bytes.size() > b->byte_size() - offset) {
      return OutOfRange("bytes [", offset, ", +", bytes.size(), ") are outside the ",
                        b->byte_size(), "-byte buffer");
    }
    std::memcpy(b->host_data() + offset, bytes.data(), bytes.size());
    return Status::Ok();
  }
  return s.device().WriteBuffer(*b, offset, bytes.data(), bytes.size());
}

// Waits for the device (errors of earlier submissions surface here), then reads one element.
Status ReadElement(HalModuleState& s, NativeCall& c, bool want_float, uint8_t raw[8],
                   int64_t* type) {
  HEXIR_RETURN_IF_ERROR(CheckCounts(c, 4, 1));
  HEXIR_ASSIGN_OR_RETURN(Device * device, DeviceArg(s, c, 0));
  HEXIR_ASSIGN_OR_RETURN(Buffer * b, RefArg<Buffer>(c, 1));
  HEXIR_RETURN_IF_ERROR(NonNegative(c, 2, "byte offset"));
  *type = IntArg(c, 3);
  bool is_float = *type == static_cast<int64_t>(ElementType::kF32) ||
                  *type == static_cast<int64_t>(ElementType::kF64);
  bool is_int = ElementTypeByteSize(*type) != 0 && !ElementTypeIsFloat(*type);
  if (want_float ? !is_float : !is_int) {
    return ArgError(c, 3, StrCat("unsupported element type ", *type));
  }
  return device
      ->ReadBufferAfterPendingWork(*b, static_cast<uint64_t>(IntArg(c, 2)), raw,
                                  static_cast<uint64_t>(ElementTypeByteSize(*type)), *c.interrupt);
}

Status DeviceReadI64(HalModuleState& s, NativeCall& c) {
  uint8_t raw[8] = {};
  int64_t type = 0;
  HEXIR_RETURN_IF_ERROR(ReadElement(s, c, false, raw, &type));
  int64_t v = 0;
  switch (static_cast<ElementType>(type)) {
    case ElementType::kI8: v = static_cast<int8_t>(raw[0]); break;
    case ElementType::kI1: v = raw[0] != 0; break;
    case ElementType::kI16: { int16_t x; std::memcpy(&x, raw, 2); v = x; break; }
    case ElementType::kI32: { int32_t x; std::memcpy(&x, raw, 4); v = x; break; }
    default: std::memcpy(&v, raw, 8); break;
  }
  c.results[0].bits = v;
  return Status::Ok();
}

Status DeviceReadF64(HalModuleState& s, NativeCall& c) {
  uint8_t raw[8] = {};
  int64_t type = 0;
  HEXIR_RETURN_IF_ERROR(ReadElement(s, c, true, raw, &type));
  double d;
  if (type == static_cast<int64_t>(ElementType::kF32)) {
    float f;
    std::memcpy(&f, raw, 4);
    d = f;
  } else {
    std::memcpy(&d, raw, 8);
  }
  std::memcpy(&c.results[0].bits, &d, 8);
  return Status::Ok();
}

// ---- the table --------------------------------------------------------------------------------

template <Status (*F)(HalModuleState&, NativeCall&)>
Status Thunk(vm::NativeModuleState& state, NativeCall& call) {
  return F(static_cast<HalModuleState&>(state), call);
}

const vm::NativeFunction kFunctions[] = {
#define HAL_IMPORT(Id, name, sig, meaning) {name, sig, &Thunk<&Id>},
#include "hal/module/hal_imports.def"
#undef HAL_IMPORT
};

class HalModule final : public vm::NativeModule {
 public:
  HalModule(std::vector<vm::Ref<Device>> devices, std::vector<vm::Ref<Channel>> channels)
      : devices_(std::move(devices)), channels_(std::move(channels)) {}
  std::string_view name() const override { return "hal"; }
  Span<const vm::NativeFunction> functions() const override {
    return Span<const vm::NativeFunction>(kFunctions, sizeof(kFunctions) / sizeof(kFunctions[0]));
  }
  StatusOr<std::unique_ptr<vm::NativeModuleState>> CreateState(vm::Context&) override {
    return std::unique_ptr<vm::NativeModuleState>(new HalModuleState(devices_, channels_));
  }

 private:
  std::vector<vm::Ref<Device>> devices_;
  std::vector<vm::Ref<Channel>> channels_;  // given channels by device (runtime/rank_group.h)
};

}  // namespace

HalModuleState::HalModuleState(std::vector<vm::Ref<Device>> devices,
                               const std::vector<vm::Ref<Channel>>& channels)
    : devices_(std::move(devices)) {
  for (size_t i = 0; i < channels.size() && i < devices_.size(); ++i)
    if (channels[i]) channels_[devices_[i].get()] = channels[i];
}

StatusOr<vm::Ref<Channel>> HalModuleState::DefaultChannel(Device& device) {
  if (devices_.size() > 1 && channels_.empty()) {  // device i is rank i of one group
    std::vector<Device*> group;
    for (const auto& d : devices_) group.push_back(d.get());
    HEXIR_ASSIGN_OR_RETURN(std::vector<vm::Ref<Channel>> channels,
                           devices_[0]->CreateGroupChannels(group));
    for (size_t i = 0; i < group.size(); ++i) channels_[group[i]] = channels[i];
  }
  vm::Ref<Channel>& channel = channels_[&device];
  if (!channel) {
    HEXIR_ASSIGN_OR_RETURN(channel, device.CreateChannel());
  }
  return channel;
}

int64_t HalModuleState::OrdinalOf(const Device* d) const {
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].get() == d) return static_cast<int64_t>(i);
  return -1;
}

void HalModuleState::RetainUntil(vm::Ref<Buffer> buffer, SemaphoreValue until) {
  retained_.erase(std::remove_if(retained_.begin(), retained_.end(),
                                 [](const auto& entry) {
                                   auto reached = entry.second.semaphore->Query();
                                   return !reached.ok() || *reached >= entry.second.value;
                                 }),
                  retained_.end());
  retained_.emplace_back(std::move(buffer), std::move(until));
}

std::string_view DeviceKind(std::string_view uri) { return uri.substr(0, uri.find(':')); }

Status CheckModuleDevices(const vm::Module& module, const std::vector<vm::Ref<Device>>& devices) {
  const std::vector<std::string_view>& wanted = module.devices();
  auto describe = [&] {
    std::string list;
    for (size_t i = 0; i < wanted.size(); ++i) list += StrCat(i ? " " : "", i, "=", wanted[i]);
    return StrCat("module '", module.name(), "' runs on ", wanted.size(), " device(s) (", list, ")");
  };
  if (devices.empty()) return InvalidArgument(describe(), ": no device given");
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (i >= devices.size()) {
      std::string given;
      for (const auto& d : devices) given += StrCat(given.empty() ? "" : ", ", d->uri());
      return InvalidArgument(describe(), ": device ", i, " (", wanted[i], ") is not given (",
                             devices.size(), " device(s) given: ", given, ")");
    }
    if (DeviceKind(devices[i]->uri()) != wanted[i]) {
      return InvalidArgument(describe(), ": device ", i, " (", wanted[i], ") is given a ",
                             DeviceKind(devices[i]->uri()), " device ('", devices[i]->uri(), "')");
    }
  }
  return Status::Ok();
}

StatusOr<vm::Ref<Executable>> HalModuleState::LookupExecutable(const vm::CallerModule& caller,
                                                                int64_t device_ordinal,
                                                                int64_t ordinal) {
  auto key = std::make_tuple(device_ordinal, caller.instance_id(), ordinal);
  auto it = executables_.find(key);
  if (it != executables_.end()) return it->second;
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= caller.executable_count()) {
    return OutOfRange("executable ordinal ", ordinal, " is out of range; module '", caller.name(),
                      "' has ", caller.executable_count(), " executable(s)");
  }
  auto view = caller.executable(static_cast<size_t>(ordinal));
  if (!view.ok()) {
    return std::move(view).status().WithContext(
        StrCat("module '", caller.name(), "' executable ", ordinal));
  }
  auto exe = devices_[static_cast<size_t>(device_ordinal)]->CreateExecutable(*view);
  if (!exe.ok()) {
    return std::move(exe).status().WithContext(
        StrCat("module '", caller.name(), "' executable ", ordinal));
  }
  executables_.emplace(key, *exe);
  return std::move(exe).value();
}

std::shared_ptr<vm::NativeModule> CreateHalModule(std::vector<vm::Ref<Device>> devices) {
  return std::make_shared<HalModule>(std::move(devices), std::vector<vm::Ref<Channel>>{});
}

std::shared_ptr<vm::NativeModule> CreateHalModule(std::vector<vm::Ref<Device>> devices,
                                                  std::vector<vm::Ref<Channel>> channels) {
  return std::make_shared<HalModule>(std::move(devices), std::move(channels));
}

}  // namespace hexir::hal
