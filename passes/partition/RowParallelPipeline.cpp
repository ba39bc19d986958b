// The row-parallel matmul + all_reduce as a pipeline of row blocks (XLA's CollectivePipeliner
// idea in its simplest form): block i's all_reduce runs while block i+1's matmul computes
// (the collective lane on the CPU, the collective stream on CUDA: a command that touches
// neither of a collective's buffers does not wait for it).
//
//   %p = linalg.matmul ins(%a, %b : tensor<MxKl>, tensor<KlxN>) outs(%zero)   (partial sum)
//   %s = hexir.all_reduce "sum" %p : tensor<MxN>
//   ==> for i in 0..C-1 (M/C rows each; rows are contiguous in the row-major result):
//         %a_i = tensor.extract_slice %a[i*M/C, 0] [M/C, Kl] [1, 1]
//         %p_i = linalg.matmul ins(%a_i, %b) outs(fill zero : tensor<M/CxN>)
//         %s_i = hexir.all_reduce "sum" %p_i
//         %s   = tensor.insert_slice %s_i into %s[i*M/C, 0]
//
// Applied to a partial sum resharded to replicated whose only consumer is that use, made by a
// linalg.matmul (default maps) from a linalg.fill, with a static result. The block count C:
// the matmul's `hexir.collective_chunks = C` (1: never chunked; C must divide M, else a
// compile error naming both), else, with the pass option `chunk-by-model` (hexir-compile
// --chunk-collectives), the cost model below; without either the pair stays whole. The model
// is off by default: its one measurement (2 CPU devices on a 2-core machine) lost, 1.19-1.25x.
//
// Cost model (one rank; rates from PipelineRates: estimates by default, measured ones from
// bench/collective_pipeline/run.sh; with the rank count read at run time the rank's K is taken
// as for 2 ranks): the matmul runs at matmulGFlops, the all_reduce moves 2 * bytes at
// collectiveGBps, and every block costs blockMicroseconds more. As a two-stage pipeline C
// blocks take (T_mm + T_ar) / C + (C - 1) * max(T_mm, T_ar) / C + C * overhead against T_mm +
// T_ar + overhead unchunked; the best C of 2, 4, 8 (at least 8 rows a block) is taken when it
// saves at least a tenth (conservative: the model assumes the collective never slows the
// matmul, which on CPU devices sharing cores it does). Every choice by the model is stated in
// a remark on the matmul (its predicted times), so a run can check it against the measured
// ones.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {
namespace {

constexpr int64_t kMinRowsPerBlock = 8;

double pipelinedSeconds(double matmul, double collective, double overhead, int64_t blocks) {
  const double c = static_cast<double>(blocks);
  return (matmul + collective) / c + (c - 1) * std::max(matmul, collective) / c + c * overhead;
}

// The cost model's block count for `matmul`, M x Kl x N (element bytes `bytes`), at `rates`
// (1 when chunking does not pay), stated in a remark on it.
int64_t modelBlockCount(Operation* matmul, int64_t m, int64_t k, int64_t n, int64_t bytes,
                        const PipelineRates& rates) {
  if (ShapedType::isDynamic(k)) {
    matmul->emitRemark("hexir-partition: row-parallel pipeline: K unknown; the pair stays whole");
    return 1;
  }
  const double overhead = rates.blockMicroseconds * 1e-6;
  const double tm = 2.0 * m * k * n / (rates.matmulGFlops * 1e9);
  const double ta = 2.0 * m * n * bytes / (rates.collectiveGBps * 1e9);
  const double whole = tm + ta + overhead;
  int64_t best = 1;
  double bestSeconds = whole;
  std::string blocks;
  for (int64_t c : {2, 4, 8}) {
    if (m % c != 0 || m / c < kMinRowsPerBlock) continue;
    const double t = pipelinedSeconds(tm, ta, overhead, c);
    blocks += llvm::formatv(", {0} blocks {1:F1} us", c, t * 1e6).str();
    if (t < 0.9 * whole && t < bestSeconds) best = c, bestSeconds = t;
  }
  matmul->emitRemark(llvm::formatv(
      "hexir-partition: row-parallel pipeline {0}x{1}x{2}: matmul {3:F1} us at {4} GFLOP/s, "
      "all_reduce {5:F1} us at {6} GB/s, whole {7:F1} us{8}: {9} block(s)",
      m, k, n, tm * 1e6, rates.matmulGFlops, ta * 1e6, rates.collectiveGBps, whole * 1e6, blocks,
      best));
  return best;
}

}  // namespace

// Also declared in Partition.cpp, which removes it once it served.
extern const char kCollectiveChunksAttr[] = "hexir.collective_chunks";

FailureOr<Value> PipelinedAllReduce(OpBuilder& b, Operation* user, Value global, Value partial,
                                    bool byModel, const PipelineRates& rates) {
  auto matmul = partial.getDefiningOp<linalg::MatmulOp>();
  if (!matmul || !global.hasOneUse() || !partial.use_empty() ||
      !matmul.hasPureTensorSemantics() || matmul.hasUserDefinedMaps())
    return Value();
  auto fill = matmul.getOutputs()[0].getDefiningOp<linalg::FillOp>();
  auto type = cast<RankedTensorType>(partial.getType());
  if (!fill || !type.hasStaticShape()) return Value();
  Location loc = user->getLoc();
  Value lhs = matmul.getInputs()[0], rhs = matmul.getInputs()[1];
  const int64_t m = type.getDimSize(0), n = type.getDimSize(1);
  // Per-rank K: the local one, or with the rank count read at run time the global one over 2
  // (the most work a rank of a group can have).
  int64_t k = cast<RankedTensorType>(lhs.getType()).getDimSize(1);
  auto globalMatmul = global.getDefiningOp<linalg::MatmulOp>();
  if (ShapedType::isDynamic(k) && globalMatmul) {
    int64_t whole = cast<RankedTensorType>(globalMatmul.getInputs()[0].getType()).getDimSize(1);
    if (!ShapedType::isDynamic(whole)) k = whole / 2;
  }
  auto forced = matmul->getAttrOfType<IntegerAttr>(kCollectiveChunksAttr);
  int64_t blocks = byModel && !forced
                       ? modelBlockCount(matmul, m, k, n, type.getElementTypeBitWidth() / 8, rates)
                       : 1;
  if (forced) {
    blocks = forced.getInt();
    if (blocks < 1 || m % blocks != 0)
      return matmul->emitError("hexir-partition: ")
             << kCollectiveChunksAttr << " = " << blocks << " does not divide the " << m
             << " rows of the matmul";
  }
  if (blocks <= 1) return Value();
  const int64_t rows = m / blocks;
  auto blockType = RankedTensorType::get({rows, n}, type.getElementType());
  Value result = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<OpFoldResult> lhsSizes = tensor::getMixedSizes(b, loc, lhs);
  lhsSizes[0] = b.getIndexAttr(rows);
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  for (int64_t i = 0; i < blocks; ++i) {
    SmallVector<OpFoldResult> at = {b.getIndexAttr(i * rows), b.getIndexAttr(0)};
    Value a = tensor::ExtractSliceOp::create(b, loc, lhs, at, lhsSizes, strides);
    Value empty = tensor::EmptyOp::create(b, loc, blockType.getShape(), type.getElementType());
    Value zero = linalg::FillOp::create(b, loc, fill.getInputs()[0], empty).getResult(0);
    Value block = linalg::MatmulOp::create(b, loc, ValueRange{a, rhs}, ValueRange{zero}).getResult(0);
    Value summed = AllReduceOp::create(b, loc, blockType, "sum", block);
    result = tensor::InsertSliceOp::create(b, loc, summed, result, at,
                                           {b.getIndexAttr(rows), b.getIndexAttr(n)}, strides);
  }
  return result;
}

}  // namespace hexir::partition
