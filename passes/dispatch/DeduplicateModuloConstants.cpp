// Merges executables that differ only in scalar constants of their kernels' payloads: the
// constants become trailing scalar kernel arguments and each dispatch passes its own values
// (through the parameter buffer, like any scalar operand).
//
//   exe @a { x * 2.0 + 1.0 }        exe @a(%c0, %c1) { x * %c0 + %c1 }
//   exe @b { x * 3.0 + 1.0 }   =>   dispatch @a(%x, 2.0, 1.0)
//   dispatch @a(%x); @b(%y)         dispatch @a(%y, 3.0, 1.0)
//
// Runs before hexir-deduplicate-executables (which merges exact copies) and before
// hexir-fold-uniform-operands, which puts back into the kernel every hoisted constant that is
// the same at all sites (the 1.0 above).
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/StringMap.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "passes/Passes.h"
#include "passes/dispatch/KernelOperands.h"

namespace hexir {
#define GEN_PASS_DEF_DEDUPLICATEMODULOCONSTANTS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Scalar types a parameter-buffer word carries (f32 bits, integers up to 64 bits).
bool isParameterWordType(Type t) {
  if (t.isF32()) return true;
  auto i = dyn_cast<IntegerType>(t);
  return i && i.getWidth() > 1 && i.getWidth() <= 64;
}

// Constants used only as values in linalg payloads (never as sizes, indices or fill
// values, which may decide tiling or addressing), in walk order.
SmallVector<arith::ConstantOp> hoistableConstants(func::FuncOp kernel) {
  SmallVector<arith::ConstantOp> found;
  kernel.walk([&](arith::ConstantOp c) {
    if (!isParameterWordType(c.getType()) || c->use_empty()) return;
    for (Operation* user : c->getUsers()) {
      if (isa<linalg::LinalgOp>(user) || !user->getParentOfType<linalg::LinalgOp>()) return;
      if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(user)) return;
    }
    found.push_back(c);
  });
  return found;
}

// Replaces each constant by a new trailing kernel argument; returns their values in order.
SmallVector<TypedAttr> hoistConstants(ExecutableOp exe) {
  func::FuncOp kernel = KernelOf(exe);
  SmallVector<TypedAttr> values;
  for (arith::ConstantOp c : hoistableConstants(kernel)) {
    unsigned index = kernel.getNumArguments();
    (void)kernel.insertArgument(index, c.getType(), DictionaryAttr(), c.getLoc());
    values.push_back(c.getValue());
    c.replaceAllUsesWith(kernel.getArgument(index));
    c.erase();
  }
  return values;
}

struct Candidate {
  ExecutableOp exe;
  SmallVector<TypedAttr> values;  // the constants its kernel had, in argument order
};

// Clones `exe`, hoists its constants and prints it under a fixed name: equal keys mean
// kernels equal up to their constants.
Candidate keyOf(ExecutableOp exe, std::string& key) {
  OpBuilder b(exe);
  auto copy = cast<ExecutableOp>(b.clone(*exe));
  Candidate candidate{exe, hoistConstants(copy)};
  key = KeyOfClone(copy);
  return candidate;
}

class DeduplicateModuloConstants
    : public impl::DeduplicateModuloConstantsBase<DeduplicateModuloConstants> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<unsigned> groupOfKey;
    SmallVector<SmallVector<Candidate>> groups;  // in module order
    for (auto exe : llvm::to_vector(module.getOps<ExecutableOp>())) {
      if (!KernelOf(exe)) continue;
      std::string key;
      Candidate candidate = keyOf(exe, key);
      if (candidate.values.empty()) continue;
      auto [it, inserted] = groupOfKey.try_emplace(key, groups.size());
      if (inserted) groups.emplace_back();
      groups[it->second].push_back(std::move(candidate));
    }
    auto sites = DispatchesByExecutable(module);
    for (auto& members : groups) {
      // Exact copies are left to hexir-deduplicate-executables: a constant becomes an
      // operand only when it lets two different executables become one.
      bool differ = llvm::any_of(members, [&](const Candidate& c) {
        return c.values != members.front().values;
      });
      if (members.size() < 2 || !differ) continue;
      ExecutableOp kept = members.front().exe;
      (void)hoistConstants(kept);
      for (Candidate& member : members) {
        for (DispatchOp d : sites.lookup(member.exe.getSymNameAttr())) {
          OpBuilder b(d);
          SmallVector<Value> constants;
          for (TypedAttr v : member.values)
            constants.push_back(arith::ConstantOp::create(b, d.getLoc(), v));
          d.getArgsMutable().append(constants);
          d.setExecutableAttr(FlatSymbolRefAttr::get(kept.getSymNameAttr()));
        }
        if (member.exe != kept) member.exe->erase();
      }
    }
  }
};

}  // namespace
}  // namespace hexir
