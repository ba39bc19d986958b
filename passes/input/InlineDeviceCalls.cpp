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
//
// hexir-inline-unrecordable-calls (hexir-compile's default) inlines only the callees above
// that could not record into their callers (schedule/RecordedCalls.h): a kept call of such a
// callee would end the caller's command buffer and submit its own, so a program would submit
// more per call than inlined. Kept: a private callee in a one-device module whose body is
// linalg ops (at least one), reshapes, slices, pads, empties, dims, checks, global loads and
// scalar arith, returning tensors, with no matmul-shaped contraction whose left operand has
// dynamic rows (dispatch/MatmulRows.h: hexir-specialize-dispatches gives it an M = 1 switch,
// so the callee becomes several blocks after convert-scf-to-cf). The predicate is decided on
// the input, before dispatch formation, so an inlined callee forms exactly what
// hexir-inline-device-calls forms; it is
// conservative: a callee it keeps forms one region later, or hexir-form-execution-regions
// leaves it a call of its own (never an error).
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassRegistry.h"
#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "passes/Passes.h"
#include "passes/dispatch/MatmulRows.h"

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

// True when every call of `callee` will record into its caller's command buffer (the
// conservative input-level form of hexir-form-execution-regions' test, see the header).
bool willRecordIntoCaller(func::FuncOp callee) {
  auto module = callee->getParentOfType<ModuleOp>();
  if (!callee.isPrivate() || (module && module->hasAttr(kDevicesAttr))) return false;
  if (!llvm::all_of(callee.getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); }))
    return false;
  bool deviceWork = false;
  for (Operation& op : callee.getBody().front()) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (HasDynamicMatmulRows(linalgOp)) return false;
      deviceWork = true;
      continue;
    }
    if (isa<func::ReturnOp, CheckOp, GlobalLoadOp, tensor::EmptyOp, tensor::DimOp, tensor::CastOp,
            tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ExtractSliceOp,
            tensor::InsertSliceOp, tensor::PadOp>(op))
      continue;
    bool scalarArith = op.getDialect() && op.getDialect()->getNamespace() == "arith" &&
                       llvm::none_of(op.getResultTypes(), [](Type t) { return isa<ShapedType>(t); });
    if (!scalarArith) return false;  // calls, host reads, collectives, control flow, stores...
  }
  return deviceWork;
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
  InlineDeviceCalls() = default;
  explicit InlineDeviceCalls(bool onlyUnrecordable) : onlyUnrecordable_(onlyUnrecordable) {}

  StringRef getArgument() const override {
    return onlyUnrecordable_ ? "hexir-inline-unrecordable-calls" : "hexir-inline-device-calls";
  }
  StringRef getDescription() const override {
    return onlyUnrecordable_ ? "Inlines the calls to functions with device work that could not "
                               "record into their callers' command buffers"
                             : impl::InlineDeviceCallsBase<InlineDeviceCalls>::getDescription();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::SmallPtrSet<Operation*, 4> cyclic = functionsOnCallCycles(module, symbols);
    auto inlinable = [&](func::FuncOp callee) {
      return callee && !callee.isExternal() && callee.getBody().hasOneBlock() &&
             !cyclic.contains(callee) && !hasHexirAttribute(callee) &&
             isa<func::ReturnOp>(callee.getBody().front().getTerminator()) && touchesTensors(callee) &&
             !(onlyUnrecordable_ && willRecordIntoCaller(callee));
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

 private:
  bool onlyUnrecordable_ = false;
};

}  // namespace

// Declared in compiler/Pipeline.cpp (a new header under passes/ would make Bazel recompile all
// of //passes; a new Passes.td entry likewise).
std::unique_ptr<mlir::Pass> CreateInlineUnrecordableCalls() {
  return std::make_unique<InlineDeviceCalls>(/*onlyUnrecordable=*/true);
}
void RegisterInlineUnrecordableCalls() { mlir::registerPass(&CreateInlineUnrecordableCalls); }

}  // namespace hexir
