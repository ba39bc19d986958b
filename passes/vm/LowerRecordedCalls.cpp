// Calls recorded into the caller's command buffer (passes/schedule/RecordedCalls.h).
//
//   callee @layer (one region)                   caller's region holding `call @layer`
//   func @layer(%x: ref, %w: ref, dims...,       %h, dims..., %o0..%oJ = call @layer(..., held...,
//               held: ref x results,                                            carried...)
//               carried: ref x (transients and   (host work: allocations, parameters)
//                               param lists)     global.store.ref of each held result and
//                                                transient
//       -> (results: ref, dims..., own: ref x J) global.store.ref of each held result
//     host work of its region; no recording,     record block (first execution only):
//     no submission; returns the buffers of its     call @layer.record(%cb, slot of each buffer)
//     slots that are neither arguments nor       queue.execute_bound(..., each buffer once)
//     results (transients, parameter buffers)
//   func @layer.record(%cb: ref, %s0..%sK: i64)
//     dispatch_slots with ordinals %s0..%sK
//
// The caller binds each distinct buffer of its region once, the callee's too (RecordedSlot:
// an argument is the caller's buffer, a result the call's result buffer, the callee's own
// buffers are returned), and passes `.record` the slot of each, so the callee's one recording
// serves every call site, the caller's region stays one command buffer, and a buffer one call
// writes and the next reads is one slot, as inlined (a CUDA graph orders its kernels by slots;
// the same buffer in two slots would make it fall back to stream launches).
// A result the caller uses only inside its region is kept per call site (a ref global, passed
// in as `held`: hal.device.transient reuses it when large enough), so it is allocated once,
// not at every call; a result the caller yields is passed null and allocated per call, as an
// inlined one would be. So is each transient of the callee (its own per call site, as each
// inlined body has its own: no two call sites bind one buffer). Each parameter buffer of the
// callee is the previous call's when its words are equal (the caller passes the buffers the
// previous call of the callee in the region returned: hal.allocator.reuse_uniform), so L calls
// allocate what L inlined bodies do.
#include "passes/schedule/Buffers.h"
#include "passes/schedule/RecordedCalls.h"
#include "passes/vm/HalImports.h"
#include "passes/vm/HostLowering.h"

namespace hexir::vm_lowering {

LogicalResult HostLowering::lowerRecordedCall(func::CallOp c, const DenseSet<Value>& yieldedRoots) {
  auto found = state.recordedCallees.find(c.getCallee());
  if (found == state.recordedCallees.end())
    return c.emitError() << "call of @" << c.getCallee()
                         << " in an execution region: the callee is not lowered as a recorded "
                            "callee (hexir.records_into_caller)";
  const RecordedCallee& callee = found->second;
  SmallVector<Value> args;
  if (failed(edgeOperands(c, c.getOperands(), args))) return failure();
  // A fresh result used only inside this region (a transient of the caller) is kept for this
  // call site in a ref global of its own and handed back to the callee at every call; a
  // yielded (or tied) one is the callee's to allocate.
  SmallVector<std::optional<int64_t>> held;
  for (Value r : c.getResults()) {
    bool transient = !schedule::TiedOperand(c, cast<OpResult>(r).getResultNumber()) && !yieldedRoots.contains(r);
    held.push_back(transient ? std::optional<int64_t>(state.refGlobals++) : std::nullopt);
    args.push_back(transient ? vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(*held.back())).getResult()
                             : null());
  }
  // Carried buffers: the transients this call site keeps (a ref global each) and the
  // parameter buffers of the previous call of this callee in the region (at the first: null,
  // or a CPU executable's from the region's previous execution, kept in a ref global).
  SmallVector<Value>& previous = calleeCarriedBuffers[c.getCallee()];
  SmallVector<int64_t> transientGlobals;
  SmallVector<std::pair<size_t, int64_t>> parameterGlobals;  // (carried index, ref global)
  for (auto [j, carried] : llvm::enumerate(callee.carried)) {
    if (carried.kind == CarriedBuffer::kTransient) {
      transientGlobals.push_back(state.refGlobals++);
      args.push_back(vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(transientGlobals.back())));
      continue;
    }
    if (j < previous.size()) {
      args.push_back(previous[j]);
    } else if (carried.acrossExecutions) {
      parameterGlobals.push_back({j, state.refGlobals++});
      args.push_back(vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(parameterGlobals.back().second)));
    } else {
      args.push_back(null());
    }
  }
  SmallVector<Type> results;
  for (Type t : c.getResultTypes()) {
    results.push_back(ref);
    results.append(cast<RankedTensorType>(t).getNumDynamicDims(), b.getI64Type());
  }
  results.append(callee.ownBuffers, ref);
  auto call = vmir::CallOp::create(b, loc, results, c.getCalleeAttr(), args);
  unsigned next = 0;
  for (Value r : c.getResults()) {
    HostTensor h;
    h.buffer = call.getResult(next++);
    for (int64_t d : cast<RankedTensorType>(r.getType()).getShape())
      h.dims.push_back(ShapedType::isDynamic(d) ? call.getResult(next++) : i64(d));
    // A tied result is its operand's buffer: the caller's own value, so it keeps one slot.
    if (Value tied = schedule::TiedOperand(c, cast<OpResult>(r).getResultNumber()))
      h.buffer = tensors.lookup(tied).buffer;
    tensors[r] = h;
    if (std::optional<int64_t> global = held[cast<OpResult>(r).getResultNumber()])
      vmir::GlobalStoreRefOp::create(b, loc, h.buffer, b.getI64IntegerAttr(*global));
  }
  const unsigned own = next;
  PendingDispatch p;
  p.recordedCall = c.getCalleeAttr();
  for (const RecordedSlot& s : callee.slots) {
    switch (s.kind) {
      case RecordedSlot::kArgument: p.bindings.push_back(args[s.index]); break;
      case RecordedSlot::kResult: p.bindings.push_back(tensors.lookup(c.getResult(s.index)).buffer); break;
      case RecordedSlot::kOwn: p.bindings.push_back(call.getResult(own + s.index)); break;
    }
  }
  previous.clear();
  auto global = transientGlobals.begin();
  for (const CarriedBuffer& carried : callee.carried) {
    Value buffer = call.getResult(own + carried.own);
    previous.push_back(buffer);
    if (carried.kind == CarriedBuffer::kTransient)
      vmir::GlobalStoreRefOp::create(b, loc, buffer, b.getI64IntegerAttr(*global++));
  }
  for (auto [j, parameterGlobal] : parameterGlobals)
    vmir::GlobalStoreRefOp::create(b, loc, previous[j], b.getI64IntegerAttr(parameterGlobal));
  pending.push_back(std::move(p));
  return success();
}

// A recorded callee's held-buffer arguments (one per result, after the others): each fresh
// region result a function result returns (its buffer root) is allocated from its own.
void HostLowering::mapHeldResultBuffers(Block* entry) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (Value v : ret.getOperands()) {
    Value held = entry->addArgument(ref, func.getLoc());
    while (Operation* def = v.getDefiningOp()) {
      if (!schedule::IsAlias(def)) break;
      v = def->getOperand(0);
    }
    auto region = v.getDefiningOp<ExecuteOp>();
    if (!region) continue;
    Value root = schedule::BufferRoot(region.getYield().getValues()[cast<OpResult>(v).getResultNumber()]);
    if (root.getDefiningOp<DispatchOp>()) heldResultBuffers.try_emplace(root, held);
  }
}

// A buffer a recorded callee's region makes and its call site carries to the next call (an
// argument of its VM form, HostLowering.h): its transient of `bytes`, the call site's held one
// when large enough; its parameter buffer holding `params`, the previous call's when equal.
Value HostLowering::carriedBuffer(CarriedBuffer::Kind kind, Value bytes, ArrayRef<Value> params,
                                  bool acrossExecutions) {
  Value carried = vmFunc.getBody().front().addArgument(ref, loc);
  Value buffer = kind == CarriedBuffer::kTransient
                     ? hal_import::DeviceTransient(b, loc, device, carried, bytes)
                     : hal_import::AllocatorReuseUniform(b, loc, device, carried, params);
  carriedBuffers.push_back({CarriedBuffer{kind, -1, acrossExecutions}, buffer});
  return buffer;
}

// A recorded callee's region: its host work is done (allocations, parameter buffers); its
// slot buffers go back to the caller (lowerReturn) and its commands into `<name>.record`,
// which takes the caller's slot ordinal of each.
void HostLowering::emitRecordedRegion(ExecuteOp e) {
  SmallVector<Value> slots;
  DenseMap<Value, int64_t> slotOf;
  assignSlots(slots, slotOf);
  recordedSlots.assign(slots.begin(), slots.end());

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(vmFunc);
  FlatSymbolRefAttr name = RecordFunctionSymbol(FlatSymbolRefAttr::get(func.getNameAttr()));
  SmallVector<Type> argTypes = {ref};
  argTypes.append(slots.size(), b.getI64Type());
  auto record = func::FuncOp::create(b, e.getLoc(), name.getValue(), b.getFunctionType(argTypes, {}));
  record.setPrivate();
  Block* entry = record.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value functionDevice = device;
  device = hal_import::DeviceDefault(b, loc);
  SmallVector<Value> slotValues(std::next(entry->args_begin()), entry->args_end());
  recordCommands(entry->getArgument(0), slotOf, slotValues);
  loc = e.getLoc();
  vmir::ReturnOp::create(b, loc, ValueRange{});
  device = functionDevice;
  endRegion();
}

// A recorded callee's return: its results (buffers and dims), then the buffers of its slots
// that the caller does not have (RecordedSlot::kOwn); what each slot is goes to the module
// state for its callers.
LogicalResult HostLowering::describeRecordedSlots(func::ReturnOp r, SmallVectorImpl<Value>& results) {
  if (failed(edgeOperands(r, r.getOperands(), results))) return failure();
  DenseMap<Value, RecordedSlot> known;
  for (BlockArgument a : vmFunc.getBody().front().getArguments())
    known.try_emplace(a, RecordedSlot{RecordedSlot::kArgument, a.getArgNumber()});
  for (auto [i, v] : llvm::enumerate(r.getOperands()))
    if (isa<RankedTensorType>(v.getType()))
      known.try_emplace(tensors.lookup(v).buffer, RecordedSlot{RecordedSlot::kResult, int64_t(i)});
  RecordedCallee callee;
  DenseMap<Value, int64_t> ownIndex;
  for (Value s : recordedSlots) {
    auto it = known.find(s);
    if (it != known.end()) {
      callee.slots.push_back(it->second);
      continue;
    }
    ownIndex[s] = callee.ownBuffers;
    callee.slots.push_back({RecordedSlot::kOwn, callee.ownBuffers++});
    results.push_back(s);
  }
  for (auto [carried, buffer] : carriedBuffers) {
    auto it = ownIndex.find(buffer);
    if (it == ownIndex.end())
      return r.emitError("a transient or parameter buffer of the recorded callee is in none of its slots");
    carried.own = it->second;
    callee.carried.push_back(carried);
  }
  state.recordedCallees[func.getName()] = std::move(callee);
  return success();
}

}  // namespace hexir::vm_lowering
