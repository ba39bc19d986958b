// Dense convolutions on a prepacked filter (declared in CPUConvolutionKernel.h): the filter
// w[F][C][KH][KW] is B of the packed GEMM, packed once at load by
// hexir-cpu-pack-matmul-operands as ceil(F/NR) panels of K x NR (K = C * KH * KW), and the
// output positions are its rows:
//
//   C[p][f] += A[p][k] * B[k][f],   p = oh * OW + ow,  k = (c, kh, kw),  B[k][f] = w[f][k]
//   A[p][k] = x[n][c][oh * sh + kh * dh][ow * sw + kw * dw] = x_n[row(p) + tap(k)]
//
// A is never packed: a register tile's row keeps row(p) = oh * sh * pitch + ow * sw (in a
// general register: tiles of at most kPackedFilterMaxTileRows rows), and the
// k loop adds tap(k) = c * plane + kh * dh * pitch + kw * dw, read from a table of the K taps
// filled once per call (so no division in the loop). C is the NCHW output seen transposed:
// a register tile's accumulators start at zero and are added to out[n][f..][oh][ow] once per
// tile (K is one block): where the tile's r positions are consecutive in out (checked at
// run time unless constant; r a power of two), transposed in registers by log2(r) rounds of
// shuffles so that each filter's r positions are one vector (SqueezeNet's 3x3s over 3 x 3 to
// 15 x 15 planes 0.8-0.85x their time with the gather and scatter below); else each vector
// of filters at position p gathered, added to and scattered, f's plane stride apart (a plane
// of one position, filter stride 1, loads and stores it as one vector instead). Any strides of
// x and out work (a window of a larger plane, dynamic exports' strided outputs): nothing is
// checked at run time.
#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CPUForLoop.h"
#include "passes/codegen/CPUConvolutionDepthwise.h"
#include "passes/codegen/CPUConvolutionKernel.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// out[n][f][oh][ow] whose filter stride is statically 1: a plane of one position.
bool HasUnitFilterStride(Value out) {
  SmallVector<int64_t> strides;
  int64_t offset;
  auto type = cast<MemRefType>(out.getType());
  return succeeded(type.getStridesAndOffset(strides, offset)) && strides[1] == 1;
}

class PackedFilterEmitter {
 public:
  PackedFilterEmitter(OpBuilder& b, Location loc, const MatmulTiles& tiles)
      : b(b), loc(loc), t(tiles), vec(VectorType::get({tiles.lanes}, b.getF32Type())),
        offsets(VectorType::get({tiles.lanes}, b.getI32Type())),
        maskType(VectorType::get({tiles.lanes}, b.getI1Type())) {}

  void emit(const ConvolutionGeometry& g, Value x, Value out, Value taps, const PrepackedB& filter,
            int64_t c, int64_t kh, int64_t kw, const ConvolutionEpilogue& epilogue) {
    auto xMeta = memref::ExtractStridedMetadataOp::create(b, loc, x);
    auto outMeta = memref::ExtractStridedMetadataOp::create(b, loc, out);
    Value plane = xMeta.getStrides()[1], pitch = xMeta.getStrides()[2];
    // taps[(ci * KH + i) * KW + j] = ci * plane + i * dh * pitch + j * dw
    Value rowTap = mul(pitch, index(g.dilations[0]));
    forLoop(index(0), index(c), [&](Value ci) {
      forLoop(index(0), index(kh), [&](Value i) {
        forLoop(index(0), index(kw), [&](Value j) {
          Value k = add(mul(add(mul(ci, index(kh)), i), index(kw)), j);
          Value tap = add(add(mul(ci, plane), mul(i, rowTap)), mul(j, index(g.dilations[1])));
          memref::StoreOp::create(b, loc, tap, taps, ValueRange{k});
        });
      });
    });
    Value xv = flat(x, xMeta, dim(x, 1)), outv = flat(out, outMeta, dim(out, 1));
    Value filterStride = outMeta.getStrides()[1], outPitch = outMeta.getStrides()[2];
    Value n = dim(out, 0), filters = dim(out, 1), oh = dim(out, 2), ow = dim(out, 3);
    Value rowStep = mul(pitch, index(g.strides[0]));
    // Lane l of a vector of filters is l planes of out further.
    Value lanes = arith::MulIOp::create(
        b, loc, iota(), vector::BroadcastOp::create(b, loc, offsets, toI32(filterStride)));
    Value all = vector::ConstantMaskOp::create(b, loc, maskType, vector::ConstantMaskKind::AllTrue);
    Value zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
    // A plane of one position (squeeze-excitation's FCs, a classifier as a 1x1 convolution):
    // consecutive filters are consecutive in out, so a vector of filters is a plain load.
    const bool onePosition = HasUnitFilterStride(out);
    forLoop(index(0), n, [&](Value batch) {
      GemmCallbacks access;
      // Row p: {x offset of its window, out offset of its position}.
      access.row = [&](OpBuilder& nb, Value p) -> SmallVector<Value> {
        Value r = arith::DivUIOp::create(nb, loc, p, ow), q = arith::RemUIOp::create(nb, loc, p, ow);
        Value xAt = arith::AddIOp::create(nb, loc, arith::MulIOp::create(nb, loc, r, rowStep),
                                          arith::MulIOp::create(nb, loc, q, index(g.strides[1])));
        Value outAt = arith::AddIOp::create(nb, loc, arith::MulIOp::create(nb, loc, r, outPitch), q);
        return {xAt, outAt};
      };
      access.loadA = [&](OpBuilder& nb, GemmCallbacks::Values row, Value k) -> Value {
        Value tap = memref::LoadOp::create(nb, loc, taps, ValueRange{k});
        return memref::LoadOp::create(nb, loc, xv,
                                      ValueRange{batch, arith::AddIOp::create(nb, loc, row[0], tap)});
      };
      auto at = [&](OpBuilder& nb, GemmCallbacks::Values row, Value f) -> Value {
        return arith::AddIOp::create(nb, loc, arith::MulIOp::create(nb, loc, f, filterStride), row[1]);
      };
      access.loadC = [&](OpBuilder& nb, GemmCallbacks::Values row, Value f, Value mask) -> Value {
        ValueRange indices{batch, at(nb, row, f)};
        if (onePosition)
          return mask ? Value(vector::MaskedLoadOp::create(nb, loc, vec, outv, indices, mask, zeroVec))
                      : Value(vector::LoadOp::create(nb, loc, vec, outv, indices));
        return vector::GatherOp::create(nb, loc, vec, outv, indices, lanes, mask ? mask : all, zeroVec);
      };
      access.storeC = [&](OpBuilder& nb, GemmCallbacks::Values row, Value f, Value mask, Value v) {
        ValueRange indices{batch, at(nb, row, f)};
        if (onePosition && mask)
          vector::MaskedStoreOp::create(nb, loc, outv, indices, mask, v);
        else if (onePosition)
          vector::StoreOp::create(nb, loc, v, outv, indices);
        else
          vector::ScatterOp::create(nb, loc, Type(), outv, indices, lanes, mask ? mask : all, v);
      };
      // The tile added to out at once: its positions are consecutive in out (the tile inside
      // one output row, or out's plane one run), so each filter's are one vector of the
      // tile's rows, the accumulators transposed in registers (AddTransposed); else, and for
      // tiles of one row or of rows no power of two, each vector of filters gathered, added
      // to and scattered.
      if (!onePosition)
        access.addTile = [&](OpBuilder& nb, ArrayRef<SmallVector<Value>> rows, Value f, ArrayRef<Value> masks,
                             ValueRange acc, bool store) {
          const int64_t r = static_cast<int64_t>(rows.size());
          auto scattered = [&](OpBuilder& sb) {
            for (int64_t i = 0; i < r; ++i)
              for (int64_t v = 0; v < t.vectors; ++v) {
                Value mask = masks.empty() ? all : masks[v];
                ValueRange indices{batch, at(sb, rows[i], arith::AddIOp::create(sb, loc, f, index(v * t.lanes)))};
                Value sum = acc[i * t.vectors + v];
                if (!store)
                  sum = arith::AddFOp::create(
                      sb, loc, vector::GatherOp::create(sb, loc, vec, outv, indices, lanes, mask, zeroVec), sum);
                vector::ScatterOp::create(sb, loc, Type(), outv, indices, lanes, mask, sum);
              }
          };
          if (r < 2 || !llvm::isPowerOf2_64(r) || r > t.lanes) return scattered(nb);
          Value consecutive = arith::CmpIOp::create(
              nb, loc, arith::CmpIPredicate::eq, rows[r - 1][1],
              arith::AddIOp::create(nb, loc, rows[0][1], index(r - 1)));
          scf::IfOp::create(
              nb, loc, consecutive,
              [&](OpBuilder& tb, Location) {
                AddTransposed(tb, batch, outv, filterStride, f, rows[0][1], r, acc, masks, store);
                scf::YieldOp::create(tb, loc);
              },
              [&](OpBuilder& eb, Location) {
                scattered(eb);
                scf::YieldOp::create(eb, loc);
              });
        };
      // A static plane's positions as a constant: the GEMM streams the panels of a few.
      auto outType = cast<MemRefType>(out.getType());
      Value positions = outType.isDynamicDim(2) || outType.isDynamicDim(3)
                            ? mul(oh, ow)
                            : index(outType.getDimSize(2) * outType.getDimSize(3));
      EmitPrepackedGemm(b, loc, t, filter, positions, filters, index(c * kh * kw), access,
                        FilterColumnsEpilogue(epilogue));
    });
  }

 private:
  // The epilogue on the GEMM's columns (the filters): a vector of filters [n, n + lanes)
  // starts at bias[n..] (masked past F), or the fill value.
  GemmEpilogue FilterColumnsEpilogue(const ConvolutionEpilogue& epilogue) {
    GemmEpilogue e;
    e.relu = epilogue.relu;
    if (!epilogue.initializes()) return e;
    e.init = [this, epilogue](OpBuilder& nb, Value, Value n, Value mask) -> Value {
      if (epilogue.fill) return vector::BroadcastOp::create(nb, loc, vec, epilogue.fill);
      if (!mask) return vector::LoadOp::create(nb, loc, vec, epilogue.bias, ValueRange{n});
      Value zero = arith::ConstantOp::create(nb, loc, vec, DenseElementsAttr::get(vec, 0.0f));
      return vector::MaskedLoadOp::create(nb, loc, vec, epilogue.bias, ValueRange{n}, mask, zero);
    };
    return e;
  }

  // out[batch][(f + l) * filterStride + p0, +r) += column l of the r x NR tile acc (row i's
  // vector v: filters f + v * lanes, +lanes). Per vector of filters, the r row vectors are
  // transposed by log2(r) rounds of two-source shuffles (each pairs two vectors holding the
  // same filters for blocks of adjacent rows, and keeps half the filters for twice the rows),
  // after which each vector holds lanes / r filters' r rows; each filter's slice is then
  // loaded, added to and stored as one vector of r lanes (masked off past F).
  // With `store`, the slices are stored instead (out is not read).
  void AddTransposed(OpBuilder& nb, Value batch, Value outv, Value filterStride, Value f, Value p0, int64_t r,
                     ValueRange acc, ArrayRef<Value> masks, bool store) {
    struct Held {
      SmallVector<std::pair<int64_t, int64_t>> lanes;  // (row, filter) of each lane
      Value value;
    };
    auto rowType = VectorType::get({r}, b.getF32Type());
    Value zeroRow = arith::ConstantOp::create(nb, loc, rowType, DenseElementsAttr::get(rowType, 0.0f));
    for (int64_t v = 0; v < t.vectors; ++v) {
      SmallVector<Held> held;
      for (int64_t i = 0; i < r; ++i) {
        Held h{{}, acc[i * t.vectors + v]};
        for (int64_t l = 0; l < t.lanes; ++l) h.lanes.push_back({i, l});
        held.push_back(h);
      }
      auto filtersOf = [](const Held& h) {
        SmallVector<int64_t> fs;
        for (auto [row, filter] : h.lanes)
          if (!llvm::is_contained(fs, filter)) fs.push_back(filter);
        return fs;
      };
      for (int64_t block = 1; block < r; block *= 2) {
        SmallVector<Held> next;
        SmallVector<bool> used(held.size(), false);
        for (size_t a = 0; a < held.size(); ++a) {
          if (used[a]) continue;
          SmallVector<int64_t> fs = filtersOf(held[a]);
          size_t c = a + 1;
          while (used[c] || filtersOf(held[c]) != fs) ++c;
          used[a] = used[c] = true;
          SmallVector<int64_t> rowsHeld;
          for (const Held* h : {&held[a], &held[c]})
            for (auto [row, filter] : h->lanes)
              if (!llvm::is_contained(rowsHeld, row)) rowsHeld.push_back(row);
          llvm::sort(rowsHeld);
          const size_t half = fs.size() / 2;
          for (int part = 0; part < 2; ++part) {
            Held out{{}, Value()};
            SmallVector<int64_t> mask;
            for (size_t j = part * half; j < (part + 1) * half; ++j)
              for (int64_t row : rowsHeld) {
                std::pair<int64_t, int64_t> want{row, fs[j]};
                auto* inA = llvm::find(held[a].lanes, want);
                mask.push_back(inA != held[a].lanes.end()
                                   ? inA - held[a].lanes.begin()
                                   : t.lanes + (llvm::find(held[c].lanes, want) - held[c].lanes.begin()));
                out.lanes.push_back(want);
              }
            out.value = vector::ShuffleOp::create(nb, loc, held[a].value, held[c].value, mask);
            next.push_back(out);
          }
        }
        held = std::move(next);
      }
      // Each vector now holds lanes / r filters, each as its r rows in order.
      for (const Held& h : held)
        for (int64_t j = 0; j < t.lanes; j += r) {
          const int64_t filter = h.lanes[j].second;
          Value slice = vector::ExtractStridedSliceOp::create(nb, loc, h.value, ArrayRef<int64_t>{j},
                                                              ArrayRef<int64_t>{r}, ArrayRef<int64_t>{1});
          Value fl = arith::AddIOp::create(nb, loc, f, index(v * t.lanes + filter));
          ValueRange indices{batch, arith::AddIOp::create(nb, loc, arith::MulIOp::create(nb, loc, fl, filterStride), p0)};
          if (masks.empty()) {
            Value sum = store ? slice
                              : Value(arith::AddFOp::create(
                                    nb, loc, vector::LoadOp::create(nb, loc, rowType, outv, indices), slice));
            vector::StoreOp::create(nb, loc, sum, outv, indices);
            continue;
          }
          Value live = vector::BroadcastOp::create(nb, loc, VectorType::get({r}, b.getI1Type()),
                                                   vector::ExtractOp::create(nb, loc, masks[v], ArrayRef<int64_t>{filter}));
          Value sum = store ? slice
                            : Value(arith::AddFOp::create(
                                  nb, loc, vector::MaskedLoadOp::create(nb, loc, rowType, outv, indices, live, zeroRow),
                                  slice));
          vector::MaskedStoreOp::create(nb, loc, outv, indices, live, sum);
        }
    }
  }

  // m[n][c][h][w] as [n][c * plane] with unit inner stride (the planes' elements at their
  // offsets from the start of the batch).
  Value flat(Value m, memref::ExtractStridedMetadataOp meta, Value channels) {
    auto type = cast<MemRefType>(m.getType());
    int64_t d = ShapedType::kDynamic;
    auto layout = StridedLayoutAttr::get(b.getContext(), d, {d, 1});
    auto view = MemRefType::get({d, d}, type.getElementType(), layout, type.getMemorySpace());
    SmallVector<OpFoldResult> sizes{OpFoldResult(dim(m, 0)), OpFoldResult(mul(channels, meta.getStrides()[1]))};
    SmallVector<OpFoldResult> strides{OpFoldResult(meta.getStrides()[0]), b.getIndexAttr(1)};
    return memref::ReinterpretCastOp::create(b, loc, view, m, OpFoldResult(meta.getOffset()), sizes, strides);
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value m, int64_t i) { return memref::DimOp::create(b, loc, m, i); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, loc, l, r); }
  Value toI32(Value v) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), v); }
  Value iota() {
    SmallVector<int32_t> lanes;
    for (int64_t i = 0; i < t.lanes; ++i) lanes.push_back(static_cast<int32_t>(i));
    return arith::ConstantOp::create(b, loc, offsets,
                                     DenseElementsAttr::get(offsets, ArrayRef<int32_t>(lanes)));
  }
  void forLoop(Value lb, Value ub, llvm::function_ref<void(Value)> body) {
    EmitForLoop(b, loc, lb, ub, index(1), body);
  }

  OpBuilder& b;
  Location loc;
  const MatmulTiles& t;
  VectorType vec, offsets, maskType;
};

}  // namespace

bool TakesPackedFilter(linalg::LinalgOp op, const ConvolutionGeometry& g, const MatmulTiles& tiles) {
  if (g.kind != ConvolutionKind::kDense) return false;
  Value x = op.getDpsInputs()[0], w = op.getDpsInputs()[1], out = op.getDpsInits()[0];
  auto wType = dyn_cast<MemRefType>(w.getType());
  // F may be dynamic (the last workgroup's slice of filters), C x KH x KW not.
  if (!wType || wType.isDynamicDim(1) || wType.isDynamicDim(2) || wType.isDynamicDim(3) ||
      !isa<MemRefType>(x.getType()) || !isa<MemRefType>(out.getType()))
    return false;
  if (wType.getDimSize(1) * wType.getDimSize(2) * wType.getDimSize(3) > kMaxPackedFilterDepth) return false;
  std::optional<int64_t> nr = PrepackedOperandPanelWidth(w, 0);
  return nr && *nr == tiles.columns();
}

bool LowerConvolutionOnPackedFilter(func::FuncOp kernel, linalg::LinalgOp op,
                                    const ConvolutionGeometry& g, const MatmulTiles& tiles,
                                    const ConvolutionEpilogue& epilogue) {
  if (!TakesPackedFilter(op, g, tiles)) return false;
  Value x = op.getDpsInputs()[0], w = op.getDpsInputs()[1], out = op.getDpsInits()[0];
  auto wType = cast<MemRefType>(w.getType());
  const int64_t c = wType.getDimSize(1), kh = wType.getDimSize(2), kw = wType.getDimSize(3);
  OpBuilder b(op);
  std::optional<PrepackedB> filter = FindPrepackedOperand(b, w, 0);
  OpBuilder entry = OpBuilder::atBlockBegin(&kernel.getBody().front());
  Value taps = memref::AllocaOp::create(entry, op.getLoc(),
                                        MemRefType::get({c * kh * kw}, entry.getIndexType()),
                                        entry.getI64IntegerAttr(64));
  // A C tile is gathered and scattered once per KC block: one block of all K (B's panels
  // are read in place, nothing is packed per block; a panel of K x NR streams from L2).
  // Tiles of at most kPackedFilterMaxTileRows rows: each row's x address is a register.
  MatmulTiles deeper = tiles;
  deeper.depth = std::max(tiles.depth, c * kh * kw);
  deeper.rows = std::min(tiles.rows, kPackedFilterMaxTileRows);
  deeper.rowBlock = std::max(deeper.rows, tiles.rowBlock / deeper.rows * deeper.rows);
  Location loc = op.getLoc();
  auto emit = [&](Value on) {
    PackedFilterEmitter(b, loc, deeper).emit(g, x, on, taps, *filter, c, kh, kw, epilogue);
  };
  // A run-time out plane (a dynamic export) is first tested for each o of
  // kPackedFilterPlaneOutputs: there the GEMM's rows are a constant, and a GEMM of one
  // register tile streams its panels (prefetched) as in a static export (RegNetY-400MF's
  // 440 -> 440 1x1s over 2 x 2, the filter from L3 or memory each call).
  auto outType = cast<MemRefType>(out.getType());
  if (outType.isDynamicDim(2) || outType.isDynamicDim(3)) {
    for (int64_t o : kPackedFilterPlaneOutputs) {
      const PlaneSize plane{ShapedType::kDynamic, ShapedType::kDynamic, o, o};
      if (!PlaneFitsStaticExtents(plane, x, out)) continue;
      auto choice = scf::IfOp::create(b, loc, PlaneIs(b, loc, x, out, plane), /*withElseRegion=*/true);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      emit(CastPlane(b, loc, out, o, o));
      b.setInsertionPointToStart(&choice.getElseRegion().front());
    }
  }
  emit(out);
  return true;
}

}  // namespace hexir::codegen
