// Fusion across reductions for small layers (issue #18 item 2). Separate from passes/Passes.td
// so that it builds as its own small library.
#ifndef HEXIR_FUSION_PASSES_TD
#define HEXIR_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseSmallReductions : Pass<"hexir-fuse-small-reductions", "mlir::ModuleOp"> {
  let summary = "Recomputes a small static reduction and the elementwise op after it inside each contraction that reads them";
  let description = [{
    RMSNorm before the q/k/v (or w1/w3, or classifier) projections is a reduction (the sum of
    squares) followed by an elementwise scaling read by several contractions: three
    dispatches in a row before the projections can start. When the reduction and the scaling
    are small and static, each contraction gets its own copy of both, marked
    `hexir.recompute_in_consumer` (kRecomputeInConsumerAttr in dialects/hexir/IR/HexirAttributes.h), which `hexir-form-dispatch-regions`
    clones into the contraction's dispatch: one dispatch per projection, each recomputing the
    norm (passes/dispatch/fusion/README.md gives the rule and its cost model). Runs before
    `hexir-form-dispatch-regions`.
  }];
  let options = [
    Option<"maxExtent", "max-extent", "int64_t", /*default=*/"256",
           "largest reduction (product of its static loop extents) and largest scaled vector "
           "(elements) recomputed per consumer; 0 = off">,
    Option<"cudaKernels", "cuda-kernels", "bool", /*default=*/"false",
           "admit only chains and consumers whose fused kernel CUDA spreads over threads (a "
           "rank-0 reduction, a consumer with one reduction loop and no block-matvec mark); "
           "a refused consumer keeps the chain unfused and gets a remark saying why">,
    Option<"maxBlockMatvecExtent", "max-block-matvec-extent", "int64_t", /*default=*/"0",
           "with cuda-kernels: largest chain recomputed in a block-format matvec (read through "
           "its reshape to [blocks][B]): CUDA's quantized GEMV stages x once per block of "
           "threads, the norm's sums first; 0 = block matvecs take no chain">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def GroupSmallProjections : Pass<"hexir-group-small-projections", "mlir::ModuleOp"> {
  let summary = "Makes the contractions reading one small chain's copies, the copies and the ops after them one dispatch group";
  let description = [{
    After `hexir-fuse-small-reductions`: the copies marked `hexir.recompute_in_consumer = N`,
    the contractions reading them (at least two: q/k/v, w1/w3; named ones generalized), the
    elementwise generics reading those, twice over (rotary, SiLU * mul, a KV-cache row written
    in place), and the contractions reading those with their elementwise consumers (w2 + the
    residual) get `hexir.dispatch_group = "small_layer.N"` when they are static, in one block,
    each level of them (ops that do not read one another) at most `max-work` loop iterations,
    and nothing else reads what they compute before the last of them.
    `hexir-form-dispatch-regions` then makes one region (one kernel with several results) of
    them. For targets that run such a kernel as one workgroup (the CPU: less work than its
    least work per workgroup is one workgroup anyway). With `max-norm-extent` > 0 (CUDA), a
    norm too wide to recompute (no chain) still becomes one group of two members: its
    one-point reduction and the elementwise scaling reading it. With `chain-groups`, a group
    of the first kind that reads another one's results joins it where the union passes the
    same rules (one kernel for a layer's FFN and the next layer's norm + q/k/v); with
    `group-heads` and `group-tails` a group also takes the ungrouped ops it reads and those
    reading it, each while the union passes them. Rule and
    cost model: passes/dispatch/fusion/README.md.
  }];
  let options = [
    Option<"maxWork", "max-work", "int64_t", /*default=*/"32768",
           "most work (static loop iterations) of one level of the group: ops that do not read "
           "one another; 0 = off">,
    Option<"maxTemporaryBytes", "max-temporary-bytes", "int64_t", /*default=*/"0",
           "most bytes of the values the group computes and reads only itself (CUDA keeps "
           "them in one block's shared memory); 0 = no limit">,
    Option<"maxNormExtent", "max-norm-extent", "int64_t", /*default=*/"0",
           "also group a one-point reduction no chain copies (a norm's sum of squares) with "
           "the elementwise ops reading it (the scaling) when both have at most this many "
           "loop iterations: one kernel instead of two (CUDA: one block); 0 = off">,
    Option<"chainGroups", "chain-groups", "bool", /*default=*/"true",
           "a group reading another group's results (the next layer's norm + q/k/v reading "
           "the FFN's residual) joins it when the union is still a valid group: one kernel "
           "for both">,
    Option<"groupHeads", "group-heads", "bool", /*default=*/"true",
           "an op of no group whose result a group's member reads (the output projection and "
           "the residual add before an FFN's norm, an embedding row) joins that group when the "
           "union is still a valid group">,
    Option<"groupTails", "group-tails", "bool", /*default=*/"false",
           "an op of no group that reads a group's results, elementwise or a one-point "
           "reduction, never a projection (the in-place updates of the ids, the decode state and "
           "the stop flag after the argmax) joins that group when the union is still a valid "
           "group">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def MergeSiblingProjections : Pass<"hexir-merge-sibling-projections", "mlir::ModuleOp"> {
  let summary = "Merges the dispatch regions of projections of one vector into one region";
  let description = [{
    After `hexir-form-dispatch-regions` (CUDA-only modules, `hexir-compile
    --sibling-projections`): regions of one block that each compute one projection of the same
    vector (q, k and v + its in-place cache row of a llama decode layer) with the same reduced
    extent become one region yielding all their results, marked `hexir.dispatch_group =
    "sibling_projections"`, which `hexir-cuda-distribute-threads` runs as one kernel whose
    blocks are partitioned over the projections' rows. Rule: passes/dispatch/fusion/README.md.
  }];
}

#endif
