// Block-format matvecs regrouped into one reduction over 32-value units (CUDABlockMatvec.h
// says why).
#include "passes/codegen/CUDABlockMatvec.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace hexir::cuda {
using namespace mlir;

arith::AddFOp BlockMatvecSum(linalg::GenericOp op) {
  using utils::IteratorType;
  if (!op->hasAttr(kBlockMatvecAttr) || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumResults() != (op.hasPureBufferSemantics() ? 0 : 1) ||
      op.getIteratorTypesArray() != SmallVector<IteratorType>{IteratorType::parallel,
                                                              IteratorType::reduction,
                                                              IteratorType::reduction})
    return nullptr;
  MLIRContext* ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(0, ctx), b = getAffineDimExpr(1, ctx), j = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(3, 0, {b, j}, ctx) || maps[1] != AffineMap::get(3, 0, {n}, ctx))
    return nullptr;
  auto x = dyn_cast<ShapedType>(op.getDpsInputOperand(0)->get().getType());
  if (!x || !x.hasStaticShape() || x.getDimSize(1) % kBlockMatvecUnit != 0) return nullptr;
  Block* body = op.getBlock();
  BlockArgument acc = body->getArgument(1);
  auto sum = body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!sum || sum->getBlock() != body || !acc.hasOneUse() || !sum->hasOneUse() ||
      (sum.getLhs() == acc) == (sum.getRhs() == acc))
    return nullptr;
  return sum;
}

Value SumTree(OpBuilder& b, Location loc, SmallVector<Value> terms) {
  while (terms.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < terms.size(); i += 2)
      next.push_back(arith::AddFOp::create(b, loc, terms[i], terms[i + 1]));
    if (terms.size() % 2) next.push_back(terms.back());
    terms = std::move(next);
  }
  return terms.front();
}

int RegroupBlockMatvecs(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> ops;
  kernel.walk([&](linalg::GenericOp op) {
    if (BlockMatvecSum(op)) ops.push_back(op);
  });
  for (linalg::GenericOp op : ops) {
    arith::AddFOp sum = BlockMatvecSum(op);
    Block* old = op.getBlock();
    BlockArgument acc = old->getArgument(1);
    Value term = sum.getLhs() == acc ? sum.getRhs() : sum.getLhs();
    Value x = op.getDpsInputOperand(0)->get();
    auto xType = cast<RankedTensorType>(x.getType());
    const int64_t unitsPerBlock = xType.getDimSize(1) / kBlockMatvecUnit;
    const int64_t units = xType.getDimSize(0) * unitsPerBlock;
    MLIRContext* ctx = op.getContext();
    Location loc = op.getLoc();
    OpBuilder b(op);
    Value extent = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{units}, b.getI8Type());
    AffineMap byUnit = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
    AffineMap byRow = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    auto regrouped = linalg::GenericOp::create(
        b, loc, op.getResultTypes(), ValueRange{extent}, op.getDpsInits(),
        ArrayRef<AffineMap>{byUnit, byRow}, {utils::IteratorType::parallel, utils::IteratorType::reduction},
        [&](OpBuilder& nb, Location l, ValueRange args) {
          auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v).getResult(); };
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value unit = linalg::IndexOp::create(nb, l, 1);
          Value block = unit, first = index(0);
          if (unitsPerBlock > 1) {
            block = arith::DivUIOp::create(nb, l, unit, index(unitsPerBlock));
            first = arith::MulIOp::create(
                nb, l, arith::RemUIOp::create(nb, l, unit, index(unitsPerBlock)), index(kBlockMatvecUnit));
          }
          SmallVector<Value> terms;
          for (int64_t t = 0; t < kBlockMatvecUnit; ++t) {
            Value j = unitsPerBlock > 1 ? arith::AddIOp::create(nb, l, first, index(t)).getResult() : index(t);
            IRMapping m;
            m.map(old->getArgument(0), tensor::ExtractOp::create(nb, l, x, ValueRange{block, j}));
            Value byDim[] = {row, block, j};
            for (Operation& inner : old->without_terminator()) {
              if (&inner == sum.getOperation()) continue;
              if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
                m.map(idx.getResult(), byDim[idx.getDim()]);
                continue;
              }
              nb.clone(inner, m);
            }
            terms.push_back(m.lookupOrDefault(term));
          }
          Value total = SumTree(nb, l, std::move(terms));
          Value next = sum.getLhs() == acc ? arith::AddFOp::create(nb, l, args[1], total)
                                           : arith::AddFOp::create(nb, l, total, args[1]);
          linalg::YieldOp::create(nb, l, next);
        });
    op.getResult(0).replaceAllUsesWith(regrouped.getResult(0));
    op.erase();
  }
  return static_cast<int>(ops.size());
}

}  // namespace hexir::cuda
