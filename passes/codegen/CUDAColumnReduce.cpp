// Column reductions and shared-memory arrays for block-wide reductions on CUDA (the contract
// is in CUDAColumnReduce.h). A [K][N] GEMV read one column strip per thread (the matmul
// strip kernel) runs N / 4 threads down all of K: 1024 threads for N = 4096, 116 GB/s on the
// H200. Here a block of threads splits K into slices and every thread keeps 8 or 16 16-byte
// loads in flight, so the whole GPU streams the weight once.
#include "passes/codegen/CUDAColumnReduce.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir::cuda {
using namespace mlir;

namespace {
constexpr int64_t kVectorBytes = 16;
constexpr int64_t kMaxWidth = 8;
constexpr int64_t kMinColumnBlocks = 64;
constexpr int64_t kBlocksPerSM = 2;  // fewer blocks than this many an SM: narrower tiles

// Bytes of the narrowest element among the inputs for which `pick` holds (0: none).
int64_t NarrowestBytes(linalg::LinalgOp op, llvm::function_ref<bool(AffineMap)> pick) {
  int64_t narrowest = 0;
  for (OpOperand* in : op.getDpsInputOperands()) {
    if (!pick(op.getMatchingIndexingMap(in))) continue;
    int64_t bits = getElementTypeOrSelf(in->get().getType()).getIntOrFloatBitWidth();
    if (bits % 8 != 0) continue;
    narrowest = narrowest ? std::min(narrowest, bits / 8) : bits / 8;
  }
  return narrowest;
}
}  // namespace

std::optional<ColumnReduction> MatchColumnReduction(linalg::LinalgOp op) {
  if (!WarpReducibleCombiner(op) || WantsWarpReduction(op) || !op.hasOnlyProjectedPermutations())
    return std::nullopt;
  SmallVector<utils::IteratorType> it = op.getIteratorTypesArray();
  int64_t reduced = -1;
  for (auto [d, t] : llvm::enumerate(it))
    if (t == utils::IteratorType::reduction) reduced = d;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0) return std::nullopt;
  auto last = dyn_cast<AffineDimExpr>(out.getResults().back());
  if (!last) return std::nullopt;
  int64_t column = last.getPosition();
  AffineExpr columnExpr = getAffineDimExpr(column, op.getContext());
  bool weight = false;
  for (OpOperand* in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    if (!map.isFunctionOfDim(column)) continue;
    if (map.getResults().back() != columnExpr) return std::nullopt;
    weight |= map.isFunctionOfDim(reduced);
  }
  int64_t extent = op.getStaticLoopRanges()[reduced];
  if (!weight || (!ShapedType::isDynamic(extent) && extent < kMinWarpReduction))
    return std::nullopt;
  return ColumnReduction{column, reduced};
}

std::optional<ColumnTiling> ChooseColumnTiling(linalg::LinalgOp op, const ColumnReduction& loops,
                                               int64_t columns, int64_t rows) {
  if (rows < 1 || rows > kMaxColumnRows || columns < 1) return std::nullopt;
  ColumnTiling t;
  int64_t narrowest = NarrowestBytes(op, [&](AffineMap m) { return m.isFunctionOfDim(loops.column); });
  t.width = narrowest ? std::min(kMaxWidth, kVectorBytes / narrowest) : 1;
  while (t.width > 1 && columns % t.width != 0) t.width /= 2;
  auto blocks = [&] { return rows * ((columns + t.columns() - 1) / t.columns()); };
  t.columnThreads = 4, t.loads = 8;
  if (blocks() < kBlocksPerSM * kMultiprocessors) t.columnThreads = 2, t.loads = 16;
  while (t.columnThreads > 1 && blocks() < kMinColumnBlocks) t.columnThreads /= 2;
  t.slices = kWarpSize / t.columnThreads;
  int64_t extent = op.getStaticLoopRanges()[loops.reduced];
  while (2 * t.threads() <= kMaxColumnBlock && 2 * blocks() * t.threads() <= kResidentThreads &&
         (ShapedType::isDynamic(extent) || 2 * t.slices * t.loads <= extent))
    t.slices *= 2;
  return t;
}

int64_t ChooseWarpsPerPoint(int64_t points, int64_t extent, int64_t bytes) {
  int64_t width = bytes ? std::min(kMaxWidth, kVectorBytes / bytes) : 1;
  int64_t warps = 1;
  while (warps < kMaxWarpsPerPoint && points * warps * 2 <= kResidentThreads / kWarpSize &&
         extent >= kWarpSize * width * warps * 2)
    warps *= 2;
  return warps;
}

Value WorkgroupArray(OpBuilder& b, Location loc, func::FuncOp kernel, Type element,
                     int64_t count) {
  MLIRContext* ctx = b.getContext();
  auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto type = MemRefType::get({count}, element, MemRefLayoutAttrInterface(), space);
  auto module = kernel->getParentOfType<ModuleOp>();
  OpBuilder mb(kernel);
  auto global = memref::GlobalOp::create(mb, loc, "__hexir_shared", mb.getStringAttr("private"),
                                         type, Attribute(), /*constant=*/false,
                                         mb.getI64IntegerAttr(kVectorBytes));
  SymbolTable(module).insert(global);  // renamed when the kernel has several
  return memref::GetGlobalOp::create(b, loc, type, global.getSymName());
}

namespace {
// The buffer a (chain of) subview(s) views.
Value rootBuffer(Value m) {
  while (auto sub = m.getDefiningOp<memref::SubViewOp>()) m = sub.getSource();
  return m;
}

// The rewrite of one column-reduction op; see LowerColumnReduction.
class ColumnLowering {
 public:
  ColumnLowering(linalg::LinalgOp op, Operation* combiner, ColumnReduction loops,
                 const ColumnTiling& tiling)
      : op(op), combiner(combiner), loops(loops), tiling(tiling), b(op), loc(op.getLoc()) {}

  LogicalResult run(func::FuncOp kernel);

 private:
  using Loaded = SmallVector<SmallVector<Value>>;  // [input][column j]
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  SmallVector<Value> indicesAt(OpBuilder& nb, AffineMap map, ArrayRef<Value> dims) {
    return codegen::IndicesAt(nb, loc, map, dims);
  }
  Value combine(OpBuilder& nb, Value accValue, Value other) {
    BlockArgument acc = op.getBlock()->getArgument(op.getNumDpsInputs());
    Value otherOperand =
        combiner->getOperand(0) == acc ? combiner->getOperand(1) : combiner->getOperand(0);
    IRMapping m;
    m.map(acc, accValue);
    m.map(otherOperand, other);
    return nb.clone(*combiner, m)->getResult(0);
  }
  Loaded loadStep(OpBuilder& nb, Value k);
  SmallVector<Value> computeStep(OpBuilder& nb, Value k, const Loaded& loaded,
                                 SmallVector<Value> accs);
  SmallVector<Value> reduceSlices(Value extent);
  LogicalResult distributeTail(func::FuncOp kernel, Operation* after, Value tid);
  bool splitByColumn(RewriterBase& rewriter, Operation* o, Value tid);

  linalg::LinalgOp op;
  Operation* combiner;
  ColumnReduction loops;
  ColumnTiling tiling;
  OpBuilder b;
  Location loc;
  Value zero, firstColumn;  // firstColumn: this thread's first column in the tile
  SmallVector<bool> usesColumn;
  Value slice;
  bool tileOnStack = false;  // the output tile is a per-thread temporary
};

// One k step: for each input, the thread's `width` columns at row k (a vector load for inputs
// read along the columns: tile origins are multiples of columns(), a multiple of width, and
// every row of an identity-layout argument whose last extent width divides starts aligned),
// or the one value of an input not indexed by the column.
ColumnLowering::Loaded ColumnLowering::loadStep(OpBuilder& nb, Value k) {
  Loaded loaded;
  SmallVector<Value> dims(op.getNumLoops(), zero);
  dims[loops.reduced] = k;
  dims[loops.column] = firstColumn;
  for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands())) {
    AffineMap map = op.getMatchingIndexingMap(in);
    SmallVector<Value> indices = indicesAt(nb, map, dims);
    Type element = getElementTypeOrSelf(in->get().getType());
    SmallVector<Value> values;
    if (!usesColumn[i]) {
      values.assign(tiling.width, memref::LoadOp::create(nb, loc, in->get(), indices));
    } else if (tiling.width == 1) {
      values.push_back(memref::LoadOp::create(nb, loc, in->get(), indices));
    } else {
      int64_t bytes = tiling.width * element.getIntOrFloatBitWidth() / 8;
      Value v = vector::LoadOp::create(nb, loc, VectorType::get({tiling.width}, element),
                                       in->get(), indices, /*nontemporal=*/false,
                                       llvm::MaybeAlign(std::min(kVectorBytes, bytes)));
      for (int64_t j = 0; j < tiling.width; ++j)
        values.push_back(vector::ExtractOp::create(nb, loc, v, j));
    }
    loaded.push_back(values);
  }
  return loaded;
}

// The body applied to column j's values into accs[j], for every j.
SmallVector<Value> ColumnLowering::computeStep(OpBuilder& nb, Value k, const Loaded& loaded,
                                               SmallVector<Value> accs) {
  Block* body = op.getBlock();
  BlockArgument acc = body->getArgument(op.getNumDpsInputs());
  for (int64_t j = 0; j < tiling.width; ++j) {
    IRMapping m;
    for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands()))
      m.map(body->getArgument(in->getOperandNumber()), loaded[i][j]);
    m.map(acc, accs[j]);
    for (Operation& inner : body->without_terminator()) {
      if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
        Value at = zero;
        if ((int64_t)idx.getDim() == loops.reduced) at = k;
        if ((int64_t)idx.getDim() == loops.column)
          at = arith::AddIOp::create(nb, loc, firstColumn,
                                     arith::ConstantIndexOp::create(nb, loc, j));
        m.map(idx.getResult(), at);
        continue;
      }
      nb.clone(inner, m);
    }
    accs[j] = m.lookupOrDefault(body->getTerminator()->getOperand(0));
  }
  return accs;
}

// The thread's partials over its slice of k: k = slice + S u for tiling.loads steps u at a
// time (loads first), then single steps. The step counts of the first loop do not depend
// on the thread; one accumulator per column (the adds after the loads are cheap).
SmallVector<Value> ColumnLowering::reduceSlices(Value extent) {
  TypedAttr neutral = *arith::getNeutralElement(combiner);
  SmallVector<Value> identities;
  for (int64_t j = 0; j < tiling.width; ++j)
    identities.push_back(arith::ConstantOp::create(b, loc, neutral));
  int64_t super = tiling.slices * tiling.loads;
  Value rem = b.createOrFold<arith::RemUIOp>(loc, extent, index(super));
  Value superEnd = b.createOrFold<arith::SubIOp>(loc, extent, rem);
  auto unrolled = scf::ForOp::create(
      b, loc, zero, superEnd, index(super), identities,
      [&](OpBuilder& nb, Location l, Value s, ValueRange accs) {
        SmallVector<Value> ks;
        SmallVector<Loaded> loaded;
        Value base = arith::AddIOp::create(nb, l, s, slice);
        for (int64_t u = 0; u < tiling.loads; ++u) {
          ks.push_back(u == 0 ? base
                              : arith::AddIOp::create(nb, l, base,
                                                      arith::ConstantIndexOp::create(
                                                          nb, l, u * tiling.slices))
                                    .getResult());
          loaded.push_back(loadStep(nb, ks.back()));
        }
        SmallVector<Value> next(accs);
        for (int64_t u = 0; u < tiling.loads; ++u) next = computeStep(nb, ks[u], loaded[u], next);
        scf::YieldOp::create(nb, l, next);
      });
  Value tailStart = arith::AddIOp::create(b, loc, superEnd, slice);
  auto tail = scf::ForOp::create(b, loc, tailStart, extent, index(tiling.slices),
                                 unrolled.getResults(),
                                 [&](OpBuilder& nb, Location l, Value k, ValueRange accs) {
                                   Loaded loaded = loadStep(nb, k);
                                   scf::YieldOp::create(nb, l, computeStep(nb, k, loaded, accs));
                                 });
  return SmallVector<Value>(tail.getResults());
}

LogicalResult ColumnLowering::run(func::FuncOp kernel) {
  SmallVector<Range> ranges = op.createLoopRanges(b, loc);
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it == utils::IteratorType::parallel && (int64_t)d != loops.column &&
        getConstantIntValue(ranges[d].size) != 1)
      return op.emitError("internal: column reduction over more than one row");
  for (OpOperand* in : op.getDpsInputOperands())
    usesColumn.push_back(op.getMatchingIndexingMap(in).isFunctionOfDim(loops.column));
  b.setInsertionPointToStart(op->getBlock());  // before the tile's initialization
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  b.setInsertionPoint(op);
  zero = index(0);
  // The output tile's initialization (a fill before the op): column c by thread c, the one
  // that combines into it (a per-thread stack tile is otherwise written whole by every
  // thread: 128 bytes of local memory each for 32 f32 columns, 29 MB per 14336-column GEMV).
  {
    IRRewriter rewriter(b.getContext());
    Value tile = rootBuffer(op.getDpsInitOperand(0)->get());
    for (Operation* o = op->getBlock()->empty() ? nullptr : &op->getBlock()->front(); o && o != op;) {
      Operation* next = o->getNextNode();
      auto init = dyn_cast<linalg::LinalgOp>(o);
      if (init && init.getNumDpsInits() == 1 && init.hasPureBufferSemantics() &&
          rootBuffer(init.getDpsInitOperand(0)->get()) == tile)
        (void)splitByColumn(rewriter, o, tid);
      o = next;
    }
    b.setInsertionPoint(op);
  }
  Value columnThread = arith::RemUIOp::create(b, loc, tid, index(tiling.columnThreads));
  slice = arith::DivUIOp::create(b, loc, tid, index(tiling.columnThreads));
  firstColumn = arith::MulIOp::create(b, loc, columnThread, index(tiling.width));
  Value columnsHere = getValueOrCreateConstantIndexOp(b, loc, ranges[loops.column].size);
  Value extent = getValueOrCreateConstantIndexOp(b, loc, ranges[loops.reduced].size);

  // Threads whose columns lie past a partial tile keep the identity (and still shuffle).
  Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, firstColumn, columnsHere);
  Type accType = getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType());
  auto ifActive = scf::IfOp::create(b, loc, SmallVector<Type>(tiling.width, accType), active,
                                    /*withElseRegion=*/true);
  SmallVector<Value> partial;
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifActive.thenBlock());
    scf::YieldOp::create(b, loc, reduceSlices(extent));
    b.setInsertionPointToStart(ifActive.elseBlock());
    TypedAttr neutral = *arith::getNeutralElement(combiner);
    SmallVector<Value> identities;
    for (int64_t j = 0; j < tiling.width; ++j)
      identities.push_back(arith::ConstantOp::create(b, loc, neutral));
    scf::YieldOp::create(b, loc, identities);
  }
  partial.assign(ifActive.getResults().begin(), ifActive.getResults().end());

  // Within a warp, lanes l and l ^ columnThreads * 2^i hold the same columns.
  for (int64_t offset = tiling.columnThreads; offset < kWarpSize; offset *= 2)
    for (Value& p : partial)
      p = combine(b, p, gpu::ShuffleOp::create(b, loc, p, offset, kWarpSize, gpu::ShuffleMode::XOR)
                            .getResult(0));
  // Across warps: lanes < columnThreads of each warp store the warp's partials, then thread
  // c < columns here combines column c over the warps with the output's initial value.
  int64_t warps = tiling.threads() / kWarpSize, columns = tiling.columns();
  Value shared = WorkgroupArray(b, loc, kernel, accType, warps * columns);
  Value warp = arith::DivUIOp::create(b, loc, tid, index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, loc, tid, index(kWarpSize));
  Value writer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lane,
                                       index(tiling.columnThreads));
  auto ifWriter = scf::IfOp::create(b, loc, writer, /*withElseRegion=*/false);
  {
    OpBuilder wb = OpBuilder::atBlockTerminator(ifWriter.thenBlock());
    Value base = arith::AddIOp::create(
        wb, loc, arith::MulIOp::create(wb, loc, warp, index(columns)), firstColumn);
    for (auto [j, p] : llvm::enumerate(partial))
      memref::StoreOp::create(wb, loc, p, shared,
                              ValueRange{arith::AddIOp::create(wb, loc, base, index(j))});
  }
  gpu::BarrierOp::create(b, loc);
  Value owner = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, columnsHere);
  auto ifOwner = scf::IfOp::create(b, loc, owner, /*withElseRegion=*/false);
  {
    OpBuilder ob = OpBuilder::atBlockTerminator(ifOwner.thenBlock());
    Value sum = memref::LoadOp::create(ob, loc, shared, ValueRange{tid});
    for (int64_t w = 1; w < warps; ++w)
      sum = combine(ob, sum,
                    memref::LoadOp::create(
                        ob, loc, shared,
                        ValueRange{arith::AddIOp::create(ob, loc, tid, index(w * columns))}));
    OpOperand* out = op.getDpsInitOperand(0);
    SmallVector<Value> dims(op.getNumLoops(), zero);
    dims[loops.column] = tid;
    SmallVector<Value> at = indicesAt(ob, op.getMatchingIndexingMap(out), dims);
    Value old = memref::LoadOp::create(ob, loc, out->get(), at);
    memref::StoreOp::create(ob, loc, combine(ob, old, sum), out->get(), at);
  }
  Operation* after = ifOwner;
  tileOnStack = rootBuffer(op.getDpsInitOperand(0)->get()).getDefiningOp<memref::AllocaOp>() != nullptr;
  op->erase();
  return distributeTail(kernel, after, tid);
}

// What follows the reduction in its block reads the finished tile: after a barrier, each
// all-parallel linalg op there is tiled by one column, thread t taking columns t, t + B, ...
// (B = threads per block): column c then reads what thread c stored, also when the tile is a
// per-thread stack temporary (a fused consumer's input). Copies of a buffer onto itself
// (left by bufferization) go; any other op that writes memory runs on thread 0 alone, which
// is only correct when the tile is in device memory (checked).
LogicalResult ColumnLowering::distributeTail(func::FuncOp kernel, Operation* after, Value tid) {

  Block* block = after->getBlock();
  SmallVector<Operation*> tail;
  for (Operation* o = after->getNextNode(); o && o != block->getTerminator(); o = o->getNextNode())
    tail.push_back(o);
  bool writes = llvm::any_of(tail, [](Operation* o) { return !isMemoryEffectFree(o); });
  if (!writes) return success();
  b.setInsertionPointAfter(after);
  gpu::BarrierOp::create(b, loc);
  IRRewriter rewriter(kernel.getContext());
  for (Operation* o : tail) {
    if (isMemoryEffectFree(o)) continue;
    if (auto copy = dyn_cast<memref::CopyOp>(o); copy && copy.getSource() == copy.getTarget()) {
      rewriter.eraseOp(o);
      continue;
    }
    if (splitByColumn(rewriter, o, tid)) continue;
    if (tileOnStack)
      return o->emitError("internal: a column reduction's consumer could not be split by column");
    rewriter.setInsertionPoint(o);
    Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, tid,
                                        arith::ConstantIndexOp::create(rewriter, loc, 0));
    auto ifFirst = scf::IfOp::create(rewriter, loc, first, /*withElseRegion=*/false);
    o->moveBefore(ifFirst.thenBlock()->getTerminator());
    if (o->getNumResults() && !o->use_empty())
      return o->emitError("internal: a column reduction's consumer has results used later");
  }
  return success();
}
}  // namespace

// An all-parallel linalg op on buffers tiled by one element of its output's last dim, thread
// t taking t, t + B, ... (B = threads per block). False (op unchanged) otherwise.
bool ColumnLowering::splitByColumn(RewriterBase& rewriter, Operation* o, Value tid) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(o);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics() || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumLoops() != linalgOp.getNumParallelLoops() || linalgOp.getNumLoops() == 0)
    return false;
  AffineMap outMap = linalgOp.getMatchingIndexingMap(linalgOp.getDpsInitOperand(0));
  auto last = outMap.getNumResults() ? dyn_cast<AffineDimExpr>(outMap.getResults().back()) : nullptr;
  if (!last) return false;
  SmallVector<int64_t> sizes(linalgOp.getNumLoops(), 0);
  sizes[last.getPosition()] = 1;
  linalg::LinalgTilingOptions options;
  options.setTileSizes(sizes).setLoopType(linalg::LinalgTilingLoopType::Loops);
  rewriter.setInsertionPoint(o);
  FailureOr<linalg::TiledLinalgOp> tiled = linalg::tileLinalgOp(rewriter, linalgOp, options);
  if (failed(tiled)) return false;
  if (tiled->loops.size() != 1) {
    for (Operation* loop : tiled->loops) rewriter.eraseOp(loop);
    return false;
  }
  auto loop = cast<scf::ForOp>(tiled->loops.front());
  rewriter.setInsertionPoint(loop);
  loop.setLowerBound(tid);
  loop.setStep(arith::ConstantIndexOp::create(rewriter, loc, tiling.threads()));
  rewriter.eraseOp(o);
  return true;
}

LogicalResult LowerColumnReduction(func::FuncOp kernel, const ColumnTiling& tiling) {
  const KernelReduction found = SoleKernelReduction(kernel);
  linalg::LinalgOp op = found.op;
  Operation* combiner = found.combiner;
  std::optional<ColumnReduction> loops = combiner ? MatchColumnReduction(op) : std::nullopt;
  if (!loops) return kernel.emitError("internal: column-reduction kernel without a column reduction");
  if (!op.hasPureBufferSemantics()) return op.emitError("internal: reduction not bufferized");
  return ColumnLowering(op, combiner, *loops, tiling).run(kernel);
}

}  // namespace hexir::cuda
