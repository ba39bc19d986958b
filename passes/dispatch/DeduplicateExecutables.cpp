// Merges executables whose kernels are identical up to the kernel's name, so each
// distinct kernel is compiled and loaded once.
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/StringMap.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/Passes.h"
#include "passes/dispatch/KernelOperands.h"

namespace hexir {
#define GEN_PASS_DEF_DEDUPLICATEEXECUTABLES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// The executable's body printed with the kernel renamed to a fixed name.
std::string structuralKey(ExecutableOp exe) {
  OpBuilder b(exe);
  return KeyOfClone(cast<ExecutableOp>(b.clone(*exe)));
}

class DeduplicateExecutables
    : public impl::DeduplicateExecutablesBase<DeduplicateExecutables> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<StringAttr> canonical;     // key -> first executable's name
    llvm::DenseMap<StringAttr, StringAttr> replace;
    for (auto exe : llvm::to_vector(module.getOps<ExecutableOp>())) {
      auto [it, inserted] = canonical.try_emplace(structuralKey(exe), exe.getSymNameAttr());
      if (inserted) continue;
      replace[exe.getSymNameAttr()] = it->second;
      exe->erase();
    }
    if (replace.empty()) return;
    module.walk([&](DispatchOp d) {
      auto it = replace.find(d.getExecutableAttr().getAttr());
      if (it != replace.end()) d.setExecutableAttr(FlatSymbolRefAttr::get(it->second));
    });
  }
};

}  // namespace
}  // namespace hexir
