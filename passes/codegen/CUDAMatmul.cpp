// Recognizes the tensor-core GEMM of CUDAMatmul.h in a kernel and picks its tile and launch.
#include "passes/codegen/CUDAMatmul.h"

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/codegen/CUDAPasses.h"  // kBlockSizeAttr, kThreadCountAttr
#include "passes/codegen/MatmulLayout.h"
#include "passes/codegen/WorkgroupCount.h"

namespace hexir::cuda {
using namespace mlir;

std::vector<int64_t> TensorCoreMatmul::encode() const {
  return {batch, m, n, k, transposedB, f16, a, b, tileM, tileN, warpsM, warpsN, stages, aligned, wgmma, splits, simt,
          tf32};
}

std::optional<TensorCoreMatmul> TensorCoreMatmul::decode(llvm::ArrayRef<int64_t> w) {
  if (w.size() != 18) return std::nullopt;
  TensorCoreMatmul s;
  s.batch = w[0], s.m = w[1], s.n = w[2], s.k = w[3], s.transposedB = w[4], s.f16 = w[5];
  s.a = w[6], s.b = w[7], s.tileM = w[8], s.tileN = w[9], s.warpsM = w[10], s.warpsN = w[11];
  s.stages = w[12], s.aligned = w[13], s.wgmma = w[14], s.splits = w[15], s.simt = w[16];
  s.tf32 = w[17];
  return s;
}

namespace {

// The kernel argument `v` is, or null.
BlockArgument KernelArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) ? arg : BlockArgument();
}

// Whether `g` is an elementwise consumer the epilogue can apply per output element: all
// loops parallel, one identity-mapped output of rank `rank` whose old value is not read, `from` read through the
// identity map, every other input through a projected permutation.
bool IsEpilogue(linalg::GenericOp g, Value from, int64_t rank) {
  if (g.getNumDpsInits() != 1 || g.getNumLoops() != rank ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity() ||
      !g.getBody()->getArgument(g.getNumDpsInputs()).use_empty())
    return false;
  int64_t reads = 0;
  for (OpOperand* in : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(in);
    if (in->get() == from) {
      if (!map.isIdentity()) return false;
      ++reads;
    } else if (!map.isProjectedPermutation()) {
      return false;
    }
  }
  return reads == 1;
}

// The tile for the output's extents (m < 0: dynamic, assumed large): the first of 128x128,
// 128x64, 64x64 with >= 120 tiles, else 64x64 (64x32 tiles gained nothing on the H200:
// 128x2048x2048 took 20.2-21.2 us against 19.0, within the spread between runs).
void ChooseTile(TensorCoreMatmul& s) {
  struct Option { int64_t tileM, tileN, warpsM, warpsN; };
  const Option options[] = {{128, 128, 2, 4}, {128, 64, 2, 2}, {64, 64, 2, 2}};
  for (const Option& o : options) {
    s.tileM = o.tileM, s.tileN = o.tileN, s.warpsM = o.warpsM, s.warpsN = o.warpsN;
    if (s.m < 0) break;
    int64_t tiles = s.batch * ((s.m + o.tileM - 1) / o.tileM) * ((s.n + o.tileN - 1) / o.tileN);
    if (tiles >= 120) break;
  }
  s.stages = std::min<int64_t>(4, kMaxMatmulSharedBytes / (s.stageElements() * 2));
}

// The wgmma tile: 128 x (256, 128 or 64), the first with >= 132 tiles, else 128x64; 128x128
// for a dynamic M. Two warpgroups of 64 rows each. A static output of at most 32 tiles (a
// quarter of the H200's 132 SMs) splits K over a cluster of S = 8, 4 or 2 blocks per tile,
// the most with tiles x S <= 128 and >= 2 k tiles a block.
//
// On the H200 a cost model (waves x copied elements per block) picked 128x256 tiles and
// splits for the prefill shapes and lost to this rule on all four (bench/README.md):
// M = 512 . 2048x2048 at 128x256 x 4 splits took 40.0 us against 23.0 at 128x64; every
// 128x64 or 128x128 block took ~20 us whether it multiplied 4 or 32 k tiles, so the time
// is not in the k loop and splitting K only fills idle SMs (M = 128 . 2048x2048 at 128x128
// x 8: 23.0 us against 21.8).
void ChooseWgmmaTile(TensorCoreMatmul& s) {
  s.wgmma = true;
  s.tileM = 128, s.warpsM = 2, s.warpsN = 4;
  s.tileN = 128, s.splits = 1;
  if (s.m >= 0) {
    int64_t tiles = 0;
    for (int64_t tileN : {256, 128, 64}) {
      s.tileN = tileN;
      tiles = s.batch * ((s.m + 127) / 128) * ((s.n + tileN - 1) / tileN);
      if (tiles >= 132) break;
    }
    const int64_t kTiles = (s.k + kWgmmaTileK - 1) / kWgmmaTileK;
    if (tiles <= 32)
      for (int64_t splits : {8, 4, 2})
        if (tiles * splits <= 128 && kTiles >= 2 * splits && (128 * s.tileN / splits) % 1024 == 0) {
          s.splits = splits;
          break;
        }
  }
  s.stages = std::min<int64_t>(6, (kMaxWgmmaSharedBytes - 1024) / (s.stageElements() * 2));
}
}  // namespace

std::optional<TensorCoreMatmul> MatchTensorCoreMatmul(func::FuncOp kernel, bool hopper, bool allowTf32) {
  linalg::LinalgOp op;
  int64_t reductions = 0;
  kernel.walk([&](linalg::LinalgOp candidate) {
    if (candidate.getNumReductionLoops() > 0) op = candidate, ++reductions;
  });
  if (reductions != 1 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) return std::nullopt;
  Type ea = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  Type eb = getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType());
  if (ea != eb || !(ea.isBF16() || ea.isF16() || ea.isF32()) || !linalg::isaContractionOpInterface(op))
    return std::nullopt;  // not a contraction either kernel takes: nothing to say
  // Why an f16/bf16 contraction stays off the tensor cores is worth a remark; an f32 one
  // keeps the general lowering as it always could.
  const bool f32 = ea.isF32();
  auto refuse = [&](Operation* at, const llvm::Twine& why) {
    if (!f32) at->emitRemark("matmul kept off the tensor cores: ") << why;
    return std::nullopt;
  };

  std::string why;
  std::optional<codegen::MatmulLayout> layout = codegen::MatchMatmulLayout(op, why);
  if (!layout) return refuse(op, why);
  const unsigned m = layout->m, n = layout->n, k = layout->k;
  TensorCoreMatmul s;
  s.transposedB = layout->transposedB;
  AffineMap mapC = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  Value init = op.getDpsInitOperand(0)->get();
  if (!getElementTypeOrSelf(init.getType()).isF32()) return refuse(op, "the accumulator is not f32");
  if (!init.getDefiningOp<linalg::FillOp>()) return refuse(op, "the accumulator is not filled");
  BlockArgument a = KernelArgument(op.getDpsInputOperand(0)->get());
  BlockArgument b = KernelArgument(op.getDpsInputOperand(1)->get());
  if (!a || !b) return refuse(op, "A or B is computed in the kernel (a fused prologue)");
  s.a = a.getArgNumber(), s.b = b.getArgNumber(), s.f16 = ea.isF16();

  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  s.batch = layout->batch ? ranges[*layout->batch] : 1;
  s.m = ranges[m], s.n = ranges[n], s.k = ranges[k];
  if (ShapedType::isDynamic(s.batch) || ShapedType::isDynamic(s.n) || ShapedType::isDynamic(s.k))
    return refuse(op, "a dynamic batch, N or K");
  if (ShapedType::isDynamic(s.m)) s.m = -1;
  if (s.m >= 0 && s.m <= codegen::kMaxGemvRows) return std::nullopt;  // the GEMV kernels' case
  if (s.n < 16 || s.k < 16) return refuse(op, "N or K below 16");
  // 16-byte chunks (8 f16/bf16 elements, 4 f32): each row of A (K) and of B (N, or K when
  // transposed) must start 16 bytes aligned.
  const int64_t chunk = f32 ? 4 : 8;
  s.aligned = s.k % chunk == 0 && (s.transposedB || s.n % chunk == 0);

  // The epilogue: a chain of elementwise generics from the contraction to the result.
  int64_t rank = mapC.getNumResults();
  llvm::SmallPtrSet<Operation*, 8> accounted = {op.getOperation(), init.getDefiningOp()};
  Value v = op->getResult(0);
  for (;;) {
    if (!v.hasOneUse()) return refuse(op, "the product has several users");
    Operation* user = *v.getUsers().begin();
    if (isa<func::ReturnOp>(user)) break;
    auto g = dyn_cast<linalg::GenericOp>(user);
    if (!g || !IsEpilogue(g, v, rank)) return refuse(user, "a consumer that is not elementwise");
    accounted.insert(g);
    v = g->getResult(0);
  }
  Operation* other = nullptr;
  kernel.walk([&](linalg::LinalgOp l) {
    if (!accounted.contains(l)) other = l;
  });
  if (other) return refuse(other, "another computation in the kernel");
  if (f32)
    s.simt = true, s.tf32 = allowTf32, s.tileM = s.tileN = 128, s.warpsM = 2, s.warpsN = 4, s.stages = 2;
  else if (hopper && s.aligned && s.n >= 64 && s.k >= 64 && (s.m < 0 || s.m >= 64))
    ChooseWgmmaTile(s);
  else
    ChooseTile(s);
  return s;
}

void ScheduleTensorCoreMatmul(func::FuncOp kernel, const TensorCoreMatmul& s) {
  MLIRContext* ctx = kernel.getContext();
  auto exe = kernel->getParentOfType<ExecutableOp>();
  auto index = [&](int64_t v) { return IntegerAttr::get(IndexType::get(ctx), v); };
  kernel->setAttr(kTensorCoreMatmulAttr, DenseI64ArrayAttr::get(ctx, s.encode()));
  kernel->setAttr(kThreadCountAttr, index(-1));  // the tile loop bounds itself
  kernel->setAttr(kBlockSizeAttr, index(s.threads()));
  exe->setAttr(kBlockSizeAttr, DenseI64ArrayAttr::get(ctx, {s.threads(), 1, 1}));
  int64_t columnTiles = s.batch * ((s.n + s.tileN - 1) / s.tileN);
  if (s.m >= 0) {
    int64_t blocks = columnTiles * ((s.m + s.tileM - 1) / s.tileM) * s.splits;
    exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {blocks, 1, 1}));
    return;
  }
  // Dynamic M: ceil(columnTiles * M / tileM) blocks (at most a tile row short of the tile
  // count: the grid-stride loop covers the rest).
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  Value a = kernel.getArgument(s.a);
  auto rowsDim = tensor::DimOp::create(b, kernel.getLoc(), a, cast<ShapedType>(a.getType()).getRank() - 2);
  std::optional<int64_t> word = codegen::ParameterWordOf(kernel, rowsDim, kernel.getNumArguments());
  rowsDim->erase();
  if (!word) {  // not expected (A is an argument): a fixed grid of two blocks per SM
    exe->setAttr(codegen::kWorkgroupCountAttr, DenseI64ArrayAttr::get(ctx, {2 * 132, 1, 1}));
    return;
  }
  codegen::SetDynamicWorkgroupCount(
      exe, codegen::DynamicWorkgroupCount{{*word}, columnTiles, s.tileM, /*limit=*/1 << 24});
}

}  // namespace hexir::cuda
