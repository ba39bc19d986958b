#include "passes/codegen/CUDADecodeAttention.h"

#include <cmath>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDAWarpReduce.h"

namespace hexir::cuda {
using namespace mlir;

std::vector<int64_t> DecodeAttention::encode() const {
  return {kvHeads, group, headDim, cacheLen, q, k, v, out, n, splits, threads};
}

std::optional<DecodeAttention> DecodeAttention::decode(llvm::ArrayRef<int64_t> w) {
  if (w.size() != 11) return std::nullopt;
  DecodeAttention s;
  s.kvHeads = w[0], s.group = w[1], s.headDim = w[2], s.cacheLen = w[3];
  s.q = w[4], s.k = w[5], s.v = w[6], s.out = w[7], s.n = w[8], s.splits = w[9], s.threads = w[10];
  return s;
}

namespace {
// The kernel argument a value reads (through the tensor.extract of a gather), or -1.
int64_t ExtractedArgument(linalg::GenericOp g) {
  int64_t found = -1;
  g.getBody()->walk([&](tensor::ExtractOp e) {
    if (auto arg = dyn_cast<BlockArgument>(e.getTensor()); arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      found = arg.getArgNumber();
  });
  return found;
}

std::nullopt_t Refuse(func::FuncOp kernel, const llvm::Twine& why) {
  kernel.emitRemark("decode attention kept on the generic lowering: ") << why;
  return std::nullopt;
}
}  // namespace

std::optional<DecodeAttention> MatchDecodeAttention(func::FuncOp kernel) {
  auto exe = kernel->getParentOfType<ExecutableOp>();
  auto kind = exe ? exe->getAttrOfType<StringAttr>(kDispatchGroupAttr) : StringAttr();
  if (!kind || kind.getValue() != "decode_attention") return std::nullopt;
  // K is gathered by the first generic (scores), V by the last (weighted sum).
  SmallVector<linalg::GenericOp> generics;
  kernel.walk([&](linalg::GenericOp g) { generics.push_back(g); });
  if (generics.size() < 2) return Refuse(kernel, "fewer than two generics");
  DecodeAttention s;
  s.k = ExtractedArgument(generics.front());
  s.v = ExtractedArgument(generics.back());
  if (s.k < 0 || s.v < 0 || s.k == s.v) return Refuse(kernel, "no K and V cache gathers");
  FunctionType type = kernel.getFunctionType();
  auto cache = dyn_cast<RankedTensorType>(type.getInput(s.k));
  if (!cache || cache != type.getInput(s.v) || cache.getRank() != 2 || !cache.hasStaticShape() ||
      !(cache.getElementType().isF32() || cache.getElementType().isF16() || cache.getElementType().isBF16()))
    return Refuse(kernel, "caches are not static 2-D f32, f16 or bf16 tensors of one type");
  if (type.getNumResults() != 1) return Refuse(kernel, "not one result");
  auto result = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!result || result.getRank() != 3 || !result.hasStaticShape() || !result.getElementType().isF32())
    return Refuse(kernel, "the result is not a static [KVH][G][HD] f32 tensor");
  s.kvHeads = result.getDimSize(0), s.group = result.getDimSize(1), s.headDim = result.getDimSize(2);
  s.cacheLen = cache.getDimSize(0);
  if (cache.getDimSize(1) != s.kvHeads * s.headDim) return Refuse(kernel, "cache rows are not KVH x HD");
  // Arguments: tensors, then the result's buffer, then scalars (OutlineDispatchRegions).
  // The length n is a scalar, or (the llama importer's device loop, whose position lives on
  // the device) a static 1-D i64 tensor whose element 0 is the position: n = pos + 1, read
  // by the kernel (LowerDecodeAttention tells the two apart by the argument's type).
  int64_t q = -1, out = -1, n = -1;
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    if ((int64_t)i == s.k || (int64_t)i == s.v) continue;
    auto position = dyn_cast<RankedTensorType>(t);
    if (t == result) {
      (q < 0 ? q : out) = i;
    } else if (t.isIndex() || t.isInteger(64)) {
      n = n < 0 ? (int64_t)i : -2;
    } else if (position && position.getRank() == 1 && position.hasStaticShape() &&
               position.getElementType().isInteger(64)) {
      n = n < 0 ? (int64_t)i : -2;
    } else {
      return Refuse(kernel, "an unexpected argument");
    }
  }
  if (q < 0 || out < 0 || n < 0) return Refuse(kernel, "no q, result buffer and length n");
  s.q = q, s.out = out, s.n = n;
  if (s.group > kMaxAttentionGroup) return Refuse(kernel, "more query heads per KV head than 16");
  // Splits fill the GPU once (two blocks per SM) while each keeps >= 16 rows of a full cache.
  s.splits = 1;
  while (s.splits < kMaxAttentionSplits && s.kvHeads * s.splits * 2 <= 2 * 132 &&
         s.cacheLen >= 16 * s.splits * 2)
    s.splits *= 2;
  while (s.splits > 1 && s.sharedWords() * 4 > kMaxAttentionSharedBytes) s.splits /= 2;
  if (s.sharedWords() * 4 > kMaxAttentionSharedBytes) {
    // More splits shrink the scores: use them when a cluster of 8 fits.
    s.splits = kMaxAttentionSplits;
    if (s.sharedWords() * 4 > kMaxAttentionSharedBytes) return Refuse(kernel, "scores exceed 48 KiB");
  }
  return s;
}

namespace {
class KernelBuilder {
 public:
  KernelBuilder(OpBuilder& b, Location loc) : b(b), loc(loc) {}
  OpBuilder& b;
  Location loc;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  Value add(Value x, Value y) { return isa<IndexType>(x.getType()) ? (Value)arith::AddIOp::create(b, loc, x, y) : (Value)arith::AddFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return isa<IndexType>(x.getType()) ? (Value)arith::MulIOp::create(b, loc, x, y) : (Value)arith::MulFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return isa<IndexType>(x.getType()) ? (Value)arith::SubIOp::create(b, loc, x, y) : (Value)arith::SubFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return isa<IndexType>(x.getType()) ? (Value)arith::DivUIOp::create(b, loc, x, y) : (Value)arith::DivFOp::create(b, loc, x, y); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  // A cache element (f16 or bf16 caches) widened to f32.
  Value widen(Value x) {
    return x.getType().isF32() ? x : (Value)arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  }
  Value load(Value m, ValueRange i) { return memref::LoadOp::create(b, loc, m, i); }
  void store(Value v, Value m, ValueRange i) { memref::StoreOp::create(b, loc, v, m, i); }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  Value butterfly(Value v, bool isMax) {
    for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
      Value other = gpu::ShuffleOp::create(b, loc, v, offset, kWarpSize, gpu::ShuffleMode::XOR).getResult(0);
      v = isMax ? fmax(v, other) : add(v, other);
    }
    return v;
  }
  // for (i = lo; i < hi; i += step) body(i, iter) -> iter results.
  ValueRange loop(Value lo, Value hi, Value step, ValueRange init,
                  llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto f = scf::ForOp::create(b, loc, lo, hi, step, init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    SmallVector<Value> next = body(f.getInductionVar(), f.getRegionIterArgs());
    if (f.getBody()->mightHaveTerminator()) f.getBody()->getTerminator()->erase();
    b.setInsertionPointToEnd(f.getBody());
    scf::YieldOp::create(b, loc, next);
    return f.getResults();
  }
  void ifThen(Value cond, llvm::function_ref<void()> body) {
    auto i = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(i.thenBlock()->getTerminator());
    body();
  }
};
}  // namespace

LogicalResult LowerDecodeAttention(func::FuncOp kernel, const DecodeAttention& s) {
  if (kernel.getFunctionType().getNumResults() != 0)
    return kernel.emitError("internal: decode attention kernel still returns values");
  Block& entry = kernel.getBody().front();
  for (Operation& op : llvm::make_early_inc_range(llvm::reverse(entry))) op.erase();
  OpBuilder ob = OpBuilder::atBlockEnd(&entry);
  Location loc = kernel.getLoc();
  KernelBuilder k(ob, loc);
  OpBuilder& b = ob;
  Value Q = entry.getArgument(s.q), K = entry.getArgument(s.k), V = entry.getArgument(s.v),
        Out = entry.getArgument(s.out);
  Value n = entry.getArgument(s.n);
  if (isa<MemRefType>(n.getType())) {  // a position buffer: n = position + 1
    Value pos = memref::LoadOp::create(b, loc, n, ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
    n = arith::AddIOp::create(b, loc, arith::IndexCastOp::create(b, loc, b.getIndexType(), pos),
                              arith::ConstantIndexOp::create(b, loc, 1));
  } else if (!n.getType().isIndex()) {
    n = arith::IndexCastOp::create(b, loc, b.getIndexType(), n);
  }
  const int64_t G = s.group, HD = s.headDim, C = s.splits, B = s.threads, chunkMax = s.chunk();
  const int64_t warps = B / kWarpSize;
  // Shared words: q [G][HD] | scores [G][chunkMax] | m [G] | l [G] | o [G][HD].
  const int64_t qOff = 0, scOff = G * HD, mOff = scOff + G * chunkMax, lOff = mOff + G,
                oOff = lOff + G;
  Value smem = WorkgroupArray(b, loc, kernel, b.getF32Type(), s.sharedWords());

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value a = k.div(bid, k.idx(C)), r = k.rem(bid, k.idx(C));
  n = k.min(n, k.idx(s.cacheLen));  // never past the cache
  Value chunk = k.div(k.add(n, k.idx(C - 1)), k.idx(C));
  Value start = k.min(k.mul(r, chunk), n);
  Value len = k.sub(k.min(k.add(start, chunk), n), start);
  Value rowBase = k.mul(a, k.idx(HD));  // column of head a in a cache row
  Value zero = k.idx(0), one = k.idx(1);
  const double kNegInf = -3.0e38;  // the importer's softmax identity

  // q of the group -> shared.
  k.loop(tid, k.idx(G * HD), k.idx(B), {}, [&](Value e, ValueRange) {
    Value g = k.div(e, k.idx(HD)), d = k.rem(e, k.idx(HD));
    k.store(k.load(Q, {a, g, d}), smem, {k.add(e, k.idx(qOff))});
    return SmallVector<Value>{};
  });
  k.barrier();

  // Scores: a thread per position, the G dot products sharing each K element.
  // K rows: 16-byte loads of f32, 8-byte loads of f16/bf16 (4 elements) when HD allows.
  const int64_t width = (HD % 4 == 0) ? 4 : 1;
  Type cacheElement = cast<MemRefType>(K.getType()).getElementType();
  Value scale = k.f32(std::sqrt(float(HD)));
  k.loop(tid, len, k.idx(B), {}, [&](Value t, ValueRange) {
    Value row = k.add(start, t);
    SmallVector<Value> init(G, k.f32(0.0));
    ValueRange acc = k.loop(zero, k.idx(HD), k.idx(width), init, [&](Value d, ValueRange accs) {
      SmallVector<Value> next(accs.begin(), accs.end());
      SmallVector<Value> kv;
      Value col = k.add(rowBase, d);
      if (width > 1) {
        int64_t bytes = width * cacheElement.getIntOrFloatBitWidth() / 8;
        Value vec = vector::LoadOp::create(b, loc, VectorType::get({width}, cacheElement), K,
                                           ValueRange{row, col}, /*nontemporal=*/false,
                                           llvm::MaybeAlign(bytes));
        for (int64_t j = 0; j < width; ++j) kv.push_back(k.widen(vector::ExtractOp::create(b, loc, vec, j)));
      } else {
        kv.push_back(k.widen(k.load(K, {row, col})));
      }
      for (int64_t j = 0; j < width; ++j)
        for (int64_t g = 0; g < G; ++g) {
          Value qv = k.load(smem, {k.add(d, k.idx(qOff + g * HD + j))});
          next[g] = k.add(next[g], k.mul(qv, kv[j]));
        }
      return next;
    });
    for (int64_t g = 0; g < G; ++g)
      k.store(k.div(acc[g], scale), smem, {k.add(t, k.idx(scOff + g * chunkMax))});
    return SmallVector<Value>{};
  });
  k.barrier();

  // Per query head: m = max score, p = exp(score - m) in place, l = sum p (a warp per head).
  Value warp = k.div(tid, k.idx(kWarpSize)), lane = k.rem(tid, k.idx(kWarpSize));
  k.loop(warp, k.idx(G), k.idx(warps), {}, [&](Value g, ValueRange) {
    Value base = k.add(k.mul(g, k.idx(chunkMax)), k.idx(scOff));
    Value m = k.loop(lane, len, k.idx(kWarpSize), {k.f32(kNegInf)}, [&](Value t, ValueRange acc) {
      return SmallVector<Value>{k.fmax(acc[0], k.load(smem, {k.add(base, t)}))};
    })[0];
    m = k.butterfly(m, /*isMax=*/true);
    Value l = k.loop(lane, len, k.idx(kWarpSize), {k.f32(0.0)}, [&](Value t, ValueRange acc) {
      Value at = k.add(base, t);
      Value p = k.exp(k.sub(k.load(smem, {at}), m));
      k.store(p, smem, {at});
      return SmallVector<Value>{k.add(acc[0], p)};
    })[0];
    l = k.butterfly(l, /*isMax=*/false);
    k.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero), [&] {
      k.store(m, smem, {k.add(g, k.idx(mOff))});
      k.store(l, smem, {k.add(g, k.idx(lOff))});
    });
    return SmallVector<Value>{};
  });
  k.barrier();

  // o[g][d] = sum_t p[g][t] V[start + t][a HD + d] (consecutive threads: consecutive d).
  k.loop(tid, k.idx(G * HD), k.idx(B), {}, [&](Value e, ValueRange) {
    Value g = k.div(e, k.idx(HD)), d = k.rem(e, k.idx(HD));
    Value base = k.add(k.mul(g, k.idx(chunkMax)), k.idx(scOff)), col = k.add(rowBase, d);
    Value o = k.loop(zero, len, one, {k.f32(0.0)}, [&](Value t, ValueRange acc) {
      Value p = k.load(smem, {k.add(base, t)});
      return SmallVector<Value>{k.add(acc[0], k.mul(p, k.widen(k.load(V, {k.add(start, t), col}))))};
    })[0];
    if (C == 1)
      k.store(k.div(o, k.load(smem, {k.add(g, k.idx(lOff))})), Out, {a, g, d});
    else
      k.store(o, smem, {k.add(e, k.idx(oOff))});
    return SmallVector<Value>{};
  });
  if (C == 1) {
    func::ReturnOp::create(b, loc);
    return success();
  }

  // The cluster's blocks meet in distributed shared memory.
  NVVM::ClusterArriveOp::create(b, loc, /*aligned=*/UnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, /*aligned=*/UnitAttr());
  MLIRContext* ctx = b.getContext();
  auto sharedPtr = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
  auto clusterPtr = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/7);
  Value baseIndex = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
  Value base64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), baseIndex);
  Value localBase = LLVM::IntToPtrOp::create(b, loc, sharedPtr, base64);
  SmallVector<Value> remote;
  for (int64_t rank = 0; rank < C; ++rank)
    remote.push_back(NVVM::MapaOp::create(b, loc, clusterPtr, localBase,
                                          arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(rank))));
  auto remoteLoad = [&](int64_t rank, Value word) -> Value {
    Value w64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), word);
    Value at = LLVM::GEPOp::create(b, loc, clusterPtr, b.getF32Type(), remote[rank],
                                   ArrayRef<LLVM::GEPArg>{w64});
    return LLVM::LoadOp::create(b, loc, b.getF32Type(), at, /*alignment=*/4);
  };
  k.loop(k.add(k.mul(r, k.idx(B)), tid), k.idx(G * HD), k.idx(C * B), {}, [&](Value e, ValueRange) {
    Value g = k.div(e, k.idx(HD)), d = k.rem(e, k.idx(HD));
    SmallVector<Value> ms;
    Value M = k.f32(kNegInf);
    for (int64_t rank = 0; rank < C; ++rank) {
      ms.push_back(remoteLoad(rank, k.add(g, k.idx(mOff))));
      M = k.fmax(M, ms.back());
    }
    Value L = k.f32(0.0), O = k.f32(0.0);
    for (int64_t rank = 0; rank < C; ++rank) {
      Value w = k.exp(k.sub(ms[rank], M));
      L = k.add(L, k.mul(remoteLoad(rank, k.add(g, k.idx(lOff))), w));
      O = k.add(O, k.mul(remoteLoad(rank, k.add(e, k.idx(oOff))), w));
    }
    k.store(k.div(O, L), Out, {a, g, d});
    return SmallVector<Value>{};
  });
  // No block leaves while another may still read its shared memory.
  NVVM::ClusterArriveOp::create(b, loc, UnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
  func::ReturnOp::create(b, loc);
  return success();
}

}  // namespace hexir::cuda
