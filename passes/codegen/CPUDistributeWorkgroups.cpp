// Distributes a kernel over workgroups by tiling loop 0 of its result op (a convolution's:
// its channels or output rows), fusing its producers into the tile loop, and restricting
// that loop to one tile per workgroup. Static shapes make the workgroup count a compile-time
// constant; a dynamic outer extent gets a fixed tile and a count the host computes from the
// shape (WorkgroupCount.h).
#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/bit.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "passes/Passes.h"
#include "passes/codegen/CPUConvolutionKernel.h"
#include "passes/codegen/CPUDecodeAttention.h"
#include "passes/codegen/CPUMatmulMicroKernel.h"
#include "passes/codegen/CPUMatvecKernel.h"
#include "passes/codegen/KernelLoweringUtils.h"
#include "passes/codegen/WorkgroupCount.h"

namespace hexir {
#define GEN_PASS_DEF_CPUDISTRIBUTEWORKGROUPS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Rows of the least workgroup of a matmul lowered to the packed micro-kernel.
constexpr int64_t kMatmulRowsPerWorkgroup = 32;
// Output channels of the least workgroup of a convolution kernel (codegen/
// CPUConvolutionKernel.h): each packs its own panels of the input.
constexpr int64_t kConvolutionChannelsPerWorkgroup = 16;

// Rows of a matvec on 8-bit activations per workgroup, at least (random768's 768-row
// projections: 16 workgroups).
constexpr int64_t kInt8MatvecRowsPerWorkgroup = 48;

// A kernel whose convolution takes a CPU convolution kernel and whose result op writes the
// N x F x spatial output in order is split along its output channels (loop 1): they are
// static even when batch and spatial dims are not, and batch 1 has nothing to split. Not a
// grouped one: its kernel takes whole groups of static filters (a slice would be dynamic).
bool SplitsAlongChannels(func::FuncOp kernel, TilingInterface root) {
  bool convolution = false;
  kernel.walk([&](linalg::LinalgOp op) {
    std::optional<codegen::ConvolutionGeometry> g = codegen::MatchConvolution(op);
    convolution |= g && g->kind != codegen::ConvolutionKind::kGrouped;
  });
  auto linalgRoot = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (!convolution || !linalgRoot || linalgRoot.getNumDpsInits() != 1 ||
      linalgRoot.getNumLoops() < 4 ||
      linalgRoot.getIteratorTypesArray()[1] != utils::IteratorType::parallel)
    return false;
  // The root (the convolution or its epilogue) writes out[d0][d1][d2][d3].
  MLIRContext* ctx = kernel.getContext();
  AffineMap out = linalgRoot.getMatchingIndexingMap(linalgRoot.getDpsInitOperand(0));
  return out.getResults() == ArrayRef<AffineExpr>{getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                                                  getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)};
}

// Output positions of the least workgroup of a convolution split along its output rows.
constexpr int64_t kConvolutionPositionsPerWorkgroup = 256;

// A dense convolution on the input-packing kernel (codegen/CPUConvolutionKernel.h: no
// prepacked filter) over a static plane of at least two workgroups' positions is split along
// its output rows (loop 2) instead of its channels: a workgroup of channels packs the panels
// of the whole input, one of rows only those of its rows, so the input is packed once a call
// however many workgroups there are (SqueezeNet's 3x3 / 2 stem over 3 channels ran as 4
// workgroups of 16 channels, each gathering all 27 x 961 of its panels). Each workgroup still
// reads all the filters, in place.
// A plane of run-time extents (a dynamic export's) is split along its rows too, in tiles of
// kDynamicPlaneRowsPerWorkgroup rows (its width unknown: 8 rows of a 31-wide plane are about
// kConvolutionPositionsPerWorkgroup positions); split along its channels, each workgroup
// gathered the whole input (SqueezeNet 1.1's dynamic stem, 4 workgroups of 16 channels:
// 51 us a call against the static export's 37).
constexpr int64_t kDynamicPlaneRowsPerWorkgroup = 8;
bool SplitsAlongRows(func::FuncOp kernel, ArrayRef<Range> domain) {
  bool dense = false, other = false;
  kernel.walk([&](linalg::LinalgOp op) {
    if (std::optional<codegen::ConvolutionGeometry> g = codegen::MatchConvolution(op))
      (g->kind == codegen::ConvolutionKind::kDense ? dense : other) = true;
  });
  if (!dense || other || domain.size() < 4) return false;
  std::optional<int64_t> oh = getConstantIntValue(domain[2].size), ow = getConstantIntValue(domain[3].size);
  if (!oh || !ow) return true;
  return *oh * *ow >= 2 * kConvolutionPositionsPerWorkgroup;
}

// The largest static C * KH * KW of the kernel's convolutions (dynamic extents count as large).
int64_t ConvolutionWindow(func::FuncOp kernel) {
  int64_t window = 1;
  kernel.walk([&](linalg::LinalgOp op) {
    if (!codegen::MatchConvolution(op)) return;
    int64_t size = 1;
    for (int64_t extent : ArrayRef<int64_t>(op.getStaticLoopRanges()).drop_front(4))
      size *= ShapedType::isDynamic(extent) ? int64_t{1} << 20 : extent;
    window = std::max(window, size);
  });
  return window;
}

// The channels of one workgroup of a convolution split along its channels whose batch or
// spatial extents are dynamic (dynamic exports): the compile-time split counted them as large
// (`count` workgroups of `tile` channels); at run time the split follows the actual work,
// the largest power of two up to `count` of workgroups of at least `minWork` multiply-adds
// (work = the root's extents x `window`), so a small plane is not cut into slivers that each
// pack their own input panels. Rounded up to whole panels of `nr` (0: none) as a product
// with `nr` (the packed-filter kernel proves its slices start at a multiple of NR). The
// workgroups past ceil(channels / tile) run no channel.
Value RunTimeChannelTile(OpBuilder& b, Location loc, ArrayRef<Range> domain, int64_t window,
                         int64_t minWork, int64_t count, int64_t channels, int64_t tile, int64_t nr) {
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  Value work = index(window);
  for (const Range& r : domain)
    work = arith::MulIOp::create(b, loc, work, getValueOrCreateConstantIndexOp(b, loc, r.size));
  Value byWork = arith::DivUIOp::create(b, loc, work, index(std::max<int64_t>(1, minWork)));
  Value wanted = index(1);
  for (int64_t c = 2; c <= count; c *= 2) {
    Value enough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, byWork, index(c));
    wanted = arith::SelectOp::create(b, loc, enough, index(c), wanted);
  }
  Value perGroup = arith::MaxUIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, index(channels), wanted), index(tile));
  if (nr <= 0) return perGroup;
  return arith::MulIOp::create(b, loc, arith::CeilDivUIOp::create(b, loc, perGroup, index(nr)), index(nr));
}

// NR of the kernel's prepacked convolution filter (hexir-cpu-pack-matmul-operands: an unpack
// marked kPackedRhsAttr writing a 4-D filter), 0 if none: its workgroups' channels then
// start at multiples of NR, so each reads whole panels in place. Without `dual`, a filter
// packed besides its original (a dual unpack: the input-packing kernel reads the original
// over all but tiny run-time planes) does not count.
int64_t PrepackedFilterColumns(func::FuncOp kernel, bool dual = true) {
  int64_t nr = 0;
  kernel.walk([&](linalg::GenericOp g) {
    if (g->hasAttr(kPackedRhsAttr) && g.getNumDpsInits() == 1 && g.getNumLoops() == 4 &&
        (dual || g.getNumDpsInputs() == 1))
      nr = cast<ShapedType>(g.getDpsInputs()[0].getType()).getDimSize(2);
  });
  return nr;
}

// Multiply-adds of the least workgroup of a matmul on a prepacked B.
constexpr int64_t kPackedMatmulWorkPerWorkgroup = int64_t{1} << 20;
// Rows of the least workgroup of a matmul grid (fewer when M is smaller).
constexpr int64_t kGridRowsPerWorkgroup = 8;

// A kernel's f32 matmul reading a prepacked B (CPUMatmulMicroKernel.cpp) whose M x N the root
// writes along its loops 0 and 1, all static.
struct PackedMatmul {
  int64_t m, n, k, nr;
};

std::optional<PackedMatmul> FindPackedMatmul(func::FuncOp kernel, TilingInterface root,
                                             ArrayRef<Range> domain) {
  std::optional<PackedMatmul> found;
  int64_t count = 0;
  kernel.walk([&](linalg::MatmulOp op) {
    auto unpack = op.getDpsInputs()[1].getDefiningOp<linalg::GenericOp>();
    if (!unpack || !unpack->hasAttr(kPackedRhsAttr) ||
        !codegen::TakesMatmulMicroKernel(cast<linalg::LinalgOp>(op.getOperation())))
      return;
    ++count;
    auto c = cast<RankedTensorType>(op.getDpsInits()[0].getType());
    auto packed = cast<RankedTensorType>(unpack.getDpsInputs()[0].getType());
    auto a = cast<RankedTensorType>(op.getDpsInputs()[0].getType());
    if (c.hasStaticShape() && !a.isDynamicDim(1))
      found = PackedMatmul{c.getDimSize(0), c.getDimSize(1), a.getDimSize(1), packed.getDimSize(2)};
  });
  auto linalgRoot = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (count != 1 || !found || !linalgRoot || linalgRoot.getNumDpsInits() != 1 ||
      domain.size() < 2 || linalgRoot.getIteratorTypesArray()[1] != utils::IteratorType::parallel)
    return std::nullopt;
  // The root writes out[d0][d1] over M x N.
  MLIRContext* ctx = kernel.getContext();
  AffineMap out = linalgRoot.getMatchingIndexingMap(linalgRoot.getDpsInitOperand(0));
  if (out.getResults() != ArrayRef<AffineExpr>{getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)} ||
      getConstantIntValue(domain[0].size) != found->m || getConstantIntValue(domain[1].size) != found->n)
    return std::nullopt;
  return found;
}

// Workgroups of a packed matmul: rowCount x colCount tiles of rowTile x colTile (columns in
// whole panels of NR).
struct Grid {
  int64_t rowTile, colTile, rowCount, colCount;
};

// The largest power-of-two count (so 2, 4 and 16 workers get equal shares) of at most
// `maxWorkgroups` workgroups of at least kPackedMatmulWorkPerWorkgroup multiply-adds and
// kGridRowsPerWorkgroup rows that splits M x N exactly into rows x columns; of its splits, the
// one whose tile reads the least per step of k (rowTile + colTile). B is packed once for the
// whole dispatch, so a column split costs nothing but the rows of A it reads again.
Grid ChooseGrid(const PackedMatmul& mm, int64_t maxWorkgroups) {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t panels = ceilDiv(mm.n, mm.nr);
  const int64_t work = std::min<int64_t>(mm.m * mm.n, int64_t{1} << 30) * std::min<int64_t>(mm.k, 1 << 20);
  int64_t wanted = std::max<int64_t>(1, std::min<int64_t>(maxWorkgroups, work / kPackedMatmulWorkPerWorkgroup));
  for (int64_t count = llvm::bit_floor(static_cast<uint64_t>(wanted)); count > 1; count /= 2) {
    std::optional<Grid> best;
    for (int64_t cols = 1; cols <= count; cols *= 2) {
      int64_t rows = count / cols;
      int64_t rowTile = ceilDiv(mm.m, rows), colTile = ceilDiv(panels, cols) * mm.nr;
      if (rowTile < std::min(mm.m, kGridRowsPerWorkgroup) || ceilDiv(mm.m, rowTile) != rows ||
          ceilDiv(mm.n, colTile) != cols)
        continue;
      if (!best || rowTile + colTile < best->rowTile + best->colTile)
        best = Grid{rowTile, colTile, rows, cols};
    }
    if (best) return *best;
  }
  return Grid{mm.m, mm.n, 1, 1};
}

// Bytes of the least workgroup along a root's loop 0 when that loop walks the output's
// contiguous (last) dimension. A reduction over an outer axis (s[i] = sum_j x[j][i]) reads
// from every row of x the run of its workgroup's i: split 64 ways over 4096 columns, each run
// is 4 cache lines a row apart; at least 1 KiB a run keeps reads streaming.
constexpr int64_t kContiguousBytesPerWorkgroup = 1024;

// The least tile of loop 0 (elements) by the rule above: loop 0 walks the contiguous
// dimension of the output and of a 2-D or larger input; 1 when the rule does not apply (a
// matvec's loop 0 walks the rows of W: each workgroup's rows are contiguous anyway).
int64_t LeastContiguousTile(TilingInterface root) {
  auto op = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (!op || op.getNumDpsInits() != 1) return 1;
  AffineExpr d0 = getAffineDimExpr(0, op.getContext());
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0 || out.getResults().back() != d0) return 1;
  bool readsRunsOfRows = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand* input) {
    AffineMap map = op.getMatchingIndexingMap(input);
    return map.getNumResults() >= 2 && map.getResults().back() == d0;
  });
  if (!readsRunsOfRows) return 1;
  Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  if (!element.isIntOrFloat()) return 1;
  return kContiguousBytesPerWorkgroup / std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}

class CPUDistributeWorkgroups
    : public impl::CPUDistributeWorkgroupsBase<CPUDistributeWorkgroups> {
 public:
  using CPUDistributeWorkgroupsBase::CPUDistributeWorkgroupsBase;

  void runOnOperation() override {
    for (auto exe : getOperation().getOps<ExecutableOp>()) {
      if (!exe.isCompiledFor("cpu")) continue;
      func::FuncOp kernel = codegen::LookupKernel(exe);
      if (!kernel) return signalPassFailure();
      std::optional<codegen::DynamicWorkgroupCount> dynamic;
      FailureOr<int64_t> count = distribute(kernel, dynamic);
      if (failed(count)) return signalPassFailure();
      if (dynamic)
        codegen::SetDynamicWorkgroupCount(exe, *dynamic);
      else
        exe->setAttr(codegen::kWorkgroupCountAttr,
                     DenseI64ArrayAttr::get(&getContext(), {*count, 1, 1}));
    }
  }

 private:
  // Returns the workgroup count along x, or sets `dynamic` when the host computes it.
  FailureOr<int64_t> distribute(func::FuncOp kernel,
                                std::optional<codegen::DynamicWorkgroupCount>& dynamic) {
    MLIRContext* ctx = kernel.getContext();
    Block& entry = kernel.getBody().front();
    const unsigned abiArgs = entry.getNumArguments();
    Value id = entry.addArgument(IndexType::get(ctx), kernel.getLoc());
    SmallVector<Type> inputs(kernel.getArgumentTypes());
    inputs.push_back(id.getType());
    kernel.setFunctionType(FunctionType::get(ctx, inputs, kernel.getResultTypes()));

    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    if (ret.getNumOperands() != 1) return 1;
    // A decode attention group stays whole: its lowering splits the KV heads over workgroups
    // within these limits and sets the count (CPUDecodeAttention.h); tiling it recomputed the
    // fused scores (and q's rotary) once per consumer in every workgroup.
    auto group = kernel->getParentOfType<ExecutableOp>()->getAttrOfType<StringAttr>(kDispatchGroupAttr);
    if (group && group.getValue() == codegen::kDecodeAttentionGroup) {
      kernel->setAttr(codegen::kWorkgroupLimitsAttr,
                      DenseI64ArrayAttr::get(ctx, {int64_t(maxWorkgroups), int64_t(minWorkPerWorkgroup)}));
      return 1;
    }
    TilingInterface root = codegen::KernelRoot(kernel);
    if (!root) return 1;
    SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
    if (iterators.empty() || iterators[0] != utils::IteratorType::parallel) return 1;
    OpBuilder b(root);
    SmallVector<Range> domain = root.getIterationDomain(b);
    const size_t axis = !SplitsAlongChannels(kernel, root)                                  ? 0
                        : !PrepackedFilterColumns(kernel, /*dual=*/false) && SplitsAlongRows(kernel, domain) ? 2
                                                                                             : 1;
    std::optional<int64_t> n0 = getConstantIntValue(domain[axis].size);
    std::optional<int64_t> lb0 = getConstantIntValue(domain[axis].offset);
    if (!lb0 || *lb0 != 0) return 1;
    Location rootLoc = root->getLoc();
    if (axis == 0)
      if (std::optional<PackedMatmul> mm = FindPackedMatmul(kernel, root, domain))
        return distributeGrid(kernel, root, id, ChooseGrid(*mm, maxWorkgroups), *mm);
    bool micro = false;
    kernel.walk([&](linalg::LinalgOp op) { micro |= codegen::TakesMatmulMicroKernel(op); });
    int64_t count;
    Value tileV, n0V;
    if (n0) {
      if (*n0 <= 1) return 1;
      // Enough work per workgroup to pay for handing it to a worker (~a microsecond): the
      // product of the root's static extents bounds the count (a 64x64 matvec runs as one).
      int64_t work = 1;
      for (const Range& r : domain) {
        std::optional<int64_t> n = getConstantIntValue(r.size);
        work = n ? std::min<int64_t>(work * std::max<int64_t>(*n, 1), int64_t{1} << 40) : int64_t{1} << 40;
      }
      // A convolution's work is its output times its window (c, kh, kw).
      if (axis != 0) work = std::min<int64_t>(work * ConvolutionWindow(kernel), int64_t{1} << 40);
      int64_t byWork = std::max<int64_t>(1, work / std::max<int64_t>(1, minWorkPerWorkgroup));
      int64_t wanted = std::max<int64_t>(1, std::min({*n0, int64_t(maxWorkgroups), byWork}));
      // Each workgroup of a micro-kernel matmul packs B: it needs enough rows for the
      // packing to be a few percent of its work, and a power-of-two count gives 2, 4 and
      // 16 workers equal shares.
      if (micro) wanted = llvm::bit_floor(static_cast<uint64_t>(
                     std::min(wanted, std::max<int64_t>(1, *n0 / kMatmulRowsPerWorkgroup))));
      // Each workgroup of a matvec on 8-bit activations first quantizes all of x (about the
      // work of 3 rows): enough rows for that to be a few percent, a power-of-two count.
      auto linalgRoot = dyn_cast<linalg::LinalgOp>(root.getOperation());
      if (axis == 0 && linalgRoot && codegen::QuantizesActivations(linalgRoot))
        wanted = llvm::bit_floor(static_cast<uint64_t>(
            std::min(wanted, std::max<int64_t>(1, *n0 / kInt8MatvecRowsPerWorkgroup))));
      // Likewise for convolutions along their channels.
      if (axis == 1)
        wanted = llvm::bit_floor(static_cast<uint64_t>(std::min(
            wanted, std::max<int64_t>(1, *n0 / kConvolutionChannelsPerWorkgroup))));
      // Or along its rows: at least kConvolutionPositionsPerWorkgroup output positions each.
      if (axis == 2) {
        std::optional<int64_t> ow = getConstantIntValue(domain[3].size);
        int64_t leastRows =
            ow ? (kConvolutionPositionsPerWorkgroup + *ow - 1) / *ow : kDynamicPlaneRowsPerWorkgroup;
        wanted = llvm::bit_floor(static_cast<uint64_t>(std::min(wanted, std::max<int64_t>(1, *n0 / leastRows))));
      }
      // Runs of at least kContiguousBytesPerWorkgroup along the output's contiguous
      // dimension, a power-of-two count where that rule decides it.
      const int64_t leastRun = axis == 0 ? LeastContiguousTile(root) : 1;
      if (leastRun > 1 && wanted > *n0 / leastRun)
        wanted = llvm::bit_floor(static_cast<uint64_t>(std::max<int64_t>(1, *n0 / leastRun)));
      int64_t tile = (*n0 + wanted - 1) / wanted;
      if (int64_t nr = axis == 1 ? PrepackedFilterColumns(kernel) : 0) tile = (tile + nr - 1) / nr * nr;
      count = (*n0 + tile - 1) / tile;
      if (count == 1) return 1;
      tileV = arith::ConstantIndexOp::create(b, rootLoc, tile);
      n0V = arith::ConstantIndexOp::create(b, rootLoc, *n0);
      if (axis == 1 && llvm::any_of(domain, [](const Range& r) { return !getConstantIntValue(r.size); }))
        tileV = RunTimeChannelTile(b, rootLoc, domain, ConvolutionWindow(kernel), minWorkPerWorkgroup,
                                   count, *n0, tile, PrepackedFilterColumns(kernel));
    } else {
      // Dynamic extent: a fixed tile of T rows, T * (the other loops' static extents) >=
      // minWorkPerWorkgroup (a dynamic other extent counts as large: T = 1), grown to
      // ceil(n0 / maxWorkgroups) past maxWorkgroups * T rows. The host computes
      // ceil(n0 / tile) workgroups from the parameter word holding n0; if n0 is no
      // parameter word, a fixed grid of maxWorkgroups (workgroups past the end do nothing).
      if (maxWorkgroups <= 1) return 1;
      const int64_t limit = std::min<int64_t>(maxWorkgroups, 0x7fffffff);
      int64_t inner = 1;
      for (const auto& [i, r] : llvm::enumerate(domain)) {
        if (i == axis) continue;
        std::optional<int64_t> n = getConstantIntValue(r.size);
        inner = n ? std::min<int64_t>(inner * std::max<int64_t>(*n, 1), int64_t{1} << 40)
                  : int64_t{1} << 40;
      }
      int64_t tile = std::max<int64_t>(1, (minWorkPerWorkgroup + inner - 1) / inner);
      if (micro) tile = std::max<int64_t>(tile, kMatmulRowsPerWorkgroup);
      if (axis == 0) tile = std::max<int64_t>(tile, LeastContiguousTile(root));
      if (axis == 2) tile = std::max<int64_t>(tile, kDynamicPlaneRowsPerWorkgroup);
      n0V = getValueOrCreateConstantIndexOp(b, rootLoc, domain[axis].size);
      tileV = codegen::BuildWorkgroupTile(b, rootLoc, n0V, tile, limit);
      count = limit;
      if (std::optional<int64_t> word = codegen::ParameterWordOf(kernel, n0V, abiArgs))
        dynamic = codegen::DynamicWorkgroupCount{{*word}, 1, tile, limit};
    }

    SmallVector<OpFoldResult> sizes(iterators.size(), b.getIndexAttr(0));
    sizes[axis] = getAsOpFoldResult(tileV);
    IRRewriter rewriter(ctx);
    FailureOr<scf::SCFTileAndFuseResult> tiled =
        codegen::TileRootAndFuseProducers(rewriter, root, sizes);
    if (failed(tiled)) {  // not tileable: one workgroup runs the whole kernel
      dynamic.reset();
      return 1;
    }
    if (tiled->loops.size() != 1) return root->emitError("failed to distribute over workgroups");

    // One tile per workgroup: [id * tile, min(n0, id * tile + tile)).
    auto loop = cast<scf::ForOp>(tiled->loops[0].getOperation());
    b.setInsertionPoint(loop);
    Location loc = loop.getLoc();
    Value lb = arith::MulIOp::create(b, loc, id, tileV);
    Value ub = arith::MinSIOp::create(b, loc, arith::AddIOp::create(b, loc, lb, tileV), n0V);
    loop.setLowerBound(lb);
    loop.setUpperBound(ub);

    codegen::CleanUpTiledKernel(kernel);
    return count;
  }

  // Tiles the root over `grid`: workgroup id = row * colCount + column, each running
  // [row * rowTile, min(M, ...)) x [column * colTile, min(N, ...)).
  FailureOr<int64_t> distributeGrid(func::FuncOp kernel, TilingInterface root, Value id,
                                    const Grid& grid, const PackedMatmul& mm) {
    if (grid.rowCount * grid.colCount == 1) return 1;
    OpBuilder b(root);
    SmallVector<OpFoldResult> sizes(root.getLoopIteratorTypes().size(), b.getIndexAttr(0));
    struct Axis {
      int64_t tile, extent;
      bool rows;
    };
    SmallVector<Axis> axes;
    if (grid.rowCount > 1) {
      sizes[0] = b.getIndexAttr(grid.rowTile);
      axes.push_back({grid.rowTile, mm.m, true});
    }
    if (grid.colCount > 1) {
      sizes[1] = b.getIndexAttr(grid.colTile);
      axes.push_back({grid.colTile, mm.n, false});
    }
    IRRewriter rewriter(kernel.getContext());
    FailureOr<scf::SCFTileAndFuseResult> tiled =
        codegen::TileRootAndFuseProducers(rewriter, root, sizes);
    if (failed(tiled)) return 1;
    if (tiled->loops.size() != axes.size())
      return root->emitError("failed to distribute over a grid of workgroups");
    auto outer = cast<scf::ForOp>(tiled->loops[0].getOperation());
    b.setInsertionPoint(outer);
    Location loc = outer.getLoc();
    auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    Value rowId = id, colId = id;
    if (grid.rowCount > 1 && grid.colCount > 1) {
      Value columns = index(grid.colCount);
      rowId = arith::DivUIOp::create(b, loc, id, columns);
      colId = arith::RemUIOp::create(b, loc, id, columns);
    }
    for (auto [loopLike, axis] : llvm::zip(tiled->loops, axes)) {
      auto loop = cast<scf::ForOp>(loopLike.getOperation());
      Value tile = index(axis.tile);
      Value lb = arith::MulIOp::create(b, loc, axis.rows ? rowId : colId, tile);
      Value ub = arith::MinSIOp::create(b, loc, arith::AddIOp::create(b, loc, lb, tile), index(axis.extent));
      loop.setLowerBound(lb);
      loop.setUpperBound(ub);
    }
    codegen::CleanUpTiledKernel(kernel);
    return grid.rowCount * grid.colCount;
  }
};

}  // namespace

namespace codegen {
// Used by hexir-cpu-pack-matmul-operands (CPUPackMatmulOperands.cpp): a B that is not
// constant is worth a pack dispatch when the matmul (M x N x K, M < 0 when dynamic, counted
// as 64 rows) has at least twice kPackedMatmulWorkPerWorkgroup, so that it is split here and
// its workgroups share the packed B; a smaller one runs as one workgroup, which packs B once
// anyway.
bool WorthPackingRhs(int64_t m, int64_t n, int64_t k) {
  double rows = m < 0 ? 64.0 : double(m);
  return rows * double(n) * double(k) >= 2.0 * double(kPackedMatmulWorkPerWorkgroup);
}
}  // namespace codegen
}  // namespace hexir
