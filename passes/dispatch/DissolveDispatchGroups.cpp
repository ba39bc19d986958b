// Drops `hexir.dispatch_group` marks of the kinds a target does not lower as one kernel
// (Passes.td, DissolveDispatchGroups).
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_DISSOLVEDISPATCHGROUPS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

class DissolveDispatchGroups : public impl::DissolveDispatchGroupsBase<DissolveDispatchGroups> {
 public:
  using DissolveDispatchGroupsBase::DissolveDispatchGroupsBase;

  void runOnOperation() override {
    getOperation().walk([&](linalg::GenericOp g) {
      auto name = g->getAttrOfType<StringAttr>(kDispatchGroupAttr);
      if (name && llvm::is_contained(kinds, std::string(DispatchGroupKind(name.getValue()))))
        g->removeAttr(kDispatchGroupAttr);
    });
  }
};
}  // namespace
}  // namespace hexir
