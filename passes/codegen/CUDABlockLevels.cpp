// One-block kernels for small layers (issue #18 item 2): a `small_layer` dispatch group
// (hexir-group-small-projections, passes/dispatch/fusion/README.md) holds several dependent
// linalg ops (RMSNorm's sum and scaling, q/k/v, rotary, the KV-cache rows; or w1/w3,
// SiLU * mul, w2, the residual) and possibly several results. On CUDA it runs as one block:
//   - every temporary the bufferized kernel allocates lives in shared memory (read by other
//     threads than the one that wrote it);
//   - each op is a loop over its parallel points strided by the block's threads (a thread
//     per point, the point's reductions looped by that thread; a reduction with fewer points
//     than half the block gets several adjacent lanes a point, LanesPerPoint, which split its
//     elements and combine with an xor butterfly); ops that do not read one another start at
//     different threads, so one level of the group fills the block;
//   - an op with a single point and a reducible reduction of at least kWarpSize elements
//     (the norm's sum of squares) is split over all threads instead: strided partials, an
//     xor butterfly per warp, the warps' partials combined through shared memory;
//   - a `gpu.barrier` goes before an op that reads (as an operand, or a load in its body:
//     a stop flag reading the state the group updated) or writes a buffer written since the
//     last barrier, or writes one read since then (levels of the group are separated, ops
//     of one level are not).
// hexir-cuda-distribute-threads marks such a kernel (kBlockLevelsAttr, one block of its
// block size, or of BlockLevelsThreads' wider one for a long norm pair);
// hexir-cuda-lower-executables calls LowerBlockLevels on the bufferized kernel.
#include "passes/codegen/CUDABlockLevels.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/KernelLoweringUtils.h"
#include "passes/codegen/RowSelectWrites.h"

namespace hexir::cuda {
using namespace mlir;

// The kind hexir-group-small-projections gives its groups (kDispatchGroupAttr: its region and
// executable carry it), as "decode_attention" for CUDADecodeAttention.h.
constexpr char kSmallLayerGroupKind[] = "small_layer";

const char kBlockLevelsAttr[] = "hexir.cuda.block_levels";

bool IsSmallLayerGroup(ExecutableOp exe) {
  auto kind = exe->getAttrOfType<StringAttr>(kDispatchGroupAttr);
  return kind && kind.getValue() == kSmallLayerGroupKind;
}

namespace {

// The buffer a chain of views (subview, cast, reshape, address-space cast) is over.
Value RootBuffer(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    if (auto cast = dyn_cast<memref::CastOp>(def)) {
      v = cast.getSource();
      continue;
    }
    break;
  }
  return v;
}

// Every allocation at the kernel's top level becomes a shared-memory array of its shape,
// viewed in the generic address space (so its users keep their types; NVPTX's address-space
// inference turns the accesses back into shared ones).
LogicalResult AllocationsToShared(func::FuncOp kernel) {
  MLIRContext* ctx = kernel.getContext();
  auto module = kernel->getParentOfType<ModuleOp>();
  auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  int64_t bytes = 0;
  for (auto alloc : llvm::to_vector(kernel.getBody().front().getOps<memref::AllocOp>())) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return alloc.emitError("small-layer kernel: a temporary of dynamic shape or non-identity "
                             "layout cannot live in shared memory");
    bytes += type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
    if (bytes > kMaxBlockLevelsSharedBytes)
      return alloc.emitError("small-layer kernel: temporaries need more than ")
             << kMaxBlockLevelsSharedBytes << " bytes of shared memory";
    auto sharedType = MemRefType::get(type.getShape(), type.getElementType(),
                                      MemRefLayoutAttrInterface(), space);
    OpBuilder mb(kernel);
    auto global = memref::GlobalOp::create(mb, alloc.getLoc(), "__hexir_level",
                                           mb.getStringAttr("private"), sharedType, Attribute(),
                                           /*constant=*/false, mb.getI64IntegerAttr(16));
    SymbolTable(module).insert(global);  // renamed when there are several
    OpBuilder b(alloc);
    Value shared = memref::GetGlobalOp::create(b, alloc.getLoc(), sharedType, global.getSymName());
    Value generic = memref::MemorySpaceCastOp::create(b, alloc.getLoc(), type, shared);
    for (Operation* user : llvm::to_vector(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user)) user->erase();
    alloc.replaceAllUsesWith(generic);
    alloc.erase();
  }
  return success();
}

// The buffers an op reads and writes since the last barrier (by root buffer).
struct Hazards {
  llvm::DenseSet<Value> written, read;
  // A barrier is needed before an op reading `reads` and writing `writes`.
  bool conflict(ArrayRef<Value> reads, ArrayRef<Value> writes) const {
    for (Value r : reads)
      if (written.contains(r)) return true;
    for (Value w : writes)
      if (written.contains(w) || read.contains(w)) return true;
    return false;
  }
  void clear() {
    written.clear();
    read.clear();
  }
};

// Loop dims of `op`: parallel ones first (their order kept), then the reductions.
SmallVector<unsigned> ParallelFirst(linalg::GenericOp op) {
  SmallVector<unsigned> order;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it == utils::IteratorType::parallel) order.push_back(d);
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it != utils::IteratorType::parallel) order.push_back(d);
  return order;
}

Value Index(OpBuilder& b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

// The coordinates of the point `linear` of a row-major space of `extents` (the last fastest).
SmallVector<Value> Delinearize(OpBuilder& b, Location loc, Value linear, ArrayRef<int64_t> extents) {
  SmallVector<Value> coordinates(extents.size());
  for (int64_t d = extents.size() - 1; d >= 0; --d) {
    coordinates[d] = d > 0 ? arith::RemUIOp::create(b, loc, linear, Index(b, loc, extents[d])).getResult() : linear;
    if (d > 0) linear = arith::DivUIOp::create(b, loc, linear, Index(b, loc, extents[d]));
  }
  return coordinates;
}

// An output's initial value for one point: the output buffer, its indexing map, the op's
// loop count (reductions after the parallel dims; the output does not depend on them).
struct FillStore {
  Value fill, out;
  AffineMap map;
  unsigned loops = 0;
  // Stores `fill` at the point `coordinates` (the parallel dims') at the builder's position.
  void emit(OpBuilder& b, Location loc, ArrayRef<Value> coordinates) const {
    if (!fill) return;
    SmallVector<Value> dims(coordinates);
    while (dims.size() < loops) dims.push_back(Index(b, loc, 0));
    memref::StoreOp::create(b, loc, fill, out, codegen::IndicesAt(b, loc, map, dims));
  }
};

// `op` (parallel dims first, static) with a thread per point: its points p = 0..P strided by
// the block, starting at thread `offset` (mod the block) so that ops of one level use
// different threads; each thread loops over its points' reductions itself. `fill` (or null):
// the value the output starts from, stored by the point's thread before its reduction (a
// folded linalg.fill: no barrier between the fill and its reduction).
LogicalResult ThreadPerPoint(RewriterBase& rw, linalg::GenericOp op, Value tid, int64_t block,
                             int64_t offset, Value fill, int64_t vector = 1) {
  Location loc = op.getLoc();
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  int64_t parallelCount = op.getNumParallelLoops(), points = 1;
  for (int64_t d = 0; d < parallelCount; ++d) points *= extents[d];
  FillStore store{fill, op.getDpsInitOperand(0)->get(),
                  op.getMatchingIndexingMap(op.getDpsInitOperand(0)), op.getNumLoops()};
  rw.setInsertionPoint(op);
  Value start = arith::RemUIOp::create(
      rw, loc, arith::AddIOp::create(rw, loc, tid, Index(rw, loc, block - offset % block)),
      Index(rw, loc, block));
  if (parallelCount == 0) {  // one point: one thread
    Value mine = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq, start, Index(rw, loc, 0));
    auto only = scf::IfOp::create(rw, loc, mine, /*withElseRegion=*/false);
    op->moveBefore(only.thenBlock()->getTerminator());
    rw.setInsertionPoint(op);
    store.emit(rw, loc, {});
    if (failed(linalg::linalgOpToLoops(rw, op))) return op.emitError("small-layer kernel: op does not lower to loops");
    rw.eraseOp(op);
    return success();
  }
  FailureOr<linalg::LinalgLoops> loops = linalg::linalgOpToLoops(rw, op);
  if (failed(loops) || (int64_t)loops->size() < parallelCount)
    return op.emitError("small-layer kernel: op does not lower to loops");
  rw.eraseOp(op);
  SmallVector<scf::ForOp> nest;
  for (int64_t d = 0; d < parallelCount; ++d) {
    auto loop = dyn_cast<scf::ForOp>((*loops)[d]);
    if (!loop) return emitError(loc, "small-layer kernel: a parallel loop is no scf.for");
    nest.push_back(loop);
  }
  rw.setInsertionPoint(nest.front());
  // `vector` consecutive points a step (they share all coordinates but the innermost).
  if (vector > 1 && (points % vector != 0 || extents[parallelCount - 1] % vector != 0 || fill)) vector = 1;
  Value first = vector > 1 ? arith::MulIOp::create(rw, loc, start, Index(rw, loc, vector)).getResult() : start;
  auto strided = scf::ForOp::create(rw, loc, first, Index(rw, loc, points), Index(rw, loc, block * vector));
  rw.setInsertionPointToStart(strided.getBody());
  Value point = strided.getInductionVar();
  scf::ForOp lanes;
  if (vector > 1) {  // a constant trip count: LLVM unrolls it and merges the accesses
    lanes = scf::ForOp::create(rw, loc, Index(rw, loc, 0), Index(rw, loc, vector), Index(rw, loc, 1));
    rw.setInsertionPointToStart(lanes.getBody());
    point = arith::AddIOp::create(rw, loc, point, lanes.getInductionVar());
  }
  SmallVector<Value> coordinates = Delinearize(rw, loc, point, ArrayRef<int64_t>(extents).take_front(parallelCount));
  for (int64_t d = 0; d < parallelCount; ++d) nest[d].getInductionVar().replaceAllUsesWith(coordinates[d]);
  store.emit(rw, loc, coordinates);
  Block* inner = nest.back().getBody();
  Operation* end = (lanes ? lanes.getBody() : strided.getBody())->getTerminator();
  for (Operation& moved : llvm::make_early_inc_range(inner->without_terminator())) moved.moveBefore(end);
  rw.eraseOp(nest.front());
  return success();
}

// `combiner` (a WarpReducibleCombiner of an op whose body's accumulator is `acc`) cloned at
// `b` to combine `accValue` with `other`.
Value Combine(OpBuilder& b, Operation* combiner, BlockArgument acc, Value accValue, Value other) {
  IRMapping m;
  Value otherOperand = combiner->getOperand(0) == acc ? combiner->getOperand(1) : combiner->getOperand(0);
  m.map(acc, accValue);
  m.map(otherOperand, other);
  return b.clone(*combiner, m)->getResult(0);
}

// `op`'s body at the loop point `dims` (its inputs loaded there, linalg.index read from
// `dims`) folded into `accValue` at `b`: the value it yields.
Value BodyAt(OpBuilder& b, Location loc, linalg::GenericOp op, ArrayRef<Value> dims, Value accValue) {
  Block* body = op.getBlock();
  IRMapping m;
  for (OpOperand* in : op.getDpsInputOperands())
    m.map(body->getArgument(in->getOperandNumber()),
          memref::LoadOp::create(b, loc, in->get(), codegen::IndicesAt(b, loc, op.getMatchingIndexingMap(in), dims)));
  m.map(body->getArgument(op.getNumDpsInputs()), accValue);
  for (Operation& inner : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      m.map(index.getResult(), dims[index.getDim()]);
      continue;
    }
    b.clone(inner, m);
  }
  return m.lookupOrDefault(body->getTerminator()->getOperand(0));
}

// Lanes per point of `op` (parallel dims first, static) when it has fewer points than half
// the block: one warp-reducible reduction loop (CUDAWarpReduce.h) whose elements are shared
// by L adjacent lanes, L the largest power of two <= 32 with points * L <= the block and at
// least 8 elements a lane; 1 otherwise (a thread per point). stories260K's w2 (64 rows of
// 172) gets 4 lanes a row, its k and v (32 rows of 64) 8: a thread walking a whole row alone
// was the longest dependent chain of its level.
int64_t LanesPerPoint(linalg::GenericOp op, int64_t points, int64_t block) {
  if (op.getNumReductionLoops() != 1 || !WarpReducibleCombiner(op)) return 1;
  int64_t extent = op.getStaticLoopRanges().back();
  int64_t lanes = 1;
  while (lanes < kWarpSize && points * lanes * 2 <= block && extent >= 8 * lanes * 2) lanes *= 2;
  while (extent % lanes != 0) lanes /= 2;  // every lane the same static trip count
  return lanes;
}

// `op` (parallel dims first, static, one reduction loop last, LanesPerPoint's `lanes` > 1):
// threads from `offset` (a multiple of `lanes`, mod the block) take the points in groups of
// `lanes` adjacent lanes; lane l of a point folds its elements k = l, l + lanes, ... from the
// combiner's neutral element, the lanes combine with an xor butterfly (the groups are aligned
// in their warp), and lane 0 combines the output's start value (`fill`, or the output) with
// the total and stores it. Every thread runs the same rounds (points strided by block /
// lanes), so the shuffles see whole warps: a lane past the last point reads the last point
// and stores nothing.
void LanesReduce(RewriterBase& rw, linalg::GenericOp op, Operation* combiner, Value tid, int64_t block,
                 int64_t offset, int64_t lanes, Value fill) {
  Location loc = op.getLoc();
  rw.setInsertionPoint(op);
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  const int64_t loops = extents.size(), reduced = loops - 1;
  int64_t points = 1;
  for (int64_t d = 0; d < reduced; ++d) points *= extents[d];
  BlockArgument acc = op.getBlock()->getArgument(op.getNumDpsInputs());
  auto combine = [&](OpBuilder& b, Value accValue, Value other) { return Combine(b, combiner, acc, accValue, other); };
  Value identity = arith::ConstantOp::create(rw, loc, *arith::getNeutralElement(combiner));
  Value start = arith::RemUIOp::create(
      rw, loc, arith::AddIOp::create(rw, loc, tid, Index(rw, loc, block - offset % block)), Index(rw, loc, block));
  Value lane = arith::RemUIOp::create(rw, loc, start, Index(rw, loc, lanes));
  Value first = arith::DivUIOp::create(rw, loc, start, Index(rw, loc, lanes));
  const int64_t stride = block / lanes, rounds = (points + stride - 1) / stride;
  auto roundsLoop = scf::ForOp::create(rw, loc, Index(rw, loc, 0), Index(rw, loc, rounds), Index(rw, loc, 1));
  OpBuilder b = OpBuilder::atBlockTerminator(roundsLoop.getBody());
  Value point = arith::AddIOp::create(
      b, loc, first, arith::MulIOp::create(b, loc, roundsLoop.getInductionVar(), Index(b, loc, stride)));
  Value last = Index(b, loc, points - 1);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, point, last);
  SmallVector<Value> coordinates = Delinearize(b, loc, arith::MinUIOp::create(b, loc, point, last),
                                                ArrayRef<int64_t>(extents).take_front(reduced));
  // A static trip count (extent / lanes), so that LLVM unrolls it and issues the loads
  // ahead, as it does a thread's whole row.
  auto fold = scf::ForOp::create(
      b, loc, Index(b, loc, 0), Index(b, loc, extents[reduced] / lanes), Index(b, loc, 1), ValueRange{identity},
      [&](OpBuilder& ib, Location l, Value j, ValueRange accs) {
        Value k = arith::AddIOp::create(ib, l, lane, arith::MulIOp::create(ib, l, j, Index(ib, l, lanes)));
        SmallVector<Value> dims(coordinates);
        dims.push_back(k);
        scf::YieldOp::create(ib, l, BodyAt(ib, l, op, dims, accs[0]));
      });
  Value partial = fold.getResult(0);
  partial = XorButterfly(b, loc, partial, lanes, [&](Value x, Value y) { return combine(b, x, y); });
  Value leader = arith::AndIOp::create(
      b, loc, valid, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, Index(b, loc, 0)));
  auto store = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
  {
    OpBuilder sb = OpBuilder::atBlockTerminator(store.thenBlock());
    OpOperand* out = op.getDpsInitOperand(0);
    SmallVector<Value> dims(coordinates);
    dims.push_back(Index(sb, loc, 0));
    SmallVector<Value> at = codegen::IndicesAt(sb, loc, op.getMatchingIndexingMap(out), dims);
    Value from = fill ? fill : memref::LoadOp::create(sb, loc, out->get(), at).getResult();
    memref::StoreOp::create(sb, loc, combine(sb, from, partial), out->get(), at);
  }
  rw.eraseOp(op);
}

// Whether `op` takes the block reduction: one point, one reduction loop of at least a warp's
// elements, a warp-reducible combiner (CUDAWarpReduce.h).
Operation* BlockReducible(linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1) return nullptr;
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it == utils::IteratorType::parallel ? extents[d] != 1 : extents[d] < kWarpSize)
      return nullptr;
  return WarpReducibleCombiner(op);
}

// The block reduction of `op` (BlockReducible): every thread folds the elements k = tid,
// tid + B, ... into its partial; the warps combine with an xor butterfly; lane 0 of each warp
// stores its warp's partial into shared memory; after a barrier thread 0 combines them in
// warp order with the output's value (or `fill`, a folded linalg.fill's) and stores it.
void BlockReduce(RewriterBase& rw, func::FuncOp kernel, linalg::GenericOp op, Operation* combiner,
                 Value tid, int64_t block, Value fill, int64_t vector = 1) {
  Location loc = op.getLoc();
  rw.setInsertionPoint(op);
  int64_t reduced = 0;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (auto [d, it] : llvm::enumerate(iterators))
    if (it != utils::IteratorType::parallel) reduced = d;
  Value zero = Index(rw, loc, 0);
  BlockArgument acc = op.getBlock()->getArgument(op.getNumDpsInputs());
  auto indicesAt = [&](OpBuilder& b, AffineMap map, ArrayRef<Value> dims) {
    return codegen::IndicesAt(b, loc, map, dims);
  };
  auto combine = [&](OpBuilder& b, Value accValue, Value other) { return Combine(b, combiner, acc, accValue, other); };
  TypedAttr neutral = *arith::getNeutralElement(combiner);
  Value identity = arith::ConstantOp::create(rw, loc, neutral);
  int64_t extent = op.getStaticLoopRanges()[reduced];
  // `vector` consecutive elements a step, folded in order.
  if (extent % vector != 0) vector = 1;
  Value from = vector > 1 ? arith::MulIOp::create(rw, loc, tid, Index(rw, loc, vector)).getResult() : tid;
  auto loop = scf::ForOp::create(
      rw, loc, from, Index(rw, loc, extent), Index(rw, loc, block * vector), ValueRange{identity},
      [&](OpBuilder& b, Location l, Value k, ValueRange accs) {
        Value acc = accs[0];
        for (int64_t v = 0; v < vector; ++v) {
          SmallVector<Value> dims(iterators.size(), zero);
          dims[reduced] = v ? arith::AddIOp::create(b, l, k, Index(b, l, v)).getResult() : k;
          acc = BodyAt(b, l, op, dims, acc);
        }
        scf::YieldOp::create(b, l, acc);
      });
  Value partial = loop.getResult(0);
  partial = XorButterfly(rw, loc, partial, kWarpSize, [&](Value x, Value y) { return combine(rw, x, y); });
  int64_t warps = block / kWarpSize;
  Value shared = WorkgroupArray(rw, loc, kernel, partial.getType(), warps);
  Value lane = arith::RemUIOp::create(rw, loc, tid, Index(rw, loc, kWarpSize));
  auto leader = scf::IfOp::create(rw, loc, arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq, lane, zero),
                                  /*withElseRegion=*/false);
  {
    OpBuilder b = OpBuilder::atBlockTerminator(leader.thenBlock());
    memref::StoreOp::create(b, loc, partial, shared,
                            ValueRange{arith::DivUIOp::create(b, loc, tid, Index(b, loc, kWarpSize))});
  }
  gpu::BarrierOp::create(rw, loc);
  auto first = scf::IfOp::create(rw, loc, arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq, tid, zero),
                                 /*withElseRegion=*/false);
  {
    OpBuilder b = OpBuilder::atBlockTerminator(first.thenBlock());
    Value total = memref::LoadOp::create(b, loc, shared, ValueRange{zero});
    for (int64_t w = 1; w < warps; ++w)
      total = combine(b, total, memref::LoadOp::create(b, loc, shared, ValueRange{Index(b, loc, w)}));
    OpOperand* out = op.getDpsInitOperand(0);
    SmallVector<Value> dims(iterators.size(), zero);
    SmallVector<Value> at = indicesAt(b, op.getMatchingIndexingMap(out), dims);
    Value start = fill ? fill : memref::LoadOp::create(b, loc, out->get(), at).getResult();
    Value result = combine(b, start, total);
    memref::StoreOp::create(b, loc, result, out->get(), at);
  }
  rw.eraseOp(op);
}

}  // namespace

// A norm pair as one block of 256 threads walks 8 strided steps a thread at TinyLlama's 2048
// (measured slower on the H200 than its two kernels): wider pairs get up to 1024 threads, 2
// elements each. Other groups keep `blockSize` (their levels are rows, not long vectors).
int64_t BlockLevelsThreads(func::FuncOp kernel, int64_t blockSize) {
  SmallVector<linalg::GenericOp> ops;
  bool other = false;
  kernel.walk([&](linalg::LinalgOp op) {
    if (isa<linalg::FillOp>(op)) return;
    if (auto g = dyn_cast<linalg::GenericOp>(op.getOperation())) ops.push_back(g);
    else other = true;
  });
  if (other || ops.size() != 2 || ops[0].getNumReductionLoops() == 0 || ops[1].getNumReductionLoops() != 0)
    return blockSize;
  int64_t widest = 0;
  for (linalg::GenericOp g : ops) {
    int64_t n = 1;
    for (int64_t e : g.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(e)) return blockSize;
      n *= e;
    }
    widest = std::max(widest, n);
  }
  for (auto [e, kind] : llvm::zip(ops[0].getStaticLoopRanges(), ops[0].getIteratorTypesArray()))
    if (kind == utils::IteratorType::parallel && e != 1) return blockSize;
  if (widest <= 4 * blockSize) return blockSize;
  return std::min<int64_t>(1024, llvm::alignTo((widest + 1) / 2, kWarpSize));
}

// Rewrites the bufferized `kernel` (its linalg ops and copies at the top level) into the
// one-block form above for blocks of `blockSize` threads (a multiple of 32). Errors name the
// op that cannot be lowered so (a dynamic shape, a nested op, temporaries over
// kMaxBlockLevelsSharedBytes).
LogicalResult LowerBlockLevels(func::FuncOp kernel, int64_t blockSize, int64_t vector) {
  if (blockSize <= 0 || blockSize % kWarpSize != 0)
    return kernel.emitError("small-layer kernel: block of ") << blockSize << " threads is no whole number of warps";
  Block& top = kernel.getBody().front();
  WalkResult nested = kernel.walk([&](linalg::LinalgOp op) {
    if (op->getBlock() != &top) {
      op.emitError("small-layer kernel: linalg op nested in a region (only top-level ops are levels)");
      return WalkResult::interrupt();
    }
    if (!op.hasPureBufferSemantics() || op.hasDynamicShape()) {
      op.emitError("small-layer kernel: op not bufferized or of dynamic shape");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (nested.wasInterrupted()) return failure();
  // A cache row written through a whole-cache select touches only its row.
  codegen::NarrowRowSelectWrites(kernel);
  if (failed(AllocationsToShared(kernel))) return failure();

  IRRewriter rw(kernel.getContext());
  // Copies the bufferization left (a shared init, a tied result) are levels too.
  // A copy of a buffer only a fill wrote before it (one filled init CSE'd for two
  // reductions) becomes a fill of its target, so that both fills fold below.
  for (auto copy : llvm::to_vector(top.getOps<memref::CopyOp>())) {
    rw.setInsertionPoint(copy);
    Value source = copy.getSource();
    linalg::FillOp filled;
    bool otherWriter = false;
    for (Operation* user : source.getUsers()) {
      auto writer = dyn_cast<linalg::LinalgOp>(user);
      if (!writer || !writer->isBeforeInBlock(copy) ||
          llvm::none_of(writer.getDpsInits(), [&](Value v) { return v == source; }))
        continue;
      if (auto fill = dyn_cast<linalg::FillOp>(user)) filled = fill;
      else otherWriter = true;
    }
    if (filled && !otherWriter)
      linalg::FillOp::create(rw, copy.getLoc(), ValueRange{filled.getDpsInputOperand(0)->get()},
                             ValueRange{copy.getTarget()});
    else if (source != copy.getTarget())
      linalg::makeMemRefCopyOp(rw, copy.getLoc(), source, copy.getTarget());
    rw.eraseOp(copy);
  }
  // A fill whose buffer the next op that touches it takes as its only init, writing every
  // element once (a reduction's output), is folded into that op: each point's thread stores
  // the fill value before its reduction, so the two need no barrier between them.
  DenseMap<Operation*, Value> folded;
  for (auto fill : llvm::to_vector(top.getOps<linalg::FillOp>())) {
    Value buffer = fill.getDpsInitOperand(0)->get();
    Operation* next = nullptr;
    for (Operation* user : buffer.getUsers()) {
      Operation* at = top.findAncestorOpInBlock(*user);
      if (at && at != fill && fill->isBeforeInBlock(at) && (!next || at->isBeforeInBlock(next))) next = at;
    }
    auto reader = dyn_cast_or_null<linalg::LinalgOp>(next);
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (!reader || !type || reader.getNumDpsInits() != 1 || reader.getDpsInitOperand(0)->get() != buffer ||
        llvm::any_of(reader.getDpsInputOperands(), [&](OpOperand* in) { return in->get() == buffer; }) ||
        !reader.getMatchingIndexingMap(reader.getDpsInitOperand(0)).isProjectedPermutation())
      continue;
    int64_t points = 1;
    for (auto [n, it] : llvm::zip(reader.getStaticLoopRanges(), reader.getIteratorTypesArray()))
      if (it == utils::IteratorType::parallel) points *= n;
    if (points != type.getNumElements()) continue;
    folded[reader] = fill.getDpsInputOperand(0)->get();
    rw.eraseOp(fill);
  }
  rw.setInsertionPointToStart(&top);
  Value tid = gpu::ThreadIdOp::create(rw, kernel.getLoc(), gpu::Dimension::x);
  Hazards hazards;
  int64_t offset = 0;  // the next op's first thread within its level
  for (Operation* op : llvm::to_vector(llvm::make_pointer_range(top))) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp) continue;
    Value fill = folded.lookup(op);
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic) {
      rw.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rw, linalgOp);
      if (failed(g)) return op->emitError("small-layer kernel: named op does not generalize");
      generic = *g;
    }
    SmallVector<Value> inputs, reads, writes;
    for (OpOperand* in : generic.getDpsInputOperands())
      if (isa<MemRefType>(in->get().getType())) inputs.push_back(RootBuffer(in->get()));
    // A buffer the body loads from (a tensor.extract of a state the group updates in place;
    // NarrowRowSelectWrites hoists no load of a buffer the kernel writes).
    generic.getRegion().walk([&](memref::LoadOp load) {
      if (!generic.getRegion().isAncestor(load.getMemRef().getParentRegion()))
        inputs.push_back(RootBuffer(load.getMemRef()));
    });
    reads = inputs;
    for (OpOperand& init : generic.getDpsInitsMutable()) {
      reads.push_back(RootBuffer(init.get()));
      writes.push_back(RootBuffer(init.get()));
    }
    // A block reduction reads its init after its own barrier: only its inputs can conflict.
    if (BlockReducible(generic) ? hazards.conflict(inputs, {}) : hazards.conflict(reads, writes)) {
      rw.setInsertionPoint(generic);
      gpu::BarrierOp::create(rw, generic.getLoc());
      hazards.clear();
      offset = 0;
    }
    if (Operation* combiner = BlockReducible(generic)) {
      BlockReduce(rw, kernel, generic, combiner, tid, blockSize, fill, vector);
      hazards.clear();  // its own barrier ordered every read; thread 0 wrote the output after it
      hazards.written.insert(writes.begin(), writes.end());
      offset = 0;
      continue;
    }
    SmallVector<unsigned> order = ParallelFirst(generic);
    if (!llvm::equal(order, llvm::seq<unsigned>(0, order.size()))) {
      FailureOr<linalg::GenericOp> interchanged = linalg::interchangeGenericOp(rw, generic, order);
      if (failed(interchanged)) return generic.emitError("small-layer kernel: loops do not interchange");
      generic = *interchanged;
    }
    int64_t points = 1;
    for (auto [n, it] : llvm::zip(generic.getStaticLoopRanges(), generic.getIteratorTypesArray()))
      if (it == utils::IteratorType::parallel) points *= n;
    if (int64_t lanes = LanesPerPoint(generic, points, blockSize); lanes > 1) {
      offset = llvm::alignTo(offset, lanes) % blockSize;
      LanesReduce(rw, generic, WarpReducibleCombiner(generic), tid, blockSize, offset, lanes, fill);
      offset = (offset + points * lanes) % blockSize;
    } else {
      if (failed(ThreadPerPoint(rw, generic, tid, blockSize, offset, fill, vector))) return failure();
      offset = (offset + points) % blockSize;
    }
    hazards.read.insert(reads.begin(), reads.end());
    hazards.written.insert(writes.begin(), writes.end());
  }
  return success();
}

}  // namespace hexir::cuda
