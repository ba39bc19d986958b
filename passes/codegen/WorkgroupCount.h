// Workgroup counts computed from shapes: the contract between kernel code generation (which
// picks a tile) and the host program (which evaluates the count per call from the dispatch's
// parameter words, passes/vm/DispatchRecording.h).
//
// A kernel whose distributed extent is dynamic carries, instead of the static
// `hexir.workgroup_count = [x, y, z]`, the description
//
//   hexir.workgroup_count_dynamic = {extent_words = array<i64: w...>, extent_factor = F : i64,
//                                    tile = T : i64, limit = L : i64}
//
// meaning, for one dispatch whose parameter buffer holds the i64 words p[0..]:
//
//   N     = F * p[w0] * p[w1] * ...      (the extent the workgroups split: CPU rows, CUDA points)
//   tile  = max(T, ceil(N / L))          (= T whenever N <= T * L)
//   count = [max(1, ceil(N / tile)), 1, 1]   (so 1 <= count <= L)
//
// The parameter words are the kernel ABI's (passes/README.md, "parameter buffer"): one per
// dynamic dim of each tensor argument in argument order, then one per scalar argument. The
// kernel computes the same `tile` from the same values (CPU: the rows of one workgroup;
// CUDA: only T matters there, the threads stride over the points by the launched grid), and
// still bounds itself: a larger count than needed is harmless.
#pragma once

#include <cstdint>
#include <optional>

#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace hexir::codegen {

inline constexpr char kWorkgroupCountAttr[] = "hexir.workgroup_count";
inline constexpr char kWorkgroupCountDynamicAttr[] = "hexir.workgroup_count_dynamic";

struct DynamicWorkgroupCount {
  llvm::SmallVector<int64_t> extentWords;  // parameter words multiplied into N
  int64_t extentFactor = 1;                // static part of N
  int64_t tile = 1;                        // T: N per workgroup when N <= T * limit
  int64_t limit = 1;                       // L: the most workgroups launched
};

// count = max(1, ceil(n / max(tile, ceil(n / limit)))) for a known n (see above).
int64_t EvaluateWorkgroupCount(int64_t n, int64_t tile, int64_t limit);

// Kernel side: max(tile, ceil(n / limit)) as index arithmetic on `n`.
mlir::Value BuildWorkgroupTile(mlir::OpBuilder& b, mlir::Location loc, mlir::Value n,
                               int64_t tile, int64_t limit);

// The parameter word holding `extent` (an index value of `kernel`'s entry block), when it is
// a kernel argument's dynamic dim or an integer scalar argument, also through tensor.dim of
// destination-style results (their init), tensor.empty sizes and tensor.cast. Only the
// first `argCount` arguments are kernel ABI arguments (a workgroup-id argument added after
// them is not). nullopt when it is computed otherwise.
std::optional<int64_t> ParameterWordOf(mlir::func::FuncOp kernel, mlir::Value extent,
                                       unsigned argCount);

// Replaces `hexir.workgroup_count` of `exe` by the description.
void SetDynamicWorkgroupCount(ExecutableOp exe, const DynamicWorkgroupCount& count);

// The description of `exe`, nullopt when it has none; a malformed one is an error at `exe`.
mlir::FailureOr<std::optional<DynamicWorkgroupCount>> GetDynamicWorkgroupCount(ExecutableOp exe);

}  // namespace hexir::codegen
