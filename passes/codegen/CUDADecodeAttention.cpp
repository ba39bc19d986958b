#include "passes/codegen/CUDADecodeAttention.h"

#include <algorithm>
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
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/WorkgroupCount.h"

namespace hexir::cuda {
using namespace mlir;

std::vector<int64_t> DecodeAttention::encode() const {
  std::vector<int64_t> words = {kvHeads, group,   headDim,  cacheLen, q,      k,       v,
                                 out,     n,       splits,   threads,  headTile, window, prologue};
  if (prompt) words.insert(words.end(), {prompt, rowTile});  // decode's words stay 14
  return words;
}

std::optional<DecodeAttention> DecodeAttention::decode(llvm::ArrayRef<int64_t> w) {
  if (w.size() != 14 && w.size() != 16) return std::nullopt;
  DecodeAttention s;
  s.kvHeads = w[0], s.group = w[1], s.headDim = w[2], s.cacheLen = w[3];
  s.q = w[4], s.k = w[5], s.v = w[6], s.out = w[7], s.n = w[8], s.splits = w[9], s.threads = w[10];
  s.headTile = w[11], s.window = w[12], s.prologue = w[13];
  if (w.size() == 16) s.prompt = w[14], s.rowTile = w[15];
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

std::nullopt_t Refuse(func::FuncOp kernel, const llvm::Twine& why, const char* what = "decode") {
  kernel.emitRemark(what) << " attention kept on the generic lowering: " << why;
  return std::nullopt;
}

// The kernel argument `v` is (through tensor reshapes), or -1.
int64_t ReshapedArgument(func::FuncOp kernel, Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) return -1;
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  return arg.getOwner() == &kernel.getBody().front() ? (int64_t)arg.getArgNumber() : -1;
}

bool IsCacheElement(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

// Equal head tiles of at most 16 query heads, halved while a tile and a window of min(32, S)
// positions do not fit 48 KiB; false when one head with a window of min(8, S) does not fit.
bool ChooseHeadTile(DecodeAttention& s) {
  const int64_t words = kMaxAttentionSharedBytes / 4;
  const int64_t parts = (s.group + kMaxAttentionHeadTile - 1) / kMaxAttentionHeadTile;
  s.headTile = (s.group + parts - 1) / parts;
  auto fits = [&](int64_t tile, int64_t window) {
    return DecodeAttention::sharedWords(tile, s.headDim, window) <= words;
  };
  while (s.headTile > 1 && !fits(s.headTile, std::min(kMinAttentionWindow, s.cacheLen)))
    s.headTile = (s.headTile + 1) / 2;
  return fits(s.headTile, std::min(kMinStagedWindow, s.cacheLen));
}

// The largest window of at most kMaxAttentionWindow positions (and the block's chunk) that
// fits 48 KiB with the block's query slots.
void ChooseWindow(DecodeAttention& s) {
  s.window = std::min(s.chunk(), kMaxAttentionWindow);
  while (s.sharedWords() > kMaxAttentionSharedBytes / 4) --s.window;
}
}  // namespace

std::optional<DecodeAttention> MatchDecodeAttention(func::FuncOp kernel) {
  auto exe = kernel->getParentOfType<ExecutableOp>();
  auto kind = exe ? exe->getAttrOfType<StringAttr>(kDispatchGroupAttr) : StringAttr();
  if (!kind || kind.getValue() != "decode_attention") return std::nullopt;
  // K is gathered by the first reducing generic (scores), V by the last (weighted sum); an
  // elementwise one before them computes q (the prologue).
  SmallVector<linalg::GenericOp> generics;
  kernel.walk([&](linalg::GenericOp g) { generics.push_back(g); });
  linalg::GenericOp prologue;
  if (!generics.empty() && generics.front().getNumReductionLoops() == 0) {
    prologue = generics.front();
    generics.erase(generics.begin());
  }
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
  if (prologue) {
    // q [KVH][G][HD] = prologue(q argument), read by the scores only; the prologue's other
    // captures (the position) are its own.
    auto input = prologue.getNumDpsInputs() == 1 ? dyn_cast<BlockArgument>(prologue.getDpsInputs()[0]) : nullptr;
    if (!input || input.getOwner() != &kernel.getBody().front() || input.getType() != result ||
        prologue.getNumDpsInits() != 1 || prologue->getResult(0).getType() != result ||
        !llvm::all_of(prologue.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
        !prologue->getResult(0).hasOneUse() || *prologue->getResult(0).getUsers().begin() != generics.front().getOperation())
      return Refuse(kernel, "the generic before the scores is not an elementwise map of q");
    q = input.getArgNumber();
    s.prologue = 1;
  }
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    if ((int64_t)i == s.k || (int64_t)i == s.v || (int64_t)i == q) continue;
    Value arg = kernel.getArgument(i);
    if (prologue && !arg.use_empty() &&
        llvm::all_of(arg.getUsers(), [&](Operation* u) { return prologue->isAncestor(u); }))
      continue;
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
  if (!ChooseHeadTile(s))
    return Refuse(kernel, "a head of " + llvm::Twine(s.headDim) + " does not fit shared memory");
  // Splits fill the GPU once (two blocks per SM) while each keeps >= 16 rows of a full cache.
  s.splits = 1;
  while (s.splits < kMaxAttentionSplits && s.kvHeads * s.tiles() * s.splits * 2 <= 2 * 132 &&
         s.cacheLen >= 16 * s.splits * 2)
    s.splits *= 2;
  ChooseWindow(s);
  return s;
}

std::optional<DecodeAttention> MatchPromptAttention(func::FuncOp kernel) {
  auto exe = kernel->getParentOfType<ExecutableOp>();
  auto kind = exe ? exe->getAttrOfType<StringAttr>(kDispatchGroupAttr) : StringAttr();
  if (!kind || kind.getValue() != "prompt_attention") return std::nullopt;
  auto refuse = [&](const llvm::Twine& why) { return Refuse(kernel, why, "prompt"); };
  SmallVector<linalg::GenericOp> generics;
  kernel.walk([&](linalg::GenericOp g) { generics.push_back(g); });
  if (generics.size() < 2 || generics.front().getNumDpsInputs() != 2 || generics.back().getNumDpsInputs() != 2 ||
      generics.front().getNumLoops() != 5 || generics.back().getNumLoops() != 5)
    return refuse("not scores of q and K ... a sum over V (5 loops each)");
  DecodeAttention s;
  s.prompt = 1;
  s.n = -1;
  s.q = ReshapedArgument(kernel, generics.front().getDpsInputs()[0]);
  s.k = ReshapedArgument(kernel, generics.front().getDpsInputs()[1]);
  s.v = ReshapedArgument(kernel, generics.back().getDpsInputs()[1]);
  if (s.q < 0 || s.k < 0 || s.v < 0 || s.k == s.v || s.q == s.k || s.q == s.v)
    return refuse("q, K and V are not distinct kernel arguments");
  FunctionType type = kernel.getFunctionType();
  if (type.getNumResults() != 1) return refuse("not one result");
  auto result = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!result || result.getRank() != 4 || !result.getElementType().isF32() || !result.isDynamicDim(0) ||
      result.getNumDynamicDims() != 1)
    return refuse("the result is not a [M][KVH][G][HD] f32 tensor of dynamic M");
  s.kvHeads = result.getDimSize(1), s.group = result.getDimSize(2), s.headDim = result.getDimSize(3);
  const int64_t width = s.kvHeads * s.group * s.headDim;
  // q and the result buffer: like the result, or [M][KVH G HD].
  auto isRows = [&](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.getElementType().isF32() && r.getNumDynamicDims() == 1 && r.isDynamicDim(0) &&
           (r == result || (r.getRank() == 2 && r.getDimSize(1) == width));
  };
  if (!isRows(type.getInput(s.q))) return refuse("q is not [M][KVH][G][HD] f32");
  auto cache = dyn_cast<RankedTensorType>(type.getInput(s.k));
  if (!cache || cache != type.getInput(s.v) || !cache.hasStaticShape() || !IsCacheElement(cache.getElementType()) ||
      !((cache.getRank() == 2 && cache.getDimSize(1) == s.kvHeads * s.headDim) ||
        (cache.getRank() == 3 && cache.getDimSize(1) == s.kvHeads && cache.getDimSize(2) == s.headDim)))
    return refuse("caches are not static [S][KVH HD] f32, f16 or bf16 tensors of one type");
  s.cacheLen = cache.getDimSize(0);
  // Arguments: tensors, then the result's buffer, then scalars (M, unused here).
  s.out = -1;
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    if ((int64_t)i == s.q || (int64_t)i == s.k || (int64_t)i == s.v) continue;
    if (s.out < 0 && isRows(t)) {
      s.out = i;
    } else if (!t.isIndex() && !t.isInteger(64)) {
      return refuse("an unexpected argument");
    }
  }
  if (s.out < 0) return refuse("no result buffer");
  // Slots: head tiles as in decode, then prompt rows up to 16 slots while a window of
  // min(32, S) positions fits.
  if (!ChooseHeadTile(s))
    return refuse("a head of " + llvm::Twine(s.headDim) + " does not fit shared memory");
  s.rowTile = std::max<int64_t>(1, kMaxAttentionHeadTile / s.headTile);
  while (s.rowTile > 1 && DecodeAttention::sharedWords(s.slots(), s.headDim, std::min(kMinAttentionWindow, s.cacheLen)) >
                              kMaxAttentionSharedBytes / 4)
    --s.rowTile;
  s.splits = 1;
  ChooseWindow(s);
  return s;
}

LogicalResult SetPromptAttentionGrid(func::FuncOp kernel, const DecodeAttention& s) {
  auto exe = kernel->getParentOfType<ExecutableOp>();
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  auto rows = tensor::DimOp::create(b, kernel.getLoc(), kernel.getArgument(s.q), 0);
  std::optional<int64_t> word = codegen::ParameterWordOf(kernel, rows, kernel.getNumArguments());
  rows->erase();
  if (!exe || !word) return failure();
  codegen::SetDynamicWorkgroupCount(
      exe, codegen::DynamicWorkgroupCount{{*word}, s.kvHeads * s.tiles(), s.rowTile, /*limit=*/1 << 24});
  return success();
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
    return XorButterfly(b, loc, v, kWarpSize, [&](Value x, Value y) { return isMax ? fmax(x, y) : add(x, y); });
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

namespace {
// The value the elementwise generic `g` (bufferized) computes at the point `at` whose input
// element is `in`, its body cloned at b's insertion point (linalg.index -> at). Values its
// body uses from above must be kernel arguments (kept) or constants (cloned); failure for
// anything else, or a body reading its output element.
FailureOr<Value> InlineElementwise(OpBuilder& b, linalg::GenericOp g, ValueRange at, Value in) {
  Block& body = g.getRegion().front();
  if (body.getNumArguments() < 1) return failure();
  for (BlockArgument extra : body.getArguments().drop_front())
    if (!extra.use_empty()) return failure();
  IRMapping map;
  map.map(body.getArgument(0), in);
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(g.getRegion(), above);
  for (Value v : above) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner()->isEntryBlock() && isa<func::FuncOp>(arg.getOwner()->getParentOp())) continue;
    Operation* def = v.getDefiningOp();
    if (!def || !def->hasTrait<OpTrait::ConstantLike>()) return failure();
    map.map(v, b.clone(*def)->getResult(cast<OpResult>(v).getResultNumber()));
  }
  for (Operation& op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      if (index.getDim() >= at.size()) return failure();
      map.map(index.getResult(), at[index.getDim()]);
      continue;
    }
    b.clone(op, map);
  }
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}
}  // namespace

LogicalResult LowerDecodeAttention(func::FuncOp kernel, const DecodeAttention& s) {
  if (kernel.getFunctionType().getNumResults() != 0)
    return kernel.emitError("internal: decode attention kernel still returns values");
  Block& entry = kernel.getBody().front();
  // The prologue computing q (the importer's rotary embedding): inlined into q's loads.
  linalg::GenericOp prologue;
  if (s.prologue) {
    kernel.walk([&](linalg::GenericOp g) {
      if (g.getNumDpsInputs() == 1 && g.getDpsInputs()[0] == entry.getArgument(s.q)) prologue = g;
    });
    if (!prologue) return kernel.emitError("internal: decode attention's q prologue is gone");
  }
  // The kernel is built before the old body, which is erased once nothing refers to it.
  SmallVector<Operation*> oldBody;
  for (Operation& op : entry) oldBody.push_back(&op);
  auto eraseOldBody = [&] {
    for (Operation* op : llvm::reverse(oldBody)) op->erase();
  };
  OpBuilder ob = OpBuilder::atBlockBegin(&entry);
  Location loc = kernel.getLoc();
  KernelBuilder k(ob, loc);
  OpBuilder& b = ob;
  Value Q = entry.getArgument(s.q), K = entry.getArgument(s.k), V = entry.getArgument(s.v),
        Out = entry.getArgument(s.out);
  // Gt heads of the block's tile, of which those at g0 + j >= G (a ragged last tile) are
  // computed on zero q and never stored; prompt blocks: Mt rows of them, query slot j the
  // head j % Gt of row j / Gt (rows past M likewise).
  const int64_t G = s.group, Gt = s.headTile, Mt = s.rowTile, QS = s.slots(), HD = s.headDim, C = s.splits,
                B = s.threads, W = s.window;
  const bool prompt = s.prompt != 0;
  if (prompt && C != 1) return kernel.emitError("internal: prompt attention with splits");
  const int64_t warps = B / kWarpSize;
  const bool ragged = s.tiles() * Gt != G;
  // Shared words: q [QS][HD] | o [QS][HD] | scores [QS][W] | m [QS] | l [QS] | alpha [QS] |
  // K rows [W][HD + 1] | V rows [W][HD].
  const int64_t qOff = 0, oOff = QS * HD, scOff = 2 * QS * HD, mOff = scOff + QS * W, lOff = mOff + QS,
                alphaOff = lOff + QS, ksOff = alphaOff + QS, vsOff = ksOff + W * (HD + 1);
  Value smem = WorkgroupArray(b, loc, kernel, b.getF32Type(), s.sharedWords());

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value zero = k.idx(0), one = k.idx(1);
  const double kNegInf = -3.0e38;  // the importer's softmax identity
  auto lessThan = [&](Value x, Value y) { return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y); };
  auto both = [&](Value x, Value y) { return arith::AndIOp::create(b, loc, x, y).getResult(); };
  // body(e, j, d) for each element e = j HD + d of the slots' [QS][HD], e from `first` by `step`.
  auto forTileElements = [&](Value first, int64_t step, llvm::function_ref<void(Value, Value, Value)> body) {
    k.loop(first, k.idx(QS * HD), k.idx(step), {}, [&](Value e, ValueRange) {
      body(e, k.div(e, k.idx(HD)), k.rem(e, k.idx(HD)));
      return SmallVector<Value>{};
    });
  };
  // Prompt rows: q and out are [M][KVH][G][HD] or [M][KVH G HD].
  Value rows = prompt ? (Value)memref::DimOp::create(b, loc, Q, 0) : Value();
  auto rowIndices = [&](Value t, Value row, Value a, Value g, Value d) -> SmallVector<Value> {
    if (cast<MemRefType>(t.getType()).getRank() == 4) return {row, a, g, d};
    return {row, k.add(k.mul(k.add(k.mul(a, k.idx(G)), g), k.idx(HD)), d)};
  };
  // A cache element of row `row`, column `col` of head a: caches [S][KVH HD] or [S][KVH][HD].
  auto cacheIndices = [&](Value cache, Value row, Value a, Value col) -> SmallVector<Value> {
    if (cast<MemRefType>(cache.getType()).getRank() == 3) return {row, a, col};
    return {row, k.add(k.mul(a, k.idx(HD)), col)};
  };

  Type cacheElement = cast<MemRefType>(K.getType()).getElementType();
  const int64_t elementBytes = cacheElement.getIntOrFloatBitWidth() / 8;
  const int64_t vec = HD % (16 / elementBytes) == 0 ? 16 / elementBytes : (HD % 4 == 0 ? 4 : 1);
  const int64_t R = HD / vec, items = W * R, perThread = (items + B - 1) / B;
  const int64_t kStride = HD + 1;  // K rows padded: thread t reads row t's word d in bank (t + d) % 32
  Value scale = k.f32(std::sqrt(float(HD)));
  Value warp = k.div(tid, k.idx(kWarpSize)), lane = k.rem(tid, k.idx(kWarpSize));
  // Query slots a thread scores (Rs) or sums P V for (Rv) together: the largest of 4 and 2
  // dividing QS that still gives every thread a (slots, position) or (slots, d) item, else 1.
  auto slotsPerThread = [&](int64_t items) -> int64_t {
    for (int64_t r : {4, 2})
      if (QS % r == 0 && QS / r * items >= B) return r;
    return 1;
  };
  const int64_t Rs = slotsPerThread(W), Rv = slotsPerThread(HD);
  // 16-byte shared loads of 4 consecutive words: q rows (offset j HD) when HD % 4 == 0, p
  // rows (offset scOff + j W) when W and scOff are multiples of 4.
  const int64_t dStep = HD % 4 == 0 ? 4 : 1, tStep = W % 4 == 0 && scOff % 4 == 0 ? 4 : 1;
  auto loadWords = [&](Value word, int64_t n) -> SmallVector<Value> {
    if (n == 1) return {k.load(smem, {word})};
    Value v = vector::LoadOp::create(b, loc, VectorType::get({n}, b.getF32Type()), smem, ValueRange{word},
                                     /*nontemporal=*/false, llvm::MaybeAlign(4 * n));
    SmallVector<Value> words;
    for (int64_t i = 0; i < n; ++i) words.push_back(vector::ExtractOp::create(b, loc, v, i));
    return words;
  };
  // wlen rounded up to a multiple of tStep (<= W).
  auto roundedWindow = [&](Value wlen) { return k.mul(k.div(k.add(wlen, k.idx(tStep - 1)), k.idx(tStep)), k.idx(tStep)); };

  // One tile's attention, for KV head a, heads g0.. and (prompt) rows row0..: positions
  // [start, start + len) of the n filled ones, leaving o (unnormalized), m and l in shared
  // memory. False when q's prologue cannot be inlined.
  struct Tile {
    Value a, g0, row0;
  };
  // Query slot j's head (g0 + j % Gt) and prompt row (row0 + j / Gt).
  auto headOf = [&](const Tile& tile, Value j) { return k.add(tile.g0, Mt == 1 ? j : k.rem(j, k.idx(Gt))); };
  auto rowOf = [&](const Tile& tile, Value j) { return k.add(tile.row0, k.div(j, k.idx(Gt))); };
  auto attend = [&](const Tile& tile, Value start, Value len, Value n) -> bool {
    Value a = tile.a;
    // q[a][g][d] (through the prologue, if any), or q[row][a][g][d].
    bool inlined = true;
    auto qAt = [&](Value j, Value d) -> Value {
      Value g = headOf(tile, j);
      if (ragged) g = k.min(g, k.idx(G - 1));
      if (prompt) return k.load(Q, rowIndices(Q, k.min(rowOf(tile, j), k.sub(rows, one)), a, g, d));
      Value raw = k.load(Q, {a, g, d});
      if (!prologue) return raw;
      FailureOr<Value> v = InlineElementwise(b, prologue, ValueRange{a, g, d}, raw);
      inlined = inlined && succeeded(v);
      return succeeded(v) ? *v : raw;
    };
    // q of the slots -> shared (zeros past G); o = 0; m = -inf, l = 0.
    forTileElements(tid, B, [&](Value e, Value j, Value d) {
      Value qv = qAt(j, d);
      if (ragged) qv = arith::SelectOp::create(b, loc, lessThan(headOf(tile, j), k.idx(G)), qv, k.f32(0.0));
      k.store(qv, smem, {k.add(e, k.idx(qOff))});
      k.store(k.f32(0.0), smem, {k.add(e, k.idx(oOff))});
    });
    k.loop(tid, k.idx(QS), k.idx(B), {}, [&](Value j, ValueRange) {
      k.store(k.f32(kNegInf), smem, {k.add(j, k.idx(mOff))});
      k.store(k.f32(0.0), smem, {k.add(j, k.idx(lOff))});
      return SmallVector<Value>{};
    });
    k.barrier();

    // The window's rows of head a, `vec` elements a load: 16 bytes when HD allows (4 f32 or 8
    // f16/bf16), else 4 elements, else 1. Item i of a cache is row i / R, columns (i % R) vec.
    k.loop(zero, len, k.idx(W), {}, [&](Value w0, ValueRange) {
      Value first = k.add(start, w0), wlen = k.min(k.idx(W), k.sub(len, w0));
      Value lastRow = k.sub(n, one);  // n >= 1 here: the block has rows
      // Every load of the window first (one memory round trip), then the stores. Items past
      // the window (the last pass of a ragged split) repeat the window's last item, and rows
      // past the block's last read the last filled row: both store values nothing reads, or
      // the same values another thread stores.
      struct Staged {
        Value slot, col, k, v;
      };
      SmallVector<Staged> staged;
      auto loadAt = [&](Value cache, Value row, Value col) -> Value {
        SmallVector<Value> at = cacheIndices(cache, row, a, col);
        if (vec == 1) return k.load(cache, at);
        return vector::LoadOp::create(b, loc, VectorType::get({vec}, cacheElement), cache, at,
                                      /*nontemporal=*/false, llvm::MaybeAlign(vec * elementBytes));
      };
      for (int64_t m = 0; m < perThread; ++m) {
        Value item = k.add(tid, k.idx(m * B));
        if ((m + 1) * B > items) item = k.min(item, k.idx(items - 1));
        Value slot = k.div(item, k.idx(R)), col = k.mul(k.rem(item, k.idx(R)), k.idx(vec));
        Value row = k.min(k.add(first, slot), lastRow);
        staged.push_back({slot, col, loadAt(K, row, col), loadAt(V, row, col)});
      }
      for (const Staged& st : staged) {
        for (int64_t i = 0; i < vec; ++i) {
          Value kv = vec == 1 ? st.k : (Value)vector::ExtractOp::create(b, loc, st.k, i);
          Value vv = vec == 1 ? st.v : (Value)vector::ExtractOp::create(b, loc, st.v, i);
          Value col = k.add(st.col, k.idx(i));
          k.store(k.widen(kv), smem, {k.add(k.add(k.mul(st.slot, k.idx(kStride)), col), k.idx(ksOff))});
          k.store(k.widen(vv), smem, {k.add(k.add(k.mul(st.slot, k.idx(HD)), col), k.idx(vsOff))});
        }
      }
      k.barrier();

      // Scores: a thread per (Rs query slots j0.., position t), t fastest (q rows are
      // broadcast, K rows padded), each K element loaded once for the Rs slots, q read 4
      // consecutive d at a time where rows allow; summed over d in order. Prompt positions
      // past a slot's row score -inf (causal: they weigh 0).
      k.loop(tid, k.idx(QS / Rs * W), k.idx(B), {}, [&](Value e, ValueRange) {
        Value j0 = k.mul(k.div(e, k.idx(W)), k.idx(Rs)), t = k.rem(e, k.idx(W));
        k.ifThen(lessThan(t, wlen), [&] {
          Value kBase = k.add(k.mul(t, k.idx(kStride)), k.idx(ksOff));
          SmallVector<Value> init(Rs, k.f32(0.0));
          ValueRange accs = k.loop(zero, k.idx(HD), k.idx(dStep), init, [&](Value d, ValueRange acc) {
            SmallVector<Value> kv, next;
            for (int64_t i = 0; i < dStep; ++i) kv.push_back(k.load(smem, {k.add(kBase, k.add(d, k.idx(i)))}));
            for (int64_t r = 0; r < Rs; ++r) {
              Value qAt = k.add(k.mul(k.add(j0, k.idx(r)), k.idx(HD)), k.add(d, k.idx(qOff)));
              SmallVector<Value> qs = loadWords(qAt, dStep);
              Value a = acc[r];
              for (int64_t i = 0; i < dStep; ++i) a = k.add(a, k.mul(qs[i], kv[i]));
              next.push_back(a);
            }
            return next;
          });
          for (int64_t r = 0; r < Rs; ++r) {
            Value j = k.add(j0, k.idx(r));
            Value score = k.div(accs[r], scale);
            if (prompt)
              score = arith::SelectOp::create(b, loc, lessThan(rowOf(tile, j), k.add(first, t)), k.f32(kNegInf), score);
            k.store(score, smem, {k.add(k.add(k.mul(j, k.idx(W)), t), k.idx(scOff))});
          }
        });
        return SmallVector<Value>{};
      });
      k.barrier();

      // Per query slot (a warp per slot): the window's maximum, the running one m, p =
      // exp(score - m) in place, l = l exp(m_old - m) + sum p, the factor kept for o.
      k.loop(warp, k.idx(QS), k.idx(warps), {}, [&](Value j, ValueRange) {
        Value base = k.add(k.mul(j, k.idx(W)), k.idx(scOff));
        Value mOld = k.load(smem, {k.add(j, k.idx(mOff))});
        Value m = k.loop(lane, wlen, k.idx(kWarpSize), {mOld}, [&](Value t, ValueRange acc) {
          return SmallVector<Value>{k.fmax(acc[0], k.load(smem, {k.add(base, t)}))};
        })[0];
        m = k.butterfly(m, /*isMax=*/true);
        Value l = k.loop(lane, wlen, k.idx(kWarpSize), {k.f32(0.0)}, [&](Value t, ValueRange acc) {
          Value at = k.add(base, t);
          Value p = k.exp(k.sub(k.load(smem, {at}), m));
          k.store(p, smem, {at});
          return SmallVector<Value>{k.add(acc[0], p)};
        })[0];
        l = k.butterfly(l, /*isMax=*/false);
        // p past the window up to a multiple of tStep: 0 (the sums below read them).
        if (tStep > 1)
          k.loop(k.add(wlen, lane), roundedWindow(wlen), k.idx(kWarpSize), {}, [&](Value t, ValueRange) {
            k.store(k.f32(0.0), smem, {k.add(base, t)});
            return SmallVector<Value>{};
          });
        k.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero), [&] {
          Value alpha = k.exp(k.sub(mOld, m));
          Value lAt = k.add(j, k.idx(lOff));
          k.store(m, smem, {k.add(j, k.idx(mOff))});
          k.store(k.add(k.mul(k.load(smem, {lAt}), alpha), l), smem, {lAt});
          k.store(alpha, smem, {k.add(j, k.idx(alphaOff))});
        });
        return SmallVector<Value>{};
      });
      k.barrier();

      // o[j][d] = o[j][d] alpha[j] + sum_t p[j][t] V[first + t][a HD + d]: a thread per (Rv
      // slots j0.., d) (consecutive threads: consecutive d; V from shared memory, each element
      // loaded once for the Rv slots; p read 4 consecutive t at a time where rows allow).
      k.loop(tid, k.idx(QS / Rv * HD), k.idx(B), {}, [&](Value e, ValueRange) {
        Value j0 = k.mul(k.div(e, k.idx(HD)), k.idx(Rv)), d = k.rem(e, k.idx(HD));
        SmallVector<Value> oAt, init;
        for (int64_t r = 0; r < Rv; ++r) {
          Value j = k.add(j0, k.idx(r));
          oAt.push_back(k.add(k.add(k.mul(j, k.idx(HD)), d), k.idx(oOff)));
          init.push_back(k.mul(k.load(smem, {oAt.back()}), k.load(smem, {k.add(j, k.idx(alphaOff))})));
        }
        Value vCol = k.add(d, k.idx(vsOff));
        Value end = tStep > 1 ? roundedWindow(wlen) : wlen;
        ValueRange o = k.loop(zero, end, k.idx(tStep), init, [&](Value t, ValueRange acc) {
          SmallVector<Value> vs, next;
          for (int64_t i = 0; i < tStep; ++i)
            vs.push_back(k.load(smem, {k.add(k.mul(k.add(t, k.idx(i)), k.idx(HD)), vCol)}));
          for (int64_t r = 0; r < Rv; ++r) {
            Value pAt = k.add(k.add(k.mul(k.add(j0, k.idx(r)), k.idx(W)), t), k.idx(scOff));
            SmallVector<Value> ps = loadWords(pAt, tStep);
            Value a = acc[r];
            for (int64_t i = 0; i < tStep; ++i) a = k.add(a, k.mul(ps[i], vs[i]));
            next.push_back(a);
          }
          return next;
        });
        for (int64_t r = 0; r < Rv; ++r) k.store(o[r], smem, {oAt[r]});
        return SmallVector<Value>{};
      });
      // The next window's rows, scores and factors overwrite what this one read.
      k.barrier();
      return SmallVector<Value>{};
    });
    return inlined;
  };

  // out[a][g0 + j][d] (out[row][a][g][d]) = value, for the slots inside the group (and M).
  auto storeOut = [&](const Tile& tile, Value value, Value j, Value d) {
    Value g = headOf(tile, j);
    Value row = prompt ? rowOf(tile, j) : Value();
    Value valid = ragged ? lessThan(g, k.idx(G)) : Value();
    if (prompt) valid = valid ? both(valid, lessThan(row, rows)) : lessThan(row, rows);
    auto store = [&] {
      if (prompt) return k.store(value, Out, rowIndices(Out, row, tile.a, g, d));
      k.store(value, Out, {tile.a, g, d});
    };
    if (!valid) return store();
    k.ifThen(valid, store);
  };
  auto storeNormalized = [&](const Tile& tile) {
    forTileElements(tid, B, [&](Value e, Value j, Value d) {
      storeOut(tile, k.div(k.load(smem, {k.add(e, k.idx(oOff))}), k.load(smem, {k.add(j, k.idx(lOff))})), j, d);
    });
  };
  auto inliningFailed = [&] {
    return prologue.emitError(
        "decode attention: q's prologue uses a value that is neither a kernel argument nor a constant");
  };

  if (prompt) {
    // Work items (row tile, KV head, head tile), the last rows' tiles first, strided over
    // the launched blocks; a block's positions: [0, its last row].
    const int64_t perRowTile = s.kvHeads * s.tiles();
    Value rowTiles = k.div(k.add(rows, k.idx(Mt - 1)), k.idx(Mt));
    Value grid = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    bool inlined = true;
    k.loop(bid, k.mul(rowTiles, k.idx(perRowTile)), grid, {}, [&](Value item, ValueRange) {
      Value rowTile = k.sub(k.sub(rowTiles, one), k.div(item, k.idx(perRowTile)));
      Value rest = k.rem(item, k.idx(perRowTile));
      Tile tile{k.div(rest, k.idx(s.tiles())), k.mul(k.rem(rest, k.idx(s.tiles())), k.idx(Gt)),
                k.mul(rowTile, k.idx(Mt))};
      Value n = k.min(k.min(k.add(tile.row0, k.idx(Mt)), rows), k.idx(s.cacheLen));
      inlined = attend(tile, zero, n, n) && inlined;
      storeNormalized(tile);
      k.barrier();  // the next item's q and o overwrite what this one stored from
      return SmallVector<Value>{};
    });
    if (!inlined) return inliningFailed();
    func::ReturnOp::create(b, loc);
    eraseOldBody();
    return success();
  }

  Value n = entry.getArgument(s.n);
  if (isa<MemRefType>(n.getType())) {  // a position buffer: n = position + 1
    Value pos = memref::LoadOp::create(b, loc, n, ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
    n = arith::AddIOp::create(b, loc, arith::IndexCastOp::create(b, loc, b.getIndexType(), pos),
                              arith::ConstantIndexOp::create(b, loc, 1));
  } else if (!n.getType().isIndex()) {
    n = arith::IndexCastOp::create(b, loc, b.getIndexType(), n);
  }
  Value cluster = k.div(bid, k.idx(C)), r = k.rem(bid, k.idx(C));
  Tile tile{k.div(cluster, k.idx(s.tiles())), k.mul(k.rem(cluster, k.idx(s.tiles())), k.idx(Gt)), Value()};
  n = k.min(n, k.idx(s.cacheLen));  // never past the cache
  Value chunk = k.div(k.add(n, k.idx(C - 1)), k.idx(C));
  Value start = k.min(k.mul(r, chunk), n);
  Value len = k.sub(k.min(k.add(start, chunk), n), start);
  if (!attend(tile, start, len, n)) return inliningFailed();
  if (C == 1) {
    storeNormalized(tile);
    func::ReturnOp::create(b, loc);
    eraseOldBody();
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
  forTileElements(k.add(k.mul(r, k.idx(B)), tid), C * B, [&](Value e, Value j, Value d) {
    SmallVector<Value> ms;
    Value M = k.f32(kNegInf);
    for (int64_t rank = 0; rank < C; ++rank) {
      ms.push_back(remoteLoad(rank, k.add(j, k.idx(mOff))));
      M = k.fmax(M, ms.back());
    }
    Value L = k.f32(0.0), O = k.f32(0.0);
    for (int64_t rank = 0; rank < C; ++rank) {
      Value w = k.exp(k.sub(ms[rank], M));
      L = k.add(L, k.mul(remoteLoad(rank, k.add(j, k.idx(lOff))), w));
      O = k.add(O, k.mul(remoteLoad(rank, k.add(e, k.idx(oOff))), w));
    }
    storeOut(tile, k.div(O, L), j, d);
  });
  // No block leaves while another may still read its shared memory.
  NVVM::ClusterArriveOp::create(b, loc, UnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
  func::ReturnOp::create(b, loc);
  eraseOldBody();
  return success();
}

}  // namespace hexir::cuda
