// Calls (views in, views out), branches (tensors cross edges as buffer + dynamic dims) and
// returns (views).
#include "passes/vm/HostLowering.h"

#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {

LogicalResult HostLowering::lowerCall(func::CallOp c) {
  if (state.recordedCallees.count(c.getCallee()))  // lowered before its callers
    return c.emitError() << "call of @" << c.getCallee()
                         << " outside an execution region: its callee records into its callers' "
                            "command buffers (run hexir-form-execution-regions)";
  SmallVector<Value> args;
  for (Value v : c.getOperands()) {
    if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      auto it = tensors.find(v);
      if (it == tensors.end()) return c.emitError("tensor argument has no buffer");
      args.push_back(exportView(it->second, t));
    } else {
      Value s = scalars.lookup(v);
      if (!s) return c.emitError("scalar argument has no host value");
      args.push_back(s);
    }
  }
  SmallVector<Type> results;
  for (Type t : c.getResultTypes()) {
    Type vt = vmType(t);
    if (!vt) return c.emitError() << "unsupported result type " << t << " for target 'cpu'";
    results.push_back(vt);
  }
  auto callOp = vmir::CallOp::create(b, loc, results, c.getCalleeAttr(), args);
  for (auto [r, v] : llvm::zip(c.getResults(), callOp.getResults())) {
    if (auto t = dyn_cast<RankedTensorType>(r.getType()))
      tensors[r] = importView(v, t, 0, /*check=*/false);
    else
      scalars[r] = v;
  }
  return success();
}

LogicalResult HostLowering::edgeOperands(Operation* op, ValueRange operands, SmallVectorImpl<Value>& out) {
  for (Value v : operands)
    if (failed(flatten(op, v, out))) return failure();
  return success();
}

LogicalResult HostLowering::lowerBranch(cf::BranchOp br) {
  SmallVector<Value> operands;
  if (failed(edgeOperands(br, br.getDestOperands(), operands))) return failure();
  vmir::BrOp::create(b, loc, operands, blocks[br.getDest()]);
  return success();
}

LogicalResult HostLowering::lowerCondBranch(cf::CondBranchOp br) {
  SmallVector<Value> t, f;
  if (failed(edgeOperands(br, br.getTrueDestOperands(), t)) ||
      failed(edgeOperands(br, br.getFalseDestOperands(), f)))
    return failure();
  Value cond = scalars.lookup(br.getCondition());
  if (!cond) return br.emitError("condition has no host value");
  vmir::CondBrOp::create(b, loc, cond, t, f, blocks[br.getTrueDest()], blocks[br.getFalseDest()]);
  return success();
}

LogicalResult HostLowering::lowerReturn(func::ReturnOp r) {
  SmallVector<Value> results;
  if (recordedForm) {  // buffers and dims, then the region's own slot buffers
    if (failed(describeRecordedSlots(r, results))) return failure();
    vmir::ReturnOp::create(b, loc, results);
    vmFunc.setType(b.getFunctionType(vmFunc.getBody().front().getArgumentTypes(),
                                     ValueRange(results).getTypes()));
    return success();
  }
  for (Value v : r.getOperands()) {
    if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      auto it = tensors.find(v);
      if (it == tensors.end()) return r.emitError("returned tensor has no buffer");
      results.push_back(exportView(it->second, t));
    } else {
      Value s = scalars.lookup(v);
      if (!s) return r.emitError("returned scalar has no host value");
      results.push_back(s);
    }
  }
  vmir::ReturnOp::create(b, loc, results);
  return success();
}

}  // namespace hexir::vm_lowering
