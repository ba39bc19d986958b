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
  const unsigned loops = op.getNumLoops();
  if (!op->hasAttr(kBlockMatvecAttr) || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumResults() != (op.hasPureBufferSemantics() ? 0 : 1) || loops < 3 || loops > 4)
    return nullptr;
  const unsigned rowLoops = loops - 2;  // (n) or (m, n)
  SmallVector<IteratorType> iterators(rowLoops, IteratorType::parallel);
  iterators.append({IteratorType::reduction, IteratorType::reduction});
  if (op.getIteratorTypesArray() != iterators) return nullptr;
  MLIRContext* ctx = op.getContext();
  SmallVector<AffineExpr> xExprs, outExprs;
  for (unsigned d = 0; d < rowLoops; ++d) outExprs.push_back(getAffineDimExpr(d, ctx));
  xExprs.append(outExprs.begin(), outExprs.end() - 1);  // m, in a prompt
  xExprs.append({getAffineDimExpr(rowLoops, ctx), getAffineDimExpr(rowLoops + 1, ctx)});
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(loops, 0, xExprs, ctx) || maps[1] != AffineMap::get(loops, 0, outExprs, ctx))
    return nullptr;
  auto x = dyn_cast<ShapedType>(op.getDpsInputOperand(0)->get().getType());
  if (!x || x.getRank() != int64_t(rowLoops) + 1) return nullptr;
  const int64_t blocks = x.getDimSize(rowLoops - 1), values = x.getDimSize(rowLoops);
  if (ShapedType::isDynamic(blocks) || ShapedType::isDynamic(values) || values % kBlockMatvecUnit != 0)
    return nullptr;
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
    const unsigned rowLoops = op.getNumLoops() - 2;  // (n) or (m, n)
    const int64_t unitsPerBlock = xType.getDimSize(rowLoops) / kBlockMatvecUnit;
    const int64_t units = xType.getDimSize(rowLoops - 1) * unitsPerBlock;
    MLIRContext* ctx = op.getContext();
    Location loc = op.getLoc();
    OpBuilder b(op);
    Value extent = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{units}, b.getI8Type());
    SmallVector<AffineExpr> rowExprs;
    for (unsigned d = 0; d < rowLoops; ++d) rowExprs.push_back(getAffineDimExpr(d, ctx));
    AffineMap byUnit = AffineMap::get(rowLoops + 1, 0, {getAffineDimExpr(rowLoops, ctx)}, ctx);
    AffineMap byRow = AffineMap::get(rowLoops + 1, 0, rowExprs, ctx);
    SmallVector<utils::IteratorType> iterators(rowLoops, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    auto regrouped = linalg::GenericOp::create(
        b, loc, op.getResultTypes(), ValueRange{extent}, op.getDpsInits(),
        ArrayRef<AffineMap>{byUnit, byRow}, iterators,
        [&](OpBuilder& nb, Location l, ValueRange args) {
          auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v).getResult(); };
          SmallVector<Value> rows;  // (n) or (m, n)
          for (unsigned d = 0; d < rowLoops; ++d) rows.push_back(linalg::IndexOp::create(nb, l, d));
          Value unit = linalg::IndexOp::create(nb, l, rowLoops);
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
            SmallVector<Value> at(rows.begin(), rows.end() - 1);  // m, in a prompt
            at.append({block, j});
            m.map(old->getArgument(0), tensor::ExtractOp::create(nb, l, x, at));
            SmallVector<Value> byDim(rows);
            byDim.append({block, j});
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
