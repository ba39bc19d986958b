#include "passes/codegen/MatmulLayout.h"

namespace hexir::codegen {
using namespace mlir;

std::optional<MatmulLayout> MatchMatmulLayout(linalg::LinalgOp op, std::string& why) {
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->batch.size() > 1 || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1) {
    why = "not one M, N and K loop (and at most one batch loop)";
    return std::nullopt;
  }
  MatmulLayout l;
  l.m = dims->m[0], l.n = dims->n[0], l.k = dims->k[0];
  if (!dims->batch.empty()) l.batch = dims->batch[0];
  MLIRContext* ctx = op->getContext();
  auto results = [&](unsigned x, unsigned y) {
    SmallVector<AffineExpr> r;
    if (l.batch) r.push_back(getAffineDimExpr(*l.batch, ctx));
    r.push_back(getAffineDimExpr(x, ctx));
    r.push_back(getAffineDimExpr(y, ctx));
    return r;
  };
  auto mapOf = [&](OpOperand* operand) { return op.getMatchingIndexingMap(operand).getResults(); };
  if (mapOf(op.getDpsInputOperand(0)) != ArrayRef<AffineExpr>(results(l.m, l.k)) ||
      mapOf(op.getDpsInitOperand(0)) != ArrayRef<AffineExpr>(results(l.m, l.n))) {
    why = "A is not [B][M][K] or C not [B][M][N]";
    return std::nullopt;
  }
  if (mapOf(op.getDpsInputOperand(1)) == ArrayRef<AffineExpr>(results(l.n, l.k))) {
    l.transposedB = true;
  } else if (mapOf(op.getDpsInputOperand(1)) != ArrayRef<AffineExpr>(results(l.k, l.n))) {
    why = "B is neither [B][K][N] nor [B][N][K]";
    return std::nullopt;
  }
  return l;
}

}  // namespace hexir::codegen
