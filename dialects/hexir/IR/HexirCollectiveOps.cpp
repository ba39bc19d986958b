// Verifiers of the collective ops (HexirCollectiveOps.td) and their common view.
#include "dialects/hexir/IR/HexirOps.h"

#include "llvm/ADT/StringSwitch.h"

namespace hexir {
namespace {
using namespace mlir;

LogicalResult verifyReduction(Operation* op, StringRef reduction) {
  if (reduction == "sum" || reduction == "max" || reduction == "min" || reduction == "prod")
    return success();
  return op->emitOpError("reduction must be \"sum\", \"max\", \"min\" or \"prod\", got \"")
         << reduction << "\"";
}

// `whole` is `part` with dimension 0 multiplied by a whole number of ranks (both dim 0 static,
// the other dims equal). `dynamicPart`: the part's dim 0 may be dynamic (the rank count read
// at run time), then only the other dims are checked.
LogicalResult verifyRankMultiple(Operation* op, RankedTensorType part, RankedTensorType whole,
                                 StringRef partName, StringRef wholeName,
                                 bool dynamicPart = false) {
  if (part.getElementType() != whole.getElementType())
    return op->emitOpError("element types differ: ") << part.getElementType() << " and "
                                                      << whole.getElementType();
  if (part.getRank() == 0 || part.getRank() != whole.getRank())
    return op->emitOpError("the ") << partName << " and the " << wholeName
                                   << " must have the same rank >= 1";
  for (int64_t d = 1; d < part.getRank(); ++d)
    if (part.getDimSize(d) != whole.getDimSize(d))
      return op->emitOpError("dimension ") << d << " differs: " << part.getDimSize(d) << " in the "
                                           << partName << ", " << whole.getDimSize(d) << " in the "
                                           << wholeName;
  if (dynamicPart && part.isDynamicDim(0)) return success();
  if (part.isDynamicDim(0) || whole.isDynamicDim(0))
    return op->emitOpError("dimension 0 of the ")
           << partName << " and the " << wholeName << " must be static"
           << (dynamicPart ? " (or the " + partName.str() + "'s dynamic: any rank count)" : "");
  int64_t p = part.getDimSize(0), w = whole.getDimSize(0);
  if (p == 0 || w % p != 0)
    return op->emitOpError("dimension 0 of the ") << wholeName << " (" << w
                                                  << ") is not a multiple of the " << partName
                                                  << "'s (" << p << ")";
  return success();
}

}  // namespace

LogicalResult AllReduceOp::verify() { return verifyReduction(*this, getReduction()); }

LogicalResult AllGatherOp::verify() {
  return verifyRankMultiple(*this, getSource().getType(), getResult().getType(), "source", "result");
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyReduction(*this, getReduction()))) return failure();
  return verifyRankMultiple(*this, getResult().getType(), getSource().getType(), "result", "source",
                            /*dynamicPart=*/true);
}

LogicalResult BroadcastOp::verify() {
  int64_t root = static_cast<int64_t>(getRoot());
  if (root < 0) return emitOpError("root rank must be >= 0, got ") << root;
  return success();
}

LogicalResult SendOp::verify() { return success(); }
LogicalResult RecvOp::verify() { return success(); }

std::optional<CollectiveView> GetCollective(Operation* op) {
  CollectiveView c;
  if (auto o = dyn_cast<AllReduceOp>(op)) {
    c = {"all_reduce", o.getReduction(), o.getSource(), o.getResult(), Value(), 0, 0};
  } else if (auto o = dyn_cast<AllGatherOp>(op)) {
    c = {"all_gather", "sum", o.getSource(), o.getResult(), Value(), 0,
         o.getResult().getType().getDimSize(0) / o.getSource().getType().getDimSize(0)};
  } else if (auto o = dyn_cast<ReduceScatterOp>(op)) {
    RankedTensorType part = o.getResult().getType();
    c = {"reduce_scatter", o.getReduction(), o.getSource(), o.getResult(), Value(), 0,
         part.isDynamicDim(0) ? 0 : o.getSource().getType().getDimSize(0) / part.getDimSize(0)};
  } else if (auto o = dyn_cast<BroadcastOp>(op)) {
    c = {"broadcast", "sum", o.getSource(), o.getResult(), Value(),
         static_cast<int64_t>(o.getRoot()), 0};
  } else if (auto o = dyn_cast<SendOp>(op)) {
    c = {"send", "sum", o.getSource(), Value(), o.getPeer(), 0, 0};
  } else if (auto o = dyn_cast<RecvOp>(op)) {
    c = {"recv", "sum", Value(), o.getResult(), o.getPeer(), 0, 0};
  } else {
    return std::nullopt;
  }
  return c;
}

}  // namespace hexir
