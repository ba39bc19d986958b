// Emits the max pools of CPUMaxPool.h with the vector dialect.
#include "passes/codegen/CPUMaxPool.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "passes/codegen/CPUForLoop.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

struct PoolGeometry {
  int64_t strides[2];
  int64_t dilations[2];
};

// `e` as sum(c[i] * d_i) over `dims` dims: c[i] is e at d_i = 1 (the others 0); nullopt when
// e is not that sum.
std::optional<SmallVector<int64_t>> LinearCoefficients(AffineExpr e, unsigned dims) {
  MLIRContext* ctx = e.getContext();
  auto at = [&](int64_t one) -> std::optional<int64_t> {
    SmallVector<AffineExpr> values;
    for (unsigned i = 0; i < dims; ++i) values.push_back(getAffineConstantExpr(i == one ? 1 : 0, ctx));
    auto c = dyn_cast<AffineConstantExpr>(e.replaceDims(values));
    return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
  };
  if (at(-1) != 0) return std::nullopt;
  SmallVector<int64_t> coefficients;
  AffineExpr sum = getAffineConstantExpr(0, ctx);
  for (unsigned i = 0; i < dims; ++i) {
    std::optional<int64_t> c = at(i);
    if (!c) return std::nullopt;
    coefficients.push_back(*c);
    sum = sum + getAffineDimExpr(i, ctx) * *c;
  }
  if (simplifyAffineExpr(sum, dims, 0) != simplifyAffineExpr(e, dims, 0)) return std::nullopt;
  return coefficients;
}

bool HasUnitStrideRows(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

std::optional<PoolGeometry> MatchMaxPool(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op.getNumLoops() != 6 ||
      !op.hasPureBufferSemantics())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (int i = 0; i < 6; ++i)
    if (iterators[i] != (i < 4 ? utils::IteratorType::parallel : utils::IteratorType::reduction))
      return std::nullopt;
  auto x = dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto window = dyn_cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto out = dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!x || !window || !out || x.getRank() != 4 || window.getRank() != 2 || out.getRank() != 4 ||
      !x.getElementType().isF32() || !out.getElementType().isF32() || !HasUnitStrideRows(x) ||
      !HasUnitStrideRows(out))
    return std::nullopt;
  // Body: maximumf(out, x) (either order), yielded; the window's value unused.
  Block& body = op->getRegion(0).front();
  if (body.getOperations().size() != 2) return std::nullopt;
  auto max = dyn_cast<arith::MaximumFOp>(body.front());
  if (!max || body.getTerminator()->getOperand(0) != max.getResult()) return std::nullopt;
  Value in = body.getArgument(0), acc = body.getArgument(2);
  if (!((max.getLhs() == acc && max.getRhs() == in) || (max.getLhs() == in && max.getRhs() == acc)))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext* ctx = op.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  if (maps[1] != AffineMap::get(6, 0, {d(4), d(5)}, ctx) ||
      maps[2] != AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx) ||
      maps[0].getResult(0) != d(0) || maps[0].getResult(1) != d(1))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> h = LinearCoefficients(maps[0].getResult(2), 6);
  std::optional<SmallVector<int64_t>> w = LinearCoefficients(maps[0].getResult(3), 6);
  if (!h || !w) return std::nullopt;
  // Rows: oh * sh + kh * dh; columns: ow * sw + kw * dw.
  for (int i : {0, 1, 3, 5})
    if ((*h)[i]) return std::nullopt;
  for (int i : {0, 1, 2, 4})
    if ((*w)[i]) return std::nullopt;
  PoolGeometry g{{(*h)[2], (*w)[3]}, {(*h)[4], (*w)[5]}};
  if (g.strides[0] < 1 || g.strides[1] < 1 || g.dilations[0] < 1 || g.dilations[1] < 1)
    return std::nullopt;
  return g;
}

// The linalg.fill of `op`'s output that is the last write before `op` (only effect-free ops
// and allocations between them), or null.
linalg::FillOp FillOfOutput(linalg::GenericOp op) {
  Value out = op.getDpsInits()[0];
  for (Operation* prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev))
      return fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == out ? fill : linalg::FillOp();
    if (!isMemoryEffectFree(prev) && !isa<memref::AllocOp, memref::AllocaOp>(prev)) return {};
  }
  return {};
}

void EmitMaxPool(OpBuilder& b, Location loc, int64_t lanes, const PoolGeometry& g, linalg::GenericOp op,
                 linalg::FillOp fill) {
  Value x = op.getDpsInputs()[0], window = op.getDpsInputs()[1], out = op.getDpsInits()[0];
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto dim = [&](Value m, int64_t i) -> Value { return memref::DimOp::create(b, loc, m, i); };
  auto add = [&](Value l, Value r) -> Value { return arith::AddIOp::create(b, loc, l, r); };
  auto mul = [&](Value l, Value r) -> Value { return arith::MulIOp::create(b, loc, l, r); };
  auto sub = [&](Value l, Value r) -> Value { return arith::SubIOp::create(b, loc, l, r); };
  auto vec = VectorType::get({lanes}, b.getF32Type());
  auto maskType = VectorType::get({lanes}, b.getI1Type());
  auto mask = [&](Value count) -> Value { return vector::CreateMaskOp::create(b, loc, maskType, ValueRange{count}); };
  Value zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
  Value filled = fill ? vector::BroadcastOp::create(b, loc, vec, fill.getInputs()[0]).getResult() : Value();
  Value kh = dim(window, 0), kw = dim(window, 1), width = dim(x, 3), ow = dim(out, 3);
  SmallVector<int32_t> strided;
  for (int64_t i = 0; i < lanes; ++i) strided.push_back(static_cast<int32_t>(i * g.strides[1]));
  auto offsetsType = VectorType::get({lanes}, b.getI32Type());
  Value gatherOffsets = arith::ConstantOp::create(
      b, loc, offsetsType, DenseElementsAttr::get(offsetsType, ArrayRef<int32_t>(strided)));
  SmallVector<int64_t> even;
  for (int64_t i = 0; i < lanes; ++i) even.push_back(2 * i);

  // Tap (row, col) of channel c: one vector of the inputs of the run's outputs.
  auto tap = [&](Value n, Value c, Value row, Value col, Value live) -> Value {
    if (g.strides[1] == 1)
      return vector::MaskedLoadOp::create(b, loc, vec, x, ValueRange{n, c, row, col}, live, zeroVec);
    if (g.strides[1] == 2) {
      Value left = sub(width, col);
      Value lo = vector::MaskedLoadOp::create(b, loc, vec, x, ValueRange{n, c, row, col}, mask(left), zeroVec);
      Value hi = vector::MaskedLoadOp::create(b, loc, vec, x, ValueRange{n, c, row, add(col, index(lanes))},
                                              mask(sub(left, index(lanes))), zeroVec);
      return vector::ShuffleOp::create(b, loc, lo, hi, even);
    }
    return vector::GatherOp::create(b, loc, vec, x, ValueRange{n, c, row, col}, gatherOffsets, live, zeroVec);
  };
  // `acc` (one value per channel) folded with the taps [from, KW) of row `row` of the run
  // from ow0: a loop over the taps, one maximum chain per channel.
  auto maxOverTaps = [&](ValueRange acc, Value n, ArrayRef<Value> channels, Value row, Value ow0, Value live,
                         int64_t from) -> SmallVector<Value> {
    auto taps = scf::ForOp::create(b, loc, index(from), kw, index(1), acc);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(taps.getBody());
    Value col = add(mul(ow0, index(g.strides[1])), mul(taps.getInductionVar(), index(g.dilations[1])));
    SmallVector<Value> next;
    for (auto [i, channel] : llvm::enumerate(channels))
      next.push_back(arith::MaximumFOp::create(b, loc, taps.getRegionIterArgs()[i], tap(n, channel, row, col, live)));
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(taps.getResults());
  };
  // The run of outputs from ow0 of row oh of `count` channels from c0, one chain each.
  auto run = [&](Value n, Value c0, Value oh, Value ow0, int64_t count) {
    Value live = mask(sub(ow, ow0));
    SmallVector<Value> channels, first;
    for (int64_t i = 0; i < count; ++i) {
      channels.push_back(i ? add(c0, index(i)) : c0);
      first.push_back(filled ? filled
                             : vector::MaskedLoadOp::create(b, loc, vec, out, ValueRange{n, channels[i], oh, ow0},
                                                            live, zeroVec).getResult());
    }
    auto rows = scf::ForOp::create(b, loc, index(0), kh, index(1), first);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rows.getBody());
      Value row = add(mul(oh, index(g.strides[0])), mul(rows.getInductionVar(), index(g.dilations[0])));
      scf::YieldOp::create(b, loc, maxOverTaps(rows.getRegionIterArgs(), n, channels, row, ow0, live, 0));
    }
    for (int64_t i = 0; i < count; ++i)
      vector::MaskedStoreOp::create(b, loc, out, ValueRange{n, channels[i], oh, ow0}, live, rows.getResult(i));
  };
  // Overlapping windows along h (a static KH, sh a multiple of dh below KH * dh: 3x3 / 2),
  // down a column of runs: each row's horizontal maximum over the KW taps is computed once
  // and kept in registers for the KH / (sh / dh) output rows whose windows hold it; each
  // output is the maximum of its KH rows' (SqueezeNet's 3x3 / 2 pools: 6 maximums and row
  // loads an output vector where the taps took 9). The same values as the tap order (the
  // maximum of the same inputs; only which NaN's payload a result of several carries may
  // differ).
  auto windowType = cast<MemRefType>(window.getType());
  const int64_t windowRows = windowType.isDynamicDim(0) ? ShapedType::kDynamic : windowType.getDimSize(0);
  const int64_t shift = g.strides[0] % g.dilations[0] ? 0 : g.strides[0] / g.dilations[0];
  const bool rolling = !ShapedType::isDynamic(windowRows) && shift > 0 && shift < windowRows;
  auto column = [&](Value n, Value c0, Value ow0, int64_t count) {
    Value live = mask(sub(ow, ow0));
    SmallVector<Value> channels;
    for (int64_t i = 0; i < count; ++i) channels.push_back(i ? add(c0, index(i)) : c0);
    // The horizontal maximum of row `row` of each channel.
    auto rowMaxima = [&](Value row) {
      SmallVector<Value> maxima(count);
      for (int64_t i = 0; i < count; ++i) maxima[i] = tap(n, channels[i], row, mul(ow0, index(g.strides[1])), live);
      return maxOverTaps(maxima, n, channels, row, ow0, live, 1);
    };
    // Rows held: [kh][channel] for the window of output row oh (none without output rows:
    // the first window's rows may then lie past x).
    Value oh = dim(out, 2);
    auto any = scf::IfOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, oh, index(0)),
                                 /*withElseRegion=*/false);
    OpBuilder::InsertionGuard outer(b);
    b.setInsertionPoint(any.thenBlock()->getTerminator());
    SmallVector<Value> held;
    for (int64_t k = 0; k < windowRows; ++k) llvm::append_range(held, rowMaxima(index(k * g.dilations[0])));
    auto rows = scf::ForOp::create(b, loc, index(0), oh, index(1), held);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rows.getBody());
      Value r = rows.getInductionVar();
      ValueRange kept = rows.getRegionIterArgs();
      for (int64_t i = 0; i < count; ++i) {
        Value m = filled ? filled
                         : vector::MaskedLoadOp::create(b, loc, vec, out, ValueRange{n, channels[i], r, ow0}, live,
                                                        zeroVec).getResult();
        for (int64_t k = 0; k < windowRows; ++k) m = arith::MaximumFOp::create(b, loc, m, kept[k * count + i]);
        vector::MaskedStoreOp::create(b, loc, out, ValueRange{n, channels[i], r, ow0}, live, m);
      }
      // The next output row's window: the rows it shares, then its `shift` new ones (none
      // after the last output row, whose next rows may lie past x).
      Value next = add(r, index(1));
      auto more = scf::IfOp::create(b, loc, kept.getTypes(),
                                    arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next, oh),
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&more.getThenRegion().front());
        SmallVector<Value> shifted(kept.drop_front(shift * count));
        for (int64_t k = windowRows - shift; k < windowRows; ++k)
          llvm::append_range(shifted, rowMaxima(add(mul(next, index(g.strides[0])), index(k * g.dilations[0]))));
        scf::YieldOp::create(b, loc, shifted);
        b.setInsertionPointToStart(&more.getElseRegion().front());
        scf::YieldOp::create(b, loc, kept);
      }
      scf::YieldOp::create(b, loc, more.getResults());
    }
  };
  auto plane = [&](Value n, Value c0, int64_t count) {
    if (rolling)
      return EmitForLoop(b, loc, index(0), ow, index(lanes), [&](Value ow0) { column(n, c0, ow0, count); });
    EmitForLoop(b, loc, index(0), dim(out, 2), index(1), [&](Value oh) {
      EmitForLoop(b, loc, index(0), ow, index(lanes), [&](Value ow0) { run(n, c0, oh, ow0, count); });
    });
  };
  Value channels = dim(out, 1);
  Value grouped = sub(channels, arith::RemUIOp::create(b, loc, channels, index(kMaxPoolChannels)));
  EmitForLoop(b, loc, index(0), dim(out, 0), index(1), [&](Value n) {
    EmitForLoop(b, loc, index(0), grouped, index(kMaxPoolChannels),
                [&](Value c0) { plane(n, c0, kMaxPoolChannels); });
    EmitForLoop(b, loc, grouped, channels, index(1), [&](Value c) { plane(n, c, 1); });
  });
}

}  // namespace

void LowerMaxPools(func::FuncOp kernel, int64_t lanes) {
  SmallVector<std::pair<linalg::GenericOp, PoolGeometry>> pools;
  kernel.walk([&](linalg::GenericOp op) {
    if (std::optional<PoolGeometry> g = MatchMaxPool(op)) pools.push_back({op, *g});
  });
  for (auto& [op, g] : pools) {
    OpBuilder b(op);
    Value window = op.getDpsInputs()[1];
    linalg::FillOp fill = FillOfOutput(op);
    EmitMaxPool(b, op.getLoc(), lanes, g, op, fill);
    op->erase();
    if (fill) fill->erase();
    if (auto alloc = window.getDefiningOp<memref::AllocOp>()) {
      SmallVector<Operation*> users(alloc->getUsers());
      if (llvm::all_of(users, [](Operation* u) { return isa<memref::DeallocOp>(u); })) {
        for (Operation* u : users) u->erase();
        alloc->erase();
      }
    }
  }
}

}  // namespace hexir::codegen
