#include "passes/schedule/RecordedCalls.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/schedule/Buffers.h"

namespace hexir::schedule {
using namespace mlir;

func::FuncOp RecordedCallee(Operation* op) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call) return {};
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op, call.getCalleeAttr());
  if (!callee || !callee->hasAttr(kRecordsIntoCallerAttr)) return {};
  return callee;
}

ExecuteOp RecordedRegionOf(func::FuncOp callee, std::string* why) {
  auto fail = [&](const char* reason) {
    if (why) *why = reason;
    return ExecuteOp();
  };
  if (!callee.getBody().hasOneBlock()) return fail("its body has several blocks");
  ExecuteOp region;
  for (Operation& op : callee.getBody().front()) {
    auto e = dyn_cast<ExecuteOp>(op);
    if (!e) continue;
    if (region) return fail("its body has several execution regions");
    region = e;
  }
  if (!region) return fail("its body has no execution region");
  if (!region.getAwaits().empty() || region.getDevice() != 0 || region.getQueue() != "compute")
    return fail("its execution region awaits timepoints or is not on device 0's compute queue");
  if (region->hasAttr(kRepeatWhileAttr)) return fail("its execution region is a device loop");
  for (Operation& op : region.getBody().front())
    if (!isa<DispatchOp, BarrierOp, YieldOp>(op) && !IsAlias(&op))
      return fail("its execution region holds more than dispatches and reshapes");
  return region;
}

}  // namespace hexir::schedule
