// Outlines each hexir.dispatch_region into a hexir.executable holding the kernel
// func.func, and replaces the region by a hexir.dispatch. Kernel signature:
//   (tensor captures..., one output tensor per result..., scalar captures...) -> results
// and every result is computed in place in its output argument, so that bufferization
// turns the kernel into one that writes its output buffers.
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/Passes.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir {
#define GEN_PASS_DEF_OUTLINEDISPATCHREGIONS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Makes `result` be computed in `out`: an empty init becomes `out`, a fill of an empty
// fills `out`, any other init is first copied into `out`.
void writeInto(OpBuilder& b, func::ReturnOp ret, unsigned index, Value out) {
  Value result = ret.getOperand(index);
  auto dps = dyn_cast_or_null<DestinationStyleOpInterface>(result.getDefiningOp());
  if (!dps) {
    b.setInsertionPoint(ret);
    auto copy = linalg::CopyOp::create(b, ret.getLoc(), ValueRange{result}, ValueRange{out});
    ret.setOperand(index, copy->getResult(0));
    return;
  }
  OpOperand* init = dps.getTiedOpOperand(cast<OpResult>(result));
  Operation* initDef = init->get().getDefiningOp();
  if (isa_and_nonnull<tensor::EmptyOp>(initDef) && init->get().hasOneUse()) {
    init->set(out);
    initDef->erase();
    return;
  }
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(initDef);
      fill && init->get().hasOneUse() && fill.getOutputs()[0].hasOneUse() &&
      isa_and_nonnull<tensor::EmptyOp>(fill.getOutputs()[0].getDefiningOp())) {
    Operation* empty = fill.getOutputs()[0].getDefiningOp();
    fill.getDpsInitsMutable()[0].set(out);
    empty->erase();
    return;
  }
  b.setInsertionPoint(dps);
  auto copy = linalg::CopyOp::create(b, dps.getLoc(), ValueRange{init->get()}, ValueRange{out});
  init->set(copy->getResult(0));
}

// Replaces identity copies (a generic whose body yields its one input unchanged, identity
// maps, same type; e.g. ONNX Identity fused after a broadcast) by their input *before*
// writeInto: the canonicalizer erases them later anyway, which would leave the result
// computed in the producer's temporary instead of the output argument (not in place).
void foldIdentityGenerics(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> identities;
  kernel.walk([&](linalg::GenericOp g) {
    if (!g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
        g->getNumResults() != 1 || g.getNumReductionLoops() != 0)
      return;
    for (AffineMap map : g.getIndexingMapsArray())
      if (!map.isIdentity()) return;
    auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
    if (yield.getNumOperands() != 1 || yield.getOperand(0) != g.getBody()->getArgument(0)) return;
    Value input = g.getDpsInputOperand(0)->get();
    if (input.getType() != g->getResult(0).getType()) return;
    identities.push_back(g);
  });
  for (linalg::GenericOp g : identities) {
    g->getResult(0).replaceAllUsesWith(g.getDpsInputOperand(0)->get());
    g->erase();
  }
}

// The host value of dimension `dim` of `tensor` (a value inside `region`), created before
// the region: a capture's dim is a tensor.dim on the host; an empty's size is its operand
// (which must come from above); a destination-style result has its init's shape.
FailureOr<Value> hostDim(OpBuilder& hostBuilder, DispatchRegionOp region, Value tensor,
                         int64_t dim) {
  auto inside = [&](Value v) { return region.getBody().isAncestor(v.getParentRegion()); };
  if (!inside(tensor)) {
    return tensor::DimOp::create(hostBuilder, region.getLoc(), tensor, dim).getResult();
  }
  Operation* def = tensor.getDefiningOp();
  if (auto empty = dyn_cast_or_null<tensor::EmptyOp>(def)) {
    Value size = empty.getDynamicSize(dim);
    if (!inside(size)) return size;
    if (auto c = size.getDefiningOp<arith::ConstantOp>())
      return hostBuilder.clone(*c)->getResult(0);
    return failure();
  }
  if (auto dps = dyn_cast_or_null<DestinationStyleOpInterface>(def))
    return hostDim(hostBuilder, region, dps.getTiedOpOperand(cast<OpResult>(tensor))->get(), dim);
  return failure();
}

class OutlineDispatchRegions
    : public impl::OutlineDispatchRegionsBase<OutlineDispatchRegions> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      SmallVector<DispatchRegionOp> regions;
      func.walk([&](DispatchRegionOp r) { regions.push_back(r); });
      int counter = 0;
      for (DispatchRegionOp region : regions) {
        std::string name = (func.getName() + "_dispatch_" + llvm::Twine(counter++)).str();
        if (failed(outline(symbols, func, region, name))) return signalPassFailure();
      }
    }
  }

 private:
  LogicalResult outline(SymbolTable& symbols, func::FuncOp func, DispatchRegionOp region,
                        StringRef name) {
    // Dynamic result sizes, computed on the host before the dispatch.
    SmallVector<Value> resultDims;
    {
      OpBuilder host(region);
      auto yield = cast<YieldOp>(region.getBody().front().getTerminator());
      for (auto [i, v] : llvm::enumerate(yield.getValues())) {
        auto shaped = dyn_cast<RankedTensorType>(v.getType());
        if (!shaped) continue;
        for (int64_t d = 0; d < shaped.getRank(); ++d) {
          if (!shaped.isDynamicDim(d)) continue;
          FailureOr<Value> size = hostDim(host, region, v, d);
          if (failed(size))
            return region.emitError() << "cannot compute dynamic dimension " << d
                                      << " of dispatch result " << i << " for target 'cpu'";
          resultDims.push_back(*size);
        }
      }
    }
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(region.getBody(), captured);
    SmallVector<Value> tensors, scalars;
    for (Value v : captured) (isa<RankedTensorType>(v.getType()) ? tensors : scalars).push_back(v);

    SmallVector<Type> argTypes;
    for (Value v : tensors) argTypes.push_back(v.getType());
    for (Type t : region.getResultTypes()) argTypes.push_back(t);
    for (Value v : scalars) argTypes.push_back(v.getType());

    OpBuilder b(func);
    Location loc = region.getLoc();
    auto exe = ExecutableOp::create(b, loc, name);
    // A dispatch group's kind (kDispatchGroupAttr, FormDispatchRegions.cpp) tells codegen what
    // the kernel computes.
    if (Attribute group = region->getAttr(kDispatchGroupAttr)) exe->setAttr(kDispatchGroupAttr, group);
    exe.getBody().push_back(new Block());
    b.setInsertionPointToStart(&exe.getBody().front());
    auto inner = ModuleOp::create(b, loc);
    b.setInsertionPointToStart(inner.getBody());
    auto kernel = func::FuncOp::create(
        b, loc, name, b.getFunctionType(argTypes, region.getResultTypes()));
    Block* entry = kernel.addEntryBlock();

    IRMapping map;
    unsigned numTensors = tensors.size(), numResults = region.getNumResults();
    for (auto [i, v] : llvm::enumerate(tensors)) map.map(v, entry->getArgument(i));
    for (auto [i, v] : llvm::enumerate(scalars))
      map.map(v, entry->getArgument(numTensors + numResults + i));
    b.setInsertionPointToStart(entry);
    for (Operation& op : region.getBody().front()) {
      if (auto yield = dyn_cast<YieldOp>(op)) {
        SmallVector<Value> values;
        for (Value v : yield.getValues()) values.push_back(map.lookupOrDefault(v));
        func::ReturnOp::create(b, yield.getLoc(), values);
      } else {
        b.clone(op, map);
      }
    }
    foldIdentityGenerics(kernel);
    auto ret = cast<func::ReturnOp>(entry->getTerminator());
    // In-place updates (passes/dispatch/InPlaceUpdates.h): the result is the destination
    // capture's buffer, so the kernel updates its output argument, which the host binds to
    // that same buffer. Ops before the update that read the capture (a group's member
    // reading the state another member then updates) read that same buffer before the
    // update: through the output argument too, so the kernel's codegen sees one buffer read,
    // then written. The capture goes unused in the kernel but by ops after the update, and
    // by the one exception below.
    // Exception: an insert_slice overwriting the whole capture with an elementwise generic
    // that reads the capture at the index it writes (x = x * 0.5 + 1 in a loop): each point
    // reads its element before writing it, and bufferization can compute the generic straight
    // into the output only while its input is another argument.
    auto sameIndexSource = [&](Operation* update, OpOperand& use) {
      auto insert = dyn_cast<tensor::InsertSliceOp>(update);
      auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!insert || !g || g->getNumResults() != 1 || insert.getSource() != g->getResult(0) ||
          insert.getSourceType() != insert.getDestType() || !insert.getSourceType().hasStaticShape() ||
          !insert.hasUnitStride() || !g.isDpsInput(&use) ||
          g.getNumReductionLoops() != 0 || !g.getMatchingIndexingMap(&use).isIdentity() ||
          !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity())
        return false;
      return llvm::all_of(insert.getMixedOffsets(), [](OpFoldResult o) { return isConstantIntValue(o, 0); });
    };
    auto updateInOutput = [&](Operation* update, BlockArgument capture, Value output) {
      capture.replaceUsesWithIf(output, [&](OpOperand& use) {
        Operation* top = entry->findAncestorOpInBlock(*use.getOwner());
        return top && (top == update || (top->isBeforeInBlock(update) && !sameIndexSource(update, use)));
      });
    };
    SmallVector<int64_t> tied(numResults, -1);
    for (unsigned i = 0; i < numResults; ++i) {
      Value output = entry->getArgument(numTensors + i);
      // A generic updating its init in place (CanUpdateInitInPlace): computed in the output
      // argument, which the host binds to the init capture's buffer.
      if (auto g = ret.getOperand(i).getDefiningOp<linalg::GenericOp>(); g && g->hasAttr(kInPlaceAttr)) {
        auto init = dyn_cast<BlockArgument>(g.getDpsInitOperand(0)->get());
        if (init && init.getOwner() == entry && init.getArgNumber() < numTensors) {
          tied[i] = init.getArgNumber();
          updateInOutput(g, init, output);
          g->removeAttr(kInPlaceAttr);
          continue;
        }
      }
      auto insert = ret.getOperand(i).getDefiningOp<tensor::InsertSliceOp>();
      if (insert && insert->hasAttr(kInPlaceAttr)) {
        auto dest = dyn_cast<BlockArgument>(insert.getDest());
        if (dest && dest.getOwner() == entry && dest.getArgNumber() < numTensors) {
          tied[i] = dest.getArgNumber();
          updateInOutput(insert, dest, output);
          continue;
        }
      }
      writeInto(b, ret, i, entry->getArgument(numTensors + i));
    }
    symbols.insert(exe);  // renames on collision
    kernel.setSymName(exe.getSymName());

    SmallVector<Value> operands(tensors.begin(), tensors.end());
    operands.append(scalars.begin(), scalars.end());
    b.setInsertionPoint(region);
    auto dispatch = DispatchOp::create(b, loc, region.getResultTypes(),
                                       FlatSymbolRefAttr::get(exe.getSymNameAttr()), operands,
                                       resultDims);
    if (llvm::any_of(tied, [](int64_t t) { return t >= 0; }))
      dispatch->setAttr(kTiedOperandsAttr, b.getDenseI64ArrayAttr(tied));
    if (Attribute device = region->getAttr(kDeviceAttr)) dispatch->setAttr(kDeviceAttr, device);
    region->replaceAllUsesWith(dispatch.getResults());
    region->erase();
    return success();
  }
};

}  // namespace
}  // namespace hexir
