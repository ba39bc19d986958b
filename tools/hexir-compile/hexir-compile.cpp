// hexir-compile INPUT.mlir --target=cpu [--target=cuda ...] -o OUT.vmfb
// Parses MLIR (func/scf/linalg/tensor/arith/math/tosa, dynamic shapes), runs the Hexir pipeline and
// writes a .vmfb module. Errors are MLIR diagnostics on stderr and a non-zero exit code.
#include <unistd.h>

#include <cstdio>

#include "compiler/Pipeline.h"
#include "dialects/hexir/IR/HexirAttributes.h"
#include "tools/common/tool_main.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

namespace cl = llvm::cl;

static cl::opt<std::string> input(cl::Positional, cl::desc("<input .mlir>"), cl::init("-"));
static cl::opt<std::string> output("o", cl::desc("output .vmfb path"), cl::init("-"));
static cl::list<std::string> targets(
    "target", cl::desc("target: cpu or cuda; repeated for a module of several devices (device "
                       "ordinals 0, 1, ... in flag order; default: cpu)"));
static cl::opt<std::string> placement(
    "placement",
    cl::desc("several targets: where unannotated work runs: annotations (follow operands, then "
             "consumers; default) or auto (a cost model over the devices and transfers)"),
    cl::init("annotations"));
static cl::opt<bool> copySharedMemory(
    "copy-shared-memory",
    cl::desc("several targets: copy values between devices that share memory (two CPU devices) "
             "instead of reading them in place (the transfer copy path, testable on CPUs)"),
    cl::init(false));
static cl::opt<std::string> cpu("cpu", cl::desc("LLVM CPU name for kernels, or 'host'"),
                                cl::init("host"));
static cl::opt<int64_t> maxWorkgroups("max-workgroups", cl::desc("workgroups per dispatch"),
                                      cl::init(64));
static cl::opt<bool> noFusion("no-fusion", cl::desc("one dispatch per linalg op"),
                              cl::init(false));
static cl::opt<int64_t> smallReductionExtent(
    "small-reduction-extent",
    cl::desc("recompute a static reduction of at most N iterations and the elementwise op reading "
             "it (RMSNorm) inside each contraction reading them, one dispatch per projection; 0: "
             "off (default: 256 on every target; --no-fusion: off)"),
    cl::init(-1));
static cl::opt<int64_t> blockMatvecNormExtent(
    "block-matvec-norm-extent",
    cl::desc("CUDA-only modules: a norm of at most N elements read by GGUF block-format (quantized) "
             "matvecs is recomputed inside each of them, x staged once per block of threads; 0: "
             "off (default: 0)"),
    cl::init(-1));
static cl::opt<int64_t> normPairExtent(
    "norm-pair-extent",
    cl::desc("CUDA-only modules: a norm too wide for --small-reduction-extent whose sum and "
             "scaling have at most N iterations each runs as one kernel (one block) instead of "
             "two; 0: off (default: 16384)"),
    cl::init(-1));
static cl::opt<bool> chainSmallLayers(
    "chain-small-layers",
    cl::desc("small-layer groups (a norm with the projections and ops after it, one kernel) "
             "take their heads (the output projection and residual add before an FFN's norm) "
             "and join the group before them (a layer's FFN and the next layer's norm + q/k/v) "
             "(default: on; =0: off)"),
    cl::init(true));
static cl::opt<bool> smallLayerTails(
    "small-layer-tails",
    cl::desc("with --chain-small-layers, groups also take their tails: ops of no group reading "
             "them, elementwise or one-point reductions (an argmax's in-place updates of the "
             "ids, decode state and stop flag: one kernel instead of four) (default: on; =0: "
             "off)"),
    cl::init(true));
static cl::opt<bool> cudaRowChains(
    "cuda-row-chains",
    cl::desc("CUDA-only modules: a static row softmax, layer norm or RMSNorm (2+ rows of 32+ "
             "elements) runs as one kernel, a block of threads per row, instead of one kernel "
             "per generic (default: on; =0: off)"),
    cl::init(true));
static cl::opt<bool> siblingProjections(
    "sibling-projections",
    cl::desc("CUDA-only modules: projections of one vector (a llama layer's q, k and v + its "
             "cache row) run as one kernel, its blocks partitioned over their rows (off by "
             "default: measured slower on the H200, passes/dispatch/fusion/README.md)"),
    cl::init(false));
enum class MatmulActivations { kWeights, kF32 };
static cl::opt<MatmulActivations> cudaMatmulActivations(
    "cuda-matmul-activations",
    cl::desc("CUDA-only modules: f32 activations of a matmul by f16/bf16 weights with more than 16 "
             "(or a run-time number of) rows, a prompt's prefill"),
    cl::values(clEnumValN(MatmulActivations::kWeights, "weights",
                          "rounded to the weights' type for the tensor-core kernel, f32 "
                          "accumulation (default; llama.cpp's and PyTorch's f16 prefill)"),
               clEnumValN(MatmulActivations::kF32, "f32",
                          "kept f32: a warp per output element, no tensor cores")),
    cl::init(MatmulActivations::kWeights));
static cl::opt<bool> noBranchSelection(
    "no-branch-selection",
    cl::desc("host control flow as cmp + cond_br / br with block-argument copies, registers first "
             "fit (no fused branches, for.i64 or coalescing): the unoptimised form, to compare"),
    cl::init(false));
static cl::opt<bool> inlineDeviceCalls(
    "inline-device-calls",
    cl::desc("inline every call to a function with device work into its caller, one copy per "
             "call site (default: a call whose callee records into the caller's command buffer "
             "stays a call, the others are inlined)"),
    cl::init(false));
static cl::opt<bool> keepDeviceCalls(
    "keep-device-calls",
    cl::desc("keep every call to a function with device work (default: only those whose callee "
             "records into the caller's command buffer; the others would submit their own)"),
    cl::init(false));
static cl::opt<bool> noDeviceLoops(
    "no-device-loops",
    cl::desc("keep every scf.while on the host (default: a loop with a device condition and a "
             "device-only body runs as one device loop, hexir.repeat_while)"),
    cl::init(false));
static cl::opt<int64_t> partitionRanks(
    "partition",
    cl::desc("functions with hexir.sharding annotations (always partitioned): the number of "
             "ranks, so shard shapes are static (default 0: read from the channel at run time, "
             "one module for every rank count)"),
    cl::init(0));
static cl::opt<bool> chunkCollectives(
    "chunk-collectives",
    cl::desc("partitioned functions: chunk each row-parallel matmul + all_reduce without a "
             "hexir.collective_chunks annotation as the pipeline's cost model says, so block i's "
             "all_reduce overlaps block i+1's matmul (default: only annotated ones)"),
    cl::init(false));
static cl::opt<double> matmulGFlops(
    "matmul-gflops",
    cl::desc("--chunk-collectives: the cost model's matmul rate per rank in GFLOP/s (default 20; "
             "bench/collective_pipeline/run.sh measures it)"),
    cl::init(0));
static cl::opt<double> collectiveGBps(
    "collective-gbps",
    cl::desc("--chunk-collectives: the cost model's all_reduce rate in GB/s, each byte counted "
             "twice (default 4; measured by the same script)"),
    cl::init(0));
static cl::opt<double> collectiveBlockUs(
    "collective-block-us",
    cl::desc("--chunk-collectives: the cost model's cost of one more block in us (default 40)"),
    cl::init(0));
static cl::opt<std::string> cudaChip("cuda-chip", cl::desc("--target=cuda: SM (default sm_90)"),
                                     cl::init("sm_90"));
static cl::opt<std::string> cudaFormat("cuda-format",
                                       cl::desc("--target=cuda: cubin (cubin + PTX) or ptx"),
                                       cl::init("cubin"));
static cl::opt<bool> allowTf32(
    "allow-tf32",
    cl::desc("--target=cuda: f32 matmuls multiply on TF32 tensor cores (operands rounded to 10 "
             "mantissa bits, f32 accumulation; default: exact f32 products)"),
    cl::init(false));
static cl::opt<bool> cudaGenericBlockMatvec(
    "cuda-generic-block-matvec",
    cl::desc("--target=cuda: GGUF block-format matvecs on the generic warp-reduction kernel "
             "(32-value units) instead of the quantized GEMV kernel"),
    cl::init(false));
static cl::opt<int64_t> cudaPrefetchMaxBytes(
    "cuda-prefetch-max-bytes",
    cl::desc("--target=cuda, sm_90+: a GEMV's weight that no dispatch writes, of at most N "
             "bytes, is prefetched into L2 (each block its rows; a quantized GEMV's: a share per "
             "block) before the kernel waits for its prerequisites, and so are decode "
             "attention's K and V caches of at most N bytes each (a share per block); 0: none "
             "(default: 8388608)"),
    cl::init(8 << 20));
static cl::opt<std::string> cudaWeightStaging(
    "cuda-weight-staging",
    cl::desc("--target=cuda, sm_90+: the read-only weights a one-block kernel (a small layer's "
             "group) reads whole are fetched while its prerequisite kernels run: 'shared' "
             "(default) copies them into shared memory, 'l1' prefetches them into L1, 'none' "
             "leaves them to the kernel (passes/codegen/CUDAStagedWeights.h)"),
    cl::init("shared"));
static cl::opt<std::string> schedule("schedule",
                                     cl::desc("order of each command buffer's dispatches: waves "
                                              "(barriers only between dependent waves) or serial "
                                              "(a barrier between every pair); default: "
                                              "waves on cpu, serial on cuda"),
                                     cl::init(""));
static cl::opt<bool> cudaFixedGrids(
    "cuda-fixed-grids",
    cl::desc("--target=cuda: kernels with a dynamic extent run a fixed grid of 1056 blocks "
             "instead of a count computed per call from the shape"),
    cl::init(false));
static cl::opt<std::string> dumpAfter("dump-after",
                                      cl::desc("print the IR (stderr) after the pass with this "
                                               "argument, e.g. hexir-form-dispatch-regions"),
                                      cl::init(""));
static cl::opt<bool> dumpAll("dump-all", cl::desc("print the IR (stderr) after every pass"),
                             cl::init(false));
static cl::opt<bool> remarks("remarks",
                             cl::desc("print the passes' remarks (stderr): why a kernel kept a generic "
                                      "lowering, the partitioner's cost model; default: errors and "
                                      "warnings only"),
                             cl::init(false));
static cl::opt<bool> emitMLIR("emit-vm-mlir",
                              cl::desc("print the VM-form IR instead of writing bytecode "
                                       "(kernel binaries replaced by their size)"),
                              cl::init(false));

// LLVM reports an allocation failure through this handler (it is built without exceptions);
// the default aborts. An input that asks for more memory than there is fails with exit 1.
static void OnLlvmBadAlloc(void*, const char* reason, bool) {
  std::fprintf(stderr, "hexir-compile: error: resource_exhausted: out of memory (%s): the input "
                       "asks for more memory than this machine can give\n", reason);
  std::fflush(stderr);
  _exit(1);
}

int main(int argc, char** argv) {
  llvm::InitLLVM init(argc, argv);
  hexir::tools::InstallLastResortHandler("hexir-compile");
  llvm::install_bad_alloc_error_handler(OnLlvmBadAlloc);
  cl::ParseCommandLineOptions(argc, argv, "Hexir compiler: MLIR -> .vmfb\n");
  // llvm::cl parses integers but does not bound them: refused by name in the CLI11 tools' words
  // (a non-positive --max-workgroups meant 1 silently; a negative --partition failed in the
  // pass with a garbled count and the whole module printed).
  auto refuse = [](const char* flag, int64_t value, const char* bound) {
    llvm::errs() << "hexir-compile: error: invalid_argument: " << flag << ": " << value
                 << " is not an integer " << bound << "\n";
    return 1;
  };
  if (maxWorkgroups < 1) return refuse("--max-workgroups", maxWorkgroups, ">= 1");
  if (partitionRanks < 0) return refuse("--partition", partitionRanks, ">= 0 (0: ranks read at run time)");
  if (smallReductionExtent < -1)
    return refuse("--small-reduction-extent", smallReductionExtent, ">= 0 (0: off)");
  if (normPairExtent < -1) return refuse("--norm-pair-extent", normPairExtent, ">= 0 (0: off)");
  if (blockMatvecNormExtent < -1)
    return refuse("--block-matvec-norm-extent", blockMatvecNormExtent, ">= 0 (0: off)");
  if (cudaPrefetchMaxBytes < 0) return refuse("--cuda-prefetch-max-bytes", cudaPrefetchMaxBytes, ">= 0 (0: none)");
  if (cudaWeightStaging != "none" && cudaWeightStaging != "shared" && cudaWeightStaging != "l1") {
    llvm::errs() << "hexir-compile: error: invalid_argument: --cuda-weight-staging: '" << cudaWeightStaging
                 << "' is not one of none, shared, l1\n";
    return 1;
  }
  for (auto* rate : {&matmulGFlops, &collectiveGBps, &collectiveBlockUs}) {
    const double v = *rate;
    if (rate->getNumOccurrences() > 0 && !(v > 0 && v < 1e12)) {
      llvm::errs() << "hexir-compile: error: invalid_argument: --" << rate->ArgStr << ": "
                   << llvm::format("%g", v) << " is not a positive number\n";
      return 1;
    }
  }

  mlir::DialectRegistry registry;
  hexir::compiler::RegisterDialects(registry);
  hexir::compiler::RegisterPasses();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  auto file = mlir::openInputFile(input, &error);
  if (!file) {
    llvm::errs() << "hexir-compile: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sources, &context);
  // Registered after the printer, so it sees each diagnostic first: a remark (with its notes)
  // is dropped unless --remarks asked for it.
  context.getDiagEngine().registerHandler([](mlir::Diagnostic& d) {
    return mlir::success(d.getSeverity() == mlir::DiagnosticSeverity::Remark && !remarks);
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
  if (!module) return 1;

  hexir::compiler::CompileOptions options;
  if (targets.size() == 1) options.target = targets.front();
  if (targets.size() > 1) {
    options.targets.assign(targets.begin(), targets.end());
    options.target = targets.front();
  }
  options.placement = placement;
  options.copy_shared_memory = copySharedMemory;
  options.cpu = cpu;
  options.max_workgroups = maxWorkgroups;
  options.fuse_elementwise = !noFusion;
  options.small_reduction_extent = smallReductionExtent;
  options.norm_pair_extent = normPairExtent;
  options.block_matvec_norm_extent = blockMatvecNormExtent;
  options.chain_small_layers = chainSmallLayers;
  options.small_layer_tails = smallLayerTails;
  options.cuda_row_chains = cudaRowChains;
  options.sibling_projections = siblingProjections;
  options.cast_matmul_activations = cudaMatmulActivations == MatmulActivations::kWeights;
  options.select_branches = !noBranchSelection;
  if (keepDeviceCalls && inlineDeviceCalls) {
    llvm::errs() << "hexir-compile: --keep-device-calls and --inline-device-calls contradict each other\n";
    return 1;
  }
  options.inline_device_calls = inlineDeviceCalls;
  options.keep_device_calls = keepDeviceCalls;
  options.device_loops = !noDeviceLoops;
  options.partition_ranks = partitionRanks;
  options.chunk_collectives = chunkCollectives;
  options.matmul_gflops = matmulGFlops;
  options.collective_gbps = collectiveGBps;
  options.collective_block_us = collectiveBlockUs;
  options.dump_after = dumpAfter;
  options.dump_all = dumpAll;
  options.cuda_chip = cudaChip;
  options.cuda_format = cudaFormat;
  options.cuda_allow_tf32 = allowTf32;
  options.cuda_quantized_gemv = !cudaGenericBlockMatvec;
  options.cuda_prefetch_max_bytes = cudaPrefetchMaxBytes;
  options.cuda_weight_staging = cudaWeightStaging;
  options.schedule = schedule;
  options.cuda_grid_from_shape = !cudaFixedGrids;
  options.progress = isatty(STDERR_FILENO) != 0;
  std::vector<uint8_t> bytes;
  if (mlir::failed(hexir::compiler::CompileModule(*module, options, &bytes))) return 1;

  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "hexir-compile: " << error << "\n";
    return 1;
  }
  if (emitMLIR) {
    module->walk([](mlir::Operation* op) {
      if (auto binary = op->getAttrOfType<mlir::StringAttr>(hexir::kBinaryAttr)) {
        op->setAttr(hexir::kBinarySizeAttr,
                    mlir::IntegerAttr::get(mlir::IntegerType::get(op->getContext(), 64),
                                           binary.size()));
        op->removeAttr(hexir::kBinaryAttr);
      }
    });
    module->print(out->os());
  } else {
    out->os().write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  out->os().flush();
  if (out->os().has_error()) {
    llvm::errs() << "hexir-compile: error: cannot write '" << output
                 << "': " << out->os().error().message() << "\n";
    out->os().clear_error();
    return 1;
  }
  out->keep();
  return 0;
}
