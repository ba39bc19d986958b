// Assembles the hexir-compile pipeline and registers everything the compiler tools need.
// Not thread-safe to call the Register* functions concurrently; call them once at startup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

namespace hexir::compiler {

struct CompileOptions {
  std::string target = "cpu";       // "cpu" or "cuda"
  // A module of several devices (hexir-compile --target repeated): the device kinds by
  // ordinal, e.g. {"cpu", "cuda"} or {"cpu", "cpu"}; empty: the one `target`. With more than
  // one, the module records the list and the placement passes run (passes/schedule).
  std::vector<std::string> targets;
  // Placement of work no annotation places: "annotations" (operands, then consumers) or
  // "auto" (a cost model: passes/schedule/PlaceDevices.cpp).
  std::string placement = "annotations";
  // Copy between devices that share memory instead of reading in place (the copy path of
  // transfers, exercised with CPU devices).
  bool copy_shared_memory = false;
  std::string cpu = "host";         // LLVM CPU name, or "host" (host CPU + features)
  int64_t max_workgroups = 64;      // per dispatch, along x
  bool fuse_elementwise = true;     // fuse elementwise consumers into producers' dispatches
  // hexir-fuse-small-reductions: a static reduction of at most this many iterations and the
  // elementwise op reading it (RMSNorm) are recomputed inside each contraction reading them
  // (one dispatch per projection); 0: off; -1: the targets' default (256).
  int64_t small_reduction_extent = -1;
  // CUDA-only modules: a norm of at most this many elements read by GGUF block-format matvecs
  // is recomputed inside each of them (the quantized GEMV stages x once per block of threads,
  // the norm's sum first): hexir-fuse-small-reductions' max-block-matvec-extent; 0: off; -1:
  // the default (kDefaultBlockMatvecNormExtent in Pipeline.cpp).
  int64_t block_matvec_norm_extent = -1;
  // CUDA-only modules: a norm too wide to recompute whose sum and scaling have at most this many
  // iterations each is one kernel (one block) instead of two (hexir-group-small-projections'
  // max-norm-extent); 0: off; -1: the default (16384).
  int64_t norm_pair_extent = -1;
  // Small-layer groups take their heads (ops of no group they read: wo and the residual
  // before an FFN's norm) and join the group whose results they read (a layer's FFN and the
  // next layer's norm + q/k/v as one kernel): hexir-group-small-projections' group-heads and
  // chain-groups (passes/dispatch/fusion/README.md).
  bool chain_small_layers = true;
  // With chain_small_layers, groups also take their tails (ops of no group reading them,
  // elementwise or one-point reductions: an argmax's in-place updates of the ids, decode
  // state and stop flag): hexir-group-small-projections' group-tails. Measured on the H100
  // (passes/dispatch/fusion/README.md): stories260K's device loop 0.96x, the rest unchanged.
  bool small_layer_tails = true;
  // CUDA-only modules: static row chains (a softmax, layer norm or RMSNorm) as one kernel, a
  // block per row (passes/codegen/CUDARowChains.h); off: one kernel per generic.
  bool cuda_row_chains = true;
  // CUDA-only modules: the dispatch regions of projections of one vector (q, k, v + its cache
  // row) become one kernel, blocks partitioned over their rows (hexir-merge-sibling-projections).
  bool sibling_projections = false;
  // CUDA-only modules: f32 activations of a matmul by f16/bf16 weights with M dynamic or
  // above 16 are rounded to the weights' type first (hexir-cast-matmul-activations), so the
  // tensor-core kernel takes it (a prompt's prefill).
  bool cast_matmul_activations = true;
  // Calls to functions with device work are inlined into their callers
  // (hexir-inline-device-calls: one copy of the callee per call site). Neither this nor
  // keep_device_calls (the default): calls whose callee records into its caller's command
  // buffer stay calls (passes/README.md step 10 "Recorded calls"), the others are inlined
  // (hexir-inline-unrecordable-calls, step 1a).
  bool inline_device_calls = false;
  // Every call stays a call: a callee that cannot record into its caller submits its own
  // command buffer (for comparison; ignored with inline_device_calls).
  bool keep_device_calls = false;
  // An scf.while with a device condition and a device-only body runs as one device loop
  // (hexir-prepare-device-loops, hexir-form-device-loops); false keeps every loop on the host.
  bool device_loops = true;
  // Functions with hexir.sharding annotations become SPMD programs (hexir-partition): the
  // rank count their shard shapes assume, or 0 (read from the channel at run time).
  int64_t partition_ranks = 0;
  // Row-parallel matmul + all_reduce pairs without a hexir.collective_chunks annotation are
  // chunked as the pipeline's cost model says (false: only annotated pairs are chunked).
  bool chunk_collectives = false;
  // The cost model's rates (passes/partition/Partitioner.h PipelineRates; 0: its default).
  double matmul_gflops = 0, collective_gbps = 0, collective_block_us = 0;
  std::string cuda_chip = "sm_90";  // --target=cuda: SM for nvvm + ptxas -arch
  std::string cuda_features = "+ptx80";
  std::string cuda_format = "cubin";  // "cubin" (cubin + PTX) or "ptx" (PTX only)
  // f32 matmuls on TF32 tensor cores (operands rounded to 10 mantissa bits, f32 sums).
  bool cuda_allow_tf32 = false;
  // GGUF block-format matvecs on the quantized GEMV kernel (false: the generic warp kernel
  // over 32-value units; passes/codegen/CUDAQuantizedGemv.h).
  bool cuda_quantized_gemv = true;
  // sm_90+: GEMV weights that no dispatch writes, of at most this many bytes, are prefetched
  // into L2 before each kernel's programmatic wait (0: none; hexir-cuda-lower-executables;
  // the bound's figures: compiler/targets/cuda/README.md).
  int64_t cuda_prefetch_max_bytes = 8 << 20;
  // sm_90+: a one-block kernel's read-only weights fetched before its programmatic wait:
  // "shared" (copied into shared memory), "l1" (prefetched into L1) or "none"
  // (passes/codegen/CUDAStagedWeights.h).
  std::string cuda_weight_staging = "shared";
  // Order of each execution region's dispatches (hexir-schedule-concurrency): "waves"
  // (barriers only between dependent waves) or "serial" (a barrier between every pair);
  // empty: the target's default (cpu: waves; cuda: serial, measured in Pipeline.cpp).
  std::string schedule;
  // CUDA kernels with a dynamic extent: workgroup count computed per call from the shape
  // (true) or the fixed grid of 1056 blocks (false: no count per call, no graph node update).
  bool cuda_grid_from_shape = true;
  // Fused compare-branches, for.i64 and coalesced block arguments in the bytecode
  // (BytecodeWriterOptions::selectBranches); false: the unoptimised form, for comparisons.
  bool select_branches = true;
  // IR dumps (to *dump_stream, default stderr): after every pass, or after the pass whose
  // argument (e.g. "hexir-form-dispatch-regions") is dump_after.
  bool dump_all = false;
  std::string dump_after;
  llvm::raw_ostream* dump_stream = &llvm::errs();
  // Pass and op counts on stderr while compiling (compiler/PassProgress.h; hexir-compile sets
  // it when stderr is a terminal).
  bool progress = false;
};

// Upstream dialects, extensions and LLVM IR translations, plus hexir and hexir_vm.
void RegisterDialects(mlir::DialectRegistry& registry);
// Upstream passes (pipelines are built from their names) and all hexir passes.
void RegisterPasses();

// input -> dispatch -> codegen (per target) -> serialize -> schedule -> VM, in that order.
// Fails for an unknown target or schedule.
mlir::LogicalResult BuildPipeline(mlir::OpPassManager& pm, const CompileOptions& options);

// TOSA input -> linalg (MLIR's tosa-to-linalg pipelines); CompileModule runs it first when
// the module holds any tosa op.
void BuildInputPipeline(mlir::OpPassManager& pm);

// Runs the pipeline on `module` (which it rewrites) and writes the .vmfb bytes to `out`.
// Errors are reported as diagnostics on the module's context.
mlir::LogicalResult CompileModule(mlir::ModuleOp module, const CompileOptions& options,
                                  std::vector<uint8_t>* out);

}  // namespace hexir::compiler
