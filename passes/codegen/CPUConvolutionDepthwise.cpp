// Emits the depthwise convolution kernels described in CPUConvolutionDepthwise.h.
#include "passes/codegen/CPUConvolutionDepthwise.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CPUForLoop.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// A memref seen as one unit-stride run from its base (gathers and scatters address it by
// element offsets), with its strides.
struct FlatView {
  Value flat;
  SmallVector<Value> strides;
};

class DepthwiseEmitter {
 public:
  DepthwiseEmitter(OpBuilder& b, Location loc, const MatmulTiles& tiles, const ConvolutionGeometry& g,
                   int64_t kh, int64_t kw)
      : b(b), loc(loc), lanes(tiles.lanes), g(g), kh(kh), kw(kw),
        vec(VectorType::get({tiles.lanes}, b.getF32Type())),
        offsets(VectorType::get({tiles.lanes}, b.getI32Type())),
        maskType(VectorType::get({tiles.lanes}, b.getI1Type())) {
    zeroVec = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
  }

  // Rows and columns of the input window a full channel-lane tile reads.
  int64_t windowRows() const { return (kDepthwiseTileRows - 1) * g.strides[0] + (kh - 1) * g.dilations[0] + 1; }
  int64_t windowColumns() const {
    return (kDepthwiseTileColumns - 1) * g.strides[1] + (kw - 1) * g.dilations[1] + 1;
  }

  // True when every lane offset (channel stride x lane) of the channel-lane nest fits an i32
  // and the row nest would not fill its vectors.
  Value prefersChannelLanes(const FlatView& x, const FlatView& w, const FlatView& out, Value ow) {
    Value limit = index(int64_t{1} << 31);
    Value fits = cmp(arith::CmpIPredicate::ult, mul(x.strides[1], index(lanes)), limit);
    fits = andI(fits, cmp(arith::CmpIPredicate::ult, mul(out.strides[1], index(lanes)), limit));
    fits = andI(fits, cmp(arith::CmpIPredicate::ult, mul(w.strides[0], index(lanes)), limit));
    if (g.strides[1] != 1) return fits;
    return andI(fits, cmp(arith::CmpIPredicate::ult, ow, index(2 * lanes)));
  }

  FlatView flatten(Value m) {
    auto type = cast<MemRefType>(m.getType());
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
    int64_t d = ShapedType::kDynamic;
    auto view = MemRefType::get({d}, type.getElementType(),
                                StridedLayoutAttr::get(b.getContext(), d, {1}), type.getMemorySpace());
    // Its reach: dim 0 times its stride bounds every element of m.
    Value size = mul(meta.getSizes()[0], meta.getStrides()[0]);
    Value flat = memref::ReinterpretCastOp::create(b, loc, view, m, OpFoldResult(meta.getOffset()),
                                                   SmallVector<OpFoldResult>{size},
                                                   SmallVector<OpFoldResult>{b.getIndexAttr(1)});
    return {flat, SmallVector<Value>(meta.getStrides())};
  }

  // out[n][c0 + lane][oh][ow] per block of `lanes` channels; see the header.
  void channelLanes(const FlatView& x, const FlatView& w, const FlatView& out, Value n, Value f,
                    Value oh, Value ow, Value window, Value weights) {
    Value xLanes = laneOffsets(x.strides[1]), outLanes = laneOffsets(out.strides[1]);
    Value wLanes = laneOffsets(w.strides[0]);
    const int64_t columns = windowColumns();
    forLoop(index(0), f, index(lanes), [&](Value c0) {
      Value mask = vector::CreateMaskOp::create(b, loc, maskType, ValueRange{sub(f, c0)});
      // The block's weights, one vector per tap (w's inner dims are one run: [KH][KW]).
      Value wBase = mul(c0, w.strides[0]);
      for (int64_t t = 0; t < kh * kw; ++t) {
        Value v = gather(w.flat, add(wBase, index(t)), wLanes, mask);
        vector::StoreOp::create(b, loc, v, weights, ValueRange{index(t * lanes)});
      }
      forLoop(index(0), n, index(1), [&](Value batch) {
        Value xBatch = add(mul(batch, x.strides[0]), mul(c0, x.strides[1]));
        Value outBatch = add(mul(batch, out.strides[0]), mul(c0, out.strides[1]));
        forLoop(index(0), oh, index(kDepthwiseTileRows), [&](Value r0) {
          Value rows = minU(index(kDepthwiseTileRows), sub(oh, r0));
          Value inRows = add(mul(sub(rows, index(1)), index(g.strides[0])),
                             index((kh - 1) * g.dilations[0] + 1));
          forLoop(index(0), ow, index(kDepthwiseTileColumns), [&](Value q0) {
            Value cols = minU(index(kDepthwiseTileColumns), sub(ow, q0));
            Value inCols = add(mul(sub(cols, index(1)), index(g.strides[1])),
                               index((kw - 1) * g.dilations[1] + 1));
            // The tile's input window, [row][column][channel].
            Value xTile = add(xBatch, add(mul(mul(r0, index(g.strides[0])), x.strides[2]),
                                          mul(q0, index(g.strides[1]))));
            forLoop(index(0), inRows, index(1), [&](Value i) {
              Value from = add(xTile, mul(i, x.strides[2]));
              Value to = mul(i, index(columns * lanes));
              forLoop(index(0), inCols, index(1), [&](Value j) {
                Value v = gather(x.flat, add(from, j), xLanes, mask);
                vector::StoreOp::create(b, loc, v, window, ValueRange{add(to, mul(j, index(lanes)))});
              });
            });
            forLoop(index(0), rows, index(1), [&](Value r) {
              Value outRow = add(outBatch, add(mul(add(r0, r), out.strides[2]), q0));
              Value bufRow = mul(r, index(g.strides[0] * columns * lanes));
              Value whole = sub(cols, arith::RemUIOp::create(b, loc, cols, index(kDepthwiseOutputsPerStep)));
              auto outputs = [&](Value q, int64_t count) {
                Value bufAt = add(bufRow, mul(q, index(g.strides[1] * lanes)));
                SmallVector<Value> acc;
                for (int64_t k = 0; k < count; ++k)
                  acc.push_back(gather(out.flat, add(outRow, add(q, index(k))), outLanes, mask));
                for (int64_t i = 0; i < kh; ++i)
                  for (int64_t j = 0; j < kw; ++j) {
                    Value wv = vector::LoadOp::create(b, loc, vec, weights, ValueRange{index((i * kw + j) * lanes)});
                    for (int64_t k = 0; k < count; ++k) {
                      int64_t at = (i * g.dilations[0] * columns + j * g.dilations[1] + k * g.strides[1]) * lanes;
                      Value xv = vector::LoadOp::create(b, loc, vec, window, ValueRange{add(bufAt, index(at))});
                      acc[k] = vector::FMAOp::create(b, loc, xv, wv, acc[k]);
                    }
                  }
                for (int64_t k = 0; k < count; ++k)
                  vector::ScatterOp::create(b, loc, Type(), out.flat, ValueRange{add(outRow, add(q, index(k)))},
                                            outLanes, mask, acc[k]);
              };
              forLoop(index(0), whole, index(kDepthwiseOutputsPerStep),
                      [&](Value q) { outputs(q, kDepthwiseOutputsPerStep); });
              forLoop(whole, cols, index(1), [&](Value q) { outputs(q, 1); });
            });
          });
        });
      });
    });
  }

  // out[n][f][oh][ow..] += sum over (kh, kw) of w[f][0][kh][kw] * x[n][f][ih][iw..], one
  // vector of ow at a time, the taps unrolled.
  void outputRows(Value x, Value w, Value out, Value n, Value f, Value oh, Value ow) {
    Value laneStride = arith::MulIOp::create(b, loc, iota(), splatI32(g.strides[1]));
    forLoop(index(0), n, index(1), [&](Value batch) {
      forLoop(index(0), f, index(1), [&](Value channel) {
        forLoop(index(0), oh, index(1), [&](Value row) {
          forLoop(index(0), ow, index(lanes), [&](Value ow0) {
            Value mask = vector::CreateMaskOp::create(b, loc, maskType, ValueRange{sub(ow, ow0)});
            Value outAt[] = {batch, channel, row, ow0};
            Value acc = vector::MaskedLoadOp::create(b, loc, vec, out, outAt, mask, zeroVec);
            for (int64_t i = 0; i < kh; ++i) {
              Value ih = add(mul(row, index(g.strides[0])), index(i * g.dilations[0]));
              for (int64_t j = 0; j < kw; ++j) {
                Value weight = memref::LoadOp::create(b, loc, w, ValueRange{channel, index(0), index(i), index(j)});
                Value splat = vector::BroadcastOp::create(b, loc, vec, weight);
                Value iw = add(mul(ow0, index(g.strides[1])), index(j * g.dilations[1]));
                Value xAt[] = {batch, channel, ih, iw};
                Value lanesX = g.strides[1] == 1
                                   ? Value(vector::MaskedLoadOp::create(b, loc, vec, x, xAt, mask, zeroVec))
                                   : Value(vector::GatherOp::create(b, loc, vec, x, xAt, laneStride, mask, zeroVec));
                acc = vector::FMAOp::create(b, loc, lanesX, splat, acc);
              }
            }
            vector::MaskedStoreOp::create(b, loc, out, outAt, mask, acc);
          });
        });
      });
    });
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value m, int64_t i) { return memref::DimOp::create(b, loc, m, i); }

 private:
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value sub(Value l, Value r) { return arith::SubIOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, loc, l, r); }
  Value minU(Value l, Value r) { return arith::MinUIOp::create(b, loc, l, r); }
  Value andI(Value l, Value r) { return arith::AndIOp::create(b, loc, l, r); }
  Value cmp(arith::CmpIPredicate p, Value l, Value r) { return arith::CmpIOp::create(b, loc, p, l, r); }
  Value splatI32(int64_t v) {
    return arith::ConstantOp::create(b, loc, offsets, DenseElementsAttr::get(offsets, static_cast<int32_t>(v)));
  }
  Value iota() {
    SmallVector<int32_t> values;
    for (int64_t i = 0; i < lanes; ++i) values.push_back(static_cast<int32_t>(i));
    return arith::ConstantOp::create(b, loc, offsets, DenseElementsAttr::get(offsets, ArrayRef<int32_t>(values)));
  }
  // lane * stride as i32 lanes (prefersChannelLanes checked that they fit).
  Value laneOffsets(Value stride) {
    Value s = arith::IndexCastOp::create(b, loc, b.getI32Type(), stride);
    return arith::MulIOp::create(b, loc, iota(), vector::BroadcastOp::create(b, loc, offsets, s));
  }
  Value gather(Value flat, Value at, Value laneOffsets, Value mask) {
    return vector::GatherOp::create(b, loc, vec, flat, ValueRange{at}, laneOffsets, mask, zeroVec);
  }
  void forLoop(Value lb, Value ub, Value step, llvm::function_ref<void(Value)> body) {
    EmitForLoop(b, loc, lb, ub, step, body);
  }

  OpBuilder& b;
  Location loc;
  int64_t lanes;
  ConvolutionGeometry g;
  int64_t kh, kw;
  VectorType vec, offsets, maskType;
  Value zeroVec;
};

// A 64-byte aligned stack buffer of `count` f32 at the kernel's entry.
Value AllocateAtEntry(func::FuncOp kernel, int64_t count) {
  OpBuilder b(kernel.getContext());
  b.setInsertionPointToStart(&kernel.getBody().front());
  auto type = MemRefType::get({count}, b.getF32Type());
  return memref::AllocaOp::create(b, kernel.getLoc(), type, b.getI64IntegerAttr(64));
}

}  // namespace

void EmitDepthwiseConvolution(OpBuilder& b, Location loc, func::FuncOp kernel, const MatmulTiles& tiles,
                              const ConvolutionGeometry& g, Value x, Value w, Value out) {
  auto wType = cast<MemRefType>(w.getType());
  int64_t kh = wType.getDimSize(2), kw = wType.getDimSize(3);
  DepthwiseEmitter e(b, loc, tiles, g, kh, kw);
  Value window = AllocateAtEntry(kernel, e.windowRows() * e.windowColumns() * tiles.lanes);
  Value weights = AllocateAtEntry(kernel, kh * kw * tiles.lanes);
  Value n = e.dim(out, 0), f = e.dim(out, 1), oh = e.dim(out, 2), ow = e.dim(out, 3);
  FlatView xf = e.flatten(x), wf = e.flatten(w), of = e.flatten(out);
  auto branch = scf::IfOp::create(b, loc, e.prefersChannelLanes(xf, wf, of, ow), /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  e.channelLanes(xf, wf, of, n, f, oh, ow, window, weights);
  b.setInsertionPoint(branch.elseBlock()->getTerminator());
  e.outputRows(x, w, out, n, f, oh, ow);
}

}  // namespace hexir::codegen
