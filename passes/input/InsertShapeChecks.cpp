// Materializes, as `hexir.check` ops in host code, every equality between dims that the
// program assumes but the compiler cannot prove (one side dynamic), and that every dynamic
// allocation size fits in 64 bits. Kernels trust their operands' sizes (a linalg.add reads
// operand 1 with operand 0's extent), so a broken assumption would read or write past a
// buffer; checked on the host before the dispatch, it is one `assert` instruction instead.
//
// Before:
//   %r = linalg.add ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>)
// After:
//   %d0 = tensor.dim %a, %c0
//   %d1 = tensor.dim %b, %c0
//   %eq = arith.cmpi eq, %d1, %d0 : index
//   hexir.check %eq, "linalg.add: dimension 0 of operand 1 is {}, expected {} (dimension 0
//                     of operand 0)"(%d1, %d0) : index, index
//   ... (the same for the init %e, unless its size is %d0 itself)
//   %r = linalg.add ...
//
// Dims are resolved through destination-style producers (a linalg result has its init's
// dims) and tensor.empty sizes, so checks add no uses of linalg results (fusion is
// unchanged) and equal sizes are recognised as the same SSA value (no check at all).
// Indexing expressions other than bare dims (windows, shifts, reversals, floordiv, mod,
// constants) are checked over the loop box, and the byte sizes of dynamic tensor.empty and
// tensor.pad results must fit in 63 bits.
#include "dialects/hexir/IR/HexirOps.h"
#include "hal/element_type.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_INSERTSHAPECHECKS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

// Dimension `dim` of host tensor `v` as an `index` at the builder's insertion point,
// through DPS producers, casts and tensor.empty, reusing a dominating `tensor.dim` of the
// same dim (so that two reads of one size compare as the same value).
Value dimOf(OpBuilder& b, Location loc, DominanceInfo& dom, Value v, int64_t dim) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.isDynamicDim(dim)) return arith::ConstantIndexOp::create(b, loc, t.getDimSize(dim));
  if (auto empty = v.getDefiningOp<tensor::EmptyOp>()) return empty.getDynamicSize(dim);
  if (auto cast = v.getDefiningOp<tensor::CastOp>())
    if (cast.getSource().getType().isDynamicDim(dim))
      return dimOf(b, loc, dom, cast.getSource(), dim);
  if (auto dps = v.getDefiningOp<DestinationStyleOpInterface>())
    if (dps.hasPureTensorSemantics())
      return dimOf(b, loc, dom, dps.getTiedOpOperand(cast<OpResult>(v))->get(), dim);
  Operation* at = &*b.getInsertionPoint();
  for (Operation* user : v.getUsers())
    if (auto d = dyn_cast<tensor::DimOp>(user))
      if (d.getConstantIndex() == dim && d.getSource() == v && dom.properlyDominates(d.getOperation(), at))
        return d;
  return tensor::DimOp::create(b, loc, v, dim);
}

bool isConstant(Value v) { return matchPattern(v, m_Constant()); }

// hexir.check (actual == expected) naming both; nothing when both are the same value or
// both constants (the op's verifier already compared static sizes).
void checkEqual(OpBuilder& b, Location loc, Value actual, Value expected, const Twine& what) {
  if (actual == expected || (isConstant(actual) && isConstant(expected))) return;
  Value eq = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, actual, expected);
  CheckOp::create(b, loc, eq, b.getStringAttr(what), ValueRange{actual, expected});
}

// The smallest and largest value of `e` over the loop box [0, extents[d]) (as index values
// at the builder's point), or failure when `e` uses a loop dim of unknown extent, a symbol,
// or a division by a non-positive or non-constant amount. A range the box gives per term:
// d in [0, E - 1]; x * k flips for k < 0; floordiv/ceildiv by k > 0 are monotone; x mod k
// is x itself when x lies in [0, k), else anywhere in [0, k).
struct IndexRange {
  Value lo, hi;
};
FailureOr<IndexRange> rangeOf(OpBuilder& b, Location loc, AffineExpr e, ArrayRef<Value> extents) {
  auto constant = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  if (auto c = dyn_cast<AffineConstantExpr>(e)) return IndexRange{constant(c.getValue()), constant(c.getValue())};
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    if (!extents[d.getPosition()]) return failure();
    return IndexRange{constant(0), b.createOrFold<arith::SubIOp>(loc, extents[d.getPosition()], constant(1))};
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin) return failure();
  FailureOr<IndexRange> lhs = rangeOf(b, loc, bin.getLHS(), extents);
  if (failed(lhs)) return failure();
  if (bin.getKind() == AffineExprKind::Add) {
    FailureOr<IndexRange> rhs = rangeOf(b, loc, bin.getRHS(), extents);
    if (failed(rhs)) return failure();
    return IndexRange{b.createOrFold<arith::AddIOp>(loc, lhs->lo, rhs->lo),
                      b.createOrFold<arith::AddIOp>(loc, lhs->hi, rhs->hi)};
  }
  auto k = dyn_cast<AffineConstantExpr>(bin.getRHS());  // affine maps keep constants on the right
  if (!k) return failure();
  int64_t kv = k.getValue();
  Value kc = constant(kv);
  switch (bin.getKind()) {
    case AffineExprKind::Mul: {
      Value a = b.createOrFold<arith::MulIOp>(loc, lhs->lo, kc);
      Value z = b.createOrFold<arith::MulIOp>(loc, lhs->hi, kc);
      return kv >= 0 ? IndexRange{a, z} : IndexRange{z, a};
    }
    case AffineExprKind::FloorDiv:
      if (kv <= 0) return failure();
      return IndexRange{b.createOrFold<arith::FloorDivSIOp>(loc, lhs->lo, kc),
                        b.createOrFold<arith::FloorDivSIOp>(loc, lhs->hi, kc)};
    case AffineExprKind::CeilDiv:
      if (kv <= 0) return failure();
      return IndexRange{b.createOrFold<arith::CeilDivSIOp>(loc, lhs->lo, kc),
                        b.createOrFold<arith::CeilDivSIOp>(loc, lhs->hi, kc)};
    case AffineExprKind::Mod: {
      if (kv <= 0) return failure();
      Value inside = b.createOrFold<arith::AndIOp>(
          loc, b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, lhs->lo, constant(0)),
          b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, lhs->hi, kc));
      return IndexRange{b.createOrFold<arith::SelectOp>(loc, inside, lhs->lo, constant(0)),
                        b.createOrFold<arith::SelectOp>(loc, inside, lhs->hi, constant(kv - 1))};
    }
    default:
      return failure();
  }
}

// An operand dim indexed by an expression `e` of the loop dims (a window d1 * 2 + d4, a shift
// d0 - 1, a reversal -d0 + 5, d0 floordiv 2, d0 mod 3, a constant) must hold every index `e`
// takes over the loop box: `0 <= min` and `max < size`, or some loop has no iteration (the
// op reads nothing). Loop extents are those the bare dims gave; an expression using a loop
// dim that no operand indexes bare (or a symbol) is not checked.
void checkWindow(OpBuilder& b, Location loc, const std::string& name, OpOperand& operand,
                 unsigned i, AffineExpr e, ArrayRef<Value> extents, Value size) {
  llvm::SmallBitVector used(extents.size());
  e.walk([&](AffineExpr sub) {
    if (auto d = dyn_cast<AffineDimExpr>(sub)) used.set(d.getPosition());
  });
  bool allConstant = isConstant(size);
  for (unsigned d : used.set_bits()) {
    if (!extents[d]) return;
    allConstant &= isConstant(extents[d]);
  }
  if (allConstant) return;  // the op's verifier compared static windows
  FailureOr<IndexRange> range = rangeOf(b, loc, e, extents);
  if (failed(range)) return;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value empty = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  for (Value extent : extents)
    if (extent)
      empty = b.createOrFold<arith::OrIOp>(
          loc, empty, b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, extent, zero));
  Value fits = b.createOrFold<arith::AndIOp>(
      loc, b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, range->lo, zero),
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, range->hi, size));
  Value ok = b.createOrFold<arith::OrIOp>(loc, fits, empty);
  // A window that starts at a constant >= 0 can only overrun at its end: name that end.
  std::optional<int64_t> lo = getConstantIntValue(range->lo);
  bool onlyEnd = lo && *lo >= 0;
  SmallVector<Value> values{size};
  if (!onlyEnd) values.push_back(range->lo);
  values.push_back(range->hi);
  std::string ranges;
  for (unsigned d : used.set_bits()) {
    ranges += (ranges.empty() ? "d" : ", d") + std::to_string(d) + " < {}";
    values.push_back(extents[d]);
  }
  std::string expr;
  llvm::raw_string_ostream os(expr);
  e.print(os);
  std::string reach = onlyEnd ? " reaches {}" : " ranges over [{}, {}]";
  if (!ranges.empty()) reach += " (" + ranges + ")";
  CheckOp::create(b, loc, ok,
                  b.getStringAttr(name + ": dimension " + Twine(i) + " of operand " +
                                  Twine(operand.getOperandNumber()) + " is {}, but its index " +
                                  expr + reach),
                  values);
}

// Every (operand, dim) whose indexing-map result is the bare loop dim d must have the extent
// of the first such pair (the one the kernel's loop bound is taken from); every dim indexed
// by a window expression must hold the window's largest index (checkWindow).
void checkLinalgOp(OpBuilder& b, DominanceInfo& dom, linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics()) return;
  Location loc = op.getLoc();
  std::string name = op->getName().getStringRef().str();
  SmallVector<std::pair<OpOperand*, unsigned>> reference(op.getNumLoops(), {nullptr, 0});
  SmallVector<Value> referenceSize(op.getNumLoops());
  for (OpOperand& operand : op->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType())) continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      auto loopDim = dyn_cast<AffineDimExpr>(expr);
      if (!loopDim) continue;
      unsigned d = loopDim.getPosition();
      Value size = dimOf(b, loc, dom, operand.get(), i);
      if (!reference[d].first) {
        reference[d] = {&operand, unsigned(i)};
        referenceSize[d] = size;
        continue;
      }
      checkEqual(b, loc, size, referenceSize[d],
                 name + ": dimension " + Twine(i) + " of operand " +
                     Twine(operand.getOperandNumber()) + " is {}, expected {} (dimension " +
                     Twine(reference[d].second) + " of operand " +
                     Twine(reference[d].first->getOperandNumber()) + ")");
    }
  }
  for (OpOperand& operand : op->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType())) continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      if (isa<AffineDimExpr>(expr)) continue;
      checkWindow(b, loc, name, operand, i, expr, referenceSize,
                  dimOf(b, loc, dom, operand.get(), i));
    }
  }
}

// A slice [offset, offset + (size - 1) * stride] of each dim must lie in [0, extent): for a
// static stride s >= 1, `offset <=u extent` and, unless size == 0, `offset <u extent` and
// `size - 1 <=u (extent - 1 - offset) / s` (negative values are huge unsigned, so they fail).
// `what` names the op and whether it reads or writes the tensor.
void checkSliceBounds(OpBuilder& b, DominanceInfo& dom, Location loc, const Twine& what,
                      Value tensor, ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
                      ArrayRef<OpFoldResult> strides) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    std::optional<int64_t> stride = getConstantIntValue(strides[i]);
    if (!stride || *stride < 1) continue;  // VerifyInput/LowerTensorOps take unit strides
    Value extent = dimOf(b, loc, dom, tensor, i);
    Value offset = getValueOrCreateConstantIndexOp(b, loc, offsets[i]);
    Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[i]);
    if (isConstant(extent) && isConstant(offset) && isConstant(size)) continue;  // verifier
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
      return arith::CmpIOp::create(b, loc, p, x, y);
    };
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value room = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, extent, one), offset);
    if (*stride > 1)
      room = arith::DivUIOp::create(b, loc, room, arith::ConstantIndexOp::create(b, loc, *stride));
    Value fitsSize = arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::ult, offset, extent),
        cmp(arith::CmpIPredicate::ule, arith::SubIOp::create(b, loc, size, one), room));
    Value ok = arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::ule, offset, extent),
        arith::OrIOp::create(b, loc, cmp(arith::CmpIPredicate::eq, size, zero), fitsSize));
    std::string window = *stride == 1 ? "[{}, {} + {})" : "{} + [0, {}) * " + std::to_string(*stride);
    SmallVector<Value> values{offset, size, extent};
    if (*stride == 1) values = {offset, offset, size, extent};
    CheckOp::create(b, loc, ok,
                    b.getStringAttr(what + ": dimension " + Twine(i) + " " + window +
                                    " is outside [0, {})"),
                    values);
  }
}

void checkExtractSlice(OpBuilder& b, DominanceInfo& dom, tensor::ExtractSliceOp slice) {
  checkSliceBounds(b, dom, slice.getLoc(), "tensor.extract_slice reads the source", slice.getSource(),
                   slice.getMixedOffsets(), slice.getMixedSizes(), slice.getMixedStrides());
}

// The destination must hold the slice, and the source must have the slice's sizes (the
// kernel writes `sizes` elements read from the source).
void checkInsertSlice(OpBuilder& b, DominanceInfo& dom, tensor::InsertSliceOp slice) {
  Location loc = slice.getLoc();
  checkSliceBounds(b, dom, loc, "tensor.insert_slice writes the destination", slice.getDest(),
                   slice.getMixedOffsets(), slice.getMixedSizes(), slice.getMixedStrides());
  RankedTensorType source = slice.getSourceType();
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  int64_t sourceDim = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (dropped.test(i)) continue;
    int64_t dim = sourceDim++;
    if (!source.isDynamicDim(dim)) continue;
    checkEqual(b, loc, dimOf(b, loc, dom, slice.getSource(), dim),
               getValueOrCreateConstantIndexOp(b, loc, sizes[i]),
               "tensor.insert_slice: dimension " + Twine(dim) + " of the source is {}, expected {} "
               "(the slice size of dimension " + Twine(i) + ")");
  }
}

// A cast to a static dim asserts the source has it.
void checkCast(OpBuilder& b, DominanceInfo& dom, tensor::CastOp cast) {
  auto source = dyn_cast<RankedTensorType>(cast.getSource().getType());
  auto result = dyn_cast<RankedTensorType>(cast.getType());
  if (!source || !result) return;
  Location loc = cast.getLoc();
  for (int64_t i = 0; i < result.getRank(); ++i) {
    if (result.isDynamicDim(i) || !source.isDynamicDim(i)) continue;
    checkEqual(b, loc, dimOf(b, loc, dom, cast.getSource(), i),
               arith::ConstantIndexOp::create(b, loc, result.getDimSize(i)),
               "tensor.cast: dimension " + Twine(i) + " of the source is {}, expected {}");
  }
}

// An expansion's dynamic output sizes must multiply to their source dim.
void checkExpand(OpBuilder& b, DominanceInfo& dom, tensor::ExpandShapeOp expand) {
  Location loc = expand.getLoc();
  auto result = expand.getResultType();
  SmallVector<OpFoldResult> sizes = expand.getMixedOutputShape();
  for (auto [i, group] : llvm::enumerate(expand.getReassociationIndices())) {
    if (llvm::none_of(group, [&](int64_t d) { return result.isDynamicDim(d); })) continue;
    Value product;
    for (int64_t d : group) {
      Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
      product = product ? arith::MulIOp::create(b, loc, product, size).getResult() : size;
    }
    checkEqual(b, loc, product, dimOf(b, loc, dom, expand.getSrc(), i),
               "tensor.expand_shape: output dimensions " + Twine(group.front()) + ".." +
                   Twine(group.back()) + " hold {} elements, expected {} (dimension " +
                   Twine(i) + " of the source)");
  }
}

// The byte size of a tensor of type `t` whose dynamic dims are `sizes` (in order) must fit in
// 63 bits (the VM multiplies in i64): each dynamic size d, in order, must satisfy d <=u L /
// max(P, 1), where L = (2^63 - 1) / (element bytes * static dims) and P is the product of the
// dynamic sizes before it (not negative once the checks before passed, so max(P, 1) is a
// signed max). A negative size fails too (it is huge unsigned). `what` names the op.
void checkByteSize(OpBuilder& b, Location loc, RankedTensorType t, ValueRange sizes,
                   const std::string& what) {
  if (t.getNumDynamicDims() == 0) return;
  int64_t bytes = hal::ElementTypeByteSize(hal::ElementTypeFromName(typeString(t.getElementType())));
  if (bytes <= 0) return;  // VerifyInput rejected the element type
  uint64_t staticProduct = uint64_t(bytes);
  for (int64_t d : t.getShape())
    if (!ShapedType::isDynamic(d)) staticProduct *= uint64_t(d);
  if (staticProduct == 0) return;  // zero elements whatever the dynamic sizes
  Value limit = arith::ConstantIndexOp::create(b, loc, int64_t(INT64_MAX / staticProduct));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value product;
  unsigned dyn = 0;
  for (auto [i, d] : llvm::enumerate(t.getShape())) {
    if (!ShapedType::isDynamic(d)) continue;
    Value size = sizes[dyn++];
    Value bound = product ? arith::DivUIOp::create(b, loc, limit,
                                                   arith::MaxSIOp::create(b, loc, product, one))
                                .getResult()
                          : limit;
    Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, size, bound);
    CheckOp::create(b, loc, fits,
                    b.getStringAttr(what + ": dimension " + Twine(i) + " of " + typeString(t) +
                                    " is {}: the tensor would take more than 2^63-1 bytes "
                                    "(or the size is negative)"),
                    ValueRange{size});
    product = product ? arith::MulIOp::create(b, loc, product, size).getResult() : size;
  }
}

void checkEmptySize(OpBuilder& b, tensor::EmptyOp empty) {
  checkByteSize(b, empty.getLoc(), empty.getType(), empty.getDynamicSizes(), "tensor.empty");
}

// A pad's result dims are low + source + high: each dynamic amount must lie in [-2^62, 2^62]
// (so that the sum cannot wrap), and the result's byte size must fit like a tensor.empty's.
void checkPadSize(OpBuilder& b, DominanceInfo& dom, tensor::PadOp pad) {
  RankedTensorType t = pad.getResultType();
  if (t.getNumDynamicDims() == 0) return;
  Location loc = pad.getLoc();
  Value bias = arith::ConstantIndexOp::create(b, loc, int64_t(1) << 62);
  Value span = arith::ConstantIndexOp::create(b, loc, int64_t(1) << 63);  // as unsigned: 2^63
  SmallVector<Value> sizes;
  for (auto [d, low, high] : llvm::enumerate(pad.getMixedLowPad(), pad.getMixedHighPad())) {
    if (!t.isDynamicDim(d)) continue;
    Value lowValue = getValueOrCreateConstantIndexOp(b, loc, low);
    Value highValue = getValueOrCreateConstantIndexOp(b, loc, high);
    for (auto [side, v] : {std::pair<const char*, Value>{"low", lowValue}, {"high", highValue}}) {
      if (isConstant(v)) continue;
      Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                            arith::AddIOp::create(b, loc, v, bias), span);
      CheckOp::create(b, loc, inRange,
                      b.getStringAttr("tensor.pad: " + Twine(side) + " padding of dimension " +
                                      Twine(d) + " is {}, beyond 2^62 either way"),
                      ValueRange{v});
    }
    Value source = dimOf(b, loc, dom, pad.getSource(), d);
    sizes.push_back(arith::AddIOp::create(b, loc, arith::AddIOp::create(b, loc, source, lowValue),
                                          highValue));
  }
  checkByteSize(b, loc, t, sizes, "tensor.pad");
}

// Remembers the ops the checks create, so that the unused ones (a constant size that needed
// no check) can be erased again.
struct CreatedOps : OpBuilder::Listener {
  void notifyOperationInserted(Operation* op, OpBuilder::InsertPoint) override { ops.push_back(op); }
  SmallVector<Operation*> ops;
};

class InsertShapeChecks : public impl::InsertShapeChecksBase<InsertShapeChecks> {
 public:
  void runOnOperation() override {
    CreatedOps created;
    OpBuilder b(&getContext(), &created);
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      DominanceInfo dom(func);
      func.walk([&](Operation* op) {
        if (op->getParentOfType<linalg::LinalgOp>()) return;  // kernel bodies
        b.setInsertionPoint(op);
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) checkLinalgOp(b, dom, linalgOp);
        else if (auto cast = dyn_cast<tensor::CastOp>(op)) checkCast(b, dom, cast);
        else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) checkExpand(b, dom, expand);
        else if (auto empty = dyn_cast<tensor::EmptyOp>(op)) checkEmptySize(b, empty);
        else if (auto pad = dyn_cast<tensor::PadOp>(op)) checkPadSize(b, dom, pad);
        else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) checkExtractSlice(b, dom, slice);
        else if (auto slice = dyn_cast<tensor::InsertSliceOp>(op)) checkInsertSlice(b, dom, slice);
      });
    }
    for (Operation* op : llvm::reverse(created.ops))
      if (!isa<CheckOp>(op) && op->use_empty()) op->erase();
  }
};

}  // namespace
}  // namespace hexir
