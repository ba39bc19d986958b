#include "passes/dispatch/DimKeys.h"

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"
#include "mlir/IR/Matchers.h"
#include "passes/dispatch/SpecializationSwitch.h"

namespace hexir {
namespace {
using namespace mlir;

// A chain of dims runs through every layer of a model (a layer's output rows are its input's,
// through 3-4 dispatches, reshapes and switches a layer): 32 stopped in TinyLlama's 10th layer
// and split its prefill's merged switch in three. Each step is one small stack frame.
constexpr int kMaxDepth = 4096;

DimKey keyOfDim(Value tensor, int64_t dim, int depth);

DimKey keyOf(Value v, int depth) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c))) return {c.getSExtValue(), nullptr, -1};
  if (auto d = v.getDefiningOp<tensor::DimOp>(); d && depth < kMaxDepth)
    if (std::optional<int64_t> i = d.getConstantIndex()) return keyOfDim(d.getSource(), *i, depth + 1);
  // An index a merged switch yields (a dim its branches computed): the generic branch's.
  if (auto s = v.getDefiningOp<scf::IfOp>(); s && depth < kMaxDepth && s->hasAttr(kSpecializationSwitchAttr)) {
    Value generic = s.elseYield().getOperand(cast<OpResult>(v).getResultNumber());
    DimKey key = keyOf(generic, depth + 1);
    if (key.known() && !(key.tensor == generic && key.dim == -1)) return key;
  }
  return {std::nullopt, v, -1};
}

// The `dims` operand giving dynamic dim `dim` of result `r` of `d`, or null.
Value resultDimOperand(DispatchOp d, Value r, int64_t dim) {
  unsigned next = 0;
  for (Value result : d.getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (!type.isDynamicDim(i)) continue;
      if (result == r && i == dim)
        return next < d.getResultDims().size() ? d.getResultDims()[next] : Value();
      ++next;
    }
  }
  return nullptr;
}

DimKey keyOfDim(Value tensor, int64_t dim, int depth) {
  auto type = dyn_cast<RankedTensorType>(tensor.getType());
  if (type && dim >= 0 && dim < type.getRank() && !type.isDynamicDim(dim))
    return {type.getDimSize(dim), nullptr, -1};
  if (depth < kMaxDepth) {
    if (auto c = tensor.getDefiningOp<tensor::CastOp>()) return keyOfDim(c.getSource(), dim, depth + 1);
    // A collapsed dim that is one source dim alone; an expanded dim given by an operand.
    if (auto c = tensor.getDefiningOp<tensor::CollapseShapeOp>()) {
      auto groups = c.getReassociationIndices();
      if (dim < int64_t(groups.size()) && groups[dim].size() == 1)
        return keyOfDim(c.getSrc(), groups[dim].front(), depth + 1);
    }
    if (auto e = tensor.getDefiningOp<tensor::ExpandShapeOp>()) {
      SmallVector<OpFoldResult> shape = e.getMixedOutputShape();
      if (dim < int64_t(shape.size()))
        if (auto v = dyn_cast<Value>(shape[dim])) return keyOf(v, depth + 1);
    }
    if (auto d = tensor.getDefiningOp<DispatchOp>())
      if (Value operand = resultDimOperand(d, tensor, dim)) return keyOf(operand, depth + 1);
    // An scf.for iteration argument: its initial value's key when every iteration yields a
    // tensor whose dim has that key too, or the argument's own dim (by induction, the dim
    // never changes). The argument is assumed unchanged while its yield is being keyed.
    if (auto arg = dyn_cast<BlockArgument>(tensor)) {
      auto loop = dyn_cast_or_null<scf::ForOp>(arg.getOwner()->getParentOp());
      if (loop && arg.getOwner() == loop.getBody() && arg.getArgNumber() >= loop.getNumInductionVars()) {
        static thread_local llvm::DenseSet<std::pair<Value, int64_t>> inProgress;
        if (!inProgress.insert({tensor, dim}).second) return {std::nullopt, tensor, dim};
        DimKey initial = keyOfDim(loop.getTiedLoopInit(arg)->get(), dim, depth + 1);
        DimKey yielded = initial.known() ? keyOfDim(loop.getTiedLoopYieldedValue(arg)->get(), dim, depth + 1)
                                         : DimKey{};
        inProgress.erase({tensor, dim});
        if (initial.known() && (yielded == initial || (yielded.tensor == tensor && yielded.dim == dim)))
          return initial;
      }
    }
    if (auto s = tensor.getDefiningOp<scf::IfOp>(); s && s->hasAttr(kSpecializationSwitchAttr)) {
      unsigned r = cast<OpResult>(tensor).getResultNumber();
      DimKey generic = keyOfDim(s.elseYield().getOperand(r), dim, depth + 1);
      if (generic.known() && !(generic.tensor == s.elseYield().getOperand(r))) return generic;
      DimKey special = keyOfDim(s.thenYield().getOperand(r), dim, depth + 1);
      if (special.constant) return special;
    }
  }
  return {std::nullopt, tensor, dim};
}

}  // namespace

DimKey KeyOfIndex(Value v) { return keyOf(v, 0); }
DimKey KeyOfDim(Value tensor, int64_t dim) { return keyOfDim(tensor, dim, 0); }

}  // namespace hexir
