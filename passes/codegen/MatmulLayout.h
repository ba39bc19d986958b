// The operand layout a GEMM kernel takes from a linalg contraction, shared by the CUDA
// tensor-core matcher (CUDAMatmul.h) and the dispatch pass that prepares its operands
// (dispatch/CastMatmulActivations.cpp), so both accept the same contractions:
//   A [b][m][k], B [b][k][n] or [b][n][k] ("transposed B"), C [b][m][n], at most one batch loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace hexir::codegen {

// Largest static M left to the GEMV kernels (decode's matvecs); a GEMM kernel takes M
// dynamic or above it.
inline constexpr int64_t kMaxGemvRows = 16;

struct MatmulLayout {
  unsigned m = 0, n = 0, k = 0;   // loop positions
  std::optional<unsigned> batch;  // the batch loop, if any
  bool transposedB = false;       // B [b][n][k]
};

// The layout of `op` (a contraction with inputs A, B and init C), or nullopt with `why` set
// (for a remark).
std::optional<MatmulLayout> MatchMatmulLayout(mlir::linalg::LinalgOp op, std::string& why);

}  // namespace hexir::codegen
