#include "dialects/hexir/IR/HexirAttributes.h"
#include "passes/codegen/KernelLoweringUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hexir::codegen {
using namespace mlir;


func::FuncOp LookupKernel(ExecutableOp exe) {
  ModuleOp inner = exe.getInnerModule();
  auto kernel = inner ? inner.lookupSymbol<func::FuncOp>(exe.getSymName()) : nullptr;
  if (!kernel) exe.emitError("executable has no kernel named like it");
  return kernel;
}

void AddPipelineDialects(DialectRegistry& registry, std::initializer_list<const char*> pipelines) {
  for (const char* text : pipelines)
    if (FailureOr<OpPassManager> pm = parsePassPipeline(text); succeeded(pm))
      pm->getDependentDialects(registry);
}

FailureOr<scf::SCFTileAndFuseResult> TileRootAndFuseProducers(RewriterBase& rewriter,
                                                              TilingInterface root,
                                                              ArrayRef<OpFoldResult> tileSizes) {
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(tileSizes);
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn([](tensor::ExtractSliceOp, OpResult producer, bool)
                                 -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
    if (producer.getOwner()->hasAttr(kPackedRhsAttr)) return std::nullopt;
    return scf::SCFTileAndFuseOptions::ControlFnResult{};
  });
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, root, options);
  if (failed(tiled)) return failure();
  for (OpResult r : root->getResults()) rewriter.replaceAllUsesWith(r, tiled->replacements[r]);
  return tiled;
}

TilingInterface KernelRoot(func::FuncOp kernel) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  if (ret.getNumOperands() != 1) return nullptr;
  Operation* def = ret.getOperand(0).getDefiningOp();
  auto insert = dyn_cast_or_null<tensor::InsertSliceOp>(def);
  if (!insert || !isa<BlockArgument>(insert.getDest()))
    return dyn_cast_or_null<TilingInterface>(def);
  // Already expanded: insert_slice(copy(x, extract_slice(out)), out).
  if (auto copy = insert.getSource().getDefiningOp<linalg::CopyOp>())
    if (auto slot = copy.getOutputs()[0].getDefiningOp<tensor::ExtractSliceOp>();
        slot && slot.getSource() == insert.getDest())
      return cast<TilingInterface>(copy.getOperation());
  OpBuilder b(insert);
  Location loc = insert.getLoc();
  auto slot = tensor::ExtractSliceOp::create(b, loc, insert.getSourceType(), insert.getDest(),
                                             insert.getMixedOffsets(), insert.getMixedSizes(),
                                             insert.getMixedStrides());
  auto copy = linalg::CopyOp::create(b, loc, ValueRange{insert.getSource()},
                                     ValueRange{slot.getResult()});
  insert.getSourceMutable().assign(copy->getResult(0));
  return cast<TilingInterface>(copy.getOperation());
}

bool IsSlotWriteBack(Operation* op) {
  auto insert = dyn_cast<tensor::InsertSliceOp>(op);
  if (!insert || !insert->hasOneUse() || !isa<func::ReturnOp>(*insert->user_begin())) return false;
  auto out = dyn_cast<BlockArgument>(insert.getDest());
  if (!out || !isa<func::FuncOp>(out.getOwner()->getParentOp())) return false;
  // The tiled loops thread the slot through their iteration arguments: follow the
  // outermost loop's init back to the slot it starts from.
  auto loop = insert.getSource().getDefiningOp<scf::ForOp>();
  if (!loop) return false;
  unsigned i = cast<OpResult>(insert.getSource()).getResultNumber();
  auto slot = loop.getInitArgs()[i].getDefiningOp<tensor::ExtractSliceOp>();
  return slot && slot.getSource() == out &&
         isEqualConstantIntOrValueArray(slot.getMixedOffsets(), insert.getMixedOffsets()) &&
         isEqualConstantIntOrValueArray(slot.getMixedSizes(), insert.getMixedSizes()) &&
         isEqualConstantIntOrValueArray(slot.getMixedStrides(), insert.getMixedStrides());
}

void CleanUpTiledKernel(func::FuncOp kernel) {
  MLIRContext* ctx = kernel.getContext();
  RewritePatternSet patterns(ctx);
  tensor::populateFoldTensorEmptyPatterns(patterns);
  // A dynamic loop bound taken from the root's iteration domain is a tensor.dim of the
  // untiled producer chain (dim(matmul) -> dim(fill) -> dim(empty(%n)) -> %n). Unresolved, it
  // keeps the whole untiled chain alive: computed in full by every workgroup on the CPU, a
  // dynamic allocation the CUDA lowering rejects.
  tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
  memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
  (void)applyPatternsGreedily(kernel, std::move(patterns));
}

FailureOr<func::FuncOp> FinishBufferizedKernel(ExecutableOp exe) {
  ModuleOp inner = exe.getInnerModule();
  auto kernel = inner ? inner.lookupSymbol<func::FuncOp>(exe.getSymName()) : nullptr;
  if (!kernel) return exe.emitError("kernel disappeared during bufferization");
  // drop-equivalent-buffer-results leaves public functions alone, hence this.
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  // Kernel arguments are (tensor captures..., one output per result..., scalars...): result i
  // belongs in memref argument (#memrefs - #results + i).
  SmallVector<BlockArgument> memrefArgs;
  for (BlockArgument a : kernel.getArguments())
    if (isa<MemRefType>(a.getType())) memrefArgs.push_back(a);
  bool allArguments = true;
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    Value v = operand;
    while (auto cast = v.getDefiningOp<memref::CastOp>()) v = cast.getSource();
    int64_t out = int64_t(memrefArgs.size()) - int64_t(ret.getNumOperands()) + int64_t(i);
    // The result is a buffer the kernel allocated (its last op folded away, e.g. a mean
    // over a 1 x 1 plane whose divide by 1.0 canonicalized to the sum, so nothing wrote the
    // output): the output, which nothing else reads or writes, becomes that buffer.
    if (auto alloc = v.getDefiningOp<memref::AllocOp>();
        alloc && out >= 0 && alloc.getType() == memrefArgs[out].getType() && memrefArgs[out].use_empty()) {
      alloc.getResult().replaceAllUsesWith(memrefArgs[out]);
      alloc.erase();
      v = memrefArgs[out];
    }
    auto arg = dyn_cast<BlockArgument>(v);
    allArguments &= bool(arg);
    if (!arg || out < 0 || arg == memrefArgs[out]) continue;
    // The result folded to an input (e.g. x / 1.0 canonicalized to x): copy it into the
    // output, which nothing else writes.
    OpBuilder b(ret);
    linalg::CopyOp::create(b, ret.getLoc(), ValueRange{v}, ValueRange{memrefArgs[out]});
  }
  if (allArguments) {
    ret->setOperands({});
    kernel.setFunctionType(FunctionType::get(kernel.getContext(), kernel.getArgumentTypes(), {}));
  }
  if (kernel.getNumResults() != 0)
    return kernel.emitError("kernel results were not bufferized in place into outputs");
  for (Type t : kernel.getArgumentTypes()) {
    auto memref = dyn_cast<MemRefType>(t);
    if (memref && !memref.getLayout().isIdentity())
      return kernel.emitError("kernel argument ") << t << " is not an identity-layout memref";
  }
  return kernel;
}

LogicalResult MoveReductionsOutsideLastParallel(
    func::FuncOp kernel, function_ref<bool(linalg::LinalgOp, int64_t)> wanted) {
  SmallVector<linalg::LinalgOp> ops;
  kernel.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  IRRewriter rewriter(kernel.getContext());
  for (linalg::LinalgOp op : ops) {
    SmallVector<utils::IteratorType> it = op.getIteratorTypesArray();
    if (it.size() < 2 || it.back() != utils::IteratorType::reduction) continue;
    int64_t last = -1;
    for (int64_t i = it.size() - 1; i >= 0 && last < 0; --i)
      if (it[i] == utils::IteratorType::parallel) last = i;
    if (last < 0) continue;
    AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (out.getNumResults() == 0 || out.getResults().back() != rewriter.getAffineDimExpr(last))
      continue;
    if (!wanted(op, last)) continue;
    SmallVector<unsigned> order;
    for (int64_t i = 0; i < (int64_t)it.size(); ++i)
      if (it[i] == utils::IteratorType::parallel && i != last) order.push_back(i);
    for (int64_t i = 0; i < (int64_t)it.size(); ++i)
      if (it[i] == utils::IteratorType::reduction) order.push_back(i);
    order.push_back(last);
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

int64_t PrepareLoweredKernel(LLVM::LLVMFuncOp impl, ArrayRef<Type> signature, bool* hasParams) {
  MLIRContext* ctx = impl.getContext();
  impl.setSymName((impl.getSymName() + "_impl").str());
  impl.setLinkage(LLVM::Linkage::Internal);
  int64_t memrefCount = 0;
  bool params = false;
  // A memref argument expands to (allocated, aligned, offset, sizes..., strides...).
  for (unsigned arg = 0, i = 0; i < signature.size(); ++i) {
    if (auto memref = dyn_cast<MemRefType>(signature[i])) {
      impl.setArgAttr(arg + 1, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));
      arg += 3 + 2 * memref.getRank();
      ++memrefCount;
      params |= !memref.hasStaticShape();
    } else {
      arg += 1;
      params = true;
    }
  }
  if (hasParams) *hasParams = params;
  return memrefCount;
}

LogicalResult AppendKernelArguments(OpBuilder& b, Location loc, ExecutableOp exe,
                                    StringRef target, ArrayRef<Type> signature,
                                    function_ref<Value()> binding, function_ref<Value()> param,
                                    SmallVectorImpl<Value>& args) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto constant = [&](int64_t v) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  };
  for (Type type : signature) {
    if (auto memref = dyn_cast<MemRefType>(type)) {
      Value data = binding();
      args.append({data, data, constant(0)});
      SmallVector<Value> sizes;
      for (int64_t d : memref.getShape())
        sizes.push_back(ShapedType::isDynamic(d) ? param() : constant(d));
      args.append(sizes);
      Value stride = constant(1);
      SmallVector<Value> strides;
      for (Value size : llvm::reverse(sizes)) {
        strides.push_back(stride);
        stride = LLVM::MulOp::create(b, loc, stride, size);
      }
      args.append(strides.rbegin(), strides.rend());
    } else if (type.isF32()) {  // its bits in the low 32 of the word
      Value low = LLVM::TruncOp::create(b, loc, i32, param());
      args.push_back(LLVM::BitcastOp::create(b, loc, b.getF32Type(), low));
    } else if (type.isInteger(64) || type.isIndex()) {
      args.push_back(param());
    } else if (type.isInteger(32) || type.isInteger(16) || type.isInteger(8) ||
               type.isInteger(1)) {
      args.push_back(LLVM::TruncOp::create(b, loc, type, param()));
    } else {
      return exe.emitError("unsupported kernel argument type ")
             << type << " for target '" << target << "'";
    }
  }
  return success();
}

llvm::SmallVector<mlir::Value> IndicesAt(mlir::OpBuilder& b, mlir::Location loc,
                                         mlir::AffineMap map, mlir::ValueRange dims) {
  llvm::SmallVector<mlir::Value> indices;
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    indices.push_back(mlir::affine::AffineApplyOp::create(b, loc, map.getSubMap({r}), dims));
  return indices;
}

mlir::FailureOr<mlir::linalg::LinalgOp> TileInnermostLoop(mlir::RewriterBase& rewriter,
                                                         mlir::linalg::LinalgOp op,
                                                         int64_t innermost) {
  llvm::SmallVector<int64_t> sizes(op.getNumLoops(), 1);
  sizes.back() = innermost;
  mlir::linalg::LinalgTilingOptions options;
  options.setTileSizes(sizes);
  rewriter.setInsertionPoint(op);
  mlir::FailureOr<mlir::linalg::TiledLinalgOp> tiled =
      mlir::linalg::tileLinalgOp(rewriter, op, options);
  if (mlir::failed(tiled)) return mlir::failure();
  rewriter.eraseOp(op);
  return tiled->op;
}

}  // namespace hexir::codegen
