// Lowering of hexir.execute: each execution region becomes its host work (result buffers:
// `hal.device.queue.alloca`, transients in ref globals through `hal.device.transient`; one
// parameter buffer per distinct parameter list, except CPU and CUDA executables' lists: packed
// into one buffer per region, reused across executions while its words repeat,
// ParamsPacking.cpp) and one memoized command buffer in a ref global: recorded on the
// region's first execution in a context (`global.load.ref G;
// ref.is_null; cond_br` to the record block), then submitted with `queue.execute_bound` and
// this execution's buffers. Nothing a recording contains depends on a call: bindings are
// binding-table slots, dynamic dims and scalars travel in the parameter buffer, workgroup
// counts are static (or computed into the parameter buffer). Collectives
// (LowerCollectives.cpp) are recorded like dispatches; one whose element count or peer is a
// run-time value makes its region recorded at every execution instead. Barriers are recorded exactly where the region has `hexir.barrier`.
// Timepoints still awaited after hexir-elide-timepoints become timeline semaphores.
// A device loop (a region marked `hexir.repeat_while`, passes/loops/DeviceLoops.h) records its
// body into a command buffer of its own and the region's command buffer as one
// `hal.command_buffer.repeat_while_slot` on the flag's slot.
#include "passes/vm/HostLowering.h"

#include <limits>
#include <optional>

#include "dialects/hexir/IR/HexirAttributes.h"  // kFormatAttr, kRepeatWhileAttr, kWrittenBindingsAttr
#include "llvm/ADT/TypeSwitch.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/schedule/Buffers.h"
#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {
namespace {

// The value from above whose buffer a device loop's yielded value `y` updates in place (its
// carried value's init), through the region's in-place results and aliases; null when `y`
// is a fresh result.
Value carriedInit(Value y, ExecuteOp e) {
  while (Operation* def = y.getDefiningOp()) {
    if (!e->isProperAncestor(def)) return y;
    if (schedule::IsAlias(def)) {
      y = def->getOperand(0);
      continue;
    }
    auto dispatch = dyn_cast<DispatchOp>(def);
    int64_t tied = dispatch ? schedule::TiedOperandOf(dispatch, cast<OpResult>(y).getResultNumber()) : -1;
    if (tied < 0) return Value();
    y = dispatch.getArgs()[tied];
  }
  return y;  // a block argument of the function
}

// Records on `exe` that its kernel writes bindings [first, first + count) (the results; the
// tensor operands and the parameter buffer are only read). Every dispatch of one executable
// binds alike; were two to differ, the union stays conservative.
void NoteWrittenBindings(ExecutableOp exe, size_t first, size_t count) {
  uint64_t mask = 0;
  for (size_t i = first; i < first + count && i < 64; ++i) mask |= uint64_t{1} << i;
  if (auto old = exe->getAttrOfType<IntegerAttr>(kWrittenBindingsAttr))
    mask |= static_cast<uint64_t>(old.getInt());
  Builder b(exe.getContext());
  exe->setAttr(kWrittenBindingsAttr, b.getI64IntegerAttr(static_cast<int64_t>(mask)));
}

}  // namespace

// Scalar kernel operands as i64 parameter words (f32 as its bits, low 32).
FailureOr<Value> HostLowering::paramWord(DispatchOp d, Value v) {
  Value s = scalars.lookup(v);
  if (!s) return d.emitError("scalar dispatch operand has no host value");
  Type t = v.getType();
  if (t.isF32()) return inst("trunc.f64.f32", {s}, b.getI64Type());
  if (t.isF64()) return d.emitError("unsupported f64 scalar dispatch operand for target 'cpu'");
  return s;
}

// Allocates the dispatch's results and writes its parameter buffer (host work done before
// the region is submitted) and queues it for recording.
LogicalResult HostLowering::lowerDispatch(DispatchOp d, const DenseSet<Value>& yieldedRoots) {
  StringRef name = d.getExecutable();
  if (!state.executableOrdinals.count(name)) return d.emitError("unknown executable ") << name;
  auto exe = SymbolTable::lookupNearestSymbolFrom<ExecutableOp>(d, d.getExecutableAttr());
  if (!exe) return d.emitError("unknown executable ") << name;

  PendingDispatch p;
  p.op = d;
  SmallVector<Value> params;  // kernel argument order: tensors' dyn dims, results', scalars
  SmallVector<Value> scalarOperands;
  for (Value operand : d.getArgs()) {
    auto t = dyn_cast<RankedTensorType>(operand.getType());
    if (!t) {
      scalarOperands.push_back(operand);
      continue;
    }
    auto it = tensors.find(operand);
    if (it == tensors.end()) return d.emitError("tensor operand has no buffer");
    p.bindings.push_back(it->second.buffer);
    for (auto [i, dim] : llvm::enumerate(t.getShape()))
      if (ShapedType::isDynamic(dim)) params.push_back(it->second.dims[i]);
  }
  unsigned nextDim = 0;
  auto tied = d->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr);
  for (auto [ri, result] : llvm::enumerate(d.getResults())) {
    auto t = cast<RankedTensorType>(result.getType());
    if (tied && tied[ri] >= 0) {
      // Written in place into the operand's buffer: same buffer, same dims; bound twice
      // (operand and output), which the region's slot list turns into one slot.
      HostTensor h = tensors.lookup(d.getArgs()[tied[ri]]);
      if (!h.buffer) return d.emitError("in-place update of a tensor without a buffer");
      for (int64_t dim : t.getShape())
        if (ShapedType::isDynamic(dim)) ++nextDim;
      h.view = Value();
      tensors[result] = h;
      p.bindings.push_back(h.buffer);
      for (auto [i, dim] : llvm::enumerate(t.getShape()))
        if (ShapedType::isDynamic(dim)) params.push_back(h.dims[i]);
      continue;
    }
    HostTensor h;
    for (int64_t dim : t.getShape()) {
      if (!ShapedType::isDynamic(dim)) {
        h.dims.push_back(i64(dim));
        continue;
      }
      Value size = scalars.lookup(d.getResultDims()[nextDim++]);
      if (!size) return d.emitError("result dim has no host value");
      h.dims.push_back(size);
      params.push_back(size);
    }
    h.buffer = allocateResult(result, h, yieldedRoots);
    tensors[result] = h;
    p.bindings.push_back(h.buffer);
  }
  NoteWrittenBindings(exe, p.bindings.size() - d.getNumResults(), d.getNumResults());
  for (Value s : scalarOperands) {
    FailureOr<Value> word = paramWord(d, s);
    if (failed(word)) return failure();
    params.push_back(*word);
  }
  // A count computed from shapes goes into the parameter buffer after the words it reads.
  FailureOr<std::optional<int64_t>> countOffset = workgroupCounts.Append(b, loc, d, exe, params);
  if (failed(countOffset)) return failure();
  p.countOffset = *countOffset;
  if (!params.empty()) {
    // Serialized executables (CPU and CUDA) read their words from a buffer kept across
    // executions; a region's lists share one (packed) when they fit a CUDA uniform shadow.
    auto format = exe->getAttrOfType<StringAttr>(kFormatAttr);
    bool reused = format && (format.getValue().starts_with("cpu-") ||
                             format.getValue().starts_with("cuda-"));
    const int64_t maxPacked = format && format.getValue().starts_with("cuda-")
                                  ? kMaxCudaPackedParamsBytes
                                  : std::numeric_limits<int64_t>::max();
    std::optional<std::pair<Value, int64_t>> packedAt;
    if (reused && !recordedForm) packedAt = packedParameters(params, maxPacked);
    if (packedAt) {
      auto [buffer, offset] = *packedAt;
      p.bindings.push_back(buffer);
      p.paramsOffset = offset;
      if (p.countOffset) *p.countOffset += offset;
    } else {
      p.bindings.push_back(parameterBuffer(params, reused));
    }
  }
  pending.push_back(std::move(p));
  return success();
}

// The region's parameter buffer holding `params`: dispatches of one region with the same
// parameters share one. A recorded callee's is the previous call's when its words are equal
// (an argument of its VM form, LowerRecordedCalls.cpp), else a new one; so is a `reused` one
// (a CPU or CUDA executable's: the previous execution's, kept in a ref global, so that a
// dynamic module whose shapes repeat allocates none per call; never written once a submission
// may read it, a new one when a word changed).
Value HostLowering::parameterBuffer(ArrayRef<Value> params, bool reused) {
  for (auto& [values, existing] : regionParams)
    if (ArrayRef<Value>(values) == params) return existing;
  Value buffer;
  if (recordedForm) {
    buffer = carriedBuffer(CarriedBuffer::kParameters, Value(), params, reused);
  } else if (reused) {
    int64_t global = state.refGlobals++;
    Value held = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
    buffer = hal_import::AllocatorReuseUniform(b, loc, device, held, params);
    vmir::GlobalStoreRefOp::create(b, loc, buffer, b.getI64IntegerAttr(global));
  } else {
    buffer = hal_import::AllocatorAllocateUniform(b, loc, device,
                                                  i64(8 * static_cast<int64_t>(params.size())));
    hal_import::BufferStoreI64(b, loc, buffer, i64(0), params);
  }
  regionParams.push_back({SmallVector<Value>(params), buffer});
  return buffer;
}

// The buffer of a command's fresh result with dims `h.dims`. A transient (not yielded, nor
// aliased by a yielded value) is kept in a ref global and reused by every execution of the
// region (the queue is in order): no allocation per execution, and the recorded binding does
// not change. Commands write every element of their results: no zero fill (a pass over the
// memory on the CPU, a memset node on CUDA), stream-ordered, no submission.
Value HostLowering::allocateResult(Value result, const HostTensor& h,
                                   const DenseSet<Value>& yieldedRoots) {
  Value bytes = byteSize(cast<RankedTensorType>(result.getType()), h.dims);
  if (Value held = heldResultBuffers.lookup(result))  // a recorded callee's result
    return hal_import::DeviceTransient(b, loc, device, held, bytes);
  if (!yieldedRoots.contains(result) && recordedForm)  // the call site's own
    return carriedBuffer(CarriedBuffer::kTransient, bytes, {});
  if (!yieldedRoots.contains(result)) {
    int64_t global = state.refGlobals++;
    Value held = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
    Value buffer = hal_import::DeviceTransient(b, loc, device, held, bytes);
    vmir::GlobalStoreRefOp::create(b, loc, buffer, b.getI64IntegerAttr(global));
    return buffer;
  }
  Value none = null();
  return hal_import::QueueAlloca(b, loc, device, none, i64(0), none, i64(0), bytes);
}

// The executable of a dispatch, looked up once per recording.
Value HostLowering::lookupExecutable(const PendingDispatch& p, llvm::StringMap<Value>& executables) {
  DispatchOp op = p.op;
  loc = op.getLoc();
  Value& exe = executables[op.getExecutable()];
  if (!exe) exe = hal_import::ExecutableLookup(b, loc, device, i64(state.executableOrdinals[op.getExecutable()]));
  return exe;
}

// Records one dispatch of a region into `cb` (slot ordinals through `slotValues` when given).
void HostLowering::recordDispatch(Value cb, const PendingDispatch& p, Value exe,
                                  const DenseMap<Value, int64_t>& slotOf, ArrayRef<Value> slotValues) {
  DispatchOp op = p.op;
  loc = op.getLoc();
  auto exeOp = SymbolTable::lookupNearestSymbolFrom<ExecutableOp>(op, op.getExecutableAttr());
  SmallVector<int64_t> slotOrdinals;
  for (Value v : p.bindings) slotOrdinals.push_back(slotOf.lookup(v));
  std::optional<CountSlot> countSlot;
  if (p.countOffset) countSlot = CountSlot{slotOf.lookup(p.bindings.back()), *p.countOffset};
  SmallVector<int64_t> offsets(p.bindings.size(), 0);
  if (!offsets.empty()) offsets.back() = p.paramsOffset;
  RecordDispatch(b, loc, cb, exe, exeOp, slotOrdinals, countSlot, slotValues, offsets);
}

// The binding table of the region being lowered: each distinct buffer of its dispatches,
// collectives and recorded calls once (a recorded callee's recording takes the slot of each
// of its buffers), so a buffer one command writes and another reads is one slot.
void HostLowering::assignSlots(SmallVectorImpl<Value>& slots, DenseMap<Value, int64_t>& slotOf) {
  for (auto& p : pending)
    for (Value v : p.bindings)
      if (slotOf.try_emplace(v, slots.size()).second) slots.push_back(v);
}

// Records the region's commands into `commands`, a barrier where the region has one.
void HostLowering::recordCommands(Value commands, const DenseMap<Value, int64_t>& slotOf,
                                  ArrayRef<Value> slotValues) {
  llvm::StringMap<Value> executables;
  Value channel;
  for (const PendingDispatch& p : pending) {
    if (p.collective) {
      if (p.barrierBefore) hal_import::CommandBufferBarrier(b, loc, commands);
      if (!channel) channel = defaultChannel();
      recordCollective(commands, channel, p, slotOf);
      continue;
    }
    if (p.recordedCall) {
      if (p.barrierBefore) hal_import::CommandBufferBarrier(b, loc, commands);
      SmallVector<Value> operands = {commands};
      for (Value v : p.bindings) {
        int64_t slot = slotOf.lookup(v);
        operands.push_back(slotValues.empty() ? i64(slot) : slotValues[slot]);
      }
      vmir::CallOp::create(b, loc, TypeRange{}, RecordFunctionSymbol(p.recordedCall), operands);
      continue;
    }
    Value exe = lookupExecutable(p, executables);
    if (p.barrierBefore) hal_import::CommandBufferBarrier(b, loc, commands);
    recordDispatch(commands, p, exe, slotOf, slotValues);
  }
}

// Emits the region's command buffer: record once (lazily, into a ref global) with barriers
// exactly where the region has them, then submit it with this execution's buffers, waiting
// on the region's remaining awaits and signalling its timepoint when someone awaits it.
void HostLowering::emitRegion(ExecuteOp e) {
  emitPackedParameters();
  SmallVector<Value> slots;
  DenseMap<Value, int64_t> slotOf;
  assignSlots(slots, slotOf);
  // A device loop: the flag's buffer is a slot too.
  auto repeat = e->getAttrOfType<DenseI64ArrayAttr>(kRepeatWhileAttr);
  Value flag = repeat ? tensors.lookup(e.getYield().getValues()[repeat[0]]).buffer : Value();
  if (flag && slotOf.try_emplace(flag, slots.size()).second) slots.push_back(flag);

  // Awaits: the first is the submission's wait; more than one (no import takes several wait
  // pairs yet) are waited for on the host first. hexir-elide-timepoints leaves none on one
  // device queue.
  Value waitSemaphore, waitValue;
  for (Value t : e.getAwaits()) {
    LoweredTimepoint awaited = timepoints.lookup(t);
    if (!awaited.semaphore) continue;  // an in-place transfer's: its fence already ordered us
    if (waitSemaphore) hal_import::SemaphoreWait(b, loc, waitSemaphore, waitValue);
    waitSemaphore = awaited.semaphore;
    waitValue = awaited.value;
  }
  Value signalSemaphore, signalValue;
  if (!e.getTimepoint().use_empty()) {
    signalSemaphore = hal_import::SemaphoreCreate(b, loc, device, i64(0));
    signalValue = i64(1);
    timepoints[e.getTimepoint()] = {signalSemaphore, signalValue};
  }

  // A collective whose count or peer is only known at run time is recorded at every execution
  // (the import takes them when recording); everything else is recorded once.
  bool memoize = llvm::none_of(pending, [](const PendingDispatch& p) {
    return p.collective && !p.collective->replayable;
  });
  int64_t global = memoize ? state.refGlobals++ : -1;
  Value cached = memoize ? vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global))
                         : null();
  Value isNull = memoize ? vmir::RefIsNullOp::create(b, loc, b.getI64Type(), cached).getResult()
                         : i64(1);
  Block* record = new Block();
  Block* replay = new Block();
  vmFunc.getBody().getBlocks().insertAfter(Region::iterator(cur), record);
  vmFunc.getBody().getBlocks().insertAfter(Region::iterator(record), replay);
  Value cbArg = replay->addArgument(ref, loc);
  vmir::CondBrOp::create(b, loc, isNull, ValueRange{}, ValueRange{cached}, record, replay);

  b.setInsertionPointToStart(record);
  Value cb = hal_import::CommandBufferCreate(b, loc, device);
  // A device loop's commands are its body: a command buffer of its own, which the region's
  // command buffer repeats while the flag is nonzero.
  Value commands = flag ? hal_import::CommandBufferCreate(b, loc, device) : cb;
  recordCommands(commands, slotOf, /*slotValues=*/{});
  if (flag) {
    loc = e.getLoc();
    hal_import::CommandBufferFinalize(b, loc, commands);
    hal_import::CommandBufferRepeatWhileSlot(b, loc, cb, commands, i64(slotOf.lookup(flag)), i64(0),
                                             i64(repeat[1]));
  }
  hal_import::CommandBufferFinalize(b, loc, cb);
  if (memoize) vmir::GlobalStoreRefOp::create(b, loc, cb, b.getI64IntegerAttr(global));
  vmir::BrOp::create(b, loc, ValueRange{cb}, replay);

  b.setInsertionPointToStart(replay);
  cur = replay;
  Value none = null();
  hal_import::QueueExecuteBound(b, loc, device, cbArg, waitSemaphore ? waitSemaphore : none,
                                waitSemaphore ? waitValue : i64(0),
                                signalSemaphore ? signalSemaphore : none,
                                signalSemaphore ? signalValue : i64(0), slots);
  endRegion();
}

void HostLowering::endRegion() {
  pending.clear();
  regionParams.clear();
  packed = PackedParams();
  workgroupCounts.Clear();
  calleeCarriedBuffers.clear();
}

// A transfer region: a copy into a new buffer of the target device, in queue order after the
// region's awaits and everything queued on the source device before it
// (hal.device.queue.transfer), signalling the region's timepoint when someone awaits it; an
// in-place one (devices that share memory) only orders the target's queue after the
// source's (hal.device.queue.fence) and reads the source's buffer.
LogicalResult HostLowering::lowerTransfer(TransferOp t, ExecuteOp e) {
  auto it = tensors.find(t.getSource());
  if (it == tensors.end()) return t.emitError("transferred tensor has no buffer");
  Value from = deviceAt(t.getFrom());
  if (!from) return t.emitError("no device value for device ") << t.getFrom();
  HostTensor h = it->second;
  h.view = Value();
  Value waitSemaphore, waitValue;
  for (Value awaited : e.getAwaits()) {
    LoweredTimepoint lowered = timepoints.lookup(awaited);
    if (!lowered.semaphore) continue;
    if (waitSemaphore) hal_import::SemaphoreWait(b, loc, waitSemaphore, waitValue);
    waitSemaphore = lowered.semaphore;
    waitValue = lowered.value;
  }
  if (t.getInPlace()) {
    // The fence covers the awaited producer: it was queued on the source before this point.
    hal_import::QueueFence(b, loc, from, device);
    tensors[t.getResult()] = h;
    // Nothing to signal: the target's queue itself is ordered after the source's.
    timepoints[e.getTimepoint()] = {};
    return success();
  }
  Value none = null();
  Value bytes = byteSize(cast<RankedTensorType>(t.getResult().getType()), h.dims);
  Value target = hal_import::QueueAlloca(b, loc, device, none, i64(0), none, i64(0), bytes);
  Value signalSemaphore, signalValue;
  if (!e.getTimepoint().use_empty()) {
    signalSemaphore = hal_import::SemaphoreCreate(b, loc, device, i64(0));
    signalValue = i64(1);
  }
  hal_import::QueueTransfer(b, loc, from, waitSemaphore ? waitSemaphore : none,
                            waitSemaphore ? waitValue : i64(0),
                            signalSemaphore ? signalSemaphore : none,
                            signalSemaphore ? signalValue : i64(0), h.buffer, device, target, bytes);
  timepoints[e.getTimepoint()] = {signalSemaphore, signalValue};
  h.buffer = target;
  tensors[t.getResult()] = h;
  return success();
}

// One execution region: its host work (allocations, parameter buffers, reshapes) in body
// order, then its command buffer. Transients are the dispatch results whose buffer no
// yielded value holds.
LogicalResult HostLowering::lowerExecute(ExecuteOp e) {
  // The region's own device for its allocations, lookups and submission.
  Value functionDevice = device;
  device = deviceAt(e.getDevice());
  LogicalResult lowered = device ? lowerExecuteOnDevice(e)
                                 : e.emitError("no device value for device ") << e.getDevice();
  device = functionDevice;
  return lowered;
}

LogicalResult HostLowering::lowerExecuteOnDevice(ExecuteOp e) {
  DenseSet<Value> yieldedRoots;
  for (Value v : e.getYield().getValues()) yieldedRoots.insert(schedule::BufferRoot(v));
  for (Value t : e.getAwaits())
    if (!timepoints.count(t))
      return e.emitError("awaited timepoint has no semaphore (its region was not lowered first)");
  // A device loop: each carried value gets a buffer of this execution holding a copy of its
  // init (a queue copy), which the body reads and updates in place; the init stays unchanged.
  auto repeat = e->getAttrOfType<DenseI64ArrayAttr>(kRepeatWhileAttr);
  SmallVector<std::pair<Value, HostTensor>> inits;  // restored after the region
  if (repeat) {
    if (repeat.size() != 2 || repeat[0] < 0 || repeat[0] >= int64_t(e.getYield().getValues().size()) ||
        repeat[1] < 0 || repeat[1] > int64_t{0xffffffff})
      return e.emitError("hexir.repeat_while must be [flag: a yielded value, limit in [0, 2^32)]");
    Value none = null();
    for (Value y : e.getYield().getValues()) {
      Value init = carriedInit(y, e);
      auto it = init ? tensors.find(init) : tensors.end();
      if (it == tensors.end())
        return e.emitError("a device loop's yielded value must update a value from above in place");
      HostTensor carried = it->second;
      carried.view = Value();
      Value bytes = byteSize(cast<RankedTensorType>(init.getType()), carried.dims);
      carried.buffer = hal_import::QueueAlloca(b, loc, device, none, i64(0), none, i64(0), bytes);
      hal_import::QueueCopy(b, loc, device, none, i64(0), none, i64(0), it->second.buffer, i64(0),
                            carried.buffer, i64(0), bytes);
      inits.push_back({init, it->second});
      tensors[init] = carried;
    }
  }
  bool barrier = false;
  for (Operation& op : e.getBody().front()) {
    loc = op.getLoc();
    LogicalResult lowered =
        llvm::TypeSwitch<Operation*, LogicalResult>(&op)
            .Case<DispatchOp>([&](auto d) {
              if (failed(lowerDispatch(d, yieldedRoots))) return failure();
              pending.back().barrierBefore = barrier && pending.size() > 1;
              barrier = false;
              return success();
            })
            .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, BroadcastOp, SendOp, RecvOp>(
                [&](auto c) {
                  if (failed(lowerCollective(c, yieldedRoots))) return failure();
                  pending.back().barrierBefore = barrier && pending.size() > 1;
                  barrier = false;
                  return success();
                })
            .Case<func::CallOp>([&](auto c) {
              if (failed(lowerRecordedCall(c, yieldedRoots))) return failure();
              pending.back().barrierBefore = barrier && pending.size() > 1;
              barrier = false;
              return success();
            })
            .Case<TransferOp>([&](auto t) { return lowerTransfer(t, e); })
            .Case<BarrierOp>([&](auto) {
              barrier = true;
              return success();
            })
            .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp>([&](auto r) { return lowerReshape(r); })
            .Case<tensor::CastOp>([&](auto c) { return lowerCast(c); })
            .Case<YieldOp>([&](auto) { return success(); })
            .Default([&](Operation* o) {
              return o->emitError() << "unsupported op '" << o->getName() << "' in hexir.execute";
            });
    if (failed(lowered)) {
      endRegion();
      return failure();
    }
  }
  loc = e.getLoc();
  if (recordedForm)
    emitRecordedRegion(e);
  else if (!pending.empty())
    emitRegion(e);
  for (auto [result, yielded] : llvm::zip(e.getResults(), e.getYield().getValues()))
    tensors[result] = tensors.lookup(yielded);
  for (auto& [init, original] : inits) tensors[init] = original;
  return success();
}

}  // namespace hexir::vm_lowering
