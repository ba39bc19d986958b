// Lowers each executable's kernel module from tensors to the LLVM dialect and adds the
// CPU dispatch ABI entry (hal/drivers/cpu/dispatch_abi.h) that unpacks bindings, push
// constants and the workgroup id into the kernel's arguments.
#include <cstddef>

#include "dialects/hexir/IR/HexirOps.h"
#include "hal/drivers/cpu/dispatch_abi.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_CPULOWEREXECUTABLES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

constexpr const char* kBufferizePipeline =
    "builtin.module(canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,cse)";
constexpr const char* kLLVMPipeline =
    "builtin.module(buffer-deallocation-pipeline,convert-linalg-to-loops,lower-affine,"
    "convert-scf-to-cf,expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
    "convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,convert-func-to-llvm,"
    "convert-cf-to-llvm,convert-arith-to-llvm,reconcile-unrealized-casts,canonicalize)";

class CPULowerExecutables : public impl::CPULowerExecutablesBase<CPULowerExecutables> {
 public:
  void getDependentDialects(DialectRegistry& registry) const override {
    CPULowerExecutablesBase::getDependentDialects(registry);
    for (const char* text : {kBufferizePipeline, kLLVMPipeline})
      if (FailureOr<OpPassManager> pm = parsePassPipeline(text); succeeded(pm))
        pm->getDependentDialects(registry);
  }

  void runOnOperation() override {
    for (auto exe : getOperation().getOps<ExecutableOp>())
      if (failed(lower(exe))) return signalPassFailure();
  }

 private:
  // Results that are (casts of) arguments carry nothing: the caller owns those buffers.
  // (drop-equivalent-buffer-results leaves public functions alone.)
  static void dropArgumentResults(func::FuncOp kernel) {
    auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
    for (Value v : ret.getOperands()) {
      while (auto cast = v.getDefiningOp<memref::CastOp>()) v = cast.getSource();
      if (!isa<BlockArgument>(v)) return;
    }
    ret->setOperands({});
    kernel.setFunctionType(FunctionType::get(kernel.getContext(), kernel.getArgumentTypes(), {}));
  }

  // Loops become scalar loop nests in iterator order; a reduction innermost (matmul's k)
  // keeps LLVM from vectorizing without reassociation. Reorder to
  // (parallel..., reductions..., last parallel) so the innermost loop walks the output's
  // contiguous dimension and LLVM's loop vectorizer can use it.
  static LogicalResult interchangeReductions(func::FuncOp kernel) {
    SmallVector<linalg::LinalgOp> ops;
    kernel.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    IRRewriter rewriter(kernel.getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      if (iterators.size() < 2 || iterators.back() != utils::IteratorType::reduction) continue;
      int64_t lastParallel = -1;
      for (int64_t i = iterators.size() - 1; i >= 0 && lastParallel < 0; --i)
        if (iterators[i] == utils::IteratorType::parallel) lastParallel = i;
      if (lastParallel < 0) continue;
      // Only worth it when that loop is the output's contiguous (last) dimension.
      AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
      if (outMap.getNumResults() == 0 ||
          outMap.getResults().back() != rewriter.getAffineDimExpr(lastParallel))
        continue;
      SmallVector<unsigned> order;
      for (int64_t i = 0; i < (int64_t)iterators.size(); ++i)
        if (iterators[i] == utils::IteratorType::parallel && i != lastParallel) order.push_back(i);
      for (int64_t i = 0; i < (int64_t)iterators.size(); ++i)
        if (iterators[i] == utils::IteratorType::reduction) order.push_back(i);
      order.push_back(lastParallel);
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
        if (failed(g)) continue;
        generic = *g;
      }
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
        return generic.emitError("loop interchange failed");
    }
    return success();
  }

  LogicalResult lower(ExecutableOp exe) {
    ModuleOp inner = exe.getInnerModule();
    if (!inner) return exe.emitError("executable has no module");
    FailureOr<OpPassManager> bufferize = parsePassPipeline(kBufferizePipeline);
    FailureOr<OpPassManager> toLLVM = parsePassPipeline(kLLVMPipeline);
    if (failed(bufferize) || failed(toLLVM)) return exe.emitError("bad internal pipeline");
    if (failed(runPipeline(*bufferize, inner))) return failure();

    auto kernel = inner.lookupSymbol<func::FuncOp>(exe.getSymName());
    if (!kernel) return exe.emitError("kernel disappeared during bufferization");
    dropArgumentResults(kernel);
    if (kernel.getNumResults() != 0)
      return kernel.emitError("kernel results were not bufferized in place into outputs");
    SmallVector<Type> signature(kernel.getArgumentTypes());
    for (Type t : signature) {
      auto memref = dyn_cast<MemRefType>(t);
      if (memref && !memref.getLayout().isIdentity())
        return kernel.emitError("kernel argument ") << t << " is not an identity-layout memref";
    }
    if (failed(interchangeReductions(kernel))) return failure();
    if (failed(runPipeline(*toLLVM, inner))) return failure();
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
    std::string implName = (exe.getSymName() + "_impl").str();
    impl.setSymName(implName);
    impl.setLinkage(LLVM::Linkage::Internal);
    // Bindings never overlap a buffer the kernel writes (outputs are fresh allocations),
    // so the aligned pointer of each memref is noalias: it lets LLVM vectorize without
    // runtime overlap checks.
    int64_t memrefCount = 0;
    for (unsigned arg = 0, i = 0; i < signature.size(); ++i) {
      if (auto memref = dyn_cast<MemRefType>(signature[i])) {
        impl.setArgAttr(arg + 1, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));
        arg += 3 + 2 * memref.getRank();
        ++memrefCount;
      } else {
        arg += 1;
      }
    }

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
    SmallVector<Value> args;
    for (auto [index, type] : llvm::enumerate(signature)) {
      if (auto memref = dyn_cast<MemRefType>(type)) {
        Value data = loadField(bindings, ptr, 8 * binding++);
        args.append({data, data, constant(i64, 0)});
        SmallVector<Value> sizes;
        for (int64_t d : memref.getShape())
          sizes.push_back(ShapedType::isDynamic(d) ? param() : constant(i64, d));
        args.append(sizes);
        Value stride = constant(i64, 1);
        SmallVector<Value> strides;
        for (Value size : llvm::reverse(sizes)) {
          strides.push_back(stride);
          stride = LLVM::MulOp::create(b, loc, stride, size);
        }
        args.append(strides.rbegin(), strides.rend());
      } else if (index + 1 == signature.size() && type.isIndex()) {
        Value id = loadField(workgroup, i32, offsetof(hexir_cpu_workgroup_state_t, workgroup_id));
        args.push_back(LLVM::ZExtOp::create(b, loc, i64, id));
      } else if (type.isF32()) {
        Value low = LLVM::TruncOp::create(b, loc, i32, param());
        args.push_back(LLVM::BitcastOp::create(b, loc, b.getF32Type(), low));
      } else if (type.isInteger(64) || type.isIndex()) {
        args.push_back(param());
      } else if (type.isInteger(32) || type.isInteger(16) || type.isInteger(8) ||
                 type.isInteger(1)) {
        args.push_back(LLVM::TruncOp::create(b, loc, type, param()));
      } else {
        return exe.emitError("unsupported kernel argument type ") << type << " for target 'cpu'";
      }
    }
    LLVM::CallOp::create(b, loc, impl, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{constant(i32, 0)});
    return success();
  }
};

}  // namespace
}  // namespace hexir
