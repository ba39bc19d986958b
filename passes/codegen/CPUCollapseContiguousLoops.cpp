// One OpRewritePattern, applied once per op (walkAndApplyPatterns): the collapsed op is not
// collapsed again, and nothing is folded around it.
#include "passes/codegen/CPUCollapseContiguousLoops.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// Where loops [first, map.getNumDims()) appear in `map`: -1 when none does, else the result
// position of `first` when they are consecutive results in order; failure otherwise (a loop
// missing from the run, out of order, or inside a compound expression).
FailureOr<int64_t> RunPosition(AffineMap map, int64_t first) {
  const int64_t loops = map.getNumDims();
  int64_t at = -1, seen = 0;
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim) {
      for (int64_t d = first; d < loops; ++d)
        if (expr.isFunctionOfDim(d)) return failure();
      continue;
    }
    int64_t d = dim.getPosition();
    if (d < first) continue;
    if (d == first) at = static_cast<int64_t>(pos);
    if (at < 0 || static_cast<int64_t>(pos) != at + (d - first)) return failure();
    ++seen;
  }
  if (at < 0 ? seen != 0 : seen != loops - first) return failure();
  return at;
}

// `v`'s buffer holds dims [first, last] as one run: dims first+1..last are whole (a slice
// keeps their full extent at unit stride) all the way down to an identity-layout buffer.
bool DenseRun(Value v, int64_t first, int64_t last) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation* owner = arg.getOwner()->getParentOp();
    if (isa<func::FuncOp>(owner)) return arg.getOwner()->isEntryBlock();
    if (auto loop = dyn_cast<scf::ForOp>(owner))
      if (OpOperand* init = loop.getTiedLoopInit(arg)) return DenseRun(init->get(), first, last);
    return false;
  }
  Operation* def = v.getDefiningOp();
  if (isa<tensor::EmptyOp, arith::ConstantOp>(def)) return true;
  auto result = cast<OpResult>(v);
  if (auto op = dyn_cast<linalg::LinalgOp>(def))
    return DenseRun(op.getDpsInitOperand(result.getResultNumber())->get(), first, last);
  if (auto loop = dyn_cast<scf::ForOp>(def))
    return DenseRun(loop.getInits()[result.getResultNumber()], first, last);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(def)) return DenseRun(insert.getDest(), first, last);
  auto slice = dyn_cast<tensor::ExtractSliceOp>(def);
  if (!slice || slice.getSourceType().getRank() != slice.getResultType().getRank()) return false;
  for (int64_t d = first; d <= last; ++d) {
    if (slice.getStaticStrides()[d] != 1) return false;
    if (d > first && (slice.getSourceType().isDynamicDim(d) ||
                      slice.getStaticSizes()[d] != slice.getSourceType().getDimSize(d)))
      return false;
  }
  return DenseRun(slice.getSource(), first, last);
}

// The reassociation of an operand whose results [at, at + length) collapse into one dim.
SmallVector<ReassociationIndices> Reassociation(int64_t rank, int64_t at, int64_t length) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank;) {
    ReassociationIndices group{d};
    int64_t next = d + 1;
    if (d == at)
      for (; next < at + length; ++next) group.push_back(next);
    groups.push_back(group);
    d = next;
  }
  return groups;
}

// `map` over loops [0, first] with loops [first, n) as the one loop `first`.
AffineMap CollapsedMap(AffineMap map, int64_t first) {
  SmallVector<AffineExpr> results;
  for (AffineExpr expr : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (dim && dim.getPosition() > static_cast<unsigned>(first)) continue;
    results.push_back(expr);
  }
  return AffineMap::get(first + 1, 0, results, map.getContext());
}

/// generic (d0, ..., dn-1) with loops [first, n) read in order as a run of each operand's dims
///   -> generic (d0, ..., d_first) over collapse_shape'd operands; the results expanded back.
struct CollapseTrailingLoops : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op, PatternRewriter& rewriter) const override {
    const int64_t loops = op.getNumLoops();
    if (!op.hasPureTensorSemantics() || loops < 2) return rewriter.notifyMatchFailure(op, "not an op on tensors of 2 or more loops");
    // Parallel loops, then (a pool's, a mean's) reductions that no output reads.
    SmallVector<utils::IteratorType> iteratorTypes = op.getIteratorTypesArray();
    const int64_t firstReduction = std::find(iteratorTypes.begin(), iteratorTypes.end(), utils::IteratorType::reduction) -
                                   iteratorTypes.begin();
    if (std::find(iteratorTypes.begin() + firstReduction, iteratorTypes.end(), utils::IteratorType::parallel) !=
        iteratorTypes.end())
      return rewriter.notifyMatchFailure(op, "a parallel loop inside a reduction");
    if (!op->getDiscardableAttrDictionary().empty())
      return rewriter.notifyMatchFailure(op, "marked for a kernel of its own");
    for (OpOperand& operand : op->getOpOperands()) {
      auto type = dyn_cast<ShapedType>(operand.get().getType());
      if (type && !type.hasStaticShape()) return rewriter.notifyMatchFailure(op, "dynamic shape");
    }
    // Loops whose index the body reads stay loops of their own.
    int64_t lastIndexed = -1;
    op.getBody()->walk([&](linalg::IndexOp index) {
      lastIndexed = std::max<int64_t>(lastIndexed, index.getDim());
    });
    // The longest run of trailing loops every operand reads as one dense run, or not at all.
    SmallVector<int64_t> at;
    // The collapsed loops are all parallel or all reductions.
    int64_t first = std::max(lastIndexed + 1, firstReduction < loops ? firstReduction : int64_t{0});
    for (; first < loops - 1; ++first) {
      at.clear();
      bool fits = true;
      for (OpOperand& operand : op->getOpOperands()) {
        FailureOr<int64_t> pos = RunPosition(op.getMatchingIndexingMap(&operand), first);
        // An output holds every parallel loop and no reduction; an input may broadcast over
        // a parallel run.
        const bool reduced = firstReduction < loops;
        if (failed(pos) || (op.isDpsInit(&operand) && (*pos < 0) != reduced) || (reduced && !op.isDpsInit(&operand) && *pos < 0) ||
            (*pos >= 0 && !DenseRun(operand.get(), *pos, *pos + loops - 1 - first))) {
          fits = false;
          break;
        }
        at.push_back(*pos);
      }
      if (fits) break;
    }
    if (first >= loops - 1) return rewriter.notifyMatchFailure(op, "no trailing loops to collapse");

    const int64_t length = loops - first;
    Location loc = op.getLoc();
    SmallVector<Value> inputs, inits;
    SmallVector<AffineMap> maps;
    SmallVector<Type> resultTypes;
    for (OpOperand& operand : op->getOpOperands()) {
      Value v = operand.get();
      int64_t pos = at[operand.getOperandNumber()];
      if (pos >= 0) {
        auto type = cast<RankedTensorType>(v.getType());
        v = tensor::CollapseShapeOp::create(rewriter, loc, v, Reassociation(type.getRank(), pos, length));
      }
      maps.push_back(CollapsedMap(op.getMatchingIndexingMap(&operand), first));
      if (op.isDpsInit(&operand)) {
        inits.push_back(v);
        resultTypes.push_back(v.getType());
      } else {
        inputs.push_back(v);
      }
    }
    SmallVector<utils::IteratorType> iterators(first + 1, utils::IteratorType::parallel);
    iterators.back() = iteratorTypes.back();
    auto collapsed = linalg::GenericOp::create(rewriter, loc, resultTypes, inputs, inits, maps, iterators);
    rewriter.inlineRegionBefore(op.getRegion(), collapsed.getRegion(), collapsed.getRegion().begin());
    SmallVector<Value> results;
    for (auto [i, result] : llvm::enumerate(collapsed->getResults())) {
      OpOperand* init = op.getDpsInitOperand(i);
      if (at[init->getOperandNumber()] < 0) {  // a reduction's output: not collapsed
        results.push_back(result);
        continue;
      }
      auto type = cast<RankedTensorType>(init->get().getType());
      SmallVector<ReassociationIndices> groups = Reassociation(type.getRank(), at[init->getOperandNumber()], length);
      results.push_back(tensor::ExpandShapeOp::create(rewriter, loc, type, result, groups));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

// The trailing loops [first, n) of a bufferized generic, all parallel or (a pool's, a mean's)
// all reductions after parallel ones, that every operand reads in order as a run of its
// dims (or not at all: an input broadcast over parallel loops; a reduction's output), and
// the run's position per operand (-1: none), the longest such run past the loops whose
// index the body reads and, with 3 or more loops, past the outermost one (the batch: a
// workgroup's slice of the channels is one dense block of channels x plane, not of batch x
// channels x plane); failure when there is none, or when no run's extent is dynamic (static
// runs are the tensor pattern's).
struct Run {
  int64_t first;
  SmallVector<int64_t> at;
  bool reduced = false;  // the run's loops are reductions
};
FailureOr<Run> DynamicRun(linalg::GenericOp op) {
  const int64_t loops = op.getNumLoops();
  if (!op.hasPureBufferSemantics() || loops < 2 || !op->getDiscardableAttrDictionary().empty()) return failure();
  SmallVector<utils::IteratorType> iteratorTypes = op.getIteratorTypesArray();
  const int64_t firstReduction =
      std::find(iteratorTypes.begin(), iteratorTypes.end(), utils::IteratorType::reduction) - iteratorTypes.begin();
  if (std::find(iteratorTypes.begin() + firstReduction, iteratorTypes.end(), utils::IteratorType::parallel) !=
      iteratorTypes.end())
    return failure();
  const bool reduced = firstReduction < loops;
  int64_t lastIndexed = -1;
  op.getBody()->walk([&](linalg::IndexOp index) { lastIndexed = std::max<int64_t>(lastIndexed, index.getDim()); });
  for (int64_t first = std::max<int64_t>({lastIndexed + 1, loops >= 3 ? 1 : 0, reduced ? firstReduction : 0});
       first < loops - 1; ++first) {
    Run run{first, {}, reduced};
    bool fits = true, dynamic = false;
    for (OpOperand& operand : op->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      FailureOr<int64_t> pos = RunPosition(op.getMatchingIndexingMap(&operand), first);
      SmallVector<int64_t> strides;
      int64_t offset;
      // A strided layout (extract_strided_metadata's operand), as bufferization gives. An
      // output holds every parallel loop and no reduction; with reductions every input reads
      // the run.
      if (!type || failed(type.getStridesAndOffset(strides, offset)) || failed(pos) ||
          (op.isDpsInit(&operand) && (*pos < 0) != reduced) || (reduced && !op.isDpsInit(&operand) && *pos < 0)) {
        fits = false;
        break;
      }
      for (int64_t d = *pos; *pos >= 0 && d < *pos + loops - first; ++d) dynamic |= type.isDynamicDim(d);
      run.at.push_back(*pos);
    }
    if (!fits) continue;
    if (!dynamic) return failure();
    return run;
  }
  return failure();
}

// Run lengths of a collapsed reduction (a pool over a small plane: 1 x 1, 2 x 2, 3 x 3) that
// get a copy of the collapsed generic on views of that static length: LLVM fully unrolls the
// short reduction and vectorizes across the outputs, where a run-time length left one scalar
// loop of a few iterations per output (ShuffleNet v2's global pool over 1024 x 2 x 2: 2.0 us
// dynamic, 0.6 static).
constexpr int64_t kStaticReductionRuns[] = {1, 4, 9};

/// generic over memrefs with a dynamic run of trailing loops (DynamicRun)
///   -> scf.if (every operand's run is one dense block at run time: unit inner stride, each
///      stride the next one's times its size) { the generic over views of the operands with
///      the run as one unit-stride dim (memref.reinterpret_cast), the run as one loop }
///      else { the generic as it was }
/// A reduced run's then branch first tests its length for each of kStaticReductionRuns,
/// each taking the collapsed generic on views of that static length.
void CollapseAtRunTime(linalg::GenericOp op, const Run& run) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  const int64_t length = op.getNumLoops() - run.first, d = ShapedType::kDynamic;
  Value dense = arith::ConstantIntOp::create(b, loc, 1, 1);
  struct Collapse {
    memref::ExtractStridedMetadataOp meta;
    Value count;
  };
  SmallVector<std::optional<Collapse>> collapses;
  Value runLength;
  for (OpOperand& operand : op->getOpOperands()) {
    int64_t at = run.at[operand.getOperandNumber()];
    if (at < 0) {
      collapses.push_back(std::nullopt);
      continue;
    }
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, operand.get());
    ValueRange sizes = meta.getSizes(), strides = meta.getStrides();
    auto eq = [&](Value l, Value r) { return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, l, r); };
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    dense = arith::AndIOp::create(b, loc, dense, eq(strides[at + length - 1], one));
    Value count = sizes[at + length - 1];
    for (int64_t k = at + length - 2; k >= at; --k) {
      dense = arith::AndIOp::create(b, loc, dense, eq(strides[k], arith::MulIOp::create(b, loc, strides[k + 1], sizes[k + 1])));
      count = arith::MulIOp::create(b, loc, count, sizes[k]);
    }
    collapses.push_back(Collapse{meta, count});
    if (!runLength) runLength = count;
  }
  // The operands as views with the run as one unit-stride dim of `runSize` (static) elements,
  // or of its run-time count (ShapedType::kDynamic).
  auto viewsOf = [&](int64_t runSize) {
    SmallVector<Value> views;
    for (OpOperand& operand : op->getOpOperands()) {
      std::optional<Collapse>& c = collapses[operand.getOperandNumber()];
      if (!c) {
        views.push_back(operand.get());
        continue;
      }
      int64_t at = run.at[operand.getOperandNumber()];
      auto type = cast<MemRefType>(operand.get().getType());
      ValueRange sizes = c->meta.getSizes(), strides = c->meta.getStrides();
      SmallVector<OpFoldResult> viewSizes, viewStrides;
      SmallVector<int64_t> shape, layoutStrides;
      for (int64_t k = 0; k < type.getRank(); ++k) {
        if (k > at && k < at + length) continue;
        bool collapsed = k == at;
        OpFoldResult size = collapsed ? (ShapedType::isDynamic(runSize) ? OpFoldResult(c->count)
                                                                        : OpFoldResult(b.getIndexAttr(runSize)))
                                      : OpFoldResult(sizes[k]);
        viewSizes.push_back(size);
        viewStrides.push_back(collapsed ? OpFoldResult(b.getIndexAttr(1)) : OpFoldResult(strides[k]));
        shape.push_back(collapsed ? runSize : d);
        layoutStrides.push_back(collapsed ? 1 : d);
      }
      auto layout = StridedLayoutAttr::get(b.getContext(), d, layoutStrides);
      auto view = MemRefType::get(shape, type.getElementType(), layout, type.getMemorySpace());
      views.push_back(memref::ReinterpretCastOp::create(b, loc, view, operand.get(),
                                                        OpFoldResult(c->meta.getOffset()), viewSizes, viewStrides));
    }
    return views;
  };
  SmallVector<AffineMap> maps;
  for (OpOperand& operand : op->getOpOperands()) maps.push_back(CollapsedMap(op.getMatchingIndexingMap(&operand), run.first));
  SmallVector<utils::IteratorType> iterators(run.first + 1, utils::IteratorType::parallel);
  if (run.reduced) iterators.back() = utils::IteratorType::reduction;
  const int64_t inputs = op.getNumDpsInputs();
  auto emitCollapsed = [&](int64_t runSize) {
    SmallVector<Value> views = viewsOf(runSize);
    auto collapsed = linalg::GenericOp::create(b, loc, TypeRange{}, ArrayRef<Value>(views).take_front(inputs),
                                               ArrayRef<Value>(views).drop_front(inputs), maps, iterators);
    IRMapping mapping;
    op.getRegion().cloneInto(&collapsed.getRegion(), mapping);
  };

  auto branch = scf::IfOp::create(b, loc, dense, /*withElseRegion=*/true);
  op->moveBefore(branch.elseBlock()->getTerminator());
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  if (run.reduced && runLength) {
    for (int64_t runSize : kStaticReductionRuns) {
      Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, runLength,
                                       arith::ConstantIndexOp::create(b, loc, runSize));
      auto choice = scf::IfOp::create(b, loc, is, /*withElseRegion=*/true);
      b.setInsertionPoint(choice.thenBlock()->getTerminator());
      emitCollapsed(runSize);
      b.setInsertionPoint(choice.elseBlock()->getTerminator());
    }
  }
  emitCollapsed(d);
}

}  // namespace

void CollapseDynamicLoopsAtRunTime(func::FuncOp kernel) {
  SmallVector<std::pair<linalg::GenericOp, Run>> ops;
  kernel.walk([&](linalg::GenericOp op) {
    if (FailureOr<Run> run = DynamicRun(op); succeeded(run)) ops.push_back({op, *run});
  });
  for (auto& [op, run] : ops) CollapseAtRunTime(op, run);
}

namespace {

// A body op that applies to vectors lane by lane: arith/math elementwise ops on f32 and
// integers (constants become splats; f16/bf16 arithmetic is left to its own lowering).
bool LaneWise(Operation* op) {
  if (isa<arith::ConstantOp>(op)) return isa<FloatAttr, IntegerAttr>(cast<arith::ConstantOp>(op).getValue());
  // Math ops that LLVM has vector intrinsics for; the others become libm calls per element
  // (convert-math-to-libm), which it scalarizes only for scalars.
  if (isa<math::MathDialect>(op->getDialect()) &&
      !isa<math::FmaOp, math::AbsFOp, math::SqrtOp, math::FloorOp, math::CeilOp, math::CopySignOp>(op))
    return false;
  if (op->getNumRegions() || op->getNumResults() != 1 || !OpTrait::hasElementwiseMappableTraits(op)) return false;
  for (Type type : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (!type.isF32() && !type.isSignlessInteger()) return false;
  return true;
}

/// On buffers, an all-parallel generic whose innermost loop (static extent E <= max; the outer
/// ones of any extent, static or run-time) every operand
/// reads at unit stride as its last dim, or not at all:
///   for the outer loops: for runs r of min(E - r, lanes) lanes:
///     v_i = vector.load x_i[.., r] | broadcast(memref.load x_i[..]); body on vectors;
///     vector.store y[.., r]
/// (LLVM fully unrolls such a loop, then leaves it scalar: the SE scale over 672 x 4 x 4 took
/// 5.4 us, its 16 lanes at a time 0.6 us). In row chains (onlyRunTimeLoops) the innermost loop
/// may be of run-time length too: whole vectors in a loop, the last partial one masked
/// (a dynamic softmax's rows of 10: LLVM's loop ran 4 lanes, then scalars).
struct VectorizeShortRun : OpRewritePattern<linalg::GenericOp> {
  VectorizeShortRun(MLIRContext* ctx, int64_t lanes, int64_t max, bool onlyRunTimeLoops)
      : OpRewritePattern(ctx), lanes(lanes), max(max), onlyRunTimeLoops(onlyRunTimeLoops) {}

  LogicalResult matchAndRewrite(linalg::GenericOp op, PatternRewriter& rewriter) const override {
    const int64_t loops = op.getNumLoops();
    if (!op.hasPureBufferSemantics() || loops < 1 || op.getNumParallelLoops() != static_cast<unsigned>(loops))
      return rewriter.notifyMatchFailure(op, "not an all-parallel op on buffers");
    if (!op->getDiscardableAttrDictionary().empty())
      return rewriter.notifyMatchFailure(op, "marked for a kernel of its own");
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    const int64_t inner = loops - 1, length = extents[inner];
    const bool dynamicRun = ShapedType::isDynamic(length);
    // Elsewhere, a copy's run of run-time length (a pad's or a concatenation's into a strided
    // window; every operand read along it) takes the same form: LLVM left the runs of a
    // dynamic export's small planes (2 or 4 positions) scalar (RegNet's pads of 440 channels
    // over 2 x 2: 3.0 -> 1.8 us). Not an op that computes, whose form LLVM's loops kept.
    const bool copyRun = dynamicRun && !onlyRunTimeLoops;
    if (copyRun && !op.getBody()->without_terminator().empty())
      return rewriter.notifyMatchFailure(op, "dynamic innermost loop of an op that computes");
    if (onlyRunTimeLoops && llvm::none_of(extents, ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(op, "static loops (left as they are)");
    if (!dynamicRun && (length < 2 || length > max)) return rewriter.notifyMatchFailure(op, "innermost loop not short");
    for (Operation& bodyOp : op.getBody()->without_terminator()) {
      if (!LaneWise(&bodyOp)) return rewriter.notifyMatchFailure(&bodyOp, "not a lane-wise op");
      // A masked tail computes its off lanes on zeros: no integer division (it traps).
      if (dynamicRun && isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp, arith::CeilDivSIOp,
                            arith::CeilDivUIOp, arith::FloorDivSIOp>(bodyOp))
        return rewriter.notifyMatchFailure(&bodyOp, "integer division in a masked run");
    }
    SmallVector<bool> runs;  // operand i reads the inner loop as its last dim
    for (OpOperand& operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type || !type.getElementType().isF32()) return rewriter.notifyMatchFailure(op, "operand not an f32 memref");
      for (AffineExpr expr : map.getResults())
        if (!isa<AffineDimExpr, AffineConstantExpr>(expr)) return rewriter.notifyMatchFailure(op, "compound index");
      const bool run = map.getNumResults() && map.getResults().back().isFunctionOfDim(inner);
      for (AffineExpr expr : map.getResults().drop_back(run ? 1 : 0))
        if (expr.isFunctionOfDim(inner)) return rewriter.notifyMatchFailure(op, "inner loop not the last dim");
      if (op.isDpsInit(&operand) && !run) return rewriter.notifyMatchFailure(op, "output broadcast");
      if (run) {
        SmallVector<int64_t> strides;
        int64_t offset;
        if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
          return rewriter.notifyMatchFailure(op, "inner dim not at unit stride");
      }
      runs.push_back(run);
    }
    if (copyRun && llvm::count(runs, false))
      return rewriter.notifyMatchFailure(op, "a broadcast of run-time length (a bias fill)");

    Location loc = op.getLoc();
    // Outer loops of run-time extent (a dynamic export's rows) iterate to the operands' dims.
    SmallVector<Range> ranges = cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(rewriter, loc);
    SmallVector<Value> ivs;
    for (int64_t d = 0; d < inner; ++d) {
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      if (extents[d] == 1) {
        ivs.push_back(zero);
        continue;
      }
      auto loop = scf::ForOp::create(rewriter, loc, zero, getValueOrCreateConstantIndexOp(rewriter, loc, ranges[d].size),
                                     arith::ConstantIndexOp::create(rewriter, loc, 1));
      rewriter.setInsertionPoint(loop.getBody()->getTerminator());
      ivs.push_back(loop.getInductionVar());
    }
    // One run of `width` lanes at `start` of the inner loop; lanes off `mask` (when given) are
    // neither read nor written.
    Block* body = op.getBody();
    auto emitRun = [&](Value start, int64_t width, Value mask) {
      ivs.push_back(start);
      auto indices = [&](AffineMap map) {
        SmallVector<Value> at;
        for (AffineExpr expr : map.getResults()) {
          if (auto dim = dyn_cast<AffineDimExpr>(expr)) at.push_back(ivs[dim.getPosition()]);
          else at.push_back(arith::ConstantIndexOp::create(rewriter, loc, cast<AffineConstantExpr>(expr).getValue()));
        }
        return at;
      };
      auto lanesOf = [&](Type scalar) { return VectorType::get({width}, scalar); };
      IRMapping mapping;
      auto vectorOf = [&](Value v) -> Value {
        if (Value mapped = mapping.lookupOrNull(v)) return mapped;
        return vector::BroadcastOp::create(rewriter, loc, lanesOf(v.getType()), v);  // defined outside the body
      };
      for (OpOperand& operand : op->getOpOperands()) {
        BlockArgument arg = body->getArgument(operand.getOperandNumber());
        if (arg.use_empty()) continue;
        AffineMap map = op.getMatchingIndexingMap(&operand);
        Value v = operand.get();
        if (runs[operand.getOperandNumber()] && mask)
          mapping.map(arg, vector::MaskedLoadOp::create(
                               rewriter, loc, lanesOf(arg.getType()), v, indices(map), mask,
                               arith::ConstantOp::create(rewriter, loc, lanesOf(arg.getType()),
                                                         rewriter.getZeroAttr(lanesOf(arg.getType())))));
        else if (runs[operand.getOperandNumber()])
          mapping.map(arg, vector::LoadOp::create(rewriter, loc, lanesOf(arg.getType()), v, indices(map)));
        else
          mapping.map(arg, vector::BroadcastOp::create(rewriter, loc, lanesOf(arg.getType()),
                                                       memref::LoadOp::create(rewriter, loc, v, indices(map))));
      }
      for (Operation& bodyOp : body->without_terminator()) {
        Value result = bodyOp.getResult(0);
        if (auto constant = dyn_cast<arith::ConstantOp>(bodyOp)) {
          auto type = lanesOf(result.getType());
          mapping.map(result, arith::ConstantOp::create(rewriter, loc, type,
                                                        DenseElementsAttr::get(type, constant.getValue())));
          continue;
        }
        OperationState state(bodyOp.getLoc(), bodyOp.getName());
        for (Value operand : bodyOp.getOperands()) state.addOperands(vectorOf(operand));
        state.addTypes(lanesOf(result.getType()));
        state.addAttributes(bodyOp.getAttrs());
        mapping.map(result, rewriter.create(state)->getResult(0));
      }
      for (auto [i, yielded] : llvm::enumerate(body->getTerminator()->getOperands())) {
        OpOperand* init = op.getDpsInitOperand(i);
        if (mask)
          vector::MaskedStoreOp::create(rewriter, loc, init->get(), indices(op.getMatchingIndexingMap(init)), mask,
                                        vectorOf(yielded));
        else
          vector::StoreOp::create(rewriter, loc, vectorOf(yielded), init->get(),
                                  indices(op.getMatchingIndexingMap(init)));
      }
      ivs.pop_back();
    };
    if (!dynamicRun) {
      for (int64_t start = 0; start < length; start += lanes)
        emitRun(arith::ConstantIndexOp::create(rewriter, loc, start), std::min(lanes, length - start), Value());
    } else {
      // A run of run-time length (a dynamic row chain's rows, a copy's): whole vectors, then
      // the last partial one masked.
      Value n = getValueOrCreateConstantIndexOp(rewriter, loc, ranges[inner].size);
      Value step = arith::ConstantIndexOp::create(rewriter, loc, lanes);
      Value whole = arith::SubIOp::create(rewriter, loc, n, arith::RemUIOp::create(rewriter, loc, n, step));
      OpBuilder::InsertionGuard guard(rewriter);
      auto loop = scf::ForOp::create(rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, 0), whole, step);
      rewriter.setInsertionPoint(loop.getBody()->getTerminator());
      emitRun(loop.getInductionVar(), lanes, Value());
      rewriter.setInsertionPointAfter(loop);
      Value left = arith::SubIOp::create(rewriter, loc, n, whole);
      Value any = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne, left,
                                        arith::ConstantIndexOp::create(rewriter, loc, 0));
      auto tail = scf::IfOp::create(rewriter, loc, any, /*withElseRegion=*/false);
      rewriter.setInsertionPoint(tail.thenBlock()->getTerminator());
      Value mask = vector::CreateMaskOp::create(rewriter, loc, VectorType::get({lanes}, rewriter.getI1Type()),
                                                ValueRange{left});
      emitRun(whole, lanes, mask);
    }
    rewriter.eraseOp(op);
    return success();
  }

  int64_t lanes, max;
  bool onlyRunTimeLoops;
};

}  // namespace

void VectorizeShortContiguousRuns(func::FuncOp kernel, int64_t lanes, int64_t maxRun, bool onlyRunTimeLoops) {
  RewritePatternSet patterns(kernel.getContext());
  patterns.add<VectorizeShortRun>(kernel.getContext(), lanes, maxRun, onlyRunTimeLoops);
  walkAndApplyPatterns(kernel, std::move(patterns));
}

void CollapseContiguousLoops(func::FuncOp kernel) {
  RewritePatternSet patterns(kernel.getContext());
  patterns.add<CollapseTrailingLoops>(kernel.getContext());
  walkAndApplyPatterns(kernel, std::move(patterns));
}

void CollapseDenseFills(func::FuncOp kernel) {
  SmallVector<linalg::FillOp> fills;
  kernel.walk([&](linalg::FillOp fill) {
    if (fill.hasPureBufferSemantics()) fills.push_back(fill);
  });
  for (linalg::FillOp fill : fills) {
    Value out = fill.getDpsInits()[0];
    auto type = dyn_cast<MemRefType>(out.getType());
    if (!type || type.getRank() < 2) continue;
    SmallVector<ReassociationIndices> all = Reassociation(type.getRank(), 0, type.getRank());
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, all)) continue;
    OpBuilder b(fill);
    Value flat = memref::CollapseShapeOp::create(b, fill.getLoc(), out, all);
    linalg::FillOp::create(b, fill.getLoc(), ValueRange{fill.getDpsInputs()[0]}, ValueRange{flat});
    fill.erase();
  }
}

}  // namespace hexir::codegen
