// A scalar dispatch operand that is the same constant at every dispatch site of an
// executable becomes a constant inside the kernel; the operand and the kernel argument go.
//
//   exe @a(%x, %o, %s: f32) { x * %s }        exe @a(%x, %o) { %s = 2.0; x * %s }
//   dispatch @a(%x, %c2) ; dispatch @a(%y, %c2)   =>   dispatch @a(%x) ; dispatch @a(%y)
//
// Runs after hexir-deduplicate-modulo-constants, so the constants that pass hoisted to merge
// kernels and that turned out equal at every site go back in (the two never undo each other:
// a folded constant is uniform, a hoisted one differs somewhere), and before codegen, so the
// kernel is compiled with the value (no parameter word, constant folding in the body).
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/BitVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "passes/Passes.h"
#include "passes/dispatch/KernelOperands.h"

namespace hexir {
#define GEN_PASS_DEF_FOLDUNIFORMOPERANDS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// The constant operand `operand` has at every site, or null when it differs or is not one.
TypedAttr uniformConstant(ArrayRef<DispatchOp> sites, unsigned operand) {
  TypedAttr common;
  for (DispatchOp d : sites) {
    Value v = d.getArgs()[operand];
    Attribute value;
    if (isa<ShapedType>(v.getType()) || !matchPattern(v, m_Constant(&value))) return nullptr;
    auto typed = dyn_cast<TypedAttr>(value);
    if (!typed || (common && typed != common)) return nullptr;
    common = typed;
  }
  return common;
}

class FoldUniformOperands : public impl::FoldUniformOperandsBase<FoldUniformOperands> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto sites = DispatchesByExecutable(module);
    for (auto exe : module.getOps<ExecutableOp>()) {
      func::FuncOp kernel = KernelOf(exe);
      auto found = sites.find(exe.getSymNameAttr());
      if (!kernel || found == sites.end()) continue;
      ArrayRef<DispatchOp> uses = found->second;
      DispatchOp first = uses.front();
      llvm::BitVector eraseArgs(kernel.getNumArguments());
      SmallVector<unsigned> eraseOperands;
      OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
      for (unsigned i = 0, e = first.getArgs().size(); i < e; ++i) {
        TypedAttr value = uniformConstant(uses, i);
        if (!value) continue;
        unsigned arg = KernelArgumentIndex(first, i);
        Value c = arith::ConstantOp::create(b, kernel.getLoc(), value);
        kernel.getArgument(arg).replaceAllUsesWith(c);
        eraseArgs.set(arg);
        eraseOperands.push_back(i);
      }
      if (eraseOperands.empty()) continue;
      (void)kernel.eraseArguments(eraseArgs);
      for (DispatchOp d : uses) {
        for (unsigned i : llvm::reverse(eraseOperands)) {
          Operation* def = d.getArgs()[i].getDefiningOp();
          d.getArgsMutable().erase(i);
          if (def && def->use_empty()) def->erase();
        }
      }
    }
  }
};

}  // namespace
}  // namespace hexir
