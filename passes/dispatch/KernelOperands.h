// How a hexir.dispatch's operands meet its executable's kernel arguments, for the passes
// that rewrite both sides at once (deduplication modulo constants, uniform-operand folding,
// dispatch specialization), and the text the two deduplication passes compare.
//
// Kernel signature (hexir-outline-dispatch-regions): (tensor inputs..., one output per
// result..., scalar inputs...). Dispatch operands: (tensor inputs..., scalar inputs...). So
// dispatch operand i is kernel argument i for a tensor and i + #results for a scalar.
// Header-only, no state; valid until codegen appends the workgroup-id argument.
#pragma once

#include "dialects/hexir/IR/HexirOps.h"
#include <string>

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir {

// The kernel func.func of `exe` (named like it), or null.
inline mlir::func::FuncOp KernelOf(ExecutableOp exe) {
  mlir::ModuleOp inner = exe.getInnerModule();
  return inner ? inner.lookupSymbol<mlir::func::FuncOp>(exe.getSymName()) : nullptr;
}

// The text of `copy`, a clone of an executable, with the executable and its kernel renamed to
// one fixed name (generic form, local SSA names); erases the clone. Two executables print
// alike exactly when their kernels are equal up to their names.
inline std::string KeyOfClone(ExecutableOp copy) {
  if (mlir::func::FuncOp kernel = KernelOf(copy)) kernel.setSymName("k");
  copy.setSymName("k");
  std::string key;
  llvm::raw_string_ostream os(key);
  copy->print(os, mlir::OpPrintingFlags().printGenericOpForm().useLocalScope());
  os.flush();
  copy->erase();
  return key;
}

// The kernel argument index that receives dispatch operand `operand` of `d`.
inline unsigned KernelArgumentIndex(DispatchOp d, unsigned operand) {
  bool tensor = mlir::isa<mlir::RankedTensorType>(d.getArgs()[operand].getType());
  return tensor ? operand : operand + d->getNumResults();
}

// The kernel argument index of the output for result `result` of `d` (after its tensor inputs).
inline unsigned KernelOutputIndex(DispatchOp d, unsigned result) {
  return llvm::count_if(d.getArgs(), [](mlir::Value v) { return mlir::isa<mlir::RankedTensorType>(v.getType()); }) +
         result;
}

// Every dispatch of `module`, grouped by executable name, in walk order.
inline llvm::MapVector<mlir::StringAttr, llvm::SmallVector<DispatchOp>> DispatchesByExecutable(
    mlir::ModuleOp module) {
  llvm::MapVector<mlir::StringAttr, llvm::SmallVector<DispatchOp>> sites;
  module.walk([&](DispatchOp d) { sites[d.getExecutableAttr().getAttr()].push_back(d); });
  return sites;
}

}  // namespace hexir
