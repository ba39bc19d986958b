// The bufferized body of a tensor-core GEMM kernel, its epilogue and its removal
// (CUDAMatmulBody.h).
#include "passes/codegen/CUDAMatmulBody.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace hexir::cuda {
using namespace mlir;

FailureOr<MatmulBody> FindMatmulBody(func::FuncOp kernel, const TensorCoreMatmul& s) {
  MatmulBody body;
  Block& entry = kernel.getBody().front();
  body.a = entry.getArgument(s.a), body.b = entry.getArgument(s.b);
  linalg::LinalgOp contraction;
  SmallVector<linalg::FillOp> fills;
  for (Operation& op : entry.without_terminator()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      fills.push_back(fill);
    } else if (auto g = dyn_cast<linalg::GenericOp>(op); g && contraction && g.getNumReductionLoops() == 0) {
      body.epilogue.push_back(g);
    } else if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
      if (contraction) return kernel.emitError("internal: tensor-core matmul with two contractions");
      contraction = l;
    } else if (isa<memref::CopyOp>(op)) {
      return op.emitError("internal: a copy in a tensor-core matmul kernel");
    }
  }
  if (!contraction || contraction.getDpsInputOperand(0)->get() != body.a ||
      contraction.getDpsInputOperand(1)->get() != body.b)
    return kernel.emitError("internal: tensor-core matmul operands moved in bufferization");
  body.product = contraction.getDpsInitOperand(0)->get();
  for (linalg::FillOp fill : fills)
    if (fill.getDpsInitOperand(0)->get() == body.product) body.init = fill.getInputs()[0];
  if (!body.init) return kernel.emitError("internal: tensor-core matmul accumulator not filled");
  Value holder = body.product;
  for (linalg::GenericOp g : body.epilogue) {
    if (!llvm::any_of(g.getDpsInputs(), [&](Value in) { return in == holder; }))
      return g.emitError("internal: epilogue generic does not read the product");
    holder = g.getDpsInitOperand(0)->get();
  }
  body.result = holder;
  for (Operation& op : entry.without_terminator()) body.erased.push_back(&op);
  return body;
}

SmallVector<Value> MatmulIndices(Value memref, Value batchIndex, Value x, Value y) {
  SmallVector<Value> at;
  if (cast<MemRefType>(memref.getType()).getRank() == 3) at.push_back(batchIndex);
  at.push_back(x);
  at.push_back(y);
  return at;
}

void ApplyMatmulEpilogue(OpBuilder& b, Location loc, const MatmulBody& body, Value batchIndex,
                         Value v, Value row, Value col) {
  SmallVector<Value> coords = MatmulIndices(body.result, batchIndex, row, col);
  Value holder = body.product;
  for (linalg::GenericOp g : body.epilogue) {
    IRMapping m;
    Block* gBody = g.getBody();
    for (OpOperand& operand : g->getOpOperands()) {
      BlockArgument arg = gBody->getArgument(operand.getOperandNumber());
      if (operand.get() == holder && g.isDpsInput(&operand)) {
        m.map(arg, v);
      } else if (!arg.use_empty()) {
        AffineMap map = g.getMatchingIndexingMap(&operand);
        SmallVector<Value> at;
        for (AffineExpr e : map.getResults()) at.push_back(coords[cast<AffineDimExpr>(e).getPosition()]);
        m.map(arg, memref::LoadOp::create(b, loc, operand.get(), at));
      }
    }
    for (Operation& inner : gBody->without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        m.map(index.getResult(), coords[index.getDim()]);
        continue;
      }
      b.clone(inner, m);
    }
    v = m.lookupOrDefault(gBody->getTerminator()->getOperand(0));
    holder = g.getDpsInitOperand(0)->get();
  }
  memref::StoreOp::create(b, loc, v, body.result, coords);
}

void StoreMatmulElement(OpBuilder& b, Location loc, const MatmulBody& body, Value batchIndex, Value v,
                        Value row, Value col, Value M, Value N) {
  KernelArith k{b, loc};
  auto inside = scf::IfOp::create(b, loc, k.both(k.ult(row, M), k.ult(col, N)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(inside.thenBlock()->getTerminator());
  if (!matchPattern(body.init, m_AnyZeroFloat())) v = arith::AddFOp::create(b, loc, body.init, v);
  ApplyMatmulEpilogue(b, loc, body, batchIndex, v, row, col);
}

MatmulExtents ReadMatmulExtents(OpBuilder& b, Location loc, const MatmulBody& body, bool transposedB) {
  int64_t rank = cast<MemRefType>(body.a.getType()).getRank();
  return {memref::DimOp::create(b, loc, body.a, rank - 2), memref::DimOp::create(b, loc, body.a, rank - 1),
          memref::DimOp::create(b, loc, body.b, rank - (transposedB ? 2 : 1))};
}

LogicalResult EraseMatmulBody(const MatmulBody& body) {
  SmallVector<memref::AllocOp> allocs;
  for (Operation* op : body.erased) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) allocs.push_back(alloc);
    if (isa<linalg::LinalgOp>(op)) op->erase();
  }
  for (memref::AllocOp alloc : allocs) {
    if (!llvm::all_of(alloc->getUsers(), [](Operation* u) { return isa<memref::DeallocOp>(u); }))
      return alloc.emitError("internal: a temporary of the tensor-core matmul is still used");
    for (Operation* user : llvm::to_vector(alloc->getUsers())) user->erase();
    alloc.erase();
  }
  return success();
}

TileWalk BeginTileWalk(KernelArith& k, const TensorCoreMatmul& s, Value M, Value N) {
  constexpr int64_t kGroupRows = 8;
  OpBuilder& b = k.b;
  Location loc = k.loc;
  Value tilesM = k.ceilDiv(M, s.tileM), tilesN = k.ceilDiv(N, s.tileN);
  Value perBatch = k.mul(tilesM, tilesN), total = k.mul(perBatch, k.idx(s.batch));
  Value first = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value step = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  TileWalk walk;
  if (s.splits > 1) {
    walk.splitRank = k.rem(first, k.idx(s.splits));
    first = k.div(first, k.idx(s.splits));
    step = k.div(step, k.idx(s.splits));
  }
  walk.loop = scf::ForOp::create(b, loc, first, total, step);
  b.setInsertionPointToStart(walk.loop.getBody());
  Value t = walk.loop.getInductionVar();
  walk.batchIndex = k.div(t, perBatch);
  Value inBatch = k.rem(t, perBatch), groupWidth = k.mul(k.idx(kGroupRows), tilesN);
  Value firstRow = k.mul(k.div(inBatch, groupWidth), k.idx(kGroupRows));
  Value groupRows =
      arith::MinUIOp::create(b, loc, arith::SubIOp::create(b, loc, tilesM, firstRow), k.idx(kGroupRows));
  Value inGroup = k.rem(inBatch, groupWidth);
  walk.rowBase = k.mul(k.add(firstRow, k.rem(inGroup, groupRows)), k.idx(s.tileM));
  walk.colBase = k.mul(k.div(inGroup, groupRows), k.idx(s.tileN));
  return walk;
}

}  // namespace hexir::cuda
