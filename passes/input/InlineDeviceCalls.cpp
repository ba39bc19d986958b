// Calls to functions that do device work are inlined into their callers, so a call no longer
// ends the caller's execution region: each call site's dispatches are recorded into the
// caller's command buffer (one CUDA graph), with their own bindings (the call site's buffers
// take their own binding-table slots). Kernels stay shared: the inlined copies of a callee's
// linalg ops form equal executables, which hexir-deduplicate-executables merges.
//
// Inlined: a `func.call` to a function with a body of one block that touches tensors (an op
// with a tensor operand or result, including calls passing tensors), that is not on a call
// cycle and carries no `hexir.*` attribute (placement and specialization annotations live on
// functions and their arguments; such callees stay calls). Host-only callees (scalars) stay
// calls: a call costs nothing on the device there. Callees are inlined to a fixed point, so
// nested calls flatten; a private callee left without uses is erased.
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "dialects/hexir/IR/HexirAttributes.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_INLINEDEVICECALLS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

bool touchesTensors(func::FuncOp func) {
  WalkResult found = func.getBody().walk([](Operation* op) {
    auto isTensor = [](Type t) { return isa<TensorType>(t); };
    if (llvm::any_of(op->getOperandTypes(), isTensor) || llvm::any_of(op->getResultTypes(), isTensor))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

bool hasHexirAttribute(func::FuncOp func) {
  auto isHexir = [](NamedAttribute a) { return a.getName().getValue().starts_with("hexir."); };
  if (llvm::any_of(func->getDiscardableAttrs(), isHexir)) return true;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (DictionaryAttr attrs = func.getArgAttrDict(i); attrs && llvm::any_of(attrs.getValue(), isHexir))
      return true;
  return false;
}

// Functions that can reach themselves through calls (recursion, direct or mutual).
llvm::SmallPtrSet<Operation*, 4> functionsOnCallCycles(ModuleOp module, SymbolTable& symbols) {
  llvm::DenseMap<Operation*, SmallVector<Operation*>> callees;
  module.walk([&](func::CallOp call) {
    if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
      callees[call->getParentOfType<func::FuncOp>()].push_back(callee);
  });
  llvm::SmallPtrSet<Operation*, 4> cyclic;
  for (auto& [start, _] : callees) {
    SmallVector<Operation*> work(callees[start].begin(), callees[start].end());
    llvm::SmallPtrSet<Operation*, 16> seen;
    while (!work.empty()) {
      Operation* f = work.pop_back_val();
      if (f == start) {
        cyclic.insert(start);
        break;
      }
      if (!seen.insert(f).second) continue;
      auto it = callees.find(f);
      if (it != callees.end()) work.append(it->second.begin(), it->second.end());
    }
  }
  return cyclic;
}

// A dispatch group (`hexir.dispatch_group = "KIND.INSTANCE"`, FormDispatchRegions) names one
// instance: each inlined copy of a callee's group becomes an instance of its own
// ("KIND.INSTANCE_c<site>"), so that two call sites never form one region (kDispatchGroupAttr).

// call(args) -> the callee's body with its arguments replaced by `args`; the call's results
// are the values its `return` names. Cloned ops get the call site as their location's caller.
void inlineCall(func::CallOp call, func::FuncOp callee, unsigned site) {
  Block& body = callee.getBody().front();
  IRMapping mapping;
  mapping.map(body.getArguments(), call.getOperands());
  OpBuilder b(call);
  for (Operation& op : body.without_terminator()) {
    Operation* clone = b.clone(op, mapping);
    clone->walk([&](Operation* nested) {
      nested->setLoc(CallSiteLoc::get(nested->getLoc(), call.getLoc()));
      if (auto group = nested->getAttrOfType<StringAttr>(kDispatchGroupAttr))
        nested->setAttr(kDispatchGroupAttr,
                        b.getStringAttr(group.getValue() + "_c" + std::to_string(site)));
    });
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [result, value] : llvm::zip_equal(call.getResults(), ret.getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(value));
  call.erase();
}

class InlineDeviceCalls : public impl::InlineDeviceCallsBase<InlineDeviceCalls> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::SmallPtrSet<Operation*, 4> cyclic = functionsOnCallCycles(module, symbols);
    auto inlinable = [&](func::FuncOp callee) {
      return callee && !callee.isExternal() && callee.getBody().hasOneBlock() &&
             !cyclic.contains(callee) && !hasHexirAttribute(callee) &&
             isa<func::ReturnOp>(callee.getBody().front().getTerminator()) && touchesTensors(callee);
    };
    llvm::SetVector<Operation*> inlined;
    unsigned sites = 0;  // inlined call sites so far (dispatch group instance suffixes)
    // Without cycles every round removes one level of nesting, so this terminates.
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<func::CallOp> calls;
      module.walk([&](func::CallOp call) { calls.push_back(call); });
      for (func::CallOp call : calls) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!inlinable(callee)) continue;
        inlineCall(call, callee, sites++);
        inlined.insert(callee);
        changed = true;
      }
    }
    for (Operation* op : inlined) {
      auto callee = cast<func::FuncOp>(op);
      if (callee.isPrivate() && SymbolTable::symbolKnownUseEmpty(callee, module)) symbols.erase(callee);
    }
  }
};

}  // namespace
}  // namespace hexir
