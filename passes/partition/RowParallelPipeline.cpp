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
// Cost model (one rank; estimates, not measurements of this machine; with the rank count read
// at run time the rank's K is taken as for 2 ranks): the matmul runs at
// kFlopsPerSecond, the all_reduce moves 2 * bytes at kCollectiveBytesPerSecond (a ring of any
// size sends and receives about twice the data), and every block costs kBlockOverheadSeconds
// more (a dispatch, a collective, a copy into the result). As a two-stage pipeline C blocks
// take (T_mm + T_ar) / C + (C - 1) * max(T_mm, T_ar) / C + C * overhead against T_mm + T_ar
// + overhead unchunked; the best C of 2, 4, 8 (at least 8 rows a block) is taken when it saves
// at least a tenth.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {
namespace {

constexpr double kFlopsPerSecond = 20e9;
constexpr double kCollectiveBytesPerSecond = 4e9;
constexpr double kBlockOverheadSeconds = 40e-6;
constexpr int64_t kMinRowsPerBlock = 8;

double pipelinedSeconds(double matmul, double collective, int64_t blocks) {
  const double c = static_cast<double>(blocks);
  return (matmul + collective) / c + (c - 1) * std::max(matmul, collective) / c +
         c * kBlockOverheadSeconds;
}

// The cost model's block count for a matmul of M x Kl x N (element bytes `bytes`); 1 when
// chunking does not pay.
int64_t modelBlockCount(int64_t m, int64_t k, int64_t n, int64_t bytes) {
  if (ShapedType::isDynamic(k)) return 1;
  const double tm = 2.0 * m * k * n / kFlopsPerSecond;
  const double ta = 2.0 * m * n * bytes / kCollectiveBytesPerSecond;
  const double whole = tm + ta + kBlockOverheadSeconds;
  int64_t best = 1;
  double bestSeconds = 0.9 * whole;
  for (int64_t c : {2, 4, 8}) {
    if (m % c != 0 || m / c < kMinRowsPerBlock) continue;
    if (double t = pipelinedSeconds(tm, ta, c); t < bestSeconds) best = c, bestSeconds = t;
  }
  return best;
}

}  // namespace

// Also declared in Partition.cpp, which removes it once it served.
extern const char kCollectiveChunksAttr[] = "hexir.collective_chunks";

FailureOr<Value> PipelinedAllReduce(OpBuilder& b, Operation* user, Value global, Value partial,
                                    bool byModel) {
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
  int64_t blocks = byModel ? modelBlockCount(m, k, n, type.getElementTypeBitWidth() / 8) : 1;
  if (auto forced = matmul->getAttrOfType<IntegerAttr>(kCollectiveChunksAttr)) {
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
