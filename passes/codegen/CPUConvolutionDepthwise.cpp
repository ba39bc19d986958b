// Emits the staged-plane depthwise kernel described in CPUConvolutionDepthwise.h.
#include "passes/codegen/CPUConvolutionDepthwise.h"

#include <algorithm>
#include <memory>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CPUForLoop.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// Output vectors of one step of the extended positions.
constexpr int64_t kVectorsPerStep = 4;

// The tile sizes, all static (the stack buffers' sizes follow from them).
struct StagedTiles {
  int64_t sh, sw, dh, dw, kh, kw;
  int64_t extraRows, extraColumns;  // (KH - 1) * dh / sh, (KW - 1) * dw / sw
  int64_t columns, rows;            // T and R at most
  int64_t lanes;
  int64_t pitch() const { return columns + extraColumns; }  // P at most
  // One phase plane: its rows, then a vector's gap that the whole-vector writes of its last
  // row may overrun without reaching the next plane.
  int64_t planeSize() const { return (rows + extraRows) * pitch() + lanes; }
  int64_t phases() const { return sh * sw; }
};

StagedTiles ChooseTiles(const ConvolutionGeometry& g, int64_t lanes, int64_t kh, int64_t kw, int64_t oh,
                        int64_t ow) {
  StagedTiles t;
  t.lanes = lanes;
  t.sh = g.strides[0], t.sw = g.strides[1], t.dh = g.dilations[0], t.dw = g.dilations[1];
  t.kh = kh, t.kw = kw;
  t.extraRows = (kh - 1) * t.dh / t.sh;
  t.extraColumns = (kw - 1) * t.dw / t.sw;
  t.columns = ShapedType::isDynamic(ow) ? kDepthwiseMaxColumns : std::min(ow, kDepthwiseMaxColumns);
  t.rows = std::max<int64_t>(1, kDepthwiseTileElements / t.pitch());
  if (!ShapedType::isDynamic(oh)) t.rows = std::min(t.rows, oh);
  return t;
}

// x as the kernel's zero pad of an unpadded source (a constant-zero pad fused into the
// convolution's dispatch, hexir-form-dispatch-regions' fuse-pads-into-depthwise): a buffer
// of x's shape written only by a fill of zero, then a copy of `source` into its window at
// rows [top, top + H) and columns [left, left + W), both before the convolution in its block.
// The kernel then stages its planes from `source` (zero outside it) and `writes` (the fill,
// the copy and its window) are erased: no padded copy is made.
struct ZeroPaddedSource {
  Value source;
  int64_t top = 0, left = 0;
  SmallVector<Operation*> writes;
};

bool IsZeroFill(Operation* op, Value buffer) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  if (!fill || fill.getOutputs()[0] != buffer) return false;
  auto value = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto f = value ? dyn_cast<FloatAttr>(value.getValue()) : FloatAttr();
  return f && f.getValue().isZero();
}

// The source of a copy (memref.copy or linalg.copy) into `target`, or null.
Value CopySource(Operation* op, Value target) {
  if (auto copy = dyn_cast<memref::CopyOp>(op)) return copy.getTarget() == target ? copy.getSource() : Value();
  if (auto copy = dyn_cast<linalg::CopyOp>(op))
    return copy.getOutputs()[0] == target && copy.hasPureBufferSemantics() ? copy.getInputs()[0] : Value();
  return Value();
}

// True when `v` is a view of an argument of the kernel (which reads its inputs only): the
// source then holds at the convolution what the copy read.
bool IsViewOfArgument(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (!isa<memref::SubViewOp, memref::CastOp, memref::ReinterpretCastOp>(def)) return false;
    v = def->getOperand(0);
  }
  return isa<BlockArgument>(v);
}

std::optional<ZeroPaddedSource> MatchZeroPaddedSource(Operation* conv, Value x, const StagedTiles& t) {
  auto alloc = x.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc.getType().getRank() != 4) return std::nullopt;
  Operation *fill = nullptr, *copy = nullptr;
  memref::SubViewOp window;
  ZeroPaddedSource pad;
  for (Operation* user : alloc->getUsers()) {
    if (user == conv || isa<memref::DeallocOp>(user)) continue;
    if (IsZeroFill(user, x) && !fill) {
      fill = user;
      continue;
    }
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view || window || !view->hasOneUse()) return std::nullopt;
    window = view;
    copy = *view->getUsers().begin();
    pad.source = CopySource(copy, view.getResult());
    if (!pad.source) return std::nullopt;
  }
  if (!fill || !window || !IsViewOfArgument(pad.source)) return std::nullopt;
  Block* block = conv->getBlock();
  if (fill->getBlock() != block || copy->getBlock() != block || window->getBlock() != block ||
      !fill->isBeforeInBlock(copy) || !copy->isBeforeInBlock(conv))
    return std::nullopt;
  // The window: all batches and channels (a workgroup's slice of them: maybe a run-time
  // extent, the buffer's own), the source's rows and columns (static extents, or a dynamic
  // pad's run-time ones: the sizes of the view of the source it copies,
  // CPUDynamicPad.h) at static offsets, unit strides.
  auto sourceType = dyn_cast<MemRefType>(pad.source.getType());
  ArrayRef<int64_t> offsets = window.getStaticOffsets(), strides = window.getStaticStrides();
  SmallVector<OpFoldResult> sizes = window.getMixedSizes(), padded = alloc.getMixedSizes();
  auto sourceView = pad.source.getDefiningOp<memref::SubViewOp>();
  auto isSourceExtent = [&](OpFoldResult size, int64_t d) {
    std::optional<int64_t> c = getConstantIntValue(size);
    if (c && *c == sourceType.getDimSize(d) && !ShapedType::isDynamic(*c)) return true;
    return sourceView && sourceView.getSourceType().getRank() == 4 &&
           isEqualConstantIntOrValue(size, sourceView.getMixedSizes()[d]);
  };
  if (!sourceType || sourceType.getRank() != 4 || offsets[0] != 0 || offsets[1] != 0 ||
      ShapedType::isDynamic(offsets[2]) || ShapedType::isDynamic(offsets[3]) ||
      !isSourceExtent(sizes[2], 2) || !isSourceExtent(sizes[3], 3) ||
      !isEqualConstantIntOrValue(sizes[0], padded[0]) || !isEqualConstantIntOrValue(sizes[1], padded[1]) ||
      llvm::any_of(strides, [](int64_t s) { return s != 1; }))
    return std::nullopt;
  // Rows of the source at unit stride (the staging's vector loads).
  SmallVector<int64_t> sourceStrides;
  int64_t sourceOffset;
  if (failed(sourceType.getStridesAndOffset(sourceStrides, sourceOffset)) || sourceStrides.back() != 1)
    return std::nullopt;
  pad.top = offsets[2], pad.left = offsets[3];
  // Pads within the window's reach (wider ones keep the padded copy).
  if (pad.top > (t.kh - 1) * t.dh || pad.left > (t.kw - 1) * t.dw) return std::nullopt;
  pad.writes = {copy, window, fill};
  return pad;
}

// The taps (i, j) that read at least one element of x (h x w, after a fused zero pad of
// `top` rows and `left` columns) at some output of an oh x ow plane, in row-major order; every
// tap when a plane takes several tiles or an extent is dynamic. On small padded planes most
// taps read only the pad: a 5x5 window over 2 x 2 outputs of a 2 x 2 input reads x with 9 of
// its 25 taps (MobileNetV3's and EfficientNet-B0's last stages), the other 16 multiply zeros.
SmallVector<int64_t> LiveTaps(const StagedTiles& t, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t top,
                              int64_t left) {
  bool onePlaneTile = !ShapedType::isDynamic(oh) && !ShapedType::isDynamic(ow) && oh <= t.rows && ow <= t.columns;
  bool known = onePlaneTile && !ShapedType::isDynamic(h) && !ShapedType::isDynamic(w);
  // True when some output o < extent of stride s reads an element in [0, size) through
  // offset `shift` (the tap's reach minus the pad).
  auto reaches = [](int64_t extent, int64_t s, int64_t shift, int64_t size) {
    for (int64_t o = 0; o < extent; ++o)
      if (o * s + shift >= 0 && o * s + shift < size) return true;
    return false;
  };
  SmallVector<int64_t> taps;
  for (int64_t i = 0; i < t.kh; ++i)
    for (int64_t j = 0; j < t.kw; ++j)
      if (!known || (reaches(oh, t.sh, i * t.dh - top, h) && reaches(ow, t.sw, j * t.dw - left, w)))
        taps.push_back(i * t.kw + j);
  return taps;
}

class StagedEmitter {
 public:
  StagedEmitter(OpBuilder& b, Location loc, int64_t lanes, const StagedTiles& t, SmallVector<int64_t> liveTaps,
                bool guardTaps, int64_t top = 0, int64_t left = 0)
      : b(b), loc(loc), lanes(lanes), t(t), liveTaps(std::move(liveTaps)), guardTaps(guardTaps), top(top), left(left),
        vec(VectorType::get({lanes}, b.getF32Type())), maskType(VectorType::get({lanes}, b.getI1Type())) {
    zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
  }

  // Buffer sizes, whole vectors: the staged planes and the slack the last plane's taps read
  // past (garbage positions only); the extended positions.
  int64_t stageSize() const { return roundUp(t.phases() * t.planeSize() + kVectorsPerStep * lanes + t.extraColumns); }
  int64_t extendedSize() const { return roundUp(t.rows * t.pitch() + kVectorsPerStep * lanes); }

  void zero(Value buffer, int64_t size) {
    forLoop(index(0), index(size), index(lanes),
            [&](Value i) { vector::StoreOp::create(b, loc, zeroVec, buffer, ValueRange{i}); });
  }

  // out[n][c] += depthwise(x[n][c], w[c]) for every n, c.
  void emit(Value x, Value w, Value out, Value stage, Value ext) {
    zero(stage, stageSize());
    zero(ext, extendedSize());
    Value n = dim(out, 0), f = dim(out, 1), oh = dim(out, 2), ow = dim(out, 3);
    Value height = dim(x, 2), width = dim(x, 3);
    Value tileRows = dynamicRows(ow);
    forLoop(index(0), n, index(1), [&](Value batch) {
      forLoop(index(0), f, index(1), [&](Value c) {
        forLoop(index(0), oh, tileRows, [&](Value r0) {
          Value rows = minU(tileRows, sub(oh, r0));
          forLoop(index(0), ow, index(t.columns), [&](Value q0) {
            Value columns = minU(index(t.columns), sub(ow, q0));
            Value pitch = add(columns, index(t.extraColumns));
            Plane plane{x, batch, c, height, width};
            stageTile(plane, stage, r0, q0, rows, pitch);
            Tile tile{plane, r0, q0, rows, columns};
            compute(w, c, stage, ext, mul(rows, pitch), pitch, guardTaps ? &tile : nullptr);
            accumulate(out, batch, c, ext, r0, q0, rows, columns, pitch);
          });
        });
      });
    });
  }

 private:
  int64_t roundUp(int64_t size) const { return (size + lanes - 1) / lanes * lanes; }

  // One channel's input plane x[n][c] and its extent.
  struct Plane {
    Value x, batch, channel, height, width;
  };

  // Stages the input rows of the output tile at (r0, q0): phase (a, b), row s, column k holds
  // x[n][c][(r0 + s) * sh + a - top][(q0 + k) * sw + b - left], zero outside x (past its last
  // row or column only positions outside the tile's outputs read; before its first, the pad).
  void stageTile(const Plane& plane, Value stage, Value r0, Value q0, Value rows, Value pitch) {
    Value stagedRows = add(rows, index(t.extraRows));
    Value from = mul(q0, index(t.sw));  // the first (padded) column the tile reads
    Value count = left ? Value() : minU(sub(plane.width, from), mul(pitch, index(t.sw)));
    for (int64_t a = 0; a < t.sh; ++a) {
      forLoop(index(0), stagedRows, index(1), [&](Value s) {
        Value at = add(mul(add(r0, s), index(t.sh)), index(a));
        if (top) at = sub(at, index(top));  // rows above x wrap past its height (unsigned)
        Value dst = add(index(a * t.sw * t.planeSize()), mul(s, pitch));
        auto inside = scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::ult, at, plane.height),
                                        /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(inside.thenBlock()->getTerminator());
        if (left)
          stageRowPadded(plane, at, from, stage, dst, pitch);
        else
          stageRow(plane, at, from, count, stage, dst, pitch);
        b.setInsertionPoint(inside.elseBlock()->getTerminator());
        for (int64_t p = 0; p < t.sw; ++p)
          forLoop(index(0), pitch, index(lanes), [&](Value k) {
            vector::StoreOp::create(b, loc, zeroVec, stage, ValueRange{add(add(dst, index(p * t.planeSize())), k)});
          });
      });
    }
  }

  // A row of a tile whose first columns may lie in the left pad: the staged columns from
  // `lead` on, the first whose every phase is at or right of x's column 0 (lead = ceil((left -
  // from) / sw), 0 past the first tile), are staged as by stageRow from x's column
  // from + lead * sw - left; the `lead` columns before, in every phase, one element each (x's
  // or zero).
  void stageRowPadded(const Plane& plane, Value row, Value from, Value stage, Value dst, Value pitch) {
    Value gap = arith::MaxSIOp::create(b, loc, sub(index(left), from), index(0));
    Value lead = arith::MinSIOp::create(b, loc, arith::DivUIOp::create(b, loc, add(gap, index(t.sw - 1)), index(t.sw)),
                                        pitch);
    Value start = sub(add(from, mul(lead, index(t.sw))), index(left));
    Value rest = sub(pitch, lead);
    Value count = arith::MinSIOp::create(b, loc, sub(plane.width, start), mul(rest, index(t.sw)));
    stageRow(plane, row, start, count, stage, add(dst, lead), rest);
    Type f32 = b.getF32Type();
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    forLoop(index(0), lead, index(1), [&](Value k) {
      for (int64_t p = 0; p < t.sw; ++p) {
        // x's column, wrapped past its width (unsigned) when left of column 0.
        Value column = sub(add(add(from, mul(k, index(t.sw))), index(p)), index(left));
        auto inside = scf::IfOp::create(b, loc, TypeRange{f32}, cmp(arith::CmpIPredicate::ult, column, plane.width),
                                        /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(inside.thenBlock());
          Value v = memref::LoadOp::create(b, loc, plane.x, ValueRange{plane.batch, plane.channel, row, column});
          scf::YieldOp::create(b, loc, v);
          b.setInsertionPointToStart(inside.elseBlock());
          scf::YieldOp::create(b, loc, zero);
        }
        memref::StoreOp::create(b, loc, inside.getResult(0), stage,
                                ValueRange{add(add(dst, k), index(p * t.planeSize()))});
      }
    });
  }

  // Phase b's row at dst + b * planeSize, columns k < pitch: x[n][c][row][from + k * sw + b]
  // for k * sw + b < count, zero after. Whole vectors are stored (past `pitch`: the next staged
  // row, written after this one, or the plane's gap). Stride 1 is one masked load a vector,
  // stride 2 (MobileNets') two masked loads and two shuffles for both phases, wider strides a
  // masked gather per phase.
  void stageRow(const Plane& plane, Value row, Value from, Value count, Value stage, Value dst, Value pitch) {
    auto xAt = [&](Value column) { return SmallVector<Value>{plane.batch, plane.channel, row, column}; };
    auto mask = [&](Value remaining) {
      return vector::CreateMaskOp::create(b, loc, maskType, ValueRange{remaining}).getResult();
    };
    if (t.sw == 1) {
      forLoop(index(0), pitch, index(lanes), [&](Value k) {
        Value v = vector::MaskedLoadOp::create(b, loc, vec, plane.x, xAt(add(from, k)), mask(sub(count, k)), zeroVec);
        vector::StoreOp::create(b, loc, v, stage, ValueRange{add(dst, k)});
      });
      return;
    }
    if (t.sw == 2) {
      SmallVector<int64_t> even, odd;
      for (int64_t i = 0; i < lanes; ++i) {
        even.push_back(2 * i);
        odd.push_back(2 * i + 1);
      }
      forLoop(index(0), pitch, index(lanes), [&](Value k) {
        Value k2 = mul(k, index(2));
        // Masks may be negative counts (no lane): create_mask clamps them.
        Value lo = vector::MaskedLoadOp::create(b, loc, vec, plane.x, xAt(add(from, k2)), mask(sub(count, k2)), zeroVec);
        Value k2hi = add(k2, index(lanes));
        Value hi = vector::MaskedLoadOp::create(b, loc, vec, plane.x, xAt(add(from, k2hi)), mask(sub(count, k2hi)), zeroVec);
        vector::StoreOp::create(b, loc, vector::ShuffleOp::create(b, loc, lo, hi, even), stage, ValueRange{add(dst, k)});
        vector::StoreOp::create(b, loc, vector::ShuffleOp::create(b, loc, lo, hi, odd), stage,
                                ValueRange{add(add(dst, k), index(t.planeSize()))});
      });
      return;
    }
    auto offsets = VectorType::get({lanes}, b.getI32Type());
    SmallVector<int32_t> strided;
    for (int64_t i = 0; i < lanes; ++i) strided.push_back(static_cast<int32_t>(i * t.sw));
    Value laneOffsets = arith::ConstantOp::create(b, loc, offsets, DenseElementsAttr::get(offsets, ArrayRef<int32_t>(strided)));
    forLoop(index(0), pitch, index(lanes), [&](Value k) {
      for (int64_t p = 0; p < t.sw; ++p) {
        // Lanes whose column k * sw + p + lane * sw is below count.
        Value start = add(mul(k, index(t.sw)), index(p));
        Value lanesIn = arith::DivSIOp::create(b, loc, add(sub(count, start), index(t.sw - 1)), index(t.sw));
        Value v = vector::GatherOp::create(b, loc, vec, plane.x, xAt(add(from, start)), laneOffsets, mask(lanesIn), zeroVec);
        vector::StoreOp::create(b, loc, v, stage, ValueRange{add(add(dst, k), index(p * t.planeSize()))});
      }
    });
  }

  // Rows of a tile: t.rows, or with a dynamic output width as many as the staged planes and
  // the extended positions hold at the plane's own pitch (min(T, OW) + extra columns; the
  // buffers are sized for T): a 16-wide plane takes 25 rows a tile instead of 7, as its
  // static kernel does (one tile, staged once, no restaging of the window's extra rows).
  Value dynamicRows(Value ow) {
    if (!guardTaps) return index(t.rows);
    Value pitch = add(minU(ow, index(t.columns)), index(t.extraColumns));
    Value byExtended = arith::DivUIOp::create(b, loc, index(t.rows * t.pitch()), pitch);
    Value byStage = sub(arith::DivUIOp::create(b, loc, index((t.rows + t.extraRows) * t.pitch()), pitch),
                        index(t.extraRows));
    return minU(byExtended, byStage);
  }

  // An output tile (rows x columns at (r0, q0)) of one plane.
  struct Tile {
    Plane plane;
    Value r0, q0, rows, columns;
  };

  // Whether tap (i, j) reads an element of x at some output of the tile: some of the rows
  // (r0 + r) * sh + i * dh - top, r < rows, and some of the columns (q0 + q) * sw + j * dw -
  // left, q < columns, lie in x (a superset: the first and the last of each, in order). The
  // others read only the staged zeros. Both bounds grow with i (j), so every tap reads x
  // when tap (0, 0)'s last row and column are at or past x's first and tap (KH - 1, KW - 1)'s
  // first ones before its end (`all`).
  Value reaches(Value first, Value count, int64_t s, int64_t shift, Value extent, bool lastAtOrPastZero) {
    Value lo = add(mul(first, index(s)), index(shift));
    if (!lastAtOrPastZero) return cmp(arith::CmpIPredicate::slt, lo, extent);
    Value hi = add(lo, mul(sub(count, index(1)), index(s)));
    return cmp(arith::CmpIPredicate::sge, hi, index(0));
  }
  Value tapReads(const Tile& tile, int64_t i, int64_t j) {
    Value rowIn = andI(reaches(tile.r0, tile.rows, t.sh, i * t.dh - top, tile.plane.height, true),
                       reaches(tile.r0, tile.rows, t.sh, i * t.dh - top, tile.plane.height, false));
    Value columnIn = andI(reaches(tile.q0, tile.columns, t.sw, j * t.dw - left, tile.plane.width, true),
                          reaches(tile.q0, tile.columns, t.sw, j * t.dw - left, tile.plane.width, false));
    return andI(rowIn, columnIn);
  }
  Value allTapsRead(const Tile& tile) {
    int64_t i = t.kh - 1, j = t.kw - 1;
    return andI(andI(reaches(tile.r0, tile.rows, t.sh, -top, tile.plane.height, true),
                     reaches(tile.q0, tile.columns, t.sw, -left, tile.plane.width, true)),
                andI(reaches(tile.r0, tile.rows, t.sh, i * t.dh - top, tile.plane.height, false),
                     reaches(tile.q0, tile.columns, t.sw, j * t.dw - left, tile.plane.width, false)));
  }

  // ext[e] for e < extended (see the header), kVectorsPerStep vectors a step, then one; the
  // live taps only (the others read zeros only). With a `tile` (dynamic extents), a tile
  // where some tap reads only zeros runs each tap under its condition (on small padded
  // planes most taps read only the pad: a 5x5 over 2 x 2 outputs, 9 of 25), the others the
  // unconditional steps.
  void compute(Value w, Value c, Value stage, Value ext, Value extended, Value pitch, const Tile* tile) {
    if (!tile) return computeSteps(w, c, stage, ext, extended, pitch, {});
    auto all = scf::IfOp::create(b, loc, allTapsRead(*tile), /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(all.thenBlock()->getTerminator());
    computeSteps(w, c, stage, ext, extended, pitch, {});
    b.setInsertionPoint(all.elseBlock()->getTerminator());
    SmallVector<Value> reading;
    for (int64_t i = 0; i < t.kh; ++i)
      for (int64_t j = 0; j < t.kw; ++j) reading.push_back(tapReads(*tile, i, j));
    computeSteps(w, c, stage, ext, extended, pitch, reading);
  }

  void computeSteps(Value w, Value c, Value stage, Value ext, Value extended, Value pitch, ArrayRef<Value> reading) {
    // Offset of tap (i, j)'s run in the staged buffer.
    SmallVector<Value> taps;
    for (int64_t i = 0; i < t.kh; ++i)
      for (int64_t j = 0; j < t.kw; ++j) {
        int64_t phase = ((i * t.dh) % t.sh) * t.sw + (j * t.dw) % t.sw;
        taps.push_back(add(index(phase * t.planeSize() + (j * t.dw) / t.sw), mul(index((i * t.dh) / t.sh), pitch)));
      }
    auto step = [&](Value e0, int64_t vectors) {
      SmallVector<Value> acc(2 * vectors, zeroVec);  // two partial sums per vector
      for (auto [n, tap] : llvm::enumerate(liveTaps)) {
        int64_t i = tap / t.kw, j = tap % t.kw;
        MutableArrayRef<Value> sums = MutableArrayRef<Value>(acc).slice((n % 2) * vectors, vectors);
        auto accumulate = [&]() {
          Value weight = memref::LoadOp::create(b, loc, w, ValueRange{c, index(0), index(i), index(j)});
          Value splat = vector::BroadcastOp::create(b, loc, vec, weight);
          Value at = add(taps[tap], e0);
          for (int64_t v = 0; v < vectors; ++v) {
            Value xv = vector::LoadOp::create(b, loc, vec, stage, ValueRange{add(at, index(v * lanes))});
            sums[v] = vector::FMAOp::create(b, loc, xv, splat, sums[v]);
          }
        };
        if (reading.empty()) {
          accumulate();
          continue;
        }
        SmallVector<Type> types(vectors, vec);
        auto tapIf = scf::IfOp::create(b, loc, types, reading[tap], /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(tapIf.elseBlock());
        scf::YieldOp::create(b, loc, ValueRange(sums));
        b.setInsertionPointToStart(tapIf.thenBlock());
        accumulate();
        scf::YieldOp::create(b, loc, ValueRange(sums));
        for (int64_t v = 0; v < vectors; ++v) sums[v] = tapIf.getResult(v);
      }
      for (int64_t v = 0; v < vectors; ++v) {
        Value sum = arith::AddFOp::create(b, loc, acc[v], acc[vectors + v]);
        vector::StoreOp::create(b, loc, sum, ext, ValueRange{add(e0, index(v * lanes))});
      }
    };
    const int64_t block = kVectorsPerStep * lanes;
    Value whole = sub(extended, arith::RemUIOp::create(b, loc, extended, index(block)));
    forLoop(index(0), whole, index(block), [&](Value e0) { step(e0, kVectorsPerStep); });
    forLoop(whole, extended, index(lanes), [&](Value e0) { step(e0, 1); });
  }

  // out[n][c][r0 + r][q0 + q] += ext[r * pitch + q] for r < rows, q < columns.
  void accumulate(Value out, Value batch, Value c, Value ext, Value r0, Value q0, Value rows, Value columns,
                  Value pitch) {
    forLoop(index(0), rows, index(1), [&](Value r) {
      forLoop(index(0), columns, index(lanes), [&](Value q) {
        Value mask = vector::CreateMaskOp::create(b, loc, maskType, ValueRange{sub(columns, q)});
        Value outAt[] = {batch, c, add(r0, r), add(q0, q)};
        Value acc = vector::MaskedLoadOp::create(b, loc, vec, out, outAt, mask, zeroVec);
        Value e = vector::LoadOp::create(b, loc, vec, ext, ValueRange{add(mul(r, pitch), q)});
        vector::MaskedStoreOp::create(b, loc, out, outAt, mask, arith::AddFOp::create(b, loc, acc, e));
      });
    });
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value m, int64_t i) { return memref::DimOp::create(b, loc, m, i); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value sub(Value l, Value r) { return arith::SubIOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, loc, l, r); }
  Value minU(Value l, Value r) { return arith::MinUIOp::create(b, loc, l, r); }
  Value andI(Value l, Value r) { return arith::AndIOp::create(b, loc, l, r); }
  Value cmp(arith::CmpIPredicate p, Value l, Value r) { return arith::CmpIOp::create(b, loc, p, l, r); }
  void forLoop(Value lb, Value ub, Value step, llvm::function_ref<void(Value)> body) {
    EmitForLoop(b, loc, lb, ub, step, body);
  }

  OpBuilder& b;
  Location loc;
  int64_t lanes;
  StagedTiles t;
  SmallVector<int64_t> liveTaps;  // LiveTaps: row-major i * KW + j
  bool guardTaps;                 // extents dynamic: each tile tests its taps (tapsReading)
  int64_t top, left;  // x's zero pad above and left (ZeroPaddedSource), 0 when x is the input
  VectorType vec, maskType;
  Value zeroVec;
};

// Static strides of a memref, or none.
std::optional<SmallVector<int64_t>> StaticStrides(Value v) {
  SmallVector<int64_t> strides;
  int64_t offset;
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || failed(type.getStridesAndOffset(strides, offset))) return std::nullopt;
  if (llvm::any_of(ArrayRef<int64_t>(strides).drop_front(), ShapedType::isDynamic)) return std::nullopt;
  return strides;
}

// Small static planes with channels in the lanes (see the header): per batch and block of
// `lanes` channels (the last masked), each input position the live taps read gathered once
// (x's channel stride apart), each live tap's weights gathered once, the outputs as
// oh * ow accumulators in registers, then out gathered, added and scattered once.
class ChannelLaneEmitter {
 public:
  ChannelLaneEmitter(OpBuilder& b, Location loc, int64_t lanes, const StagedTiles& t, int64_t h, int64_t w,
                     int64_t oh, int64_t ow, int64_t top, int64_t left)
      : b(b), loc(loc), lanes(lanes), t(t), h(h), w(w), oh(oh), ow(ow), top(top), left(left),
        vec(VectorType::get({lanes}, b.getF32Type())),
        maskType(VectorType::get({lanes}, b.getI1Type())),
        offsetType(VectorType::get({lanes}, b.getIndexType())) {}

  // The channel strides are static, or run-time values on a dynamic export's planes (a
  // plane-size variant, EmitDepthwiseConvolution).
  void emit(Value x, Value weights, Value out, OpFoldResult xChannel, OpFoldResult wChannel,
            OpFoldResult outChannel) {
    Value zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
    Value xOffsets = offsets(xChannel), wOffsets = offsets(wChannel), outOffsets = offsets(outChannel);
    Value c0 = index(0);
    Value n = memref::DimOp::create(b, loc, out, 0), f = memref::DimOp::create(b, loc, out, 1);
    EmitForLoop(b, loc, c0, n, index(1), [&](Value batch) {
      EmitForLoop(b, loc, c0, f, index(lanes), [&](Value c) {
        // The weights and inputs of the block after next (their gathers, lines apart, would
        // otherwise wait on L2/L3 one after another: a 1x1 before streams its filter through).
        prefetch(weights, {c, c0, c0, c0}, 0, t.kh * t.kw, wChannel, [&](int64_t e) {
          return SmallVector<Value>{index(0), index(e / t.kw), index(e % t.kw)};
        });
        prefetch(x, {batch, c, c0, c0}, 1, h * w, xChannel, [&](int64_t e) {
          return SmallVector<Value>{index(e / w), index(e % w)};
        });
        Value remaining = arith::SubIOp::create(b, loc, f, c);
        Value mask = vector::CreateMaskOp::create(b, loc, maskType, ValueRange{remaining});
        DenseMap<int64_t, Value> inputs;  // ih * w + iw -> x's lanes there
        SmallVector<Value> acc(oh * ow, zeroVec);
        for (int64_t i = 0; i < t.kh; ++i)
          for (int64_t j = 0; j < t.kw; ++j) {
            Value tapWeights;
            for (int64_t r = 0; r < oh; ++r)
              for (int64_t q = 0; q < ow; ++q) {
                int64_t ih = r * t.sh + i * t.dh - top, iw = q * t.sw + j * t.dw - left;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                if (!tapWeights)
                  tapWeights = vector::GatherOp::create(b, loc, vec, weights, ValueRange{c, c0, index(i), index(j)},
                                                        wOffsets, mask, zeroVec);
                Value& in = inputs[ih * w + iw];
                if (!in)
                  in = vector::GatherOp::create(b, loc, vec, x, ValueRange{batch, c, index(ih), index(iw)}, xOffsets,
                                                mask, zeroVec);
                acc[r * ow + q] = vector::FMAOp::create(b, loc, in, tapWeights, acc[r * ow + q]);
              }
          }
        for (int64_t r = 0; r < oh; ++r)
          for (int64_t q = 0; q < ow; ++q) {
            Value at[] = {batch, c, index(r), index(q)};
            Value old = vector::GatherOp::create(b, loc, vec, out, at, outOffsets, mask, zeroVec);
            Value sum = arith::AddFOp::create(b, loc, old, acc[r * ow + q]);
            vector::ScatterOp::create(b, loc, Type(), out, at, outOffsets, mask, sum);
          }
      });
    });
  }

 private:
  // One prefetch per cache line of the `lanes` channels kPrefetchBlocks blocks past `at`'s,
  // when each channel's elements (`size` of them) are contiguous and `stride` apart (dim
  // `channelDim`; `inner` maps an element of a channel to its indices past that dim).
  // A run-time stride is taken as `size` (a dense plane's; a prefetch elsewhere is only a
  // wasted hint).
  void prefetch(Value m, SmallVector<Value> at, int64_t channelDim, int64_t size, OpFoldResult stride,
                llvm::function_ref<SmallVector<Value>(int64_t)> inner) {
    std::optional<int64_t> known = getConstantIntValue(stride);
    if (known && *known != size) return;
    constexpr int64_t kPrefetchBlocks = 2, kLineFloats = 16;
    Value first = arith::AddIOp::create(b, loc, at[channelDim], index(kPrefetchBlocks * lanes));
    for (int64_t e = 0; e < lanes * size; e += kLineFloats) {
      SmallVector<Value> indices(at.begin(), at.begin() + channelDim);
      indices.push_back(arith::AddIOp::create(b, loc, first, index(e / size)));
      indices.append(inner(e % size));
      memref::PrefetchOp::create(b, loc, m, indices, /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
    }
  }

  // lane * stride for each lane.
  Value offsets(OpFoldResult stride) {
    SmallVector<int64_t> values;
    std::optional<int64_t> known = getConstantIntValue(stride);
    for (int64_t l = 0; l < lanes; ++l) values.push_back(l * known.value_or(1));
    Value steps =
        arith::ConstantOp::create(b, loc, offsetType, DenseElementsAttr::get(offsetType, ArrayRef<int64_t>(values)));
    if (known) return steps;
    Value strides = vector::BroadcastOp::create(b, loc, offsetType, cast<Value>(stride));
    return arith::MulIOp::create(b, loc, steps, strides);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  OpBuilder& b;
  Location loc;
  int64_t lanes;
  StagedTiles t;
  int64_t h, w, oh, ow, top, left;
  VectorType vec, maskType, offsetType;
};

// The square planes (h x h inputs, o x o outputs) small enough for the channel-lane kernel that
// a dynamic export's convolution of this geometry may see at run time: o = 1..4 outputs, each
// with the inputs of a same-padded window (a fused pad: h in [(o - 1) s + 1, o s]) or of an
// unpadded one (h in [(o - 1) s + (k - 1) d + 1, ... + s - 1]); static extents must match.
SmallVector<PlaneSize> ChannelLanePlaneSizes(const StagedTiles& t, bool padded, Value x, Value out) {
  SmallVector<PlaneSize> sizes;
  for (int64_t o = 1; o * o <= kDepthwiseChannelLanePositions; ++o)
    for (int64_t r = 0; r < std::max(t.sh, t.sw); ++r) {
      int64_t h = (o - 1) * t.sh + 1 + r + (padded ? 0 : (t.kh - 1) * t.dh);
      int64_t w = (o - 1) * t.sw + 1 + r + (padded ? 0 : (t.kw - 1) * t.dw);
      if (r >= t.sh || r >= t.sw || h * w > kDepthwiseChannelLaneInputs) continue;
      PlaneSize p{h, w, o, o};
      if (PlaneFitsStaticExtents(p, x, out)) sizes.push_back(p);
    }
  return sizes;
}

// A dynamic export's depthwise convolution on planes small enough for the channel lanes: a
// chain of run-time tests of the plane's extents, each taking the channel-lane kernel
// specialised on one PlaneSize (channel strides read at run time), the staged kernel in the
// last else region, which the returned op holds (none when no size applies or the operands'
// rows are not at unit stride, which the gathers need).
std::optional<scf::IfOp> EmitPlaneSizeVariants(OpBuilder& b, Location loc, int64_t lanes, const StagedTiles& t,
                                               bool padded, int64_t top, int64_t left, Value x, Value w, Value out) {
  auto unitRows = [](Value v) {
    SmallVector<int64_t> strides;
    int64_t offset;
    auto type = cast<MemRefType>(v.getType());
    return type.getRank() == 4 && succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
  };
  if (!unitRows(x) || !unitRows(w) || !unitRows(out)) return std::nullopt;
  SmallVector<PlaneSize> sizes = ChannelLanePlaneSizes(t, padded, x, out);
  if (sizes.empty()) return std::nullopt;
  auto channelStride = [&](Value m, int d) -> Value {
    return memref::ExtractStridedMetadataOp::create(b, loc, m).getStrides()[d];
  };
  Value xChannel = channelStride(x, 1), wChannel = channelStride(w, 0), outChannel = channelStride(out, 1);
  OpBuilder::InsertionGuard guard(b);
  for (const PlaneSize& p : sizes) {
    auto choice = scf::IfOp::create(b, loc, PlaneIs(b, loc, x, out, p), /*withElseRegion=*/true);
    b.setInsertionPointToStart(&choice.getThenRegion().front());
    ChannelLaneEmitter(b, loc, lanes, t, p.h, p.w, p.oh, p.ow, top, left)
        .emit(x, w, out, xChannel, wChannel, outChannel);
    b.setInsertionPointToStart(&choice.getElseRegion().front());
  }
  // The innermost else region holds the staged kernel: hand its if back.
  return cast<scf::IfOp>(b.getInsertionBlock()->getParentOp());
}

// The square planes that a staged kernel of static extents takes when a dynamic export meets
// them at run time: kStagedPlaneOutputs outputs (the stages of 64 x 64, 128 x 128 and 224 x 224
// images), each with the inputs its window reads (as ChannelLanePlaneSizes), less those the
// channel lanes take.
SmallVector<PlaneSize> StagedPlaneSizes(const StagedTiles& t, bool padded, Value x, Value out) {
  SmallVector<PlaneSize> sizes;
  for (int64_t o : kStagedPlaneOutputs)
    for (int64_t r = 0; r < std::min(t.sh, t.sw); ++r) {
      PlaneSize p{(o - 1) * t.sh + 1 + r + (padded ? 0 : (t.kh - 1) * t.dh),
                  (o - 1) * t.sw + 1 + r + (padded ? 0 : (t.kw - 1) * t.dw), o, o};
      if (o * o <= kDepthwiseChannelLanePositions && p.h * p.w <= kDepthwiseChannelLaneInputs) continue;
      if (PlaneFitsStaticExtents(p, x, out)) sizes.push_back(p);
    }
  return sizes;
}

// A 64-byte aligned stack buffer of `count` f32 at the kernel's entry.
Value AllocateAtEntry(func::FuncOp kernel, int64_t count) {
  OpBuilder b(kernel.getContext());
  b.setInsertionPointToStart(&kernel.getBody().front());
  auto type = MemRefType::get({count}, b.getF32Type());
  return memref::AllocaOp::create(b, kernel.getLoc(), type, b.getI64IntegerAttr(64));
}

}  // namespace

bool PlaneFitsStaticExtents(const PlaneSize& p, Value x, Value out) {
  auto xType = cast<MemRefType>(x.getType()), outType = cast<MemRefType>(out.getType());
  const int64_t staticSizes[] = {xType.getDimSize(2), xType.getDimSize(3), outType.getDimSize(2),
                                 outType.getDimSize(3)};
  const int64_t values[] = {p.h, p.w, p.oh, p.ow};
  for (int d = 0; d < 4; ++d)
    if (!ShapedType::isDynamic(staticSizes[d]) && !ShapedType::isDynamic(values[d]) && staticSizes[d] != values[d])
      return false;
  return true;
}

Value PlaneIs(OpBuilder& b, Location loc, Value x, Value out, const PlaneSize& p) {
  Value extents[] = {memref::DimOp::create(b, loc, x, 2), memref::DimOp::create(b, loc, x, 3),
                     memref::DimOp::create(b, loc, out, 2), memref::DimOp::create(b, loc, out, 3)};
  int64_t values[] = {p.h, p.w, p.oh, p.ow};
  Value matches;
  for (int d = 0; d < 4; ++d) {
    if (ShapedType::isDynamic(values[d])) continue;
    Value eq = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, extents[d],
                                     arith::ConstantIndexOp::create(b, loc, values[d]));
    matches = matches ? arith::AndIOp::create(b, loc, matches, eq).getResult() : eq;
  }
  return matches;
}

Value CastPlane(OpBuilder& b, Location loc, Value m, int64_t h, int64_t w) {
  auto type = cast<MemRefType>(m.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[2] = h, shape[3] = w;
  auto cast = MemRefType::get(shape, type.getElementType(), type.getLayout(), type.getMemorySpace());
  return memref::CastOp::create(b, loc, cast, m);
}

void EmitDepthwiseConvolution(OpBuilder& b, Location loc, func::FuncOp kernel, int64_t lanes,
                              const ConvolutionGeometry& g, Operation* convolution, Value x, Value w, Value out) {
  auto wType = cast<MemRefType>(w.getType());
  auto outType = cast<MemRefType>(out.getType());
  StagedTiles t = ChooseTiles(g, lanes, wType.getDimSize(2), wType.getDimSize(3), outType.getDimSize(2),
                              outType.getDimSize(3));
  std::optional<ZeroPaddedSource> pad = MatchZeroPaddedSource(convolution, x, t);
  auto sourceType = cast<MemRefType>((pad ? pad->source : x).getType());
  int64_t top = pad ? pad->top : 0, left = pad ? pad->left : 0;
  SmallVector<int64_t> live = LiveTaps(t, sourceType.getDimSize(2), sourceType.getDimSize(3), outType.getDimSize(2),
                                       outType.getDimSize(3), top, left);
  Value source = pad ? pad->source : x;
  const int64_t h = sourceType.getDimSize(2), width = sourceType.getDimSize(3);
  const int64_t oh = outType.getDimSize(2), ow = outType.getDimSize(3);
  std::optional<SmallVector<int64_t>> xStrides = StaticStrides(source), wStrides = StaticStrides(w),
                                      outStrides = StaticStrides(out);
  if (!ShapedType::isDynamic(h) && !ShapedType::isDynamic(width) && !ShapedType::isDynamic(oh) &&
      !ShapedType::isDynamic(ow) && oh * ow <= kDepthwiseChannelLanePositions &&
      h * width <= kDepthwiseChannelLaneInputs && xStrides && wStrides && outStrides && !ShapedType::isDynamic((*wStrides)[0]) &&
      wType.getDimSize(1) == 1) {
    ChannelLaneEmitter(b, loc, lanes, t, h, width, oh, ow, top, left)
        .emit(source, w, out, b.getIndexAttr((*xStrides)[1]), b.getIndexAttr((*wStrides)[0]),
              b.getIndexAttr((*outStrides)[1]));
    if (pad)
      for (Operation* write : pad->writes) write->erase();
    return;
  }
  // A static plane's dead taps are known above; a dynamic one's per tile.
  bool dynamicExtents = llvm::any_of(
      ArrayRef<int64_t>{sourceType.getDimSize(2), sourceType.getDimSize(3), outType.getDimSize(2), outType.getDimSize(3)},
      ShapedType::isDynamic);
  StagedEmitter e(b, loc, lanes, t, std::move(live), dynamicExtents, top, left);
  // Static-extent staged kernels for a few square planes, chosen at run time.
  SmallVector<std::pair<PlaneSize, std::unique_ptr<StagedEmitter>>> staged;
  int64_t stageSize = e.stageSize(), extendedSize = e.extendedSize();
  if (dynamicExtents)
    for (const PlaneSize& p : StagedPlaneSizes(t, pad.has_value(), source, out)) {
      StagedTiles pt = ChooseTiles(g, lanes, t.kh, t.kw, p.oh, p.ow);
      auto pe = std::make_unique<StagedEmitter>(b, loc, lanes, pt, LiveTaps(pt, p.h, p.w, p.oh, p.ow, top, left),
                                                /*guardTaps=*/false, top, left);
      stageSize = std::max(stageSize, pe->stageSize());
      extendedSize = std::max(extendedSize, pe->extendedSize());
      staged.push_back({p, std::move(pe)});
    }
  Value stage = AllocateAtEntry(kernel, stageSize);
  Value ext = AllocateAtEntry(kernel, extendedSize);
  std::optional<scf::IfOp> variants;
  if (dynamicExtents && wType.getDimSize(1) == 1)
    variants = EmitPlaneSizeVariants(b, loc, lanes, t, pad.has_value(), top, left, source, w, out);
  {
    OpBuilder::InsertionGuard guard(b);
    if (variants) b.setInsertionPointToStart(&variants->getElseRegion().front());
    for (auto& [p, pe] : staged) {
      auto choice = scf::IfOp::create(b, loc, PlaneIs(b, loc, source, out, p), /*withElseRegion=*/true);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      pe->emit(CastPlane(b, loc, source, p.h, p.w), w, CastPlane(b, loc, out, p.oh, p.ow), stage, ext);
      b.setInsertionPointToStart(&choice.getElseRegion().front());
    }
    e.emit(source, w, out, stage, ext);
  }
  if (pad)
    for (Operation* write : pad->writes) write->erase();
}

}  // namespace hexir::codegen
