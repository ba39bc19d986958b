// Decode attention on the CPU as vector loops over contiguous cache rows (hexir-cpu-lower-
// executables, on the bufferized kernel, before linalg becomes loops). The llama importer
// marks one decode step's attention generics `hexir.dispatch_group = "decode_attention.N"`
// (passes/dispatch/FormDispatchRegions.cpp; the computation is stated in
// codegen/CUDADecodeAttention.h): their loop lowering reads each K and V element through a
// scalar gather (`vgatherqps`), one position per lane. Here instead, for each KV head a:
//
//   scores: for s < n: acc[g] = sum over d chunks of q[a][g][d..] * K[s][a HD + d..]
//           (a K chunk loaded once for the G query heads of the group; vectors of VW f32, VW
//           the widest of 16, 8, 4, 2, 1 dividing HD that the target holds), p[g][s] = sum
//           of acc[g]'s lanes / the importer's scale
//   softmax per query head: m = max p, p = exp(p - m), l = sum p  (the exp is
//           codegen/CPUExpApproximation.h's)
//   values: for each chunk d..: o[g] = sum_s p[g][s] V[s][a HD + d..] (a V chunk loaded once
//           for the G heads), out[a][g][d..] = o[g] / l[g]
//
// n = the filled length (a scalar argument, or element 0 + 1 of a 1-D i64 position buffer),
// clamped to the cache's rows. The scores live in a stack buffer [G][S]. q's prologue (the
// importer's rotary embedding, an elementwise generic over q) keeps its loop lowering and
// its output buffer is read as q. f16 caches are widened as loaded. The KV heads are split
// evenly over workgroups where the kernel allows it (kWorkgroupLimitsAttr below), each
// workgroup's prologue restricted to its heads. Kernels that are not this computation (not
// a whole-kernel group; bf16 caches; more than 16 query heads per KV head; scores over 256
// KiB) keep the generic lowering, in one workgroup.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// The dispatch group kind (kDispatchGroupAttr) of such an executable.
inline constexpr char kDecodeAttentionGroup[] = "decode_attention";
// hexir-cpu-distribute-workgroups leaves such a kernel whole (one workgroup, a workgroup id
// argument it does not read) and records its limits in this attribute of the kernel,
// [max-workgroups, min-work-per-workgroup]; the rewrite below then splits the KV heads evenly
// over at most that many workgroups of at least that much work each (work: 2 kvHeads G HD
// cache rows multiply-adds, the longest context; the count the largest divisor of the head
// count within both) and sets the executable's count.
inline constexpr char kWorkgroupLimitsAttr[] = "hexir.workgroup_limits";

// Returns true when `kernel` (bufferized, of an executable marked "decode_attention") was
// rewritten as above; false leaves it unchanged.
bool LowerDecodeAttentionToVectorLoops(mlir::func::FuncOp kernel, int64_t vectorBits);

}  // namespace hexir::codegen
