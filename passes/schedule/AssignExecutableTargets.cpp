// hexir-assign-executable-targets: after placement, each executable is compiled only for the
// device kinds whose devices run it. An executable run on one kind gets `hexir.target` =
// that kind; one run on several kinds is cloned once per further kind (`@k` for the first
// kind in device order, `@k_cuda` for the next) and each dispatch names its kind's copy. The
// codegen passes then compile an executable only for its `hexir.target`
// (ExecutableOp::isCompiledFor). An executable no dispatch names is kept for device 0's kind.
//
//   devices = ["cpu", "cuda"]               hexir.executable @k {hexir.target = "cpu"}
//   hexir.dispatch @k(..) {hexir.device = 0}   ==>   hexir.executable @k_cuda {hexir.target = "cuda"}
//   hexir.dispatch @k(..) {hexir.device = 1}         hexir.dispatch @k(..) / @k_cuda(..)
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/Passes.h"
#include "passes/schedule/Affinity.h"

namespace hexir {
#define GEN_PASS_DEF_ASSIGNEXECUTABLETARGETS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

class AssignExecutableTargets : public impl::AssignExecutableTargetsBase<AssignExecutableTargets> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StringRef> kinds = schedule::DeviceKinds(module);
    if (kinds.empty()) {
      module.emitError("hexir-assign-executable-targets: the module has no hexir.devices list");
      return signalPassFailure();
    }
    // Dispatches of each executable, grouped by the kind of their device (first kind seen in
    // device order keeps the original symbol).
    llvm::MapVector<StringRef, llvm::MapVector<StringRef, SmallVector<DispatchOp>>> uses;
    bool failedDispatch = false;
    module.walk([&](DispatchOp d) {
      std::optional<int64_t> device = schedule::ExplicitDevice(d);
      if (!device || *device < 0 || *device >= static_cast<int64_t>(kinds.size())) {
        d.emitError("hexir-assign-executable-targets: dispatch has no valid hexir.device (run "
                    "hexir-place-devices first)");
        failedDispatch = true;
        return;
      }
      uses[d.getExecutable()][kinds[*device]].push_back(d);
    });
    if (failedDispatch) return signalPassFailure();
    SymbolTable symbols(module);
    for (auto exe : llvm::to_vector(module.getOps<ExecutableOp>())) {
      auto it = uses.find(exe.getSymName());
      if (it == uses.end()) {
        exe->setAttr(kTargetAttr, StringAttr::get(&getContext(), kinds[0]));
        continue;
      }
      bool first = true;
      for (StringRef kind : kinds) {
        auto byKind = it->second.find(kind);
        if (byKind == it->second.end() || byKind->second.empty()) continue;
        ExecutableOp target = exe;
        if (!first) {
          OpBuilder b(exe);
          b.setInsertionPointAfter(exe);
          target = cast<ExecutableOp>(b.clone(*exe));
          target.setSymName((exe.getSymName() + "_" + kind).str());
          symbols.insert(target);  // renames on collision
          if (func::FuncOp kernel = findKernel(target, exe.getSymName())) kernel.setSymName(target.getSymName());
          for (DispatchOp d : byKind->second)
            d.setExecutableAttr(FlatSymbolRefAttr::get(target.getSymNameAttr()));
        }
        target->setAttr(kTargetAttr, StringAttr::get(&getContext(), kind));
        byKind->second.clear();  // two devices of one kind share the copy
        first = false;
      }
    }
  }

 private:
  // The kernel inside an executable is named like the executable.
  static func::FuncOp findKernel(ExecutableOp exe, StringRef name) {
    ModuleOp inner = exe.getInnerModule();
    return inner ? inner.lookupSymbol<func::FuncOp>(name) : func::FuncOp();
  }
};

}  // namespace
}  // namespace hexir
