// Lowers each executable's kernel module from tensors to the LLVM dialect and adds the
// CPU dispatch ABI entry (hal/drivers/cpu/dispatch_abi.h) that unpacks bindings, push
// constants and the workgroup id into the kernel's arguments.
#include <cstddef>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "hal/drivers/cpu/dispatch_abi.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Threading.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "passes/Passes.h"
#include "passes/codegen/CPUCollapseContiguousLoops.h"
#include "passes/codegen/CPUConcatCopies.h"
#include "passes/codegen/CPUSliceCopies.h"
#include "passes/codegen/CPUConstantPad.h"
#include "passes/codegen/CPUConvolutionKernel.h"
#include "passes/codegen/CPUDecodeAttention.h"
#include "passes/codegen/CPUDynamicPad.h"
#include "passes/codegen/CPUElementwiseFusion.h"
#include "passes/codegen/CPUKernelTemporaries.h"
#include "passes/codegen/CPUMathApproximation.h"
#include "passes/codegen/CPUMatmulMicroKernel.h"
#include "passes/codegen/CPUMaxPool.h"
#include "passes/codegen/CPUMatvecKernel.h"
#include "passes/codegen/CPUReductionOrder.h"
#include "passes/codegen/CPURowChainArithmetic.h"
#include "passes/codegen/CPURowChainPrefetch.h"
#include "passes/codegen/CPURowChains.h"
#include "passes/codegen/CPUStreamingStores.h"
#include "passes/codegen/CPUTarget.h"
#include "passes/codegen/CPUTransposeTiling.h"
#include "passes/codegen/CPUWorkWords.h"
#include "passes/codegen/RowSelectWrites.h"
#include "passes/codegen/KernelChecks.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir {
#define GEN_PASS_DEF_CPULOWEREXECUTABLES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// A process-wide flag (hexir-compile and hexir-opt list it), not a pass option: tests lower it
// to run the streaming path at small sizes.
llvm::cl::opt<int64_t> cpuStreamingStoreBytes(
    "cpu-streaming-store-bytes",
    llvm::cl::desc("CPU kernels write a result of at least N bytes (a kernel argument of static "
                   "shape) with non-temporal stores, past the caches "
                   "(passes/codegen/CPUStreamingStores.h); <= 0: never (default 16 MiB)"),
    llvm::cl::init(int64_t{16} << 20));

// Process-wide like the one above (tests and A/B measurements vary it).
llvm::cl::opt<int64_t> cpuShortRunPositions(
    "cpu-short-run-positions",
    llvm::cl::desc("CPU elementwise kernels whose innermost loop has at most N positions run it as "
                   "vectors (passes/codegen/CPUCollapseContiguousLoops.h); < 2: never (default 64)"),
    llvm::cl::init(int64_t{64}));

using codegen::kBufferizePipeline;
// bf16 arithmetic and math run in f32 (arith-emulate-unsupported-floats,
// math-extend-to-supported-types; f16 stays: LLVM handles it) and the conversions become
// integer code (ExpandBFloat16 between the two pipelines): LLVM would otherwise call
// compiler-rt's __truncsfbf2, which the kernel's shared object cannot resolve.
constexpr const char* kLoopsPipeline =
    "builtin.module(buffer-deallocation-pipeline,convert-linalg-to-loops,lower-affine,"
    "math-extend-to-supported-types{extra-types=f16 target-type=f32},"
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32})";
constexpr const char* kLLVMPipeline =
    "builtin.module(convert-scf-to-cf,convert-vector-to-llvm,expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
    "convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,convert-func-to-llvm,"
    "convert-cf-to-llvm,convert-arith-to-llvm,reconcile-unrealized-casts,canonicalize)";

// A copy between strided views (a fused chain of pure data movement folds to one) becomes a
// copy generic, lowered to loops like every other op (one loop over a run dense at run time,
// CPUCollapseContiguousLoops.h): finalize-memref-to-llvm would call the
// runtime's memrefCopy, which a kernel's shared object cannot resolve at dlopen. Copies
// between identity layouts stay (they become a memcpy intrinsic). A copy of a view onto
// itself (what bufferization leaves of a tile loop's insert_slice into the slice it
// extracted) is erased.
void LowerStridedCopiesToLinalg(ModuleOp inner, bool onlyDynamic = false) {
  SmallVector<memref::CopyOp> copies;
  inner.walk([&](memref::CopyOp copy) {
    if (onlyDynamic && cast<ShapedType>(copy.getSource().getType()).hasStaticShape()) return;
    if (copy.getSource() == copy.getTarget()) {
      copy.erase();
      return;
    }
    auto source = dyn_cast<MemRefType>(copy.getSource().getType());
    auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
    if (source && target && (!source.getLayout().isIdentity() || !target.getLayout().isIdentity()))
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies) {
    OpBuilder b(copy);
    linalg::makeMemRefCopyOp(b, copy.getLoc(), copy.getSource(), copy.getTarget());
    copy.erase();
  }
}

// A linalg.copy of run-time extents (a convolution's bias, filled into a temporary and copied
// into a dynamic export's output slice) or a linalg.fill of a strided view of run-time
// extents (a dynamic max pool's -inf pad over a workgroup's slice) as the equivalent generic,
// so that CollapseDynamicLoopsAtRunTime (next) runs it as one loop over a run dense at run
// time: convert-linalg-to-loops made either one scalar loop per dim (the innermost a plane's
// row: 4 elements at 4 x 4). Fills of identity layouts are CollapseDenseFills' (below).
void GeneralizeDynamicCopiesAndFills(ModuleOp inner) {
  SmallVector<linalg::LinalgOp> ops;
  inner.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::CopyOp, linalg::FillOp>(op) || !op.hasPureBufferSemantics()) return;
    auto type = cast<MemRefType>(op.getDpsInits()[0].getType());
    if (!type.hasStaticShape() && (isa<linalg::CopyOp>(op) || !type.getLayout().isIdentity())) ops.push_back(op);
  });
  for (linalg::LinalgOp op : ops) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    if (isa<linalg::CopyOp>(op)) {
      linalg::makeMemRefCopyOp(b, loc, in, out);
    } else {
      const int64_t rank = cast<MemRefType>(out.getType()).getRank();
      linalg::GenericOp::create(b, loc, TypeRange{}, ValueRange{}, ValueRange{out},
                                ArrayRef<AffineMap>{b.getMultiDimIdentityMap(rank)},
                                SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
                                [&](OpBuilder& nb, Location l, ValueRange) { linalg::YieldOp::create(nb, l, in); });
    }
    op->erase();
  }
}

class CPULowerExecutables : public impl::CPULowerExecutablesBase<CPULowerExecutables> {
 public:
  using CPULowerExecutablesBase::CPULowerExecutablesBase;

  void getDependentDialects(DialectRegistry& registry) const override {
    CPULowerExecutablesBase::getDependentDialects(registry);
    registry.insert<vector::VectorDialect>();
    codegen::AddPipelineDialects(registry, {kBufferizePipeline, kLoopsPipeline, kLLVMPipeline,
                                            codegen::kRowChainBufferPipeline});
  }

  // Executables are lowered concurrently on the context's threads (one by one, in module order,
  // when it is single-threaded, as with --dump-after); lower() touches only its executable's
  // attributes and inner module, and diagnostics come out in module order
  // (failableParallelForEach). The analysis managers of the inner modules, which the pipelines
  // run by lower() use, are created here first: creating them inserts into a map shared by
  // all executables.
  void runOnOperation() override {
    SmallVector<ExecutableOp> executables;
    for (auto exe : getOperation().getOps<ExecutableOp>()) {
      if (!exe.isCompiledFor("cpu")) continue;
      executables.push_back(exe);
      if (ModuleOp inner = exe.getInnerModule()) (void)getAnalysisManager().nest(inner);
    }
    if (failed(failableParallelForEach(&getContext(), executables, [&](ExecutableOp exe) { return lower(exe); })))
      signalPassFailure();
  }

 private:
  LogicalResult lower(ExecutableOp exe) {
    ModuleOp inner = exe.getInnerModule();
    if (!inner) return exe.emitError("executable has no module");
    FailureOr<OpPassManager> bufferize = parsePassPipeline(kBufferizePipeline);
    FailureOr<OpPassManager> toLoops = parsePassPipeline(kLoopsPipeline);
    FailureOr<OpPassManager> toLLVM = parsePassPipeline(kLLVMPipeline);
    if (failed(bufferize) || failed(toLoops) || failed(toLLVM)) return exe.emitError("bad internal pipeline");
    // Data-dependent indices and integer divisors are checked; a failure is reported
    // through the entry's return code (hal/drivers/cpu/dispatch_abi.h).
    func::FuncOp tensorKernel = codegen::LookupKernel(exe);
    if (!tensorKernel) return failure();
    codegen::CPUTarget target = codegen::DescribeCPU(cpu);
    // Matmul-shaped generics (the ONNX importer's) as linalg.matmul, for the micro-kernel below.
    codegen::NameMatmulGenerics(tensorKernel);
    // A row softmax or norm a block of rows at a time, the rows in L1 (codegen/CPURowChains.h).
    auto group = exe->getAttrOfType<StringAttr>(kDispatchGroupAttr);
    const bool rowChain = group && group.getValue() == codegen::kRowChainGroup;
    if (rowChain && failed(codegen::TileRowChains(tensorKernel, target.l1Bytes))) return failure();
    // ... dividing by a row's reciprocal, its max without the zero's sign (CPURowChainArithmetic.h).
    if (rowChain && failed(codegen::CheapenRowChainArithmetic(tensorKernel))) return failure();
    // Constant pads as a fill and a copy of the source (codegen/CPUConstantPad.h).
    codegen::LowerConstantPadsToCopies(tensorKernel);
    // ... and those of run-time extents or tiled (codegen/CPUDynamicPad.h).
    codegen::LowerDynamicPadsToCopies(tensorKernel);
    codegen::LowerConcatenationsToCopies(tensorKernel);
    // ... and slices of run-time extents (codegen/CPUSliceCopies.h).
    codegen::LowerSlicesToCopies(tensorKernel);
    // Elementwise chains as one loop nest (codegen/CPUElementwiseFusion.h).
    if (failed(codegen::FuseElementwiseChains(tensorKernel))) return failure();
    // Transposing loops in cache-line blocks (codegen/CPUTransposeTiling.h).
    if (failed(codegen::TileTransposingLoops(tensorKernel))) return failure();
    // Trailing loops read as one run by every operand as one loop (CPUCollapseContiguousLoops.h).
    codegen::CollapseContiguousLoops(tensorKernel);
    Value workgroupId;
    if (tensorKernel.getNumArguments() && tensorKernel.getArgumentTypes().back().isIndex())
      workgroupId = tensorKernel.getArguments().back();
    codegen::InsertKernelChecks(tensorKernel, /*report=*/true, workgroupId);
    if (failed(runPipeline(*bufferize, inner))) return failure();
    FailureOr<func::FuncOp> kernel = codegen::FinishBufferizedKernel(exe);
    if (failed(kernel)) return failure();
    // A cache row written through a whole-cache select touches only its row
    // (codegen/RowSelectWrites.h; a device loop's KV-cache update in a small-layer group).
    codegen::NarrowRowSelectWrites(*kernel);
    // A decode attention group as vector loops over contiguous cache rows, no gathers
    // (codegen/CPUDecodeAttention.h).
    codegen::LowerDecodeAttentionToVectorLoops(*kernel, target.vectorBits);
    SmallVector<Type> signature(kernel->getArgumentTypes());
    if (rowChain) {
      FailureOr<OpPassManager> hoist = parsePassPipeline(codegen::kRowChainBufferPipeline);
      if (failed(hoist) || failed(runPipeline(*hoist, inner))) return failure();
      // The next block's rows prefetched during this block's arithmetic (CPURowChainPrefetch.h).
      codegen::PrefetchNextRowBlocks(*kernel);
    }
    // f32 matmuls: packed right-hand side, register-blocked vector FMAs.
    codegen::MatmulTiles tiles = codegen::ChooseMatmulTiles(target);
    codegen::LowerMatmulsToMicroKernels(*kernel, tiles);
    // f32 max pools: vector loops over runs of a row's outputs, channels interleaved
    // (codegen/CPUMaxPool.h).
    codegen::LowerMaxPools(*kernel, tiles.lanes);
    // f32 2-D convolutions: dense ones as implicit GEMMs on the same micro-kernel,
    // depthwise ones on staged planes (codegen/CPUConvolutionKernel.h, CPUConvolutionDepthwise.h).
    codegen::LowerConvolutionsToKernels(*kernel, tiles);
    // M = 1 matvecs (dense f32/f16, GGUF blocks): rows read along k with vector loads.
    codegen::LowerMatvecsToVectorKernels(*kernel, target);
    // Results too large for the cache: through a chunk in L1, then non-temporal vector stores
    // (codegen/CPUStreamingStores.h); after the kernels above, which match the untiled ops.
    const bool streamed = codegen::StreamLargeOutputs(*kernel, cpuStreamingStoreBytes, target.vectorBits / 8) > 0;
    // Matmul's k moves outside j (the inner loop then writes consecutive outputs); a dot
    // product along a contiguous input (matvec's [out][in] weights) keeps k innermost, and
    // reductions left innermost may be reassociated so that LLVM vectorizes them.
    if (failed(codegen::MoveReductionsOutsideLastParallel(
            *kernel, [](linalg::LinalgOp op, int64_t lastParallel) {
              return !codegen::ReducesAlongContiguousInput(op, lastParallel);
            })))
      return failure();
    codegen::AllowReassociationOfInnermostReductions(*kernel);
    // Transcendental math as polynomials LLVM vectorizes (codegen/CPUMathApproximation.h).
    if (failed(codegen::ApproximateMath(*kernel))) return failure();
    // Copies of run-time extents between strided views as copy generics, so that the next
    // step sees them too (a concatenation's copies: a dense run at run time,
    // CPUConcatCopies.h); static ones below (as copy generics earlier, SqueezeNet's static
    // 3x3s over 7 x 7 took 16 -> 18 us: their pads' copies).
    LowerStridedCopiesToLinalg(inner, /*onlyDynamic=*/true);
    GeneralizeDynamicCopiesAndFills(inner);
    // Elementwise loops over runs of dynamic extent as one loop when dense at run time
    // (codegen/CPUCollapseContiguousLoops.h).
    codegen::CollapseDynamicLoopsAtRunTime(*kernel);
    // Short innermost loops (planes of a few positions) as vectors: LLVM leaves them scalar
    // (codegen/CPUCollapseContiguousLoops.h).
    // Row chains tile their rows themselves (codegen/CPURowChains.h): only the elementwise ops of
    // a block of a run-time row count.
    codegen::VectorizeShortContiguousRuns(*kernel, target.vectorBits / 32, cpuShortRunPositions,
                                          /*onlyRunTimeLoops=*/rowChain);
    LowerStridedCopiesToLinalg(inner);
    // Fills of dense buffers as one run (codegen/CPUCollapseContiguousLoops.h).
    codegen::CollapseDenseFills(*kernel);
    codegen::SinkTemporariesIntoTheirBranch(*kernel);
    codegen::PromoteSmallTemporariesToStack(*kernel);
    if (failed(runPipeline(*toLoops, inner))) return failure();
    codegen::LowerDeferredIntrinsicCalls(inner);
    // Only the bf16 patterns of arith-expand: its others would rewrite maximumf & co.
    {
      RewritePatternSet patterns(&getContext());
      arith::populateExpandBFloat16Patterns(patterns);
      if (failed(applyPatternsGreedily(inner, std::move(patterns)))) return failure();
    }
    if (failed(runPipeline(*toLLVM, inner))) return failure();
    if (streamed)
      if (auto lowered = inner.lookupSymbol<LLVM::LLVMFuncOp>(exe.getSymName())) codegen::FenceStreamingStores(lowered);
    return buildEntry(exe, inner, signature);
  }

  // i32 entry(const dispatch_state*, const workgroup_state*): memref argument i is
  // binding i; the trailing index is the workgroup id along x. Everything that varies per
  // call (dynamic dims of the memrefs in argument order, then scalars in order) comes from
  // one i64 word each of a parameter buffer bound after the memrefs, so a recorded command
  // buffer replays unchanged when they change (no push constants).
  LogicalResult buildEntry(ExecutableOp exe, ModuleOp inner, ArrayRef<Type> signature) {
    MLIRContext* ctx = &getContext();
    auto impl = inner.lookupSymbol<LLVM::LLVMFuncOp>(exe.getSymName());
    if (!impl) return exe.emitError("lowered kernel not found");
    // noalias bindings let LLVM vectorize without runtime overlap checks.
    int64_t memrefCount = codegen::PrepareLoweredKernel(impl, signature);
    bool reportsErrors = codegen::LowerKernelErrorCalls(inner, impl);

    OpBuilder b(ctx);
    b.setInsertionPointToEnd(inner.getBody());
    Location loc = exe.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Type i8 = b.getI8Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
    auto entry = LLVM::LLVMFuncOp::create(b, loc, exe.getSymName(),
                                          LLVM::LLVMFunctionType::get(i32, {ptr, ptr}));
    Block* block = entry.addEntryBlock(b);
    b.setInsertionPointToStart(block);
    Value dispatch = block->getArgument(0), workgroup = block->getArgument(1);
    auto constant = [&](Type t, int64_t v) -> Value {
      return LLVM::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
    };
    auto loadField = [&](Value base, Type type, int64_t offset) -> Value {
      Value addr = LLVM::GEPOp::create(b, loc, ptr, i8, base,
                                       ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
      return LLVM::LoadOp::create(b, loc, type, addr);
    };
    Value bindings = loadField(dispatch, ptr, offsetof(hexir_cpu_dispatch_state_t, binding_ptrs));
    Value params;  // loaded on first use: kernels without parameters have no such binding
    int64_t binding = 0, word = 0;
    auto param = [&]() -> Value {
      if (!params) params = loadField(bindings, ptr, 8 * memrefCount);
      return loadField(params, i64, 8 * word++);
    };
    // The trailing index argument (added by hexir-cpu-distribute-workgroups) is the id.
    bool hasId = !signature.empty() && signature.back().isIndex();
    // Dynamic costs over this entry's parameter words, for the driver (CPUWorkWords.h).
    codegen::AttachWorkWords(exe, hasId ? signature.drop_back() : signature, memrefCount);
    SmallVector<Value> args;
    if (failed(codegen::AppendKernelArguments(
            b, loc, exe, "cpu", hasId ? signature.drop_back() : signature,
            [&] { return loadField(bindings, ptr, 8 * binding++); }, param, args)))
      return failure();
    if (hasId) {
      Value id = loadField(workgroup, i32, offsetof(hexir_cpu_workgroup_state_t, workgroup_id));
      args.push_back(LLVM::ZExtOp::create(b, loc, i64, id));
    }
    if (!reportsErrors) {
      LLVM::CallOp::create(b, loc, impl, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{constant(i32, 0)});
      return success();
    }
    // A kernel with checks: a {code, a, b} record on the stack (SROA'd once the kernel is
    // inlined); a nonzero code is returned with its values copied to workgroup->error (only
    // then: a driver older than that field never sees a write through it).
    auto recordType = LLVM::LLVMArrayType::get(i64, 3);
    Value record = LLVM::AllocaOp::create(b, loc, ptr, recordType, constant(i64, 1));
    LLVM::StoreOp::create(b, loc, constant(i64, 0), record);
    args.push_back(record);
    LLVM::CallOp::create(b, loc, impl, args);
    Value code = LLVM::LoadOp::create(b, loc, i64, record);
    Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, code, constant(i64, 0));
    Block* ok = entry.addBlock();
    Block* fail = entry.addBlock();
    LLVM::CondBrOp::create(b, loc, failed, fail, ok);
    b.setInsertionPointToStart(ok);
    LLVM::ReturnOp::create(b, loc, ValueRange{constant(i32, 0)});
    b.setInsertionPointToStart(fail);
    Value error = loadField(workgroup, ptr, offsetof(hexir_cpu_workgroup_state_t, error));
    for (int64_t i = 1; i <= 2; ++i) {
      Value value = loadField(record, i64, 8 * i);
      Value at = LLVM::GEPOp::create(b, loc, ptr, i8, error,
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(
                                         offsetof(hexir_cpu_kernel_error_t, values) + 8 * (i - 1))});
      LLVM::StoreOp::create(b, loc, value, at);
    }
    LLVM::ReturnOp::create(b, loc, ValueRange{LLVM::TruncOp::create(b, loc, i32, code)});
    return success();
  }
};

}  // namespace
}  // namespace hexir
