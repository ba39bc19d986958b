// Finds and absorbs a convolution's bias fill and ReLU (CPUConvolutionEpilogue.h).
#include "passes/codegen/CPUConvolutionEpilogue.h"

#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

bool AllParallel(linalg::LinalgOp op, unsigned loops) {
  return op.getNumLoops() == loops && op.getNumParallelLoops() == loops;
}

// The nearest op before (`forward` false) or after `from` in its block that has memory
// effects (view ops and arithmetic in between are skipped), or null.
Operation* NextEffectful(Operation* from, bool forward) {
  for (Operation* op = forward ? from->getNextNode() : from->getPrevNode(); op;
       op = forward ? op->getNextNode() : op->getPrevNode())
    if (!isMemoryEffectFree(op)) return op;
  return nullptr;
}

// `v` as a view of a 4-D buffer: the buffer itself, or the source of a collapse_shape that
// keeps dims 0 and 1 (hexir-cpu-lower-executables collapses an elementwise op's plane into
// one loop, CPUCollapseContiguousLoops.h); null otherwise. `groups`: the reassociation.
Value Uncollapsed(Value v, SmallVector<ReassociationIndices>* groups = nullptr) {
  auto collapse = v.getDefiningOp<memref::CollapseShapeOp>();
  if (!collapse) return v;
  SmallVector<ReassociationIndices> r = collapse.getReassociationIndices();
  if (r.size() < 2 || r[0] != ReassociationIndices{0} || r[1] != ReassociationIndices{1}) return Value();
  if (groups) *groups = r;
  return collapse.getSrc();
}

// `op` writes all of `out` with a value per filter: linalg.fill of a scalar, or a generic
// yielding its one input, a 1-D f32 memref of unit stride read at dim 1 of out's four (or
// of out's collapsed view).
bool MatchInit(Operation* op, Value out, ConvolutionEpilogue& e) {
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(op)) {
    if (!fill.hasPureBufferSemantics() || fill.getOutputs()[0] != out ||
        !fill.getInputs()[0].getType().isF32())
      return false;
    e.fill = fill.getInputs()[0];
    return true;
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureBufferSemantics() || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || Uncollapsed(generic.getDpsInits()[0]) != out)
    return false;
  const unsigned loops = cast<MemRefType>(generic.getDpsInits()[0].getType()).getRank();
  Value bias = generic.getDpsInputs()[0];
  auto biasType = dyn_cast<MemRefType>(bias.getType());
  MLIRContext* ctx = op->getContext();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  SmallVector<int64_t> strides;
  int64_t offset;
  // Unit stride (a workgroup's slice of the bias: a subview at a run-time offset).
  if (!AllParallel(generic, loops) || !biasType || biasType.getRank() != 1 ||
      !biasType.getElementType().isF32() || failed(biasType.getStridesAndOffset(strides, offset)) ||
      strides[0] != 1 ||
      maps[0] != AffineMap::get(loops, 0, {getAffineDimExpr(1, ctx)}, ctx) || !maps[1].isIdentity())
    return false;
  Block& body = generic->getRegion(0).front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (body.getOperations().size() != 1 || yield.getValues()[0] != body.getArgument(0)) return false;
  e.bias = bias;
  return true;
}

// `op` is out's ReLU: a generic reading out (identity) into another buffer of its shape
// (identity; both maybe collapsed alike), yielding arith.maximumf of its input and +0.0.
// Returns that buffer (uncollapsed).
Value MatchRelu(Operation* op, Value out) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureBufferSemantics() || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1)
    return Value();
  SmallVector<ReassociationIndices> inGroups, resultGroups;
  Value in = generic.getDpsInputs()[0], init = generic.getDpsInits()[0];
  Value result = Uncollapsed(init, &resultGroups);
  auto inType = cast<MemRefType>(in.getType()), initType = dyn_cast<MemRefType>(init.getType());
  if (Uncollapsed(in, &inGroups) != out || !result || inGroups != resultGroups || !initType ||
      initType.getShape() != inType.getShape() || !initType.getElementType().isF32() ||
      !AllParallel(generic, inType.getRank()) ||
      cast<MemRefType>(result.getType()).getShape() != cast<MemRefType>(out.getType()).getShape())
    return Value();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[0].isIdentity() || !maps[1].isIdentity()) return Value();
  Block& body = generic->getRegion(0).front();
  if (body.getOperations().size() != 2) return Value();
  auto max = dyn_cast<arith::MaximumFOp>(body.front());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!max || yield.getValues()[0] != max.getResult()) return Value();
  Value arg = body.getArgument(0);
  Value other = max.getLhs() == arg ? max.getRhs() : max.getRhs() == arg ? max.getLhs() : Value();
  if (!other || !matchPattern(other, m_PosZeroFloat())) return Value();
  return result;
}

// The buffer `v` is a view of (through view-like ops).
Value Root(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>()) v = view.getViewSource();
  return v;
}

// Moves the effect-free ops defining `v` that lie after `before` in its block to just
// before it (the ReLU's output view, made between the convolution and the ReLU); false
// when one of them has effects.
bool HoistAbove(Value v, Operation* before) {
  Operation* def = v.getDefiningOp();
  if (!def || def->getBlock() != before->getBlock() || def->isBeforeInBlock(before)) return true;
  if (!isMemoryEffectFree(def)) return false;
  for (Value operand : def->getOperands())
    if (!HoistAbove(operand, before)) return false;
  def->moveBefore(before);
  return true;
}

}  // namespace

std::optional<EpilogueOps> FindConvolutionEpilogue(linalg::LinalgOp conv, ArrayRef<Operation*> instead) {
  ConvolutionEpilogue e;
  Value out = conv.getDpsInits()[0];
  EpilogueOps found;
  found.init = NextEffectful(conv, /*forward=*/false);
  if (!MatchInit(found.init, out, e)) return std::nullopt;
  // The ReLU, when out is a temporary that only the fill, the convolution and it use (and the
  // ops that run `instead` of them).
  Operation* relu = NextEffectful(conv, /*forward=*/true);
  Value result = MatchRelu(relu, out);
  auto ours = [&](Operation* user) {
    return user == found.init || user == conv || user == relu || llvm::is_contained(instead, user);
  };
  // Users of out other than these (through its collapsed views), its dealloc and ops reading
  // only its shape (a run-time test of its plane, CPUConvolutionKernel.cpp).
  auto onlyOurs = [&](Operation* user) {
    if (ours(user) || isa<memref::DeallocOp, memref::DimOp, memref::ExtractStridedMetadataOp>(user)) return true;
    return isa<memref::CollapseShapeOp>(user) && llvm::all_of(user->getUsers(), ours);
  };
  if (result && result != out) {
    Operation* alloc = out.getDefiningOp();
    bool temporary = alloc && isa<memref::AllocOp, memref::AllocaOp>(alloc) && llvm::all_of(out.getUsers(), onlyOurs);
    Value resultRoot = Root(result);
    bool separate = resultRoot != Root(conv.getDpsInputs()[0]) && resultRoot != Root(conv.getDpsInputs()[1]);
    if (!temporary || !separate) result = Value();
  }
  if (result) {
    found.relu = relu;
    found.result = result;
  }
  return found;
}

ConvolutionEpilogue AbsorbConvolutionEpilogue(linalg::LinalgOp conv, bool (*outContiguous)(Type),
                                              ArrayRef<Operation*> instead) {
  ConvolutionEpilogue e;
  Value out = conv.getDpsInits()[0];
  std::optional<EpilogueOps> found = FindConvolutionEpilogue(conv, instead);
  if (!found) return ConvolutionEpilogue();
  MatchInit(found->init, out, e);
  Operation *init = found->init, *relu = found->relu;
  Value result = found->result;
  if (result && (!outContiguous(result.getType()) || !HoistAbove(result, conv))) result = Value();
  if (!outContiguous((result ? result : out).getType())) return ConvolutionEpilogue();
  llvm::SetVector<Operation*> views;  // collapsed views of out and of the ReLU's output
  for (Operation* op : {init, result ? relu : nullptr})
    if (op)
      for (Value operand : op->getOperands())
        if (auto collapse = operand.getDefiningOp<memref::CollapseShapeOp>()) views.insert(collapse);
  if (result) {
    e.relu = true;
    conv.getDpsInitsMutable()[0].set(result);
    relu->erase();
  }
  init->erase();
  // Unused views of out would keep its allocation alive.
  for (Operation* view : views)
    if (view->use_empty()) view->erase();
  return e;
}

}  // namespace hexir::codegen
