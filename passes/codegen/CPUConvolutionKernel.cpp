// Emits the convolution kernels described in CPUConvolutionKernel.h with the vector dialect.
#include "passes/codegen/CPUConvolutionKernel.h"

#include <functional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CPUConvolutionDepthwise.h"
#include "passes/codegen/CPUForLoop.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// `e` as sum(coefficient[d] * d); nullopt unless it is a sum of dims times constants.
std::optional<SmallVector<int64_t>> LinearCoefficients(AffineExpr e, unsigned dims) {
  SmallVector<int64_t> coefficients(dims, 0);
  std::function<bool(AffineExpr, int64_t)> add = [&](AffineExpr x, int64_t scale) {
    if (auto d = dyn_cast<AffineDimExpr>(x)) {
      coefficients[d.getPosition()] += scale;
      return true;
    }
    if (auto c = dyn_cast<AffineConstantExpr>(x)) return c.getValue() == 0;
    auto bin = dyn_cast<AffineBinaryOpExpr>(x);
    if (!bin) return false;
    if (x.getKind() == AffineExprKind::Add)
      return add(bin.getLHS(), scale) && add(bin.getRHS(), scale);
    if (x.getKind() != AffineExprKind::Mul) return false;
    if (auto c = dyn_cast<AffineConstantExpr>(bin.getRHS()))
      return add(bin.getLHS(), scale * c.getValue());
    if (auto c = dyn_cast<AffineConstantExpr>(bin.getLHS()))
      return add(bin.getRHS(), scale * c.getValue());
    return false;
  };
  if (!add(e, 1)) return std::nullopt;
  return coefficients;
}

bool Is(const std::optional<SmallVector<int64_t>>& got, std::initializer_list<int64_t> want) {
  return got && llvm::equal(*got, want);
}

// Fg of a grouped convolution's input channel `chan` = (f floordiv Fg) * Cg + c (loops d1 = f,
// d4 = c), the importer's form; 1 for f * Cg + c (one filter per group). nullopt otherwise.
std::optional<int64_t> GroupFilters(AffineExpr chan, int64_t cg) {
  MLIRContext* ctx = chan.getContext();
  AffineExpr f = getAffineDimExpr(1, ctx), c = getAffineDimExpr(4, ctx);
  if (chan == f * cg + c) return 1;
  std::optional<int64_t> fg;
  chan.walk([&](AffineExpr e) {
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    auto divisor = bin ? dyn_cast<AffineConstantExpr>(bin.getRHS()) : AffineConstantExpr();
    if (e.getKind() == AffineExprKind::FloorDiv && bin.getLHS() == f && divisor && divisor.getValue() > 1)
      fg = divisor.getValue();
  });
  if (!fg || chan != f.floorDiv(*fg) * cg + c) return std::nullopt;
  return fg;
}

// Memrefs whose last dim has unit stride.
bool HasUnitStrideRows(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref) return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(memref.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

// Memrefs with unit-stride rows whose last two dims are one contiguous run, or may be
// (dynamic strides: the kernel checks them at run time, see RowsAreContiguous).
bool HasContiguousRows(Type type) {
  if (!HasUnitStrideRows(type)) return false;
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref) return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  (void)memref.getStridesAndOffset(strides, offset);
  int64_t rank = memref.getRank();
  int64_t inner = memref.getDimSize(rank - 1);
  return ShapedType::isDynamic(strides[rank - 2]) || ShapedType::isDynamic(inner) ||
         strides[rank - 2] == inner;
}

// The plain multiply-add body: out + x * w (either operand order).
bool IsMultiplyAdd(Block& body) {
  if (body.getOperations().size() != 3) return false;
  auto mul = dyn_cast<arith::MulFOp>(body.front());
  auto add = dyn_cast<arith::AddFOp>(*std::next(body.begin()));
  if (!mul || !add) return false;
  auto arg = [&](Value v, unsigned i) { return v == body.getArgument(i); };
  bool mulOk = (arg(mul.getLhs(), 0) && arg(mul.getRhs(), 1)) ||
               (arg(mul.getLhs(), 1) && arg(mul.getRhs(), 0));
  bool addOk = (arg(add.getLhs(), 2) && add.getRhs() == mul.getResult()) ||
               (arg(add.getRhs(), 2) && add.getLhs() == mul.getResult());
  return mulOk && addOk;
}

}  // namespace

std::optional<ConvolutionGeometry> MatchConvolution(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op.getOperation()) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 7)
    return std::nullopt;
  for (OpOperand& operand : op->getOpOperands()) {
    auto shaped = dyn_cast<ShapedType>(operand.get().getType());
    if (!shaped || shaped.getRank() != 4 || !shaped.getElementType().isF32()) return std::nullopt;
  }
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (int i = 0; i < 7; ++i)
    if (iterators[i] != (i < 4 ? utils::IteratorType::parallel : utils::IteratorType::reduction))
      return std::nullopt;
  if (!IsMultiplyAdd(op->getRegion(0).front())) return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext* ctx = op.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  if (maps[1] != AffineMap::get(7, 0, {d(1), d(4), d(5), d(6)}, ctx) ||
      maps[2] != AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx))
    return std::nullopt;
  SmallVector<std::optional<SmallVector<int64_t>>> x;
  for (AffineExpr e : maps[0].getResults()) x.push_back(LinearCoefficients(e, 7));
  if (!Is(x[0], {1, 0, 0, 0, 0, 0, 0}) || !x[2] || !x[3]) return std::nullopt;
  auto wType = cast<ShapedType>(op.getDpsInputs()[1].getType());
  ConvolutionGeometry g;
  if (Is(x[1], {0, 0, 0, 0, 1, 0, 0})) {
    g.kind = ConvolutionKind::kDense;
  } else if (Is(x[1], {0, 1, 0, 0, 1, 0, 0}) && wType.getDimSize(1) == 1) {
    // One input channel per filter: chan = f.
    g.kind = ConvolutionKind::kDepthwise;
  } else if (std::optional<int64_t> fg = wType.isDynamicDim(1) ? std::nullopt
                                         : GroupFilters(maps[0].getResult(1), wType.getDimSize(1))) {
    // Whole groups of static filters: out's F static, a multiple of Fg.
    int64_t filters = cast<ShapedType>(op.getDpsInits()[0].getType()).getDimSize(1);
    if (ShapedType::isDynamic(filters) || filters % *fg) return std::nullopt;
    g.kind = ConvolutionKind::kGrouped;
    g.groupFilters = *fg;
  } else {
    return std::nullopt;
  }
  const SmallVector<int64_t>& h = *x[2];
  const SmallVector<int64_t>& w = *x[3];
  if (h[0] || h[1] || h[3] || h[4] || h[6] || w[0] || w[1] || w[2] || w[4] || w[5])
    return std::nullopt;
  g.strides[0] = h[2];
  g.strides[1] = w[3];
  g.dilations[0] = h[5];
  g.dilations[1] = w[6];
  if (g.strides[0] < 1 || g.strides[1] < 1 || g.dilations[0] < 1 || g.dilations[1] < 1)
    return std::nullopt;
  // x is read through its row pitch (a window of a larger plane is fine); the output's
  // positions are the GEMM's columns, so its rows must be one run.
  if (!HasUnitStrideRows(op.getDpsInputs()[0].getType()) ||
      !HasUnitStrideRows(op.getDpsInputs()[1].getType()) ||
      !HasContiguousRows(op.getDpsInits()[0].getType()))
    return std::nullopt;
  // The weights are read as [F][C*KH*KW]: their three inner dims must be one run (F may be
  // dynamic: the last workgroup's slice of filters).
  if (auto w = dyn_cast<MemRefType>(op.getDpsInputs()[1].getType())) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(w.getStridesAndOffset(strides, offset)) || w.isDynamicDim(1) || w.isDynamicDim(2) ||
        w.isDynamicDim(3) ||
        strides[3] != 1 || strides[2] != w.getDimSize(3) ||
        strides[1] != w.getDimSize(2) * w.getDimSize(3))
      return std::nullopt;
  }
  return g;
}

namespace {

// A memref whose last two dims are one unit-stride run by its type (no run-time check).
bool HasStaticContiguousRows(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  SmallVector<int64_t> strides;
  int64_t offset;
  return memref && memref.getRank() == 4 && succeeded(memref.getStridesAndOffset(strides, offset)) &&
         strides[3] == 1 && !memref.isDynamicDim(3) && strides[2] == memref.getDimSize(3);
}

// True at run time when dims 2 and 3 of every operand form one run (stride 2 == size 3);
// null when the types already say so.
Value RowsAreContiguous(OpBuilder& b, Location loc, ArrayRef<Value> operands) {
  Value all;
  for (Value m : operands) {
    auto type = cast<MemRefType>(m.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (succeeded(type.getStridesAndOffset(strides, offset)) && !ShapedType::isDynamic(strides[2]) &&
        !type.isDynamicDim(3))
      continue;  // the matcher checked strides[2] == size 3
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
    Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, meta.getStrides()[2],
                                       meta.getSizes()[3]);
    all = all ? Value(arith::AndIOp::create(b, loc, all, same)) : same;
  }
  return all;
}

class ConvolutionEmitter {
 public:
  ConvolutionEmitter(OpBuilder& b, Location loc, const MatmulTiles& tiles,
                     const ConvolutionGeometry& g, Value taps = Value())
      : b(b), loc(loc), t(tiles), g(g), taps(taps),
        vec(VectorType::get({tiles.lanes}, b.getF32Type())),
        offsets(VectorType::get({tiles.lanes}, b.getI32Type())) {
    zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
  }

  // Dense: one implicit GEMM per batch. Grouped: per group i, the dense convolution of its
  // Fg filters (out's and w's [i * Fg, (i + 1) * Fg)) over its Cg channels of x (from i * Cg).
  // `epilogue`: out starts at its filters' bias (a group's slice of it) and is ReLU'd.
  void dense(Value x, Value w, Value out, Value packed, const ConvolutionEpilogue& epilogue) {
    if (g.kind != ConvolutionKind::kGrouped) return gemms(x, w, out, packed, epilogue);
    int64_t fg = g.groupFilters, cg = cast<MemRefType>(w.getType()).getDimSize(1);
    int64_t groups = cast<MemRefType>(out.getType()).getDimSize(1) / fg;
    forLoop(index(0), index(groups), [&](Value i) {
      ConvolutionEpilogue group = epilogue;
      if (group.bias)
        group.bias = memref::SubViewOp::create(b, loc, group.bias, ArrayRef<OpFoldResult>{mul(i, index(fg))},
                                               ArrayRef<OpFoldResult>{b.getIndexAttr(fg)},
                                               ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      gemms(channels(x, 1, mul(i, index(cg)), cg), channels(w, 0, mul(i, index(fg)), fg),
            channels(out, 1, mul(i, index(fg)), fg), packed, group);
    });
  }

 private:
  // The epilogue on the GEMM's rows (the filters): row m starts at bias[m] or the fill value.
  GemmEpilogue FilterRowsEpilogue(const ConvolutionEpilogue& epilogue) {
    GemmEpilogue e;
    e.relu = epilogue.relu;
    if (!epilogue.initializes()) return e;
    e.init = [this, epilogue](OpBuilder& nb, Value m, Value, Value) -> Value {
      Value value = epilogue.fill ? epilogue.fill : memref::LoadOp::create(nb, loc, epilogue.bias, ValueRange{m});
      return vector::BroadcastOp::create(nb, loc, vec, value);
    };
    return e;
  }

  // The implicit GEMMs of a dense convolution, one per batch.
  void gemms(Value x, Value w, Value out, Value packed, const ConvolutionEpilogue& epilogue) {
    Value n = dim(out, 0), f = dim(out, 1), oh = dim(out, 2), ow = dim(out, 3);
    Value c = dim(w, 1), kh = dim(w, 2), kw = dim(w, 3);
    auto [planes, wp] = flattenPlanes(x);  // wp: x's row pitch
    Value xc = planes;
    Value window = mul(kh, kw);
    // With a table, x is seen as [n][1][C * channel stride] and tap k's offset in it,
    // c * (channel stride) + kh * dh * pitch + kw * dw, is filled once per GEMM: the panels'
    // k loops load it instead of dividing k by the window and KW (with constant divisors,
    // still about 25 scalar instructions a step of k: DenseNet's 7x7 / 2 stem over 3
    // channels spent a third of its time packing, most of it there).
    if (taps) {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, x);
      Value channelStride = meta.getStrides()[1];
      Value span = mul(c, channelStride);
      int64_t d = ShapedType::kDynamic;
      auto type = cast<MemRefType>(x.getType());
      auto view = MemRefType::get({type.getDimSize(0), 1, d}, type.getElementType(),
                                  StridedLayoutAttr::get(b.getContext(), d, {d, d, 1}), type.getMemorySpace());
      xc = memref::ReinterpretCastOp::create(
          b, loc, view, x, OpFoldResult(meta.getOffset()),
          SmallVector<OpFoldResult>{type.isDynamicDim(0) ? OpFoldResult(dim(x, 0)) : b.getIndexAttr(type.getDimSize(0)),
                                    b.getIndexAttr(1), OpFoldResult(span)},
          SmallVector<OpFoldResult>{meta.getStrides()[0], OpFoldResult(span), b.getIndexAttr(1)});
      Value rowTap = mul(wp, index(g.dilations[0]));
      forLoop(index(0), c, [&](Value ci) {
        forLoop(index(0), kh, [&](Value i) {
          forLoop(index(0), kw, [&](Value j) {
            Value k = add(mul(add(mul(ci, kh), i), kw), j);
            Value at = add(add(mul(ci, channelStride), mul(i, rowTap)), mul(j, index(g.dilations[1])));
            memref::StoreOp::create(b, loc, at, taps, ValueRange{k});
          });
        });
      });
    }
    Value a = memref::CollapseShapeOp::create(b, loc, w, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
    Value oc = flattenPlanes(out).first;
    Value rowStep = mul(wp, index(g.strides[0]));  // x offset of one output row
    forLoop(index(0), n, [&](Value batch) {
      Value gemmColumns = mul(oh, ow);
      PackedGemm gemm{a, oc, {batch}, f, gemmColumns, mul(c, window), FilterRowsEpilogue(epilogue)};
      // Offset in x's plane of output position p: (p / OW) * sh * Wp + (p % OW) * sw.
      auto planeOffset = [&](Value p) {
        return add(mul(arith::DivUIOp::create(b, loc, p, ow), rowStep),
                   mul(arith::RemUIOp::create(b, loc, p, ow), index(g.strides[1])));
      };
      EmitPackedGemm(b, loc, t, packed, gemm,
                     [&](OpBuilder&, Value panel, Value kc, Value kcSize, Value n0, Value full,
                         ArrayRef<Value> masks) {
        Value first = planeOffset(n0);
        // k = (channel, kh, kw) -> the channel and the offset of the window tap in the plane.
        auto tap = [&](Value k) -> std::pair<Value, Value> {
          Value kk = add(kc, k);
          if (taps) return {index(0), memref::LoadOp::create(b, loc, taps, ValueRange{kk})};
          Value channel = arith::DivUIOp::create(b, loc, kk, window);
          Value r = arith::RemUIOp::create(b, loc, kk, window);
          Value i = arith::DivUIOp::create(b, loc, r, kw), j = arith::RemUIOp::create(b, loc, r, kw);
          return {channel, add(mul(i, mul(wp, index(g.dilations[0]))), mul(j, index(g.dilations[1])))};
        };
        auto gathered = [&]() {
          // The input offsets of the panel's columns, per vector of lanes (vector divisions by
          // OW: only where the panel is gathered).
          SmallVector<Value> columnOffsets;
          for (int64_t v = 0; v < t.vectors; ++v) {
            Value p = add(n0, index(v * t.lanes));
            Value pv = add(vector::BroadcastOp::create(b, loc, offsets, toI32(p)), iota());
            Value owv = vector::BroadcastOp::create(b, loc, offsets, toI32(ow));
            Value rows = arith::DivUIOp::create(b, loc, pv, owv);
            Value cols = arith::RemUIOp::create(b, loc, pv, owv);
            columnOffsets.push_back(arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(b, loc, rows,
                                      vector::BroadcastOp::create(b, loc, offsets, toI32(rowStep))),
                arith::MulIOp::create(b, loc, cols, splatI32(g.strides[1]))));
          }
          forLoop(index(0), kcSize, [&](Value k) {
            auto [channel, offset] = tap(k);
            Value shift = vector::BroadcastOp::create(b, loc, offsets, toI32(offset));
            for (int64_t v = 0; v < t.vectors; ++v) {
              Value at = arith::AddIOp::create(b, loc, columnOffsets[v], shift);
              Value lanes = vector::GatherOp::create(b, loc, vec, xc,
                                                     ValueRange{batch, channel, index(0)}, at,
                                                     masks[v], zeroVec);
              vector::StoreOp::create(b, loc, lanes, panel, ValueRange{k, index(v * t.lanes)});
            }
          });
        };
        const int64_t sw = g.strides[1];
        if (sw > 2) return gathered();
        // Consecutive in x (stride 1) or every other element (stride 2): the offsets of the
        // panel's first and last column inside N differ by sw times their distance (the
        // panel inside one output row). A full panel loads its vectors; a partial one (a plane
        // of fewer than NR positions, or its last panel: every dynamic plane, where the
        // gather's offsets are run-time values) loads them masked, the lanes past N zero. At
        // stride 2 each vector is the even elements of two loads (the second's last element,
        // never needed, masked off: it may lie past x).
        Value inside = arith::MinUIOp::create(b, loc, arith::SubIOp::create(b, loc, gemmColumns, n0),
                                              index(t.columns()));
        Value lastInside = arith::SubIOp::create(b, loc, inside, index(1));
        Value consecutive = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq,
            arith::SubIOp::create(b, loc, planeOffset(add(n0, lastInside)), first), mul(lastInside, index(sw)));
        auto maskOf = [&](Value count) -> Value {
          return vector::CreateMaskOp::create(b, loc, VectorType::get({t.lanes}, b.getI1Type()), ValueRange{count});
        };
        SmallVector<int64_t> even;
        for (int64_t i = 0; i < t.lanes; ++i) even.push_back(2 * i);
        auto loads = [&](bool masked) {
          forLoop(index(0), kcSize, [&](Value k) {
            auto [channel, offset] = tap(k);
            Value start = add(first, offset);
            for (int64_t v = 0; v < t.vectors; ++v) {
              SmallVector<Value, 3> at{batch, channel, add(start, index(v * t.lanes * sw))};
              Value lanes;
              if (sw == 1) {
                lanes = masked ? Value(vector::MaskedLoadOp::create(b, loc, vec, xc, at, masks[v], zeroVec))
                               : Value(vector::LoadOp::create(b, loc, vec, xc, at));
              } else {
                // x elements the vector's lanes inside N reach: 2 * lanes - 1 when all are.
                Value reach = index(2 * t.lanes - 1);
                if (masked) {
                  Value live = arith::MinSIOp::create(
                      b, loc, arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, inside, index(v * t.lanes)), index(0)),
                      index(t.lanes));
                  reach = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, mul(live, index(2)), index(1)), index(0));
                }
                Value lo = masked ? Value(vector::MaskedLoadOp::create(
                                        b, loc, vec, xc, at, maskOf(arith::MinSIOp::create(b, loc, reach, index(t.lanes))), zeroVec))
                                  : Value(vector::LoadOp::create(b, loc, vec, xc, at));
                SmallVector<Value, 3> next{batch, channel, add(at[2], index(t.lanes))};
                Value rest = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, reach, index(t.lanes)), index(0));
                Value hi = vector::MaskedLoadOp::create(b, loc, vec, xc, next, maskOf(rest), zeroVec);
                lanes = vector::ShuffleOp::create(b, loc, lo, hi, even);
              }
              vector::StoreOp::create(b, loc, lanes, panel, ValueRange{k, index(v * t.lanes)});
            }
          });
        };
        // Two runs per vector: lanes [0, OW - q0) in the first row from `first`, the rest in
        // the next row from `first + rowStep - OW * sw` (its lanes' offsets keep stride sw).
        auto straddling = [&]() {
          auto laneMask = VectorType::get({t.lanes}, b.getI1Type());
          Value lanesIdx = iota();
          Value none = arith::ConstantOp::create(b, loc, laneMask, DenseElementsAttr::get(laneMask, false));
          SmallVector<int64_t> loEven, hiEven;
          for (int64_t e = 0; e < t.lanes; ++e) {
            loEven.push_back(e % 2 ? t.lanes : e / 2);
            hiEven.push_back(e % 2 ? t.lanes : t.lanes / 2 + e / 2);
          }
          struct Run {
            Value base, lanes, lo, hi;  // x offset of lane 0, its lanes, their elements' masks
          };
          SmallVector<std::array<Run, 2>> runs;
          Value next = arith::SubIOp::create(b, loc, rowStep, mul(ow, index(sw)));
          for (int64_t v = 0; v < t.vectors; ++v) {
            Value p = add(n0, index(v * t.lanes));
            Value base = planeOffset(p);
            Value split = arith::SubIOp::create(b, loc, ow, arith::RemUIOp::create(b, loc, p, ow));
            Value inRow0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lanesIdx,
                                                vector::BroadcastOp::create(b, loc, offsets, toI32(split)));
            Value inFirst = arith::AndIOp::create(b, loc, inRow0, masks[v]);
            Value inSecond = arith::AndIOp::create(
                b, loc, arith::XOrIOp::create(b, loc, inRow0, arith::ConstantOp::create(b, loc, laneMask, DenseElementsAttr::get(laneMask, true))),
                masks[v]);
            std::array<Run, 2> pair;
            for (int r = 0; r < 2; ++r) {
              Value in = r ? inSecond : inFirst;
              pair[r].base = r ? add(base, next) : base;
              pair[r].lanes = in;
              if (sw == 2) {
                pair[r].lo = vector::ShuffleOp::create(b, loc, in, none, loEven);
                pair[r].hi = vector::ShuffleOp::create(b, loc, in, none, hiEven);
              }
            }
            runs.push_back(pair);
          }
          forLoop(index(0), kcSize, [&](Value k) {
            auto [channel, offset] = tap(k);
            for (int64_t v = 0; v < t.vectors; ++v) {
              Value merged;
              for (int r = 0; r < 2; ++r) {
                const Run& run = runs[v][r];
                SmallVector<Value, 3> at{batch, channel, add(run.base, offset)};
                Value lanes;
                if (sw == 1) {
                  lanes = vector::MaskedLoadOp::create(b, loc, vec, xc, at, run.lanes, zeroVec);
                } else {
                  Value lo = vector::MaskedLoadOp::create(b, loc, vec, xc, at, run.lo, zeroVec);
                  SmallVector<Value, 3> upper{batch, channel, add(at[2], index(t.lanes))};
                  Value hi = vector::MaskedLoadOp::create(b, loc, vec, xc, upper, run.hi, zeroVec);
                  lanes = vector::ShuffleOp::create(b, loc, lo, hi, even);
                }
                merged = r ? Value(arith::SelectOp::create(b, loc, runs[v][0].lanes, merged, lanes)) : lanes;
              }
              vector::StoreOp::create(b, loc, merged, panel, ValueRange{k, index(v * t.lanes)});
            }
          });
        };
        scf::IfOp::create(
            b, loc, consecutive,
            [&](OpBuilder& nested, Location) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(scf::YieldOp::create(nested, loc));
              scf::IfOp::create(
                  b, loc, full,
                  [&](OpBuilder& inner, Location) {
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPoint(scf::YieldOp::create(inner, loc));
                    loads(/*masked=*/false);
                  },
                  [&](OpBuilder& inner, Location) {
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPoint(scf::YieldOp::create(inner, loc));
                    loads(/*masked=*/true);
                  });
            },
            [&](OpBuilder& nested, Location) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(scf::YieldOp::create(nested, loc));
              // Rows of at least one vector: each vector's lanes lie in at most two output
              // rows, each a run of x (every sw-th element), loaded as above, masked to its
              // lanes, the two merged (SqueezeNet's 3x3 / 2 stem over 31 x 31 outputs, whose
              // panels of 32 straddle rows: no gathers).
              scf::IfOp::create(
                  b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, ow, index(t.lanes)),
                  [&](OpBuilder& inner, Location) {
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPoint(scf::YieldOp::create(inner, loc));
                    straddling();
                  },
                  [&](OpBuilder& inner, Location) {
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPoint(scf::YieldOp::create(inner, loc));
                    gathered();
                  });
            });
      });
    });
  }

  // m's `size` entries of dim `d` from `offset` (a group's channels or filters).
  Value channels(Value m, int64_t d, Value offset, int64_t size) {
    auto type = cast<MemRefType>(m.getType());
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)), sizes, strides(4, b.getIndexAttr(1));
    for (int64_t i = 0; i < 4; ++i)
      sizes.push_back(i == d ? OpFoldResult(b.getIndexAttr(size))
                      : type.isDynamicDim(i) ? OpFoldResult(dim(m, i))
                                             : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
    offsets[d] = offset;
    return memref::SubViewOp::create(b, loc, m, offsets, sizes, strides);
  }

  // m[n][c][h][w] viewed as [n][c][h * pitch] with unit inner stride, and its row pitch (the
  // stride of dim 2: w for a whole plane, more for a window of a larger one). collapse_shape
  // cannot express a window, nor unit stride when h and w are dynamic (a dynamic size may be 1
  // at run time, so MLIR gives the collapsed dim a dynamic stride, which vector loads refuse):
  // the view is rebuilt from m's strided metadata.
  std::pair<Value, Value> flattenPlanes(Value m) {
    auto type = cast<MemRefType>(m.getType());
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
    auto size = [&](int64_t i) -> OpFoldResult {
      if (!type.isDynamicDim(i)) return b.getIndexAttr(type.getDimSize(i));
      return meta.getSizes()[i];
    };
    Value pitch = meta.getStrides()[2];
    int64_t d = ShapedType::kDynamic;
    SmallVector<OpFoldResult> sizes{size(0), size(1), mul(meta.getSizes()[2], pitch)};
    SmallVector<int64_t> shape{type.getDimSize(0), type.getDimSize(1), d};
    auto layout = StridedLayoutAttr::get(b.getContext(), d, {d, d, 1});
    auto view = MemRefType::get(shape, type.getElementType(), layout, type.getMemorySpace());
    Value rows = memref::ReinterpretCastOp::create(
        b, loc, view, m, OpFoldResult(meta.getOffset()), sizes,
        SmallVector<OpFoldResult>{meta.getStrides()[0], meta.getStrides()[1], b.getIndexAttr(1)});
    return {rows, pitch};
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value m, int64_t i) { return memref::DimOp::create(b, loc, m, i); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, loc, l, r); }
  Value toI32(Value v) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), v); }
  Value splatI32(int64_t v) {
    return arith::ConstantOp::create(b, loc, offsets,
                                     DenseElementsAttr::get(offsets, static_cast<int32_t>(v)));
  }
  Value iota() {
    SmallVector<int32_t> lanes;
    for (int64_t i = 0; i < t.lanes; ++i) lanes.push_back(static_cast<int32_t>(i));
    return arith::ConstantOp::create(b, loc, offsets,
                                     DenseElementsAttr::get(offsets, ArrayRef<int32_t>(lanes)));
  }

  void forLoop(Value lb, Value ub, llvm::function_ref<void(Value)> body) {
    forLoop(lb, ub, index(1), body);
  }
  void forLoop(Value lb, Value ub, Value step, llvm::function_ref<void(Value)> body) {
    EmitForLoop(b, loc, lb, ub, step, body);
  }

  OpBuilder& b;
  Location loc;
  const MatmulTiles& t;
  ConvolutionGeometry g;
  Value taps;  // a stack table of K index entries (see gemms), or null
  VectorType vec, offsets;
  Value zeroVec;
};

// `t` with NR = `columns` (a power of two from 4 to NR): one vector of that many lanes below
// t's vector width, else t's vectors.
MatmulTiles WithColumns(const MatmulTiles& t, int64_t columns) {
  MatmulTiles c = t;
  c.lanes = std::min(columns, t.lanes);
  c.vectors = columns / c.lanes;
  return c;
}

// Tiles for a grouped convolution's GEMMs (each group's Fg filters the rows, a few, so that
// B's panels, gathered or loaded from x, cost about as much as the FMAs) over out's plane of
// `positions` outputs `ow` wide (kDynamic: unknown) at column stride `sw`:
// - at most one vector of positions: NR one vector of the fewest lanes (at least 4) that
//   holds them, so that a 2 x 2 plane computes 4 columns, not 32 (RegNetY's 3x3s over 440
//   channels of 2 x 2: 55 GEMMs of 8 x 72 x 4 a batch);
// - else, at strides 1 and 2, the largest NR dividing OW (at least 4): each panel inside one
//   output row, so loaded from x (two loads and their even elements at stride 2), not
//   gathered (48 channels of 16 x 16 at stride 2: NR 16 on AVX-512, not 32 over two rows).
// The other tiles as given; the packed block is reused (PackedView).
MatmulTiles GroupedTiles(const MatmulTiles& t, int64_t positions, int64_t ow, int64_t sw) {
  if (!ShapedType::isDynamic(positions) && positions <= t.lanes)
    return WithColumns(t, std::max<int64_t>(4, static_cast<int64_t>(llvm::PowerOf2Ceil(positions))));
  if (ShapedType::isDynamic(ow) || sw > 2) return t;
  for (int64_t nr = t.columns(); nr >= 4; nr /= 2)
    if (ow % nr == 0) return WithColumns(t, nr);
  return t;
}

// The packed block (AllocatePackedBlock of `wide`) seen as the block of `narrow`: the same
// bytes in panels of fewer columns (blockColumns and depth are the same).
Value PackedView(OpBuilder& b, Location loc, Value packed, const MatmulTiles& wide, const MatmulTiles& narrow) {
  if (narrow.columns() == wide.columns()) return packed;
  int64_t rows = narrow.blockColumns / narrow.columns() * narrow.depth;
  auto type = MemRefType::get({rows, narrow.columns()}, b.getF32Type());
  return memref::ReinterpretCastOp::create(b, loc, type, packed, 0, {rows, narrow.columns()},
                                           {narrow.columns(), 1});
}

// The dense and grouped kernels. A 1x1 convolution at stride 1 over planes of run-time
// extents first tests them for each o of kDensePlaneOutputs (x's and out's planes o x o) and
// runs the kernel on views of that static plane there (its panels' loads and the GEMM's N
// compile-time constants, as in a static export), the kernel on the dynamic plane otherwise
// (the small planes of a network's last stages, where the dynamic GEMM's run-time bounds cost
// the most: 7 x 7 at 224 x 224 images; SqueezeNet 1.1's expands over 3 x 3 and 7 x 7 at 64 x
// 64, dynamic export 455 -> 439 us, static 404).
// A grouped convolution likewise tests out's plane for each o of kGroupedPlaneOutputs (x
// keeps its run-time extents) and there runs on GroupedTiles of that static plane; on other
// run-time planes, at strides 1 and 2, it tests which of NR, one vector and half a vector (at
// least 4) is the largest dividing OW and runs on those tiles.
constexpr int64_t kDensePlaneOutputs[] = {2, 3, 4, 7};
constexpr int64_t kGroupedPlaneOutputs[] = {2, 4};
void EmitDenseOnPlaneSizes(OpBuilder& b, Location loc, const MatmulTiles& tiles, const ConvolutionGeometry& g,
                           Value x, Value w, Value out, Value packed, Value taps,
                           const ConvolutionEpilogue& epilogue) {
  auto xType = cast<MemRefType>(x.getType()), wType = cast<MemRefType>(w.getType()),
       outType = cast<MemRefType>(out.getType());
  bool pointwise = wType.getDimSize(2) == 1 && wType.getDimSize(3) == 1 && g.strides[0] == 1 && g.strides[1] == 1;
  bool dynamicPlane = xType.isDynamicDim(2) || xType.isDynamicDim(3) || outType.isDynamicDim(2) ||
                      outType.isDynamicDim(3);
  bool grouped = g.kind == ConvolutionKind::kGrouped;
  auto emitOn = [&](Value x, Value out, const MatmulTiles& on) {
    ConvolutionEmitter(b, loc, on, g, taps).dense(x, w, out, PackedView(b, loc, packed, tiles, on), epilogue);
  };
  auto emit = [&](Value x, Value out) {
    auto type = cast<MemRefType>(out.getType());
    int64_t positions = type.isDynamicDim(2) || type.isDynamicDim(3) ? ShapedType::kDynamic
                                                                     : type.getDimSize(2) * type.getDimSize(3);
    emitOn(x, out, grouped ? GroupedTiles(tiles, positions, type.getDimSize(3), g.strides[1]) : tiles);
  };
  OpBuilder::InsertionGuard guard(b);
  if (pointwise && dynamicPlane && !grouped) {
    for (int64_t o : kDensePlaneOutputs) {
      const PlaneSize plane{o, o, o, o};
      if (!PlaneFitsStaticExtents(plane, x, out)) continue;
      auto choice = scf::IfOp::create(b, loc, PlaneIs(b, loc, x, out, plane), /*withElseRegion=*/true);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      emit(CastPlane(b, loc, x, o, o), CastPlane(b, loc, out, o, o));
      b.setInsertionPointToStart(&choice.getElseRegion().front());
    }
  }
  if (grouped && (outType.isDynamicDim(2) || outType.isDynamicDim(3))) {
    for (int64_t o : kGroupedPlaneOutputs) {
      const PlaneSize plane{ShapedType::kDynamic, ShapedType::kDynamic, o, o};
      if (!PlaneFitsStaticExtents(plane, x, out)) continue;
      auto choice = scf::IfOp::create(b, loc, PlaneIs(b, loc, x, out, plane), /*withElseRegion=*/true);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      emit(x, CastPlane(b, loc, out, o, o));
      b.setInsertionPointToStart(&choice.getElseRegion().front());
    }
    // OW % nr == 0 and OW % 2nr != 0: nr the largest NR dividing OW (NR itself: the
    // default), for nr of one vector and of half a vector (OW 16 and 8 on AVX-512).
    for (int64_t nr = tiles.columns() / 2; g.strides[1] <= 2 && nr >= std::max<int64_t>(4, tiles.lanes / 2); nr /= 2) {
      auto remainder = [&](int64_t d) -> Value {
        return arith::RemUIOp::create(b, loc, memref::DimOp::create(b, loc, out, 3), arith::ConstantIndexOp::create(b, loc, d));
      };
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value divides = arith::AndIOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, remainder(nr), zero),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, remainder(2 * nr), zero));
      auto choice = scf::IfOp::create(b, loc, divides, /*withElseRegion=*/true);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      emitOn(x, out, WithColumns(tiles, nr));
      b.setInsertionPointToStart(&choice.getElseRegion().front());
    }
  }
  emit(x, out);
}

// A stack table (at the kernel's entry) of the C * KH * KW tap offsets of a dense or grouped
// convolution of filter `w`, when there are more than one and at most kMaxTapTable of them;
// null otherwise (the k loops then compute each tap).
constexpr int64_t kMaxTapTable = 4096;
Value TapTable(func::FuncOp kernel, Value w) {
  auto type = cast<MemRefType>(w.getType());
  const int64_t k = type.getDimSize(1) * type.getDimSize(2) * type.getDimSize(3);
  if (type.getDimSize(2) * type.getDimSize(3) == 1 || k > kMaxTapTable) return Value();
  OpBuilder entry = OpBuilder::atBlockBegin(&kernel.getBody().front());
  return memref::AllocaOp::create(entry, kernel.getLoc(), MemRefType::get({k}, entry.getIndexType()),
                                  entry.getI64IntegerAttr(64));
}

// The convolution `op` with the epilogue ops `around` found (its init before, its ReLU after),
// in block order.
SmallVector<Operation*> WithEpilogueOps(linalg::LinalgOp op, const std::optional<EpilogueOps>& around) {
  SmallVector<Operation*> group;
  if (around) group.push_back(around->init);
  group.push_back(op);
  if (around && around->relu) group.push_back(around->relu);
  return group;
}

// A run-time choice of a kernel for `op`: an scf.if on `condition` at the builder's insertion
// point (after `group`, WithEpilogueOps), a copy of the group in its then block, the originals
// moved into its else block. Returns the convolution's copy with the epilogue it absorbed from
// the ops copied with it (the caller's condition gives the kernel the out it needs: any
// strides), or `absorbed` when the group is the convolution alone; the builder is left before
// the copy.
std::pair<linalg::LinalgOp, ConvolutionEpilogue> BranchOnCopy(OpBuilder& b, Value condition, linalg::LinalgOp op,
                                                              ArrayRef<Operation*> group,
                                                              const ConvolutionEpilogue& absorbed) {
  auto branch = scf::IfOp::create(b, op.getLoc(), condition, /*withElseRegion=*/true);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  IRMapping copies;
  linalg::LinalgOp copy;
  for (Operation* member : group) {
    Operation* cloned = b.clone(*member, copies);
    if (member == op.getOperation()) copy = cast<linalg::LinalgOp>(cloned);
  }
  for (Operation* member : group) member->moveBefore(branch.elseBlock()->getTerminator());
  b.setInsertionPoint(copy);
  if (group.size() == 1) return {copy, absorbed};
  return {copy, AbsorbConvolutionEpilogue(copy, [](Type) { return true; }, group)};
}

}  // namespace

void LowerConvolutionsToKernels(func::FuncOp kernel, const MatmulTiles& tiles) {
  SmallVector<std::pair<linalg::LinalgOp, ConvolutionGeometry>> convolutions;
  kernel.walk([&](linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics()) return;
    if (std::optional<ConvolutionGeometry> g = MatchConvolution(op)) convolutions.push_back({op, *g});
  });
  if (convolutions.empty()) return;
  Value packed;
  OpBuilder b(kernel.getContext());
  for (auto& [op, g] : convolutions) {
    // Here where out's rows are contiguous by type or the kernel runs on a packed filter
    // (which stores out at any strides: a dynamic export's bias and ReLU passes gone, ShuffleNet
    // v2's 192 -> 1024 1x1 over 2 x 2 14.8 -> 13.6 us, static 12.5; SqueezeNet 1.1's 3x3s 1-6%
    // faster; not a dual unpack's, whose else branch runs the input-packing kernel); under the
    // run-time test of its rows below otherwise (the input-packing kernel).
    ConvolutionEpilogue epilogue;
    if (g.kind != ConvolutionKind::kDepthwise) {
      const bool anyStrides = TakesPackedFilter(op, g, tiles) && !HasDualUnpack(op.getDpsInputs()[1]);
      epilogue = anyStrides ? AbsorbConvolutionEpilogue(op, [](Type) { return true; })
                            : AbsorbConvolutionEpilogue(op, HasStaticContiguousRows);
    }
    // A shallow filter over a run-time plane, packed besides (a dual unpack,
    // CPUPackMatmulOperands.cpp): the packed kernel on a plane of at most kTinyPlanePositions
    // outputs, the input-packing kernel below on the original filter otherwise.
    // The epilogue ops not absorbed above go with it into both branches: the packed kernel
    // (out at any strides) absorbs a copy of them, the else branch keeps them for the
    // input-packing kernel's run-time absorption below.
    if (g.kind == ConvolutionKind::kDense) {
      b.setInsertionPoint(op);
      if (Value original = DualUnpackOriginal(b, op.getDpsInputs()[1])) {
        Location loc = op.getLoc();
        Value out = op.getDpsInits()[0];
        Value positions = arith::MulIOp::create(b, loc, memref::DimOp::create(b, loc, out, 2),
                                                memref::DimOp::create(b, loc, out, 3));
        Value tiny = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, positions,
                                           arith::ConstantIndexOp::create(b, loc, kTinyPlanePositions));
        std::optional<EpilogueOps> around;
        if (!epilogue.initializes()) around = FindConvolutionEpilogue(op);
        SmallVector<Operation*> group = WithEpilogueOps(op, around);
        b.setInsertionPointAfter(group.back());
        auto [onPanels, panelsEpilogue] = BranchOnCopy(b, tiny, op, group, epilogue);
        if (LowerConvolutionOnPackedFilter(kernel, onPanels, g, tiles, panelsEpilogue)) onPanels->erase();
        op.getDpsInputOperand(1)->set(original);
      }
    }
    if (LowerConvolutionOnPackedFilter(kernel, op, g, tiles, epilogue)) {
      op->erase();
      continue;
    }
    if (g.kind != ConvolutionKind::kDepthwise && !packed) packed = AllocatePackedBlock(kernel, tiles);
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value x = op.getDpsInputs()[0], w = op.getDpsInputs()[1], out = op.getDpsInits()[0];
    auto emit = [&](linalg::LinalgOp on, const ConvolutionEpilogue& e) {
      Value onX = on.getDpsInputs()[0], onW = on.getDpsInputs()[1], onOut = on.getDpsInits()[0];
      if (g.kind == ConvolutionKind::kDepthwise)
        return EmitDepthwiseConvolution(b, loc, kernel, tiles.lanes, g, on, onX, onW, onOut);
      EmitDenseOnPlaneSizes(b, loc, tiles, g, onX, onW, onOut, packed, TapTable(kernel, onW), e);
    };
    // Dense and grouped kernels write the output's planes as rows: where its strides are
    // dynamic, the kernel runs when they are contiguous at run time, the loop lowering otherwise.
    // An epilogue not absorbed above for want of rows contiguous by type (a dynamic export's:
    // a workgroup's slice of the ReLU's output has run-time strides) is absorbed under the same
    // test, by a copy of the three ops; the originals stay in the else branch.
    std::optional<EpilogueOps> runTimeEpilogue;
    if (g.kind != ConvolutionKind::kDepthwise && !epilogue.initializes())
      runTimeEpilogue = FindConvolutionEpilogue(op);
    SmallVector<Operation*> group = WithEpilogueOps(op, runTimeEpilogue);
    if (runTimeEpilogue) b.setInsertionPointAfter(group.back());
    // The buffer the kernel writes: the ReLU's output where it absorbs the ReLU (out, the
    // temporary, then only the loop lowering's: a test of it would be one more user of out).
    Value written = runTimeEpilogue && runTimeEpilogue->result ? runTimeEpilogue->result : out;
    Value contiguous = g.kind != ConvolutionKind::kDepthwise ? RowsAreContiguous(b, loc, {written}) : Value();
    if (!contiguous) {
      b.setInsertionPoint(op);
      emit(op, epilogue);
      op->erase();
      continue;
    }
    auto [copy, copyEpilogue] = BranchOnCopy(b, contiguous, op, group, epilogue);
    emit(copy, copyEpilogue);
    copy->erase();
  }
  // Buffers nothing reads any more (a fused pad's, CPUConvolutionDepthwise.h) are not allocated.
  SmallVector<memref::AllocOp> unread;
  kernel.walk([&](memref::AllocOp alloc) {
    if (llvm::all_of(alloc->getUsers(), [](Operation* user) { return isa<memref::DeallocOp>(user); }))
      unread.push_back(alloc);
  });
  for (memref::AllocOp alloc : unread) {
    for (Operation* user : llvm::make_early_inc_range(alloc->getUsers())) user->erase();
    alloc->erase();
  }
  ErasePrepackedOperands(kernel);
}

}  // namespace hexir::codegen
