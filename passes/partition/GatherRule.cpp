// A lookup in a table split along a dimension its index comes from data (an embedding split
// by vocabulary rows): each rank looks the ids up in its own rows and yields zero for the
// others, so the result is a partial sum (exactly one rank holds each element), resolved by
// the collective its consumers need, which moves the result, not the table.
//
//   %g = linalg.generic ins(%ids) outs(%e) {
//          %v = tensor.extract %table[%row, %col]  linalg.yield %v }     (%table split 0)
//   ==> base = rank * rows, rows = the local table's extent (rows of rank r: [base, base + rows))
//       local = %row - base;  mine = local <u rows;  outside = %row >=u rows * count
//       %v = tensor.extract %table_local[select(mine or outside, local, 0), %col]
//       linalg.yield select(mine, %v, 0)                                   (%g partial)
//
// An index outside the whole table keeps its out-of-range local index, so the kernel's
// index check (codegen/KernelChecks) still fails the call (on every rank it is outside of).
// Matched when the body yields the extracted element itself (its only use) and the table
// is used by that extract only; other operands and captures are made replicated.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {
namespace {

// The extract of a captured, split table at a data index of its split dimension, whose
// element the body yields (its only use); null when `op` is no such lookup.
tensor::ExtractOp splitLookup(linalg::LinalgOp op, Partitioner& p) {
  Block* body = op.getBlock();
  auto extract = body->getTerminator()->getOperand(0).getDefiningOp<tensor::ExtractOp>();
  if (!extract || !extract->hasOneUse() || extract->getBlock() != body) return {};
  Value table = extract.getTensor();
  if (op->isAncestor(table.getParentRegion()->getParentOp())) return {};
  Sharding s = p.lookup(table).sharding;
  if (!s.isSplit() || extract.getIndices()[s.dim].getDefiningOp<linalg::IndexOp>()) return {};
  bool onlyUse = llvm::all_of(table.getUses(), [&](OpOperand& use) {
    return use.getOwner() == extract || !op->isAncestor(use.getOwner());
  });
  return onlyUse ? extract : tensor::ExtractOp();
}

}  // namespace

FailureOr<bool> PartitionGather(Operation* op, Partitioner& p) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() || op->getNumResults() != 1)
    return p.notMatched(op, "not a linalg op on tensors with one result");
  tensor::ExtractOp lookup = splitLookup(linalgOp, p);
  if (!lookup) return p.notMatched(op, "no lookup of a table split along a dimension indexed by data");
  Value table = lookup.getTensor();
  const int64_t d = p.lookup(table).sharding.dim;
  Location loc = op->getLoc();

  // Everything but the table, replicated; the table's local rows and where they start.
  FailureOr<IRMapping> mapping = p.replicatedMapping(op, /*keep=*/table);
  if (failed(mapping)) return failure();
  Value localTable = mapping->lookup(table);
  Value rows = tensor::DimOp::create(p.b, loc, localTable, d);
  Value base = arith::MulIOp::create(p.b, loc, p.rank, rows);
  Value all = arith::MulIOp::create(p.b, loc, rows, p.count);

  Operation* clone = p.b.clone(*op, *mapping);
  auto localLookup = cast<tensor::ExtractOp>(mapping->lookup(lookup.getResult()).getDefiningOp());
  OpBuilder::InsertionGuard guard(p.b);
  p.b.setInsertionPoint(localLookup);
  Value row = localLookup.getIndices()[d];
  Value local = arith::SubIOp::create(p.b, loc, row, base);
  Value mine = arith::CmpIOp::create(p.b, loc, arith::CmpIPredicate::ult, local, rows);
  Value outside = arith::CmpIOp::create(p.b, loc, arith::CmpIPredicate::uge, row, all);
  Value keep = arith::OrIOp::create(p.b, loc, mine, outside);
  Value zeroIndex = arith::ConstantIndexOp::create(p.b, loc, 0);
  localLookup.getIndicesMutable()[d].set(arith::SelectOp::create(p.b, loc, keep, local, zeroIndex));
  p.b.setInsertionPointAfter(localLookup);
  Type element = localLookup.getType();
  Value zero = arith::ConstantOp::create(p.b, loc, p.b.getZeroAttr(element));
  Value masked = arith::SelectOp::create(p.b, loc, mine, localLookup.getResult(), zero);
  localLookup.getResult().replaceAllUsesExcept(masked, masked.getDefiningOp());
  p.map(op->getResult(0), {clone->getResult(0), Sharding::partial()});
  return true;
}

}  // namespace hexir::partition
