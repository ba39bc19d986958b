#include "passes/schedule/Affinity.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

namespace hexir::schedule {
using namespace mlir;

SmallVector<StringRef> DeviceKinds(ModuleOp module) {
  SmallVector<StringRef> kinds;
  if (auto list = module->getAttrOfType<ArrayAttr>(kDevicesAttr))
    for (Attribute a : list)
      if (auto s = dyn_cast<StringAttr>(a)) kinds.push_back(s.getValue());
  return kinds;
}

std::optional<int64_t> ExplicitDevice(Operation* op) {
  if (auto attr = op->getAttrOfType<IntegerAttr>(kDeviceAttr)) return attr.getInt();
  return std::nullopt;
}

int64_t FunctionDevice(func::FuncOp func) { return ExplicitDevice(func).value_or(0); }

int64_t ArgumentDevice(func::FuncOp func, unsigned index) {
  if (auto attr = func.getArgAttrOfType<IntegerAttr>(index, kDeviceAttr)) return attr.getInt();
  return FunctionDevice(func);
}

int64_t ResultDevice(func::FuncOp func) { return func.isPublic() ? 0 : FunctionDevice(func); }

bool SharesMemory(ArrayRef<StringRef> kinds, int64_t a, int64_t b) {
  if (a == b) return true;
  auto kind = [&](int64_t d) { return d >= 0 && d < static_cast<int64_t>(kinds.size()) ? kinds[d] : StringRef(); };
  return kind(a) == "cpu" && kind(b) == "cpu";
}

std::optional<int64_t> HomeDevice(Value v) {
  if (!isa<RankedTensorType>(v.getType())) return std::nullopt;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation* parent = arg.getOwner()->getParentOp();
    if (auto func = dyn_cast<func::FuncOp>(parent)) {
      if (arg.getOwner() != &func.getBody().front()) return std::nullopt;  // cf blocks: unknown
      return ArgumentDevice(func, arg.getArgNumber());
    }
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      if (arg.getArgNumber() == 0) return std::nullopt;
      return HomeDevice(loop.getInitArgs()[arg.getArgNumber() - 1]);
    }
    if (auto loop = dyn_cast<scf::WhileOp>(parent)) {
      if (arg.getOwner() == loop.getBeforeBody()) return HomeDevice(loop.getInits()[arg.getArgNumber()]);
      return std::nullopt;
    }
    return std::nullopt;
  }
  Operation* def = v.getDefiningOp();
  unsigned index = cast<OpResult>(v).getResultNumber();
  if (auto transfer = dyn_cast<TransferOp>(def)) return transfer.getTo();
  if (isa<DispatchOp>(def)) return ExplicitDevice(def);
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(def))
    return HomeDevice(def->getOperand(0));
  if (auto load = dyn_cast<GlobalLoadOp>(def)) {
    auto global = SymbolTable::lookupNearestSymbolFrom<GlobalOp>(def, load.getGlobalAttr());
    return global ? ExplicitDevice(global) : std::nullopt;
  }
  if (auto call = dyn_cast<func::CallOp>(def)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(def, call.getCalleeAttr());
    return callee ? ResultDevice(callee) : 0;
  }
  if (auto loop = dyn_cast<scf::ForOp>(def)) return HomeDevice(loop.getInitArgs()[index]);
  if (auto loop = dyn_cast<scf::WhileOp>(def)) {
    // After-region results follow the condition's forwarded values: their inits' when the
    // types line up, else the condition operand's home.
    Value forwarded = loop.getConditionOp().getArgs()[index];
    return HomeDevice(forwarded);
  }
  if (auto branch = dyn_cast<scf::IfOp>(def)) return HomeDevice(branch.thenYield().getOperand(index));
  if (auto execute = dyn_cast<ExecuteOp>(def)) {
    if (index < execute.getResults().size()) return execute.getDevice();
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace hexir::schedule
