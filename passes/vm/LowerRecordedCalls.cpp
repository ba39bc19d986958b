// Calls recorded into the caller's command buffer (passes/schedule/RecordedCalls.h).
//
//   callee @layer (one region)                   caller's region holding `call @layer`
//   func @layer(%x: ref, %w: ref, dims...,       %h, dims..., %s0..%sK = call @layer(..., held...)
//               held: ref x results)             (host work: allocations, parameters)
//       -> (results: ref, dims..., slots: ref x K)   global.store.ref of each held result
//     host work of its region; no recording,     record block (first execution only):
//     no submission; returns the region's           call @layer.record(%cb, first slot)
//     binding-table buffers (slot order)         queue.execute_bound(..., slots..., %s0..%sK)
//   func @layer.record(%cb: ref, %first: i64)
//     dispatch_slots with ordinals %first + k
//
// Each call site's buffers sit in K consecutive slots of the caller's table, so the callee's
// one recording serves every call site, and the caller's region stays one command buffer.
// A result the caller uses only inside its region is kept per call site (a ref global, passed
// in as `held`: hal.device.transient reuses it when large enough), so it is allocated once,
// not at every call; a result the caller yields is passed null and allocated per call, as an
// inlined one would be. Calls of one callee share its transient buffers: the scheduling
// passes order each call after the previous call of its callee (ScheduleConcurrency.cpp).
#include "passes/schedule/Buffers.h"
#include "passes/schedule/RecordedCalls.h"
#include "passes/vm/HalImports.h"
#include "passes/vm/HostLowering.h"

namespace hexir::vm_lowering {

LogicalResult HostLowering::lowerRecordedCall(func::CallOp c, const DenseSet<Value>& yieldedRoots) {
  auto count = state.recordedSlotCounts.find(c.getCallee());
  if (count == state.recordedSlotCounts.end())
    return c.emitError() << "call of @" << c.getCallee()
                         << " in an execution region: the callee is not lowered as a recorded "
                            "callee (hexir.records_into_caller)";
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
  SmallVector<Type> results;
  for (Type t : c.getResultTypes()) {
    results.push_back(ref);
    results.append(cast<RankedTensorType>(t).getNumDynamicDims(), b.getI64Type());
  }
  results.append(count->second, ref);
  auto call = vmir::CallOp::create(b, loc, results, c.getCalleeAttr(), args);
  unsigned next = 0;
  for (Value r : c.getResults()) {
    HostTensor h;
    h.buffer = call.getResult(next++);
    for (int64_t d : cast<RankedTensorType>(r.getType()).getShape())
      h.dims.push_back(ShapedType::isDynamic(d) ? call.getResult(next++) : i64(d));
    tensors[r] = h;
    if (std::optional<int64_t> global = held[cast<OpResult>(r).getResultNumber()])
      vmir::GlobalStoreRefOp::create(b, loc, h.buffer, b.getI64IntegerAttr(*global));
  }
  PendingDispatch p;
  p.recordedCall = c.getCalleeAttr();
  for (; next < call.getNumResults(); ++next) p.bindings.push_back(call.getResult(next));
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

// A recorded callee's region: its host work is done (allocations, parameter buffers); its
// slot buffers go back to the caller (lowerReturn) and its commands into `<name>.record`.
void HostLowering::emitRecordedRegion(ExecuteOp e) {
  SmallVector<Value> slots;
  DenseMap<Value, int64_t> slotOf;
  assignSlots(slots, slotOf);
  recordedSlots.assign(slots.begin(), slots.end());
  state.recordedSlotCounts[func.getName()] = static_cast<int64_t>(slots.size());

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(vmFunc);
  FlatSymbolRefAttr name = RecordFunctionSymbol(FlatSymbolRefAttr::get(func.getNameAttr()));
  auto record = func::FuncOp::create(b, e.getLoc(), name.getValue(),
                                     b.getFunctionType({ref, b.getI64Type()}, {}));
  record.setPrivate();
  Block* entry = record.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value functionDevice = device;
  device = hal_import::DeviceDefault(b, loc);
  recordCommands(entry->getArgument(0), slotOf, /*slotBase=*/entry->getArgument(1));
  loc = e.getLoc();
  vmir::ReturnOp::create(b, loc, ValueRange{});
  device = functionDevice;
  pending.clear();
  regionParams.clear();
  workgroupCounts.Clear();
}

}  // namespace hexir::vm_lowering
