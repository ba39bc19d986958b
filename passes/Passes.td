// All Hexir compiler passes, grouped by stage. Implementations: passes/<stage>/<Name>.cpp
// (compiler/targets/cpu for the CPU serializer).
#ifndef HEXIR_PASSES_TD
#define HEXIR_PASSES_TD

include "mlir/Pass/PassBase.td"

//===-- input ---------------------------------------------------------------------------===//

def VerifyInput : Pass<"hexir-verify-input", "mlir::ModuleOp"> {
  let summary = "Rejects ops, types and dynamic shapes the target cannot compile";
  let description = [{
    Every op must come from func (incl. call), scf (for/while/if), linalg, tensor (empty,
    dim, extract, expand_shape, collapse_shape, and the extract_slice, insert_slice, pad and
    from_elements forms that LowerTensorOps rewrites),
    or arith (math only inside linalg bodies; arith on tensors only inside them). Tensors
    have an element type of hal/element_types.def and static or dynamic dims; host reads
    (tensor.extract) are of integer, f32 or f64 elements; function arguments and results are
    tensors or scalars with a VM value kind (f32/f64/i1/i32/i64/index). Anything else gets
    an error at its location naming the unsupported thing and the target.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"", "target name for messages">,
  ];
}

def InsertShapeChecks : Pass<"hexir-insert-shape-checks", "mlir::ModuleOp"> {
  let summary = "Checks on the host every dim equality and allocation size the program assumes";
  let description = [{
    Before each host op, a `hexir.check` (lowered to one VM `assert`) for every assumption
    that is not proven at compile time, naming the op, both values and the operands:
    - linalg ops: operand dims tied to one loop by bare-dim indexing-map results (ins and
      outs, matmul K, generic maps) equal the first such dim (the loop bound); an operand dim
      indexed by any other expression (windows, shifts, reversals, floordiv, mod, constants)
      holds the expression's whole range over the loop box;
    - `tensor.extract_slice` / `insert_slice`: the window lies inside the tensor;
    - `tensor.cast` to a static dim: the source's dim;
    - `tensor.expand_shape`: dynamic output sizes multiply to their source dim;
    - dynamic `tensor.empty` and `tensor.pad`: the byte size fits in 2^63-1 (each size
      checked unsigned, so a negative one fails too; pad amounts within 2^62 either way).
    Dims are read through DPS producers and `tensor.empty` sizes (no new uses of linalg
    results); a dim compared with itself or two constants get no check.
  }];
  let dependentDialects = ["::hexir::HexirDialect", "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
}

def InlineDeviceCalls : Pass<"hexir-inline-device-calls", "mlir::ModuleOp"> {
  let summary = "Inlines calls to functions with device work, so a call does not end the caller's command buffer";
  let description = [{
    A `func.call` to a function whose one-block body touches tensors is replaced by a copy of
    that body (locations: the callee's, called from the call site): its dispatches join the
    caller's execution region with per-call-site bindings, and equal kernels are merged later
    by deduplication. Stay calls: host-only callees (scalars), callees on a call cycle,
    callees of several blocks, and callees carrying `hexir.*` attributes (on the function or
    an argument). Repeated to a fixed point; a private callee left unused is erased.
  }];
}

//===-- dispatch ------------------------------------------------------------------------===//

def GroupRowChains : Pass<"hexir-group-row-chains", "mlir::ModuleOp"> {
  let summary = "Makes each row-wise chain of reductions and elementwise ops (softmax, norms) one dispatch group";
  let description = [{
    Generics over the same rows (loop 0 parallel, the same loop count; reductions
    reduce only their last loop; elementwise ones write their whole iteration space) linked
    by reads that keep loop 0 (a reduction's result read along its rows, an elementwise
    result read whole) form a chain; one with a reduction read by an elementwise member, a
    single result used outside it, produced by its last member, gets
    `hexir.dispatch_group = "row_chain.N"`: `hexir-form-dispatch-regions` makes one kernel of
    it, and the CPU lowering runs all its passes over a block of rows while the rows are in
    cache (passes/codegen/CPURowChains.h). First, reads through a reduced axis kept as a
    trailing 1 (ONNX keepdims) become row reads (passes/dispatch/KeptDimRowReads.h); a set
    that is not one chain is split at its members used outside it. With `cuda`, only chains
    whose members' loops are all static, with at least 2 rows of at least 32 elements, are
    grouped: the CUDA lowering runs a block per row (passes/codegen/CUDARowChains.h).
  }];
  let options = [
    Option<"cuda", "cuda", "bool", /*default=*/"false",
           "group only the chains the CUDA lowering takes (static, 2+ rows of 32+ elements)">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CastMatmulActivations : Pass<"hexir-cast-matmul-activations", "mlir::ModuleOp"> {
  let summary = "Rounds the f32 activations of a many-row matmul by f16/bf16 weights to the weights' type";
  let description = [{
    A linalg contraction (matmul, batch_matmul or a generic with a contraction body) of an
    f32 A ([b][m][k]) by an f16 or bf16 B ([b][k][n] or [b][n][k]) into a filled f32 C, with
    N, K (>= 16) and the batch static and M dynamic or above 16, reads A through a new
    elementwise generic rounding it to B's type (marked `hexir.operand_cast`: never
    recomputed inside a consumer's dispatch); the contraction widens both operands in its
    body. One cast per activation value and type. Named ops are generalized. The CUDA
    tensor-core kernel then takes the matmul (a prompt's prefill projections); CUDA-only
    modules, `hexir-compile --cuda-matmul-activations=weights` (the default; `f32` skips it).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def DissolveDispatchGroups : Pass<"hexir-dissolve-dispatch-groups", "mlir::ModuleOp"> {
  let summary = "Drops the one-kernel marks of dispatch groups of the given kinds";
  let description = [{
    Generics marked `hexir.dispatch_group = "KIND.INSTANCE"` with KIND in `kinds` lose the
    mark: they form dispatches as unmarked generics do (and the fusions that skip marked
    generics see them). For groups only some targets lower as one kernel (the llama
    importer's "prompt_attention": CUDA's flash attention), run where another target is.
  }];
  let options = [
    ListOption<"kinds", "kinds", "std::string", "group kinds whose marks are dropped">,
  ];
}

def FormDispatchRegions : Pass<"hexir-form-dispatch-regions", "mlir::ModuleOp"> {
  let summary = "Wraps each linalg op (plus cloned producers, fused consumers) in hexir.dispatch_region";
  let description = [{
    Roots are linalg ops other than a `linalg.fill` whose users are all linalg ops.
    Into each region go: clones of `tensor.empty`, `linalg.fill` (of an empty) and scalar
    `arith.constant` feeding the root, and, when `fuse-elementwise` is set, elementwise
    `linalg.generic` consumers that are the only user of the region's result (after a
    convolution, also one whose other readers of that result are its fusable producers,
    which come in with it: SiLU's sigmoid beside its multiply). With
    `fuse-sibling-reductions`, such a consumer of a reduction's region may also read a
    sibling reduction (same loops and extents as the root, no `hexir.*` mark, read only by
    that consumer and through a permutation, both reading only values computed before the
    region or fills): the sibling is cloned into the region before the consumer. With
    `fuse-pads-into-depthwise` (CPU-only modules), the ONNX importer's constant-zero pad (of
    static or run-time extents) read only as a depthwise convolution's input is cloned into
    that convolution's region.
  }];
  let options = [
    Option<"fuseElementwise", "fuse-elementwise", "bool", /*default=*/"true",
           "fuse elementwise consumers into their producer's region">,
    Option<"unfusedReductionExtent", "unfused-reduction-extent", "int64_t", /*default=*/"0",
           "when > 0, no consumer joins a region whose root reduces at least this many "
           "elements per point (targets that give such a reduction a warp per point and "
           "cannot apply a consumer there); 0 = no limit">,
    Option<"fuseSiblingReductions", "fuse-sibling-reductions", "bool", /*default=*/"false",
           "an elementwise consumer joining a reduction's region also brings in another "
           "reduction it reads when that one has the root's iteration domain and is read only "
           "there (w1 and w3 + SiLU * mul: one kernel, a warp per row computing both dots; "
           "CUDA-only modules)">,
    Option<"fusePadsIntoDepthwise", "fuse-pads-into-depthwise", "bool", /*default=*/"false",
           "a constant-zero pad read only as a depthwise convolution's input "
           "joins that convolution's dispatch, whose kernel reads the unpadded source "
           "(CPU-only modules: codegen/CPUConvolutionDepthwise.h)">,
  ];
  let dependentDialects = ["::hexir::HexirDialect", "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def OutlineDispatchRegions : Pass<"hexir-outline-dispatch-regions", "mlir::ModuleOp"> {
  let summary = "Turns each dispatch region into a hexir.executable and a hexir.dispatch";
  let description = [{
    The kernel `func.func` takes (tensor captures..., one output tensor per result...,
    scalar captures...) and returns its results; the root op of each result writes into
    its output argument (tensor.empty inits are replaced by it, other inits copied).
  }];
  let dependentDialects = ["::hexir::HexirDialect", "mlir::linalg::LinalgDialect"];
}

def DeduplicateExecutables : Pass<"hexir-deduplicate-executables", "mlir::ModuleOp"> {
  let summary = "Merges structurally identical executables";
}

//===-- codegen (CPU) -------------------------------------------------------------------===//

def CPUDistributeWorkgroups : Pass<"hexir-cpu-distribute-workgroups", "mlir::ModuleOp"> {
  let summary = "Splits each kernel's outermost parallel loop over workgroups";
  let description = [{
    Tiles the kernel's result op along loop 0 (when parallel) with tile T =
    ceil(N0 / min(N0, max-workgroups, W / min-work-per-workgroup)) (W = the product of the
    root's static loop extents: a workgroup gets at least that much work, so tiny kernels
    run as one), fusing producers, and restricts the tile loop to [id * T, min(N0, id * T +
    T)) where id is a new trailing `index` argument (the workgroup id). Records
    `hexir.workgroup_count` on the executable. A dynamic N0: T = max(1, ceil(
    min-work-per-workgroup / the other loops' static extents)) rows (a dynamic one counts as
    large), grown in the kernel to ceil(N0 / max-workgroups) past max-workgroups * T rows;
    when N0 is a parameter word the executable gets `hexir.workgroup_count_dynamic` instead
    (the host computes ceil(N0 / tile) workgroups, passes/codegen/WorkgroupCount.h), else a
    fixed count of max-workgroups.
  }];
  let options = [
    Option<"maxWorkgroups", "max-workgroups", "int64_t", /*default=*/"64",
           "upper bound on workgroups per dispatch">,
    Option<"minWorkPerWorkgroup", "min-work-per-workgroup", "int64_t", /*default=*/"32768",
           "fewest loop iterations (all loops of the result op) per workgroup">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect", "mlir::affine::AffineDialect"];
}

def CPULowerExecutables : Pass<"hexir-cpu-lower-executables", "mlir::ModuleOp"> {
  let summary = "Bufferizes kernels, lowers them to the LLVM dialect, adds the ABI entry";
  let description = [{
    Runs bufferization and the LLVM lowering pipeline on each executable's module, then
    renames the kernel `<name>_impl` (internal) and adds `<name>`:
    `i32 (ptr dispatch_state, ptr workgroup_state)` per hal/drivers/cpu/dispatch_abi.h.
    Memref argument i reads binding_ptrs[i]; scalar argument k reads push_constants
    (one word for f32/i32, two for i64/index); the last argument is workgroup_id[0].
    f32 matmuls become packed, register-blocked vector code with tiles chosen for `cpu`
    (codegen/CPUMatmulMicroKernel.h).
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::scf::SCFDialect", "mlir::cf::ControlFlowDialect"];
  let options = [
    Option<"cpu", "cpu", "std::string", /*default=*/"\"host\"",
           "target CPU whose vector registers and caches size the matmul tiles">,
  ];
}

def CPUSerializeExecutables : Pass<"hexir-cpu-serialize-executables", "mlir::ModuleOp"> {
  let summary = "Compiles each lowered executable to an ELF shared object";
  let description = [{
    Translates to LLVM IR, optimizes (O3), emits a PIC object for the host triple and
    links it with `<linker> -shared` (GNU ld by default; ld.lld takes the same flags).
    Attaches `hexir.format`, `hexir.entry` and
    `hexir.binary`, and empties the executable's body.
  }];
  let options = [
    Option<"cpu", "cpu", "std::string", /*default=*/"\"host\"",
           "target CPU: 'host' (host CPU + features) or an LLVM CPU name">,
    Option<"linker", "linker", "std::string", /*default=*/"\"/usr/bin/ld.bfd\"",
           "path of the linker run as `<linker> -shared` (GNU ld or ld.lld)">,
  ];
}

//===-- schedule ------------------------------------------------------------------------===//

def FormExecutionRegions : Pass<"hexir-form-execution-regions", "mlir::ModuleOp"> {
  let summary = "Wraps each maximal run of a block's dispatches in one hexir.execute";
  let description = [{
    A run is a sequence of dispatches, host reshapes of their results and host-value ops
    (checks, dims, arith, empties); anything else ends it. The dispatches (and reshapes of
    their results) move into a `hexir.execute` on device 0, queue "compute", placed after
    the run; host-value ops stay before it (a `tensor.dim` of a region value is resolved to
    the host value that sized it; a host op still reading one closes the region). Results
    are the values used after the region; the rest are transients. Awaits: the timepoints
    of the regions producing what it reads, and of earlier regions reading a buffer it
    updates in place.
  }];
  let dependentDialects = ["::hexir::HexirDialect", "mlir::arith::ArithDialect"];
}

def ScheduleConcurrency : Pass<"hexir-schedule-concurrency", "mlir::ModuleOp"> {
  let summary = "Orders each execution region's dispatches in waves and puts barriers between waves";
  let description = [{
    Dependences from buffers (SSA def-use through aliases and in-place results; an in-place
    update also after every earlier reader of its buffer). `waves`: a dispatch's wave is one
    more than the latest wave it depends on, a dispatch off the critical path is deferred to
    its latest wave when a larger critical dispatch starts in its earliest one (cost =
    result element count), larger dispatches first within a wave, one `hexir.barrier`
    between consecutive waves. `serial`: body order, a barrier between every pair.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"waves\"", "waves | serial">,
  ];
}

def ElideTimepoints : Pass<"hexir-elide-timepoints", "mlir::ModuleOp"> {
  let summary = "Removes awaits implied by queue order or by another await";
  let description = [{
    An await of a region on the same device and queue that dominates the awaiting region is
    implied by queue order; an await of a region that another awaited region already
    (transitively) follows is implied by that await. Both are removed.
  }];
}

//===-- schedule: device placement (modules of several devices) --------------------------===//

def PlaceDevices : Pass<"hexir-place-devices", "mlir::ModuleOp"> {
  let summary = "Affinity analysis: gives every dispatch and tensor global a device";
  let description = [{
    In a module with `hexir.devices` (the --target list): explicit `hexir.device` on the
    dispatch (from its linalg op), else its function's; else the device holding most of its
    operands' bytes (placement=auto: a cost model over device throughput, dispatch costs and
    transfers); else its first placed consumer's; else its function's. Globals: the device of
    their first reader; the initializer form is placed last. Rules: PlaceDevices.cpp.
  }];
  let options = [
    Option<"placement", "placement", "std::string", /*default=*/"\"annotations\"",
           "annotations (operands, then consumers) | auto (cost model)">,
  ];
}

def AssignExecutableTargets : Pass<"hexir-assign-executable-targets", "mlir::ModuleOp"> {
  let summary = "Compiles each executable only for the device kinds that run it";
  let description = [{
    `hexir.target` = the kind of the devices whose dispatches use it; an executable used on
    two kinds is cloned (`@k_cuda`), and its dispatches there retargeted.
  }];
}

def InsertTransfers : Pass<"hexir-insert-transfers", "mlir::ModuleOp"> {
  let summary = "Inserts hexir.transfer where a tensor is read on another device, with elision";
  let description = [{
    One transfer per (value, device) right after the value's definition; in_place between
    devices that share memory; round trips read the original; unread transfers erased;
    tensor constants and empties cloned once per memory. Rules: InsertTransfers.cpp.
  }];
  let options = [
    Option<"copySharedMemory", "copy-shared-memory", "bool", /*default=*/"false",
           "copy between devices that share memory too (tests the copy path on CPU devices)">,
  ];
  let dependentDialects = ["::hexir::HexirDialect"];
}

//===-- vm ------------------------------------------------------------------------------===//

def ConvertToVM : Pass<"hexir-convert-to-vm", "mlir::ModuleOp"> {
  let summary = "Lowers host functions (dispatches on tensors) to hexir_vm HAL calls";
  let dependentDialects = ["::hexir::vmir::VMDialect"];
}

//===-- dispatch: launch and VM optimizations of the scheduling stage ---------------===//
// Host IR between dispatch formation and VM lowering; order in passes/README.md.

def DeduplicateModuloConstants : Pass<"hexir-deduplicate-modulo-constants", "mlir::ModuleOp"> {
  let summary = "Merges executables equal up to scalar constants in their payloads";
  let description = [{
    Scalar constants (f32, i8..i64) used only as values inside linalg payloads are replaced
    by trailing scalar kernel arguments; executables whose kernels are then equal (generic
    print, kernel renamed) merge into the first, and every dispatch passes its former
    constants as operands. Only groups of at least two executables that differ in some
    constant are rewritten (exact copies are left to hexir-deduplicate-executables).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def FoldUniformOperands : Pass<"hexir-fold-uniform-operands", "mlir::ModuleOp"> {
  let summary = "Turns a scalar operand that is the same constant at every dispatch site into a kernel constant";
  let description = [{
    For each executable, each scalar dispatch operand defined by the same constant at every
    `hexir.dispatch` of it becomes an `arith.constant` at the top of the kernel; the kernel
    argument and the operand are removed (and the host constant when it is left unused).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def SpecializeDispatches : Pass<"hexir-specialize-dispatches", "mlir::ModuleOp"> {
  let summary = "Gives a dynamic dim with a hot value its own static executable behind a host scf.if";
  let description = [{
    Hot (operand, dim, value) triples of a dispatch: `hexir.specialize = array<i64: dim,
    value, ...>` on a function argument it takes directly; otherwise dim 0 = 1 of the
    tensor operand that is the left input of a `linalg.matmul` in its kernel (M = 1 in
    decode). The dispatch becomes `scf.if (all dims equal their values)`: then a clone of
    the executable (`<name>_a<operand>d<dim>eq<value>`) with those kernel arguments static
    (and results whose dims are `tensor.dim` of them), operands `tensor.cast` to the static
    types, scalar operands that are such a `tensor.dim` passed as constants; else the
    original dispatch. Dispatches with tied operands are left alone.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
}

def MergeSpecializationSwitches : Pass<"hexir-merge-specialization-switches", "mlir::ModuleOp"> {
  let summary = "Puts a run of specialization switches on one run-time value behind one switch";
  let description = [{
    From a switch of hexir-specialize-dispatches (`hexir.specialization_switch`) to the last
    switch of its block whose tests (`dim == value`, dims compared through casts, static
    dims, dispatch `dims` operands and switch results) are all the first one's, with no
    other op holding regions between: the ops are cloned into both branches of one `scf.if`
    on the first switch's condition, where each switch the condition decides is replaced by
    the branch it would take. Each branch is then one segment (one submission per call)
    instead of two per specialized dispatch. Before that, a loop (`scf.for`) whose body holds
    a switch testing dims known before the loop (by key; a carried tensor whose dim no
    iteration changes) is unswitched: one switch on those dims before it, the loop cloned
    into both branches, each clone's decided switches replaced by their branch (at most 16
    loops of at most 4096 ops a function).
  }];
  let dependentDialects = ["mlir::scf::SCFDialect"];
}

def UnswitchShapeBranches : Pass<"hexir-unswitch-shape-branches", "mlir::ModuleOp"> {
  let summary = "Unswitches a host function on the branches its arguments' shapes decide";
  let description = [{
    The `scf.if` ops of a host function's block whose condition is host arithmetic on
    constants, the function's arguments and their dims (a dynamic export's pad-or-not
    choices, specialization switches) each get a predicted side (fewer dispatches; then on a
    tie). When one of them is not a specialization switch, the ops from the first (or the
    last op with regions before it) to the block's end are cloned into the then branch of
    one `scf.if` on "every branch takes its predicted side", each branch replaced there by
    that side, and moved into its else branch as they are: the common path is one segment
    (one submission per call) instead of one per stretch between branches. At most 20000
    ops a function.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

def LiftConstantDispatches : Pass<"hexir-lift-constant-dispatches", "mlir::ModuleOp"> {
  let summary = "Runs dispatches whose inputs are all module constants once at load";
  let description = [{
    A `hexir.dispatch` whose operands are all `arith.constant`s (dense tensors, scalars),
    globals lifted before or static reshapes/casts of those, with static results and no tied operands, moves into the
    initializer form `func.func private @__hexir_lifted_init() {hexir.initializer}` (with
    clones of its constants) and stores each result into a new `hexir.global
    @<func>_lifted_<n>`; the function reads it with `hexir.global.load`. A dispatch that
    also reads `hexir.parameter` arguments of its public function (one-device modules)
    moves into that function's parameter transforms instead: `scf.if %same {} else {...}`
    at its entry, run when some parameter it reads is not the buffer (`hexir.same_buffer`
    against a `@<func>_parameter_<arg>` global) they last ran on.
  }];
  let dependentDialects = ["::hexir::HexirDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def SinkLoopConstants : Pass<"hexir-sink-loop-constants", "mlir::ModuleOp"> {
  let summary = "Clones host scalar constants used only inside loop bodies into those bodies";
  let description = [{
    In host functions (not kernels), an `arith.constant` of a non-shaped type whose every
    use lies inside the body regions of loops (LoopLikeOpInterface: scf.for, scf.while)
    that are ops of the constant's block is cloned at the top of each such region and
    erased; repeated, so it reaches the innermost loop that uses it. Constants with any
    other use (loop bounds, init values, code after the loop) stay. Not in the default
    pipeline: each sunk constant costs one VM instruction per iteration (passes/README.md).
  }];
}

//===-- partition -----------------------------------------------------------------------===//

def Partition : Pass<"hexir-partition", "mlir::ModuleOp"> {
  let summary = "Rewrites functions with hexir.sharding annotations into one SPMD program per rank";
  let description = [{
    A function whose arguments, results or ops carry `hexir.sharding =
    #hexir.sharding<replicated | split D>` becomes the program every rank of the device's
    channel runs: split arguments and results are this rank's shards (dimension D divided by
    the rank count), ops run on local shards, and collectives are inserted where shardings
    change (partial -> replicated: all_reduce; split -> replicated: all_gather or an
    all_reduce of the shard placed in zeros; replicated -> split: a local slice at
    `hexir.channel.rank`). Shardings propagate forward through linalg ops (matmul,
    elementwise, reductions, transposes, gathers in bodies), arith/math on tensors and
    reshapes; anything else runs replicated. Functions without annotations are unchanged.
    Details and priorities: passes/README.md "Partitioning".
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "0",
           "Ranks of the device group (0: read from the channel at run time; dims dynamic)">,
    Option<"explain", "explain", "bool", "false",
           "Emit a remark for every rule that does not apply to an op, with its reason">,
    Option<"chunkByModel", "chunk-by-model", "bool", "false",
           "Chunk row-parallel matmul + all_reduce pairs without a hexir.collective_chunks "
           "annotation as the pipeline's cost model says, with a remark stating its predicted "
           "times (default: only annotated ones; bench/README.md)">,
    Option<"matmulGFlops", "matmul-gflops", "double", "20",
           "The cost model's matmul rate per rank (GFLOP/s; measured by "
           "bench/collective_pipeline/run.sh)">,
    Option<"collectiveGBps", "collective-gbps", "double", "4",
           "The cost model's all_reduce rate (GB/s, each byte counted twice)">,
    Option<"blockMicroseconds", "block-us", "double", "40",
           "The cost model's cost of one more block (us: a dispatch, a collective, a copy)">,
  ];
  let dependentDialects = ["::hexir::HexirDialect", "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

#endif  // HEXIR_PASSES_TD
