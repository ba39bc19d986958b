#include "compiler/Pipeline.h"

#include <algorithm>

#include "compiler/PassProgress.h"
#include "compiler/bytecode/BytecodeWriter.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "llvm/TargetParser/Host.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "passes/Passes.h"
#include "passes/codegen/CPUTarget.h"
#include "passes/codegen/CUDAPasses.h"
#include "passes/dispatch/costs/CostPasses.h"
#include "passes/dispatch/fusion/FusionPasses.h"
#include "passes/loops/DeviceLoopPasses.h"

namespace hexir {
// passes/codegen/CPUPackMatmulOperands.cpp (declared here: a new header under passes/ would
// make Bazel recompile all of //passes).
std::unique_ptr<mlir::Pass> CreateCPUPackMatmulOperands(llvm::StringRef cpu);
void RegisterCPUPackMatmulOperands();
// passes/input/InlineDeviceCalls.cpp: hexir-inline-unrecordable-calls.
std::unique_ptr<mlir::Pass> CreateInlineUnrecordableCalls();
void RegisterInlineUnrecordableCalls();
// passes/vm/HoistLoopInvariants.cpp: hexir-hoist-vm-loop-invariants.
std::unique_ptr<mlir::Pass> CreateHoistVMLoopInvariants();
void RegisterHoistVMLoopInvariants();
// passes/vm/EraseImpliedAsserts.cpp: hexir-erase-implied-vm-asserts.
std::unique_ptr<mlir::Pass> CreateEraseImpliedVMAsserts();
void RegisterEraseImpliedVMAsserts();
// passes/dispatch/GeneralizeElementwiseOps.cpp: hexir-generalize-elementwise-ops.
std::unique_ptr<mlir::Pass> CreateGeneralizeElementwiseOps();
void RegisterGeneralizeElementwiseOps();
// passes/vm/MemoizeShapeWork.cpp: hexir-memoize-vm-shape-work.
std::unique_ptr<mlir::Pass> CreateMemoizeVMShapeWork();
void RegisterMemoizeVMShapeWork();
}  // namespace hexir

namespace hexir::compiler {

void RegisterDialects(mlir::DialectRegistry& registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<hexir::HexirDialect, hexir::vmir::VMDialect>();
}

void RegisterPasses() {
  mlir::registerAllPasses();
  hexir::registerHexirPasses();
  hexir::RegisterCPUPackMatmulOperands();
  hexir::RegisterInlineUnrecordableCalls();
  hexir::RegisterHoistVMLoopInvariants();
  hexir::RegisterEraseImpliedVMAsserts();
  hexir::RegisterMemoizeVMShapeWork();
  hexir::RegisterGeneralizeElementwiseOps();
  hexir::registerHexirCUDAPasses();
  hexir::registerHexirCostPasses();
  hexir::registerHexirFusionPasses();
  hexir::registerHexirDeviceLoopPasses();
}

namespace {

// ---- targets: kernel codegen + serialization, one entry per --target value ----------------
void AddCPUCodegen(mlir::OpPassManager& pm, const CompileOptions& options) {
  pm.addPass(hexir::createCPUDistributeWorkgroups(
      CPUDistributeWorkgroupsOptions{options.max_workgroups}));
  pm.addPass(hexir::createCPULowerExecutables(CPULowerExecutablesOptions{options.cpu}));
  CPUSerializeExecutablesOptions serialize;
  serialize.cpu = options.cpu;
  pm.addPass(hexir::createCPUSerializeExecutables(serialize));
}

// Same host program as the CPU; kernels become PTX + cubin (passes/codegen/CUDA*.cpp).
void AddCUDACodegen(mlir::OpPassManager& pm, const CompileOptions& options) {
  CUDADistributeThreadsOptions distribute;
  distribute.gridFromShape = options.cuda_grid_from_shape;
  distribute.chip = options.cuda_chip;
  distribute.allowTf32 = options.cuda_allow_tf32;
  distribute.quantizedGemv = options.cuda_quantized_gemv;
  pm.addPass(hexir::createCUDADistributeThreads(distribute));
  pm.addPass(hexir::createCUDALowerExecutables(
      CUDALowerExecutablesOptions{options.cuda_chip, options.cuda_features, options.cuda_prefetch_max_bytes,
                                  options.cuda_weight_staging}));
  pm.addPass(hexir::createCUDASerializeExecutables(
      CUDASerializeExecutablesOptions{options.cuda_chip, options.cuda_format, ""}));
}

struct Target {
  const char* name;
  void (*addCodegen)(mlir::OpPassManager&, const CompileOptions&);
};

// To add a target: one row here (its codegen passes live in their own files).
constexpr Target kTargets[] = {
    {"cpu", &AddCPUCodegen},
    {"cuda", &AddCUDACodegen},
};

const Target* FindTarget(const std::string& name) {
  for (const Target& t : kTargets)
    if (name == t.name) return &t;
  return nullptr;
}

std::string TargetNames() {
  std::string s;
  for (const Target& t : kTargets) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

bool HasTosa(mlir::ModuleOp module) {
  bool found = false;
  module.walk([&](mlir::Operation* op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "tosa") {
      found = true;
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return found;
}

// The schedule a compilation uses: the requested one, or the target's default. CUDA defaults
// to serial: on the H200 a decode step's graph with wave branches (and their join nodes) ran
// slower than the straight chain (stories260K 0.27 vs 0.21 ms/token, random768 f16 0.85 vs
// 0.79), while 8 independent chains gained (0.37x); the CPU runs a wave's dispatches on its
// workers and defaults to waves.
// The device kinds by ordinal: `targets`, or the one `target`.
std::vector<std::string> DeviceKinds(const CompileOptions& options) {
  return options.targets.empty() ? std::vector<std::string>{options.target} : options.targets;
}

std::string EffectiveSchedule(const CompileOptions& options) {
  if (!options.schedule.empty()) return options.schedule;
  for (const std::string& kind : DeviceKinds(options))
    if (kind == "cuda") return "serial";
  return "waves";
}

// hexir-fuse-small-reductions' max-extent: the requested one, or the targets' default, 256 on
// both. The CPU recomputes a norm once per workgroup (a few hundred multiply-adds per
// projection tile); CUDA once per warp, each warp computing one output row
// (passes/codegen/CUDAWholeReductions.h), for the chains whose kernels it distributes.
bool OnlyCpu(const CompileOptions& options) {
  for (const std::string& kind : DeviceKinds(options))
    if (kind != "cpu") return false;
  return true;
}
bool OnlyCuda(const CompileOptions& options) {
  for (const std::string& kind : DeviceKinds(options))
    if (kind != "cuda") return false;
  return true;
}
// The widest norm CUDA's quantized GEMV recomputes by default (CompileOptions::
// block_matvec_norm_extent): 0 until measured on a GPU.
constexpr int64_t kDefaultBlockMatvecNormExtent = 0;

int64_t SmallReductionExtent(const CompileOptions& options) {
  return options.small_reduction_extent >= 0 ? options.small_reduction_extent : 256;
}

}  // namespace

mlir::LogicalResult BuildPipeline(mlir::OpPassManager& pm, const CompileOptions& options) {
  // Each kind once, in device order: its input checks and its codegen.
  const std::vector<std::string> kinds = DeviceKinds(options);
  std::vector<const Target*> targets;
  for (const std::string& kind : kinds) {
    const Target* target = FindTarget(kind);
    if (!target) return mlir::failure();
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) targets.push_back(target);
  }
  const std::string schedule = EffectiveSchedule(options);
  if (schedule != "waves" && schedule != "serial") return mlir::failure();
  if (options.placement != "annotations" && options.placement != "auto") return mlir::failure();
  // Sharding annotations -> one SPMD program per rank (a no-op without annotations).
  PartitionOptions partition{options.partition_ranks, /*explain=*/false, options.chunk_collectives};
  if (options.matmul_gflops > 0) partition.matmulGFlops = options.matmul_gflops;
  if (options.collective_gbps > 0) partition.collectiveGBps = options.collective_gbps;
  if (options.collective_block_us > 0) partition.blockMicroseconds = options.collective_block_us;
  pm.addPass(hexir::createPartition(partition));
  for (const Target* target : targets)
    pm.addPass(hexir::createVerifyInput(VerifyInputOptions{target->name}));
  // The llama importer's prompt attention is one kernel on CUDA only (passes/codegen/
  // CUDADecodeAttention.h): elsewhere its generics are dispatched as unmarked ones.
  if (!OnlyCuda(options)) {
    DissolveDispatchGroupsOptions dissolve;
    dissolve.kinds = {"prompt_attention"};
    pm.addPass(hexir::createDissolveDispatchGroups(dissolve));
  }
  // Dim equalities and allocation sizes the program assumes, checked on the host (one VM
  // `assert` each) before any dispatch that relies on them.
  // Calls whose callee will record into its caller's command buffer stay calls (one region,
  // FormExecutionRegions); the others are inlined, each call site a copy of the callee, so no
  // call submits a command buffer of its own (passes/README.md step 1a). Asked: every call
  // inlined, or every call kept.
  if (options.inline_device_calls) pm.addPass(hexir::createInlineDeviceCalls());
  else if (!options.keep_device_calls) pm.addPass(hexir::CreateInlineUnrecordableCalls());
  pm.addPass(hexir::createInsertShapeChecks());
  // Named elementwise ops (linalg.add, linalg.exp, ...) as the generics that dispatch formation
  // fuses and the CPU codegen collapses (after the checks, whose messages name the op).
  pm.addNestedPass<mlir::func::FuncOp>(hexir::CreateGeneralizeElementwiseOps());
  // Device loops: carried values written back in place (passes/loops/DeviceLoops.h).
  if (options.device_loops) pm.addPass(hexir::createPrepareDeviceLoops());
  // Small layers: RMSNorm recomputed inside each projection's dispatch
  // (passes/dispatch/fusion/README.md; the target's default extent, SmallReductionExtent).
  if (int64_t extent = SmallReductionExtent(options); options.fuse_elementwise && extent > 0) {
    // With a CUDA device only what its codegen spreads over threads (a warp per output row
    // recomputing the norm's sum, passes/codegen/CUDAWholeReductions.h).
    // With CUDA devices only, block-format matvecs (quantized GEMVs) recompute wider norms:
    // x is staged once per block of threads, the norm's sum first (passes/codegen/
    // CUDAQuantizedGemv.h).
    FuseSmallReductionsOptions fuse{extent, !OnlyCpu(options)};
    if (OnlyCuda(options))
      fuse.maxBlockMatvecExtent =
          options.block_matvec_norm_extent >= 0 ? options.block_matvec_norm_extent : kDefaultBlockMatvecNormExtent;
    pm.addPass(hexir::createFuseSmallReductions(fuse));
    // The CPU runs a kernel of less work than its least work per workgroup as one
    // workgroup anyway: q/k/v (w1/w3) after one norm become one such kernel; the groups also
    // take their heads (wo + residual) and chain (a layer's FFN with the next layer's norm +
    // q/k/v) on both targets (passes/dispatch/fusion/README.md).
    if (OnlyCpu(options))
      pm.addPass(hexir::createGroupSmallProjections(GroupSmallProjectionsOptions{
          CPUDistributeWorkgroupsOptions{}.minWorkPerWorkgroup, 0, 0, options.chain_small_layers,
          options.chain_small_layers, options.chain_small_layers && options.small_layer_tails}));
    // CUDA runs such a group as one block, level after level with barriers between them and
    // its temporaries in shared memory (passes/codegen/CUDABlockLevels.cpp): when each level
    // fits the block's threads a few steps each and the temporaries fit shared memory.
    // Each level: 128 steps for each thread of the block (stories260K's largest level, w1 +
    // w3, is 2 x 172 x 64 = 22016); temporaries within the 48 KiB of static shared memory
    // (the lowering's own limit, kMaxBlockLevelsSharedBytes in CUDABlockLevels.h).
    // A norm too wide to recompute is one such block too, its sum and its scaling: one kernel
    // instead of two. Default 16384: measured on the H200 (200 tokens, 3 alternating rounds)
    // random768's 768 gained (0.95x); TinyLlama's 2048 as one block of 1024 threads with the
    // kernels' programmatic launches gained too (0.967x; as 256 threads without them it had
    // lost, 1.02x).
    else if (OnlyCuda(options))
      pm.addPass(hexir::createGroupSmallProjections(GroupSmallProjectionsOptions{
          128 * CUDADistributeThreadsOptions{}.blockSize, 48 * 1024,
          options.norm_pair_extent >= 0 ? options.norm_pair_extent : 16384, options.chain_small_layers,
          options.chain_small_layers, options.chain_small_layers && options.small_layer_tails}));
  }
  // A row softmax or norm (reductions along rows, then elementwise ops reading them) is one
  // kernel: on the CPU it runs its passes a block of rows at a time
  // (passes/codegen/CPURowChains.h), on CUDA a block of threads per row (static chains only,
  // passes/codegen/CUDARowChains.h).
  if (options.fuse_elementwise && (OnlyCpu(options) || (OnlyCuda(options) && options.cuda_row_chains)))
    pm.addPass(hexir::createGroupRowChains(GroupRowChainsOptions{OnlyCuda(options)}));
  // CUDA: a matmul of f32 activations by f16/bf16 weights over many rows (a prompt's prefill)
  // reads its activations rounded to the weights' type, so the tensor-core kernel takes it
  // (passes/dispatch/CastMatmulActivations.cpp; H200, 512-token TinyLlama prefill: bench/README.md).
  if (options.cast_matmul_activations && OnlyCuda(options)) pm.addPass(hexir::createCastMatmulActivations());
  // Both targets apply consumers inside reductions (CUDA: lane 0 of the point's warp), so no
  // target sets unfused-reduction-extent (measured on the H200: fusing is 1.5-4% faster).
  // CUDA computes sibling reductions read by one consumer in one kernel, a warp per row
  // computing both (w1 and w3 + SiLU * mul: one launch fewer per layer). CPU: a zero pad
  // before a depthwise convolution is read by its kernel, no padded copy (CPUConvolutionDepthwise.h).
  pm.addPass(hexir::createFormDispatchRegions(FormDispatchRegionsOptions{
      options.fuse_elementwise, /*unfusedReductionExtent=*/0,
      /*fuseSiblingReductions=*/options.fuse_elementwise && OnlyCuda(options),
      /*fusePadsIntoDepthwise=*/options.fuse_elementwise && OnlyCpu(options)}));
  // CUDA, on request: q, k and v (+ v's cache row) of one normed row as one kernel, blocks
  // partitioned over their rows. Off by default: 8 kernels a layer instead of 10 measured
  // slower on the H200 (passes/dispatch/fusion/README.md).
  if (options.sibling_projections && options.fuse_elementwise && OnlyCuda(options))
    pm.addPass(hexir::createMergeSiblingProjections());
  pm.addPass(hexir::createOutlineDispatchRegions());
  pm.addPass(hexir::createDeduplicateExecutables());
  // Host functions: work that does not depend on a loop (shape arithmetic, dispatches on
  // loop-invariant tensors such as weight layout changes) moves out of it.
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createLoopInvariantCodeMotionPass());
  // Launch and VM optimizations (order and reasons: passes/README.md, pipeline step 5b).
  pm.addPass(hexir::createDeduplicateModuloConstants());
  pm.addPass(hexir::createSpecializeDispatches());
  pm.addPass(hexir::createMergeSpecializationSwitches());
  pm.addPass(hexir::createFoldUniformOperands());
  // CPU-only modules: a micro-kernel matmul's B is packed by a dispatch of its own, shared by
  // the matmul's workgroups; for a constant B it is lifted by the next pass (once at load).
  if (llvm::all_of(kinds, [](const std::string& kind) { return kind == "cpu"; }))
    pm.addPass(hexir::CreateCPUPackMatmulOperands(options.cpu));
  pm.addPass(hexir::createLiftConstantDispatches());
  // After lifting, so that no constant dispatch is lifted twice from the two copies.
  pm.addPass(hexir::createUnswitchShapeBranches());
  pm.addPass(hexir::createAnnotateDispatchCosts());  // hexir-bench metadata (passes/dispatch/costs)
  if (kinds.size() > 1) {
    // Several devices (passes/schedule): a device for every dispatch, each executable compiled
    // for the kinds that run it, transfers where a value crosses devices.
    pm.addPass(hexir::createPlaceDevices(PlaceDevicesOptions{options.placement}));
    pm.addPass(hexir::createAssignExecutableTargets());
    pm.addPass(hexir::createInsertTransfers(InsertTransfersOptions{options.copy_shared_memory}));
  }
  for (const Target* target : targets) target->addCodegen(pm, options);
  pm.addPass(hexir::createAttachDispatchCosts());
  // Prepared loops whose body is device work become repeating regions; the rest stay.
  if (options.device_loops) pm.addPass(hexir::createFormDeviceLoops());
  // Host functions: structured control flow becomes blocks and branches.
  pm.addPass(mlir::createSCFToControlFlowPass());
  // Scheduling (passes/schedule): execution regions, waves and barriers, timepoint elision.
  pm.addPass(hexir::createFormExecutionRegions());
  pm.addPass(hexir::createScheduleConcurrency(ScheduleConcurrencyOptions{schedule}));
  pm.addPass(hexir::createElideTimepoints());
  pm.addPass(hexir::createConvertToVM());
  // Host work of lowered loops that does not change across iterations runs once, before them.
  pm.addNestedPass<mlir::func::FuncOp>(hexir::CreateHoistVMLoopInvariants());
  pm.addPass(mlir::createCSEPass());  // repeated VM constants
  // Shape checks that an earlier check of the same or a stronger condition already made.
  pm.addNestedPass<mlir::func::FuncOp>(hexir::CreateEraseImpliedVMAsserts());
  // Shape arithmetic and checks run again only when the arguments' dims change.
  pm.addPass(hexir::CreateMemoizeVMShapeWork());
  return mlir::success();
}

void BuildInputPipeline(mlir::OpPassManager& pm) {
  mlir::tosa::addTosaToLinalgPasses(pm, mlir::TosaToLinalgOptions());
  // Constants, reshapes and slices the linalg pipelines leave to these two.
  (void)mlir::parsePassPipeline("func.func(tosa-to-arith, tosa-to-tensor, canonicalize)", pm);
}

mlir::LogicalResult CompileModule(mlir::ModuleOp module, const CompileOptions& options,
                                  std::vector<uint8_t>* out) {
  mlir::MLIRContext* ctx = module.getContext();
  bool dumping = options.dump_all || !options.dump_after.empty();
  if (dumping) ctx->disableMultithreading();
  bool dumpMatched = false;
  auto configure = [&](mlir::PassManager& pm) {
    if (options.progress) pm.addInstrumentation(MakePassProgress("hexir-compile"));
    if (!dumping) return;
    pm.enableIRPrinting(
        [](mlir::Pass*, mlir::Operation*) { return false; },
        [&](mlir::Pass* pass, mlir::Operation*) {
          bool match = options.dump_all || pass->getArgument() == options.dump_after;
          dumpMatched |= match;
          return match;
        },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, *options.dump_stream);
  };

  if (HasTosa(module)) {
    mlir::PassManager input(ctx, mlir::ModuleOp::getOperationName());
    configure(input);
    BuildInputPipeline(input);
    if (mlir::failed(input.run(module))) return mlir::failure();
  }
  mlir::PassManager pm(ctx, mlir::ModuleOp::getOperationName());
  if (!options.schedule.empty() && options.schedule != "waves" && options.schedule != "serial")
    return module.emitError() << "unsupported schedule '" << options.schedule
                              << "' (supported: waves, serial)";
  if (options.placement != "annotations" && options.placement != "auto")
    return module.emitError() << "unsupported placement '" << options.placement
                              << "' (supported: annotations, auto)";
  const std::vector<std::string> kinds = DeviceKinds(options);
  if (kinds.empty()) return module.emitError() << "no target given";
  for (const std::string& kind : kinds)
    if (!FindTarget(kind))
      return module.emitError() << "unsupported target '" << kind << "' (supported: "
                                << TargetNames() << ")";
  if (llvm::is_contained(kinds, "cpu") && !hexir::codegen::IsKnownCPU(options.cpu))
    return module.emitError() << "unknown CPU '" << options.cpu << "' for "
                              << llvm::sys::getDefaultTargetTriple()
                              << " (--cpu: 'host' or an LLVM CPU name such as x86-64-v3)";
  if (kinds.size() == 1) {
    // One device: every `hexir.device` annotation names it (the same source compiles for one
    // device or several).
    module.walk([](mlir::Operation* op) {
      op->removeAttr(hexir::kDeviceAttr);
      if (auto func = llvm::dyn_cast<mlir::func::FuncOp>(op))
        for (unsigned i = 0; i < func.getNumArguments(); ++i) func.removeArgAttr(i, hexir::kDeviceAttr);
    });
  } else {
    llvm::SmallVector<mlir::Attribute> list;
    for (const std::string& kind : kinds) list.push_back(mlir::StringAttr::get(ctx, kind));
    module->setAttr(hexir::kDevicesAttr, mlir::ArrayAttr::get(ctx, list));
  }
  if (mlir::failed(BuildPipeline(pm, options))) {
    return module.emitError() << "unsupported target '" << options.target
                              << "' (supported: " << TargetNames() << ")";
  }
  configure(pm);
  if (mlir::failed(pm.run(module))) return mlir::failure();
  if (!options.dump_after.empty() && !dumpMatched) {
    return module.emitError() << "--dump-after: no pass named '" << options.dump_after
                              << "' ran in the pipeline";
  }
  BytecodeWriterOptions writerOptions;
  writerOptions.selectBranches = options.select_branches;
  return WriteBytecodeModule(module, out, writerOptions);
}

}  // namespace hexir::compiler
