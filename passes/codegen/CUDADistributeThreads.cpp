// Maps a kernel's parallel iteration space onto CUDA threads: every parallel loop of the
// result op is tiled by 1 (producers fused, reductions kept whole inside the thread) and
// each tile loop is pinned to the calling thread's point. The thread's point comes from
// delinearizing its global id over the loops in the order of the output's dimensions, so
// neighbouring threads write neighbouring elements (coalesced stores; coalesced loads for
// every operand indexed like the output). Kernels whose only reduction is long (a matvec
// row, a softmax row, RMSNorm's sum of squares) get a warp of 32 threads per point instead
// (CUDAWarpReduce.h); GGUF block-format matvecs take the quantized GEMV kernel
// (CUDAQuantizedGemv.h), or where it does not apply are regrouped into one reduction over
// 32-value units so that they take the warp path (CUDABlockMatvec.h). Work is done on a
// clone so that a kernel which does not tile cleanly falls back (warp per point without
// producer fusion, thread per point, one thread).
#include <functional>

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "passes/codegen/CUDABlockMatvec.h"
#include "passes/codegen/CUDABlockLevels.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDADecodeAttention.h"
#include "passes/codegen/CUDAMatmul.h"
#include "passes/codegen/CUDAPasses.h"
#include "passes/codegen/CUDAQuantizedGemv.h"
#include "passes/codegen/CUDARowChains.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/CUDAWholeReductions.h"
#include "passes/codegen/KernelLoweringUtils.h"
#include "passes/codegen/WorkgroupCount.h"

namespace hexir {
#define GEN_PASS_DEF_CUDADISTRIBUTETHREADS
#include "passes/codegen/CUDAPasses.h.inc"

namespace {
using namespace mlir;

// Index arithmetic on i32 (cheap on the GPU; P < 2^31 is checked): gid = bid * B + tid.
Value globalThreadId(OpBuilder& b, Location loc, int64_t blockSize) {
  Type i32 = b.getI32Type();
  auto toI32 = [&](Value v) { return arith::IndexCastUIOp::create(b, loc, i32, v).getResult(); };
  Value tid = toI32(gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value bid = toI32(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x));
  Value bs = arith::ConstantIntOp::create(b, loc, i32, blockSize);
  return arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, bid, bs), tid);
}

constexpr int64_t kVector = 4;             // elements per thread, elementwise kernels
constexpr int64_t kMinVectorThreads = 1024;  // only when at least this many threads remain
constexpr int64_t kWarpsPerBlock = 2;        // warp-reduction kernels

// Overrides the sibling projections' chosen warps a row, for measurements and tests.
llvm::cl::opt<int64_t> forcedSiblingWarps(
    "cuda-sibling-warps-per-row", llvm::cl::Hidden, llvm::cl::init(0),
    llvm::cl::desc("warps a row of merged sibling projections (1-16; 0: chosen from their rows)"));

// Consecutive elements a thread of a row chain's block takes a step (CUDABlockLevels.h).
llvm::cl::opt<int64_t> rowChainVector(
    "cuda-row-chain-vector", llvm::cl::Hidden, llvm::cl::init(1),
    llvm::cl::desc("consecutive elements a thread of a row chain's block takes a step (1: one)"));

class CUDADistributeThreads : public impl::CUDADistributeThreadsBase<CUDADistributeThreads> {
 public:
  using CUDADistributeThreadsBase::CUDADistributeThreadsBase;

  void runOnOperation() override {
    MLIRContext* ctx = &getContext();
    for (auto exe : getOperation().getOps<ExecutableOp>()) {
      if (!exe.isCompiledFor("cuda")) continue;
      func::FuncOp kernel = codegen::LookupKernel(exe);
      if (!kernel) return signalPassFailure();
      if (cuda::IsSmallLayerGroup(exe)) {  // one block, level after level (CUDABlockLevels.cpp)
        int64_t threads = cuda::BlockLevelsThreads(kernel, blockSize);
        kernel->setAttr(cuda::kBlockLevelsAttr, UnitAttr::get(ctx));
        kernel->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), -1));
        kernel->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), threads));
        exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {1, 1, 1}));
        exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {threads, 1, 1}));
        continue;
      }
      if (cuda::IsRowChainGroup(exe)) {  // a block per row (CUDARowChains.h)
        if (FailureOr<cuda::RowChainGrid> grid = cuda::DistributeRowChain(kernel, blockSize * 4);
            succeeded(grid)) {
          kernel = codegen::LookupKernel(exe);
          kernel->setAttr(cuda::kBlockLevelsAttr, UnitAttr::get(ctx));
          if (rowChainVector > 1)
            kernel->setAttr(cuda::kBlockLevelsVectorAttr, IntegerAttr::get(IndexType::get(ctx), rowChainVector));
          kernel->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), -1));
          kernel->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), grid->threads));
          exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {grid->rows, 1, 1}));
          exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {grid->threads, 1, 1}));
          continue;
        }
        kernel.emitRemark("row chain not distributed as a block per row; the general mapping runs it");
      }
      if (quantizedGemv)
        if (auto gemv = cuda::MatchQuantizedGemv(kernel)) {  // CUDAQuantizedGemv.h
          cuda::ScheduleQuantizedGemv(kernel, *gemv);
          continue;
        }
      cuda::RegroupBlockMatvecs(kernel);
      ModuleOp inner = exe.getInnerModule();
      if (auto attention = cuda::MatchDecodeAttention(kernel)) {  // CUDADecodeAttention.h
        kernel->setAttr(cuda::kDecodeAttentionAttr, DenseI64ArrayAttr::get(ctx, attention->encode()));
        kernel->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), -1));
        kernel->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), attention->threads));
        exe->setAttr(codegen::kWorkgroupCountAttr,
                     DenseI64ArrayAttr::get(ctx, {attention->blocks(), 1, 1}));
        exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {attention->threads, 1, 1}));
        continue;
      }
      if (auto attention = cuda::MatchPromptAttention(kernel)) {  // CUDADecodeAttention.h
        if (succeeded(cuda::SetPromptAttentionGrid(kernel, *attention))) {
          kernel->setAttr(cuda::kDecodeAttentionAttr, DenseI64ArrayAttr::get(ctx, attention->encode()));
          kernel->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), -1));
          kernel->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), attention->threads));
          exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {attention->threads, 1, 1}));
          continue;
        }
        kernel.emitRemark("prompt attention kept on the generic lowering: its row count is no parameter word");
      }
      if (auto kind = exe->getAttrOfType<StringAttr>(kDispatchGroupAttr);
          kind && kind.getValue() == cuda::kSiblingProjectionsGroup) {
        if (distributeSiblingProjections(exe, kernel)) continue;
        kernel.emitRemark("sibling projections not partitioned over blocks; one thread runs them");
      }
      bool hopper = chip == "sm_90" || chip == "sm_90a";
      if (auto matmul = cuda::MatchTensorCoreMatmul(kernel, hopper, allowTf32)) {  // CUDAMatmul.h
        cuda::ScheduleTensorCoreMatmul(kernel, *matmul);
        continue;
      }
      int64_t points = 1, lanes = 1;
      func::FuncOp distributed =
          distribute(kernel, points, lanes, warpReductions, /*fuseProducers=*/true);
      if (!distributed && lanes > 1)  // a warp per point without producer fusion
        distributed = distribute(kernel, points, lanes = 1, warpReductions, false);
      if (!distributed && lanes > 1)  // a warp per point did not fit: one thread per point
        distributed = distribute(kernel, points, lanes = 1, /*allowLanes=*/false, false);
      if (distributed) {
        kernel.erase();
        distributed.setSymName(exe.getSymName());
      } else {
        points = 1;
        lanes = 1;
        remarkUndistributedWholeReductions(kernel);
      }
      kernel = inner.lookupSymbol<func::FuncOp>(exe.getSymName());
      // Dynamic extents (points < 0): blocks of blockSize / lanes points stride over the P
      // points; the host launches ceil(P / (blockSize / lanes)) of them, at most
      // dynamicGrid (WorkgroupCount.h), or exactly dynamicGrid when P is not a product of
      // parameter words. Warp reductions: `lanes` (32) threads per point; whole warps.
      int64_t threads = points < 0 ? points : points * lanes;
      int64_t block = points < 0 ? blockSize : blockFor(points, lanes);
      int64_t grid = points < 0 ? dynamicGrid : (threads + block - 1) / block;
      codegen::DynamicWorkgroupCount fromShape{pointShape.extentWords, pointShape.extentFactor,
                                               blockSize / lanes, dynamicGrid};
      bool fromShapeWords = gridFromShape && points < 0 && pointShapeKnown &&
                            !fromShape.extentWords.empty();
      if (points < 0 && pointShapeKnown && fromShape.extentWords.empty())
        grid = codegen::EvaluateWorkgroupCount(fromShape.extentFactor, fromShape.tile,
                                               fromShape.limit);
      if (distributed && columnTiling)
        kernel->setAttr(kColumnTilingAttr,
                        DenseI64ArrayAttr::get(ctx, {columnTiling->width, columnTiling->columnThreads,
                                                     columnTiling->slices, columnTiling->loads}));
      else if (lanes > 1)
        kernel->setAttr(kLanesAttr, IntegerAttr::get(IndexType::get(ctx), lanes));
      kernel->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), threads));
      kernel->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), block));
      if (fromShapeWords)
        codegen::SetDynamicWorkgroupCount(exe, fromShape);
      else
        exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {grid, 1, 1}));
      exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {block, 1, 1}));
    }
  }

 private:
  // Sibling projections (cuda::kSiblingProjectionsGroup): results computed by independent
  // chains (q, k and v GEMVs of one vector, v's written into its cache slot). Each result's
  // chain, alone in a clone of the kernel, is distributed as a row reduction with one
  // warps-per-row count W for all chains, chosen from their total row count
  // (cuda::ChooseWarpsPerPoint: 2 for TinyLlama's 2048 + 256 + 256 rows and random768's 3 x
  // 768; each alone would take 4 and 8: one block shape needs one W). W = 1: a warp a row
  // in blocks of kWarpsPerBlock warps; W > 1: a block of W warps a row. The kernel then
  // gives each chain its own range of blocks:
  //   gid = bid * B + tid
  //   r0, r1, ... = if gid < T0 { chain 0 (block id bid) ; yield c0, out1, ... }
  //                 else if B0 B <= gid < B0 B + T1 { chain 1 (block id bid - B0) ; ... }
  //                 else ... else { yield out0, out1, ... }
  // (T: a chain's threads, B0: its first block). The conditions hold for whole blocks
  // (every chain starts on a block boundary; with W > 1 it ends on one too), so the
  // lowering's shuffles see every lane and its barriers (W > 1) every thread of the block.
  // kSiblingBlocksAttr records each chain's first block and rows (its weight rows' L2
  // prefetch, CUDALowerExecutables).
  bool distributeSiblingProjections(ExecutableOp exe, func::FuncOp kernel) {
    MLIRContext* ctx = kernel.getContext();
    auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
    unsigned results = ret.getNumOperands();
    if (results < 2) return false;
    // The output argument each result is computed in (through destination operands).
    SmallVector<unsigned> outArg;
    for (Value v : ret.getOperands()) {
      while (!isa<BlockArgument>(v)) {
        auto dps = dyn_cast_or_null<DestinationStyleOpInterface>(v.getDefiningOp());
        if (!dps) return false;
        v = dps.getTiedOpOperand(cast<OpResult>(v))->get();
      }
      outArg.push_back(cast<BlockArgument>(v).getArgNumber());
    }
    SmallVector<func::FuncOp> parts, scratch;
    SmallVector<int64_t> threads, firstBlock, rows;
    int64_t blocks = 0, extent = 0, bytes = 0;
    auto cleanUp = [&]() {
      for (func::FuncOp f : scratch) f.erase();
      scratch.clear();
      return false;
    };
    // Distributes every chain with W warps a row (0: a warp a row in blocks of kWarpsPerBlock
    // warps; that first call also learns each chain's rows, reduced extent and element size).
    auto distributeChains = [&](int64_t warps) {
      parts.clear(), threads.clear(), firstBlock.clear(), rows.clear();
      blocks = 0;
      const int64_t lanesPerPoint = cuda::kWarpSize * std::max<int64_t>(warps, 1);
      const int64_t block = warps > 1 ? lanesPerPoint : kWarpsPerBlock * cuda::kWarpSize;
      const bool savedBlockReductions = blockReductions;
      blockReductions = warps > 1;
      forcedWarpsPerPoint = warps;
      auto restore = llvm::make_scope_exit([&] {
        blockReductions = savedBlockReductions;
        forcedWarpsPerPoint = 0;
      });
      for (unsigned r = 0; r < results; ++r) {
        OpBuilder cloner(kernel);
        auto part = cast<func::FuncOp>(cloner.clone(*kernel));
        part.setSymName((kernel.getSymName() + "_part" + Twine(r)).str());
        scratch.push_back(part);
        auto partRet = cast<func::ReturnOp>(part.getBody().front().getTerminator());
        Value mine = partRet.getOperand(r);
        partRet->setOperands(ValueRange{mine});
        part.setFunctionType(FunctionType::get(ctx, kernel.getArgumentTypes(), {mine.getType()}));
        for (bool erased = true; erased;) {
          erased = false;
          for (Operation& op : llvm::make_early_inc_range(llvm::reverse(part.getBody().front())))
            if (&op != partRet && isOpTriviallyDead(&op)) {
              op.erase();
              erased = true;
            }
        }
        if (warps == 0) {  // the chain's reduced extent and narrowest element
          cuda::KernelReductions split = cuda::SplitKernelReductions(part);
          if (!split.point) return cleanUp();
          int64_t e = split.point.getStaticLoopRanges()[reducedDim(split.point)];
          if (ShapedType::isDynamic(e)) return cleanUp();
          extent = extent ? std::min(extent, e) : e;
          int64_t b = narrowestAlongReduction(split.point);
          bytes = bytes && b ? std::min(bytes, b) : std::max(bytes, b);
        }
        int64_t points = 1, lanes = 1;
        func::FuncOp distributed = distribute(part, points, lanes, warpReductions, /*fuseProducers=*/true);
        if (distributed) scratch.push_back(distributed);
        if (!distributed || lanes != lanesPerPoint || points < 1 || columnTiling ||
            (warps <= 1 && points < kWarpsPerBlock))
          return cleanUp();
        parts.push_back(distributed);
        rows.push_back(points);
        threads.push_back(points * lanesPerPoint);
        firstBlock.push_back(blocks);
        blocks += (points * lanesPerPoint + block - 1) / block;
      }
      return true;
    };
    if (!distributeChains(0)) return false;
    int64_t warps = forcedSiblingWarps > 0
                        ? std::min<int64_t>(forcedSiblingWarps, cuda::kMaxWarpsPerPoint)
                        : cuda::ChooseWarpsPerPoint(llvm::sum_of(rows), extent, bytes);
    if (warps > 1) {
      cleanUp();
      if (!distributeChains(warps)) {  // a warp a row, as before
        warps = 1;
        if (!distributeChains(0)) return false;
      }
    }
    warps = std::max<int64_t>(warps, 1);
    const int64_t lanesPerPoint = cuda::kWarpSize * warps;
    const int64_t block = warps > 1 ? lanesPerPoint : kWarpsPerBlock * cuda::kWarpSize;

    OpBuilder b(kernel);
    Location loc = kernel.getLoc();
    auto merged = func::FuncOp::create(b, loc, (kernel.getSymName() + "_partitioned").str(),
                                       kernel.getFunctionType());
    Block* entry = merged.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    auto index = [&](OpBuilder& nb, int64_t v) { return arith::ConstantIndexOp::create(nb, loc, v).getResult(); };
    Value gid = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, bid, index(b, block)), tid);
    TypeRange types = kernel.getResultTypes();
    auto outputs = [&](unsigned computed, Value value) {
      SmallVector<Value> values;
      for (unsigned s = 0; s < results; ++s) values.push_back(s == computed ? value : entry->getArgument(outArg[s]));
      return values;
    };
    // Chain r in the then-branch of an if on its thread range; the rest in its else-branch.
    std::function<SmallVector<Value>(OpBuilder&, unsigned)> chain = [&](OpBuilder& nb, unsigned r) {
      if (r == results) return outputs(results, Value());
      Value begin = index(nb, firstBlock[r] * block);
      Value inRange = arith::AndIOp::create(
          nb, loc, arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::uge, gid, begin),
          arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult, gid,
                                index(nb, firstBlock[r] * block + threads[r])));
      auto branch = scf::IfOp::create(nb, loc, types, inRange, /*withElseRegion=*/true);
      OpBuilder tb = OpBuilder::atBlockEnd(branch.thenBlock());
      Value partBlock = arith::SubIOp::create(tb, loc, bid, index(tb, firstBlock[r]));
      IRMapping m;
      m.map(parts[r].getArguments(), entry->getArguments());
      for (Operation& op : parts[r].getBody().front()) {
        if (auto partRet = dyn_cast<func::ReturnOp>(op)) {
          scf::YieldOp::create(tb, loc, outputs(r, m.lookupOrDefault(partRet.getOperand(0))));
          break;
        }
        tb.clone(op, m);
      }
      branch.thenBlock()->walk([&](gpu::BlockIdOp id) {
        id.getResult().replaceAllUsesWith(partBlock);
        id.erase();
      });
      OpBuilder eb = OpBuilder::atBlockEnd(branch.elseBlock());
      scf::YieldOp::create(eb, loc, chain(eb, r + 1));
      return SmallVector<Value>(branch.getResults());
    };
    SmallVector<Value> values = chain(b, 0);
    func::ReturnOp::create(b, loc, values);
    cleanUp();
    kernel.erase();
    merged.setSymName(exe.getSymName());
    merged->setAttr(kLanesAttr, IntegerAttr::get(IndexType::get(ctx), lanesPerPoint));
    SmallVector<int64_t> partition;
    for (unsigned r = 0; r < results; ++r) partition.append({firstBlock[r], rows[r]});
    merged->setAttr(cuda::kSiblingBlocksAttr, DenseI64ArrayAttr::get(ctx, partition));
    merged->setAttr(kThreadCountAttr, IntegerAttr::get(IndexType::get(ctx), -1));  // guarded above
    merged->setAttr(kBlockSizeAttr, IntegerAttr::get(IndexType::get(ctx), block));
    exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {blocks, 1, 1}));
    exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {block, 1, 1}));
    return true;
  }

  // Threads per block for `points` static points of `lanes` threads each. Warp reductions
  // use blocks of kWarpsPerBlock warps: a few hundred rows still spread over every SM (768
  // rows in blocks of 8 warps would fill only 96 of the H200's 132). More than a warp per
  // point (several warps per row) and column tiles of any size (their threads meet in shared
  // memory by block-local id; a tile of one warp is no exception): one point per block.
  int64_t blockFor(int64_t points, int64_t lanes = 1) const {
    if (lanes > cuda::kWarpSize || columnTiling) return lanes;
    int64_t threads = points * lanes;
    int64_t limit = lanes > 1 ? kWarpsPerBlock * lanes : blockSize;  // whole warps
    return std::max<int64_t>(1, std::min<int64_t>(limit, threads));
  }

  // Returns a distributed clone of `kernel` (inserted next to it) and its point count, or
  // null when the kernel is to run on one thread. `lanes` is set to 32 when a warp per
  // point was tried (allowLanes), also when that attempt fails. `fuseProducers`: see
  // fuseProducersIntoReduction.
  // With dynamic extents, also sets pointShape (P = extentFactor * the parameter words
  // extentWords) and pointShapeKnown (false when an extent is no parameter word).
  func::FuncOp distribute(func::FuncOp original, int64_t& points, int64_t& lanes,
                          bool allowLanes, bool fuseProducers) {
    pointShape = codegen::DynamicWorkgroupCount();
    pointShapeKnown = true;
    columnTiling.reset();
    auto ret = cast<func::ReturnOp>(original.getBody().front().getTerminator());
    if (ret.getNumOperands() != 1) return nullptr;
    TilingInterface originalRoot = codegen::KernelRoot(original);
    if (!originalRoot) return nullptr;

    OpBuilder cloner(original);
    auto kernel = cast<func::FuncOp>(cloner.clone(*original));
    kernel.setSymName((original.getSymName() + "_distributed").str());
    auto fail = [&]() -> func::FuncOp {
      kernel.erase();
      return nullptr;
    };
    MLIRContext* ctx = kernel.getContext();
    bool fused = allowLanes && fuseProducers && fuseProducersIntoReduction(kernel);
    TilingInterface root = codegen::KernelRoot(kernel);
    // Whole reductions ahead of the points' one (a norm's sum, CUDAWholeReductions.h) stay
    // outside the point loops, recomputed per point when the cost model allows it.
    cuda::KernelReductions split = cuda::SplitKernelReductions(kernel);
    std::string why;
    bool recompute = split.point && !split.whole.empty() && cuda::WholeReductionsRecomputable(split, why);
    if (!root) return fail();

    SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
    OpBuilder b(root);
    SmallVector<Range> domain = root.getIterationDomain(b);
    SmallVector<int64_t> parallel, extents(iterators.size(), 0);
    SmallVector<Value> sizes(iterators.size());  // as index values (dynamic path)
    bool dynamic = false;
    points = 1;
    for (auto [d, it] : llvm::enumerate(iterators)) {
      std::optional<int64_t> n = getConstantIntValue(domain[d].size);
      std::optional<int64_t> lb = getConstantIntValue(domain[d].offset);
      if (!lb || *lb != 0) return fail();
      sizes[d] = getValueOrCreateConstantIndexOp(b, kernel.getLoc(), domain[d].size);
      if (it != utils::IteratorType::parallel) continue;
      parallel.push_back(d);
      if (!n) {
        dynamic = true;
        std::optional<int64_t> word =
            codegen::ParameterWordOf(kernel, sizes[d], kernel.getNumArguments());
        if (word) pointShape.extentWords.push_back(*word);
        pointShapeKnown &= word.has_value();
        continue;
      }
      extents[d] = *n;
      points *= *n;
      pointShape.extentFactor = points;
    }
    // A reduction with a long (or dynamic) reduced extent: one warp per point; the lanes
    // split the reduced extent and combine with shuffles (CUDALowerExecutables). The
    // reduction is the root, or the root is elementwise (all loops parallel) and consumes
    // it (matvec + residual add, RMSNorm's scaling): tiling the root per point fuses the
    // reduction in with all its parallel extents 1, checked below; a reduction whose
    // result is read whole (rank 0) stays outside the point loops and every warp computes
    // it. The lowering finds the reduction as the kernel's only op with reduction loops once
    // the recomputed whole ones are lowered (CUDAWholeReductions.h).
    auto linalgRoot = dyn_cast<linalg::LinalgOp>(root.getOperation());
    linalg::LinalgOp reduction = split.point;
    // Sibling reductions (w1 and w3 read by SiLU * mul): the warp computes each in turn, so
    // each must suit a warp.
    bool soleReduction = reduction && (split.whole.empty() || recompute) &&
                         llvm::all_of(split.siblings, cuda::WantsWarpReduction);
    bool elementwiseRoot = linalgRoot && linalgRoot.getNumLoops() == linalgRoot.getNumParallelLoops();
    // With dynamic extents, warps stride over the points like threads do (blocks of whole
    // warps).
    if (allowLanes && linalgRoot && soleReduction &&
        (reduction == linalgRoot || elementwiseRoot) && cuda::WantsWarpReduction(reduction) &&
        (!dynamic || blockSize % cuda::kWarpSize == 0)) {
      lanes = cuda::kWarpSize;
      // Static extents: several warps per row when there are few rows (the GPU would idle:
      // 256-row k/v GEMVs, RMSNorm's one sum).
      int64_t reducedExtent = reduction.getStaticLoopRanges()[reducedDim(reduction)];
      if (blockReductions && !dynamic && !ShapedType::isDynamic(reducedExtent))
        lanes *= forcedWarpsPerPoint > 0
                     ? forcedWarpsPerPoint
                     : cuda::ChooseWarpsPerPoint(points, reducedExtent, narrowestAlongReduction(reduction));
      if (parallel.empty()) return kernel;  // one point: the whole kernel, one block
    } else if (fused) {
      lanes = cuda::kWarpSize;  // the fusion cost the warp reduction: retry without it
      return fail();
    }
    // Column reductions ([K][N] GEMVs, M <= kMaxColumnRows): a block per tile of columns,
    // the tile's width as the fastest loop's "vector".
    int64_t columnExtent = 0;
    if (blockReductions && allowLanes && lanes == 1 && !dynamic && linalgRoot && reduction &&
        split.whole.empty() && split.siblings.empty() &&
        (reduction == linalgRoot || elementwiseRoot) && inputsAreArguments(reduction))
      if (std::optional<cuda::ColumnReduction> loops = cuda::MatchColumnReduction(reduction)) {
        int64_t columns = reduction.getStaticLoopRanges()[loops->column];
        int64_t rows = ShapedType::isDynamic(columns) || columns == 0 ? 0 : points / columns;
        if (rows > 0 && rows * columns == points)
          columnTiling = cuda::ChooseColumnTiling(reduction, *loops, columns, rows);
        if (columnTiling) {
          columnExtent = columns;
          lanes = columnTiling->threads();
        }
      }
    // Past 2^31 threads the i32 id arithmetic would overflow: stride like dynamic extents.
    if (!dynamic && points * lanes >= (int64_t(1) << 31)) dynamic = true;
    if (dynamic && columnTiling) return fail();
    if (dynamic) points = -1;
    if (dynamic && blockSize % lanes != 0) return fail();
    if (parallel.empty() || (!dynamic && points <= 1 && lanes == 1)) return fail();

    // Delinearization order: the loops indexing the output's dimensions, outermost first,
    // so the output's contiguous dimension varies fastest across threads.
    SmallVector<int64_t> order;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(root.getOperation());
        linalgOp && linalgOp.getNumDpsInits() == 1) {
      AffineMap out = linalgOp.getMatchingIndexingMap(linalgOp.getDpsInitOperand(0));
      for (AffineExpr e : out.getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(e);
            dim && iterators[dim.getPosition()] == utils::IteratorType::parallel &&
            !llvm::is_contained(order, (int64_t)dim.getPosition()))
          order.push_back(dim.getPosition());
    }
    for (int64_t d : parallel)
      if (!llvm::is_contained(order, d)) order.insert(order.begin(), d);

    // Elementwise kernels with enough points give each thread `kVector` consecutive elements
    // of the contiguous dimension: LLVM's load/store vectorizer then emits 16-byte accesses
    // (bindings are 16-byte aligned, see CUDALowerExecutables).
    // Contractions (matmul) get a 1 x kVector strip of outputs per thread the same way:
    // each A element loaded is used kVector times and B rows are read 16 bytes at a time.
    int64_t fastest = order.back(), vector = 1;
    if (columnTiling) {  // the root's contiguous extent is the reduction's column extent
      if (extents[fastest] != columnExtent) return fail();
      vector = columnTiling->columns();
      extents[fastest] = (columnExtent + vector - 1) / vector;
      points = points / columnExtent * extents[fastest];
    }
    bool stripped = parallel.size() == iterators.size() ||
                    (linalgRoot && linalg::isaContractionOpInterface(linalgRoot));
    if (!columnTiling && !dynamic && lanes == 1 && stripped && extents[fastest] % kVector == 0 &&
        points >= kVector * kMinVectorThreads) {
      vector = kVector;
      extents[fastest] /= kVector;
      points /= kVector;
    }
    SmallVector<OpFoldResult> tileSizes(iterators.size(), b.getIndexAttr(0));
    for (int64_t d : parallel) tileSizes[d] = b.getIndexAttr(d == fastest ? vector : 1);
    IRRewriter rewriter(ctx);
    FailureOr<scf::SCFTileAndFuseResult> tiled =
        codegen::TileRootAndFuseProducers(rewriter, root, tileSizes);
    if (failed(tiled) || tiled->loops.size() != parallel.size()) return fail();

    Location loc = kernel.getLoc();
    DenseMap<int64_t, Value> coordinate;
    if (dynamic) {
      if (failed(strideOverPoints(tiled->loops.front().getOperation(), order, sizes, lanes,
                                  coordinate)))
        return fail();
    } else {
    // The thread's point: coordinate of loop order[k] from gid (i32 div/rem by constants).
    b.setInsertionPointToStart(&kernel.getBody().front());
    Value rest = globalThreadId(b, loc, blockFor(points, lanes));
    if (lanes > 1)  // the warp's point
      rest = arith::DivUIOp::create(
          b, loc, rest, arith::ConstantIntOp::create(b, loc, b.getI32Type(), lanes));
    for (int64_t d : llvm::reverse(order)) {
      Value n = arith::ConstantIntOp::create(b, loc, b.getI32Type(), extents[d]);
      Value c = d == order.front() ? rest : arith::RemUIOp::create(b, loc, rest, n).getResult();
      if (d == fastest && vector > 1)
        c = arith::MulIOp::create(b, loc, c,
                                  arith::ConstantIntOp::create(b, loc, b.getI32Type(), vector));
      coordinate[d] = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), c);
      if (d != order.front()) rest = arith::DivUIOp::create(b, loc, rest, n);
    }
    }
    // tiled->loops are the tiled (parallel) loops in loop order, outermost first.
    for (auto [k, loopLike] : llvm::enumerate(tiled->loops)) {
      auto loop = dyn_cast<scf::ForOp>(loopLike.getOperation());
      if (!loop) return fail();
      Value c = coordinate[parallel[k]];
      b.setInsertionPoint(loop);
      Value step = arith::ConstantIndexOp::create(b, loc, parallel[k] == fastest ? vector : 1);
      loop.setLowerBound(c);
      loop.setUpperBound(arith::AddIOp::create(b, loc, c, step));
      loop.setStep(step);
    }

    // Dead untiled ops go; extract_slice(tensor.empty) becomes a point-sized temporary.
    codegen::CleanUpTiledKernel(kernel);

    // Every op that computes must now sit inside the thread's loops: anything left at the
    // top level would run in every thread over whole tensors (and race on outputs). With a
    // warp per point, or recomputed for every point, a whole reduction into a fresh temporary
    // may stay (see above); so may an in-place update's write-back of the slot its tiles
    // wrote (a KV-cache row: codegen::IsSlotWriteBack).
    for (Operation& op : kernel.getBody().front())
      if (isa<TilingInterface, DestinationStyleOpInterface>(op) && !isa<scf::ForOp>(op) &&
          !((lanes > 1 || recompute) && cuda::IsWholeReductionIntoTemporary(&op, kernel)) &&
          !codegen::IsSlotWriteBack(&op))
        return fail();
    if (lanes > 1 && !columnTiling && !reductionPerPoint(kernel)) return fail();
    if (columnTiling && !columnTilePerPoint(kernel, columnTiling->columns())) return fail();
    return kernel;
  }

  // The first reduction loop of `op`.
  static int64_t reducedDim(linalg::LinalgOp op) {
    SmallVector<unsigned> dims;
    op.getReductionDims(dims);
    return dims.front();
  }

  // Bytes of the narrowest element among `op`'s inputs read along its reduction (0: none).
  static int64_t narrowestAlongReduction(linalg::LinalgOp op) {
    int64_t reduced = reducedDim(op), narrowest = 0;
    for (OpOperand* in : op.getDpsInputOperands()) {
      if (!op.getMatchingIndexingMap(in).isFunctionOfDim(reduced)) continue;
      int64_t bits = getElementTypeOrSelf(in->get().getType()).getIntOrFloatBitWidth();
      if (bits % 8 == 0) narrowest = narrowest ? std::min(narrowest, bits / 8) : bits / 8;
    }
    return narrowest;
  }

  // Every tensor input of `op` is a kernel argument: the column kernel's vector loads rely
  // on argument rows being aligned, and a fused producer would be computed whole by every
  // thread.
  static bool inputsAreArguments(linalg::LinalgOp op) {
    return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand* in) {
      auto arg = dyn_cast<BlockArgument>(in->get());
      return arg && isa<func::FuncOp>(arg.getOwner()->getParentOp());
    });
  }

  // After tiling: the kernel's only reduction computes one row of at most `columns` columns
  // (its other parallel extents are static 1s) from slices of kernel arguments.
  static bool columnTilePerPoint(func::FuncOp kernel, int64_t columns) {
    bool ok = false;
    int64_t count = 0;
    kernel.walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() == 0) return;
      ++count;
      std::optional<cuda::ColumnReduction> loops = cuda::MatchColumnReduction(op);
      ok = loops.has_value();
      for (auto [d, range] : llvm::enumerate(op.getStaticLoopRanges()))
        if (ok && op.getIteratorTypesArray()[d] == utils::IteratorType::parallel)
          ok = (int64_t)d == loops->column ? (ShapedType::isDynamic(range) || range <= columns)
                                           : range == 1;
      for (OpOperand* in : op.getDpsInputOperands()) {
        auto slice = in->get().getDefiningOp<tensor::ExtractSliceOp>();
        auto arg = slice ? dyn_cast<BlockArgument>(slice.getSource()) : nullptr;
        ok &= arg && arg.getOwner() == &kernel.getBody().front();
      }
    });
    return count == 1 && ok;
  }

  // Elementwise producers of the kernel's only reduction (a generic) whose sole user it is
  // (the final RMSNorm's scaling before the classifier matvec) are fused into its body
  // (linalg elementwise fusion): each lane then computes only the producer elements it
  // reads, in registers. Tiled and fused per point instead, every lane of every warp would
  // compute the whole producer into a stack temporary (32 x rows x K evaluations). If the
  // fused op is no warp reduction (a producer reads along k in another layout), the caller
  // retries without fusion.
  static bool fuseProducersIntoReduction(func::FuncOp kernel) {
    cuda::KernelReductions split = cuda::SplitKernelReductions(kernel);
    if (!split.point || !split.siblings.empty()) return false;
    IRRewriter rewriter(kernel.getContext());
    auto reduction = dyn_cast<linalg::GenericOp>(split.point.getOperation());
    // A fused small layer's projection (a named matvec after the recomputed norm) becomes a
    // generic so that the norm's scaling can join its body.
    if (!reduction && !split.whole.empty() && hasElementwiseProducer(split.point)) {
      rewriter.setInsertionPoint(split.point);
      FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, split.point);
      if (succeeded(generic)) reduction = *generic;
    }
    if (!reduction) return false;
    bool any = false;
    for (bool fused = true; fused; any |= fused) {
      fused = false;
      for (OpOperand* in : reduction.getDpsInputOperands()) {
        auto producer = in->get().getDefiningOp<linalg::GenericOp>();
        if (!producer || producer->getNumResults() != 1 || !producer->hasOneUse() ||
            !linalg::areElementwiseOpsFusable(in))
          continue;
        rewriter.setInsertionPoint(reduction);
        FailureOr<linalg::ElementwiseOpFusionResult> result =
            linalg::fuseElementwiseOps(rewriter, in);
        if (failed(result)) continue;
        for (auto [from, to] : result->replacements)
          rewriter.replaceUsesWithIf(from, to, [&](OpOperand& use) {
            return use.getOwner() != producer.getOperation();
          });
        rewriter.eraseOp(reduction);
        if (producer->use_empty()) rewriter.eraseOp(producer);
        reduction = cast<linalg::GenericOp>(result->fusedOp);
        fused = true;
        break;
      }
    }
    return any;
  }

  // An input of `op` is the one result of an elementwise generic read only there.
  static bool hasElementwiseProducer(linalg::LinalgOp op) {
    return llvm::any_of(op.getDpsInputOperands(), [](OpOperand* in) {
      auto producer = in->get().getDefiningOp<linalg::GenericOp>();
      return producer && producer->getNumResults() == 1 && producer->hasOneUse() &&
             linalg::isElementwise(producer);
    });
  }

  // After tiling: the points' reduction (the kernel's only one, or the one after the
  // recomputed whole reductions, and its siblings) computes one point (every parallel extent
  // is a static 1), as the warp lowering requires.
  static bool reductionPerPoint(func::FuncOp kernel) {
    cuda::KernelReductions split = cuda::SplitKernelReductions(kernel);
    if (!split.point) return false;
    SmallVector<linalg::LinalgOp> ops = split.siblings;
    ops.push_back(split.point);
    for (linalg::LinalgOp op : ops)
      for (auto [range, it] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
        if (it == utils::IteratorType::parallel && range != 1) return false;
    return true;
  }

  // A kernel holding whole reductions ahead of its points' reduction that still runs on one
  // thread says why (a fused small layer should not: hexir-fuse-small-reductions admits
  // only what this pass distributes).
  static void remarkUndistributedWholeReductions(func::FuncOp kernel) {
    cuda::KernelReductions split = cuda::SplitKernelReductions(kernel);
    if (!split.point || split.whole.empty()) return;
    std::string why;
    if (cuda::WholeReductionsRecomputable(split, why)) why = "its points did not tile";
    kernel.emitRemark("kernel with a whole reduction ahead of its points runs on one thread: ") << why;
  }

  // Dynamic extents: wraps the thread's loop nest in
  //   scf.for %p = gid / lanes to P step gridDim.x * block / lanes iter_args(output)
  // and derives the point's coordinates from %p (index div/rem by the runtime extents). The
  // lanes of a warp share %p, so they run the loop together (the shuffles need that).
  LogicalResult strideOverPoints(Operation* outermost, ArrayRef<int64_t> order,
                                 ArrayRef<Value> sizes, int64_t lanes,
                                 DenseMap<int64_t, Value>& coordinate) {
    auto outer0 = dyn_cast<scf::ForOp>(outermost);
    if (!outer0 || outer0.getInitArgs().size() != 1) return failure();
    Location loc = outer0.getLoc();
    OpBuilder b(outer0);
    Value gid = globalThreadId(b, loc, blockSize);
    if (lanes > 1)
      gid = arith::DivUIOp::create(b, loc, gid,
                                   arith::ConstantIntOp::create(b, loc, b.getI32Type(), lanes));
    gid = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), gid);
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t d : order) total = arith::MulIOp::create(b, loc, total, sizes[d]);
    // The launched grid decides the stride: any count the host computes covers every point.
    Value stride = arith::MulIOp::create(
        b, loc, gpu::GridDimOp::create(b, loc, gpu::Dimension::x),
        arith::ConstantIndexOp::create(b, loc, blockSize / lanes));
    auto strideLoop = scf::ForOp::create(
        b, loc, gid, total, stride, ValueRange{outer0.getInitArgs()[0]},
        [](OpBuilder& nb, Location l, Value, ValueRange iterArgs) {
          scf::YieldOp::create(nb, l, iterArgs);
        });
    outer0.getResult(0).replaceAllUsesWith(strideLoop.getResult(0));
    Operation* yield = strideLoop.getBody()->getTerminator();
    outer0->moveBefore(yield);
    outer0.getInitArgsMutable()[0].assign(strideLoop.getRegionIterArgs()[0]);
    yield->setOperand(0, outer0.getResult(0));

    b.setInsertionPoint(outer0);
    Value rest = strideLoop.getInductionVar();
    for (int64_t d : llvm::reverse(order)) {
      if (d == order.front()) {
        coordinate[d] = rest;
        break;
      }
      coordinate[d] = arith::RemUIOp::create(b, loc, rest, sizes[d]);
      rest = arith::DivUIOp::create(b, loc, rest, sizes[d]);
    }
    return success();
  }

  std::optional<cuda::ColumnTiling> columnTiling;  // of the last distribute() call
  int64_t forcedWarpsPerPoint = 0;  // > 0: distribute() takes this W (sibling projections)
  codegen::DynamicWorkgroupCount pointShape;  // of the last distribute() call
  bool pointShapeKnown = true;
};

}  // namespace
}  // namespace hexir
