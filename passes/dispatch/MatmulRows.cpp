#include "passes/dispatch/MatmulRows.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace hexir {
using namespace mlir;

bool IsMatmulLhsRow0(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) return false;
  if (!linalg::isaContractionOpInterface(op)) return false;
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || !dims->batch.empty() || dims->m.size() != 1) return false;
  auto lhs = dyn_cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  if (!lhs || lhs.getRank() != 2) return false;
  auto row = dyn_cast<AffineDimExpr>(op.getMatchingIndexingMap(op.getDpsInputOperand(0)).getResult(0));
  return row && row.getPosition() == dims->m.front();
}

bool HasDynamicMatmulRows(linalg::LinalgOp op) {
  return IsMatmulLhsRow0(op) && cast<RankedTensorType>(op.getDpsInputs()[0].getType()).isDynamicDim(0);
}

}  // namespace hexir
