#include "passes/loops/DeviceLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace hexir {
using namespace mlir;

namespace {

// The block argument `v` reads as the one element of a one-element i32 tensor, or null.
BlockArgument flagRead(Value v, Block& before) {
  auto extract = v.getDefiningOp<tensor::ExtractOp>();
  if (!extract) return nullptr;
  auto arg = dyn_cast<BlockArgument>(extract.getTensor());
  if (!arg || arg.getOwner() != &before) return nullptr;
  auto type = cast<RankedTensorType>(arg.getType());
  if (!type.hasStaticShape() || type.getNumElements() != 1 || !type.getElementType().isInteger(32))
    return nullptr;
  return arg;
}

}  // namespace

std::optional<unsigned> DeviceLoopCondition(scf::WhileOp loop) {
  Block& before = loop.getBefore().front();
  scf::ConditionOp condition = loop.getConditionOp();
  if (condition.getArgs().size() != before.getNumArguments()) return std::nullopt;
  for (auto [forwarded, arg] : llvm::zip(condition.getArgs(), before.getArguments()))
    if (forwarded != arg) return std::nullopt;
  for (Type t : loop.getInits().getTypes())
    if (!isa<RankedTensorType>(t)) return std::nullopt;
  if (loop.getInits().getTypes() != loop.getResultTypes()) return std::nullopt;
  for (Operation& op : before.without_terminator())
    if (!isa<arith::ConstantOp, tensor::ExtractOp, arith::CmpIOp>(op)) return std::nullopt;
  auto compare = condition.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!compare || compare.getPredicate() != arith::CmpIPredicate::ne) return std::nullopt;
  BlockArgument flag;
  if (matchPattern(compare.getRhs(), m_Zero()))
    flag = flagRead(compare.getLhs(), before);
  else if (matchPattern(compare.getLhs(), m_Zero()))
    flag = flagRead(compare.getRhs(), before);
  if (!flag) return std::nullopt;
  return flag.getArgNumber();
}

}  // namespace hexir
