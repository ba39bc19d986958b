// Calls recorded into the caller's command buffer (passes/schedule/RecordedCalls.h).
//
//   callee @layer (one region)                   caller's region holding `call @layer`
//   func @layer(%x: ref, %w: ref, dims...)       %h, dims..., %s0..%sK = call @layer(...)
//       -> (results: ref, dims..., slots: ref x K)   (host work: allocations, parameters)
//     host work of its region; no recording,     record block (first execution only):
//     no submission; returns the region's           call @layer.record(%cb, first slot)
//     binding-table buffers (slot order)         queue.execute_bound(..., slots..., %s0..%sK)
//   func @layer.record(%cb: ref, %first: i64)
//     dispatch_slots with ordinals %first + k
//
// Each call site's buffers sit in K consecutive slots of the caller's table, so the callee's
// one recording serves every call site, and the caller's region stays one command buffer.
// Calls of one callee share its transient buffers: the scheduling passes make each call a
// fence (barriers before and after it), so no two calls' commands overlap.
#include "passes/schedule/RecordedCalls.h"
#include "passes/vm/HalImports.h"
#include "passes/vm/HostLowering.h"

namespace hexir::vm_lowering {

LogicalResult HostLowering::lowerRecordedCall(func::CallOp c) {
  auto count = state.recordedSlotCounts.find(c.getCallee());
  if (count == state.recordedSlotCounts.end())
    return c.emitError() << "call of @" << c.getCallee()
                         << " in an execution region: the callee is not lowered as a recorded "
                            "callee (hexir.records_into_caller)";
  SmallVector<Value> args;
  if (failed(edgeOperands(c, c.getOperands(), args))) return failure();
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
  }
  PendingDispatch p;
  p.recordedCall = c.getCalleeAttr();
  for (; next < call.getNumResults(); ++next) p.bindings.push_back(call.getResult(next));
  pending.push_back(std::move(p));
  return success();
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
