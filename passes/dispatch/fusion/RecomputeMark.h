// The mark hexir-fuse-small-reductions leaves on the copies it makes and
// hexir-form-dispatch-regions consumes: `hexir.recompute_in_consumer = N` (an i64; the copies
// of one chain share N) on a linalg op whose one user is a linalg op of its block says
// "compute me inside my user's dispatch, whatever the recomputation costs" (the cost was
// judged by the pass that marked it). hexir-group-small-projections groups the users of one
// chain by N. The region formation drops the mark from the clone it makes. MLIR-free,
// header-only.
#pragma once

namespace hexir {
inline constexpr char kRecomputeInConsumerAttr[] = "hexir.recompute_in_consumer";
}  // namespace hexir
