// Sinks and stack promotion of a CPU kernel's temporaries (CPUKernelTemporaries.h).
#include "passes/codegen/CPUKernelTemporaries.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/CallInterfaces.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// The ops that use `buffer` or a view of it (subview, reshapes, casts, strided metadata:
// anything with a memref result taking it as an operand), the views' users too.
SmallVector<Operation*> UsersThroughViews(Value buffer) {
  SmallVector<Operation*> users;
  SmallVector<Value> views{buffer};
  while (!views.empty()) {
    Value v = views.pop_back_val();
    for (Operation* user : v.getUsers()) {
      users.push_back(user);
      for (Value r : user->getResults())
        if (isa<BaseMemRefType>(r.getType())) views.push_back(r);
    }
  }
  return users;
}

// The innermost block nested in `home` through scf.if regions only (no loop body) that holds
// every op of `users`; null when none does (a user in `home` itself, or past a loop).
Block* InnermostBranchHolding(Block* home, ArrayRef<Operation*> users) {
  SmallVector<Block*> chain;  // the first user's block, then outwards, up to home's child
  for (Block* b = users.front()->getBlock(); b != home;) {
    Operation* parent = b->getParentOp();
    if (!parent || !parent->getBlock()) return nullptr;
    chain.push_back(b);
    b = parent->getBlock();
  }
  Block* found = nullptr;
  for (Block* candidate : llvm::reverse(chain)) {
    if (!isa<scf::IfOp>(candidate->getParentOp()) ||
        !llvm::all_of(users, [&](Operation* user) { return candidate->findAncestorOpInBlock(*user); }))
      break;
    found = candidate;
  }
  return found;
}

// Whether a buffer whose UsersThroughViews are `usersThroughViews` leaves its block's
// iteration: yielded out of a region, returned or passed to a call. A buffer that never does
// holds nothing from one iteration of an enclosing loop to the next (nor from one branch to
// code after it).
bool EscapesItsIteration(ArrayRef<Operation*> usersThroughViews) {
  return llvm::any_of(usersThroughViews, [](Operation* user) {
    return user->hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface, memref::DeallocOp>(user);
  });
}

// A constant that `size` (an alloc's dynamic size) never exceeds, or nullopt: a constant, a
// min with a constant operand, an affine.min with a constant result (a tile of a static size
// clamped at the iteration space's end).
std::optional<int64_t> ConstantUpperBound(Value size) {
  if (std::optional<int64_t> c = getConstantIntValue(size)) return c;
  std::optional<int64_t> bound;
  auto tighten = [&](std::optional<int64_t> b) {
    if (b && (!bound || *b < *bound)) bound = b;
  };
  if (auto min = size.getDefiningOp<affine::AffineMinOp>()) {
    for (AffineExpr e : min.getMap().getResults())
      if (auto c = dyn_cast<AffineConstantExpr>(e)) tighten(c.getValue());
  } else if (isa_and_nonnull<arith::MinSIOp, arith::MinUIOp>(size.getDefiningOp())) {
    for (Value operand : size.getDefiningOp()->getOperands()) tighten(ConstantUpperBound(operand));
  }
  if (bound && *bound < 0) return std::nullopt;
  return bound;
}

// A view of `slot` (a flat stack buffer) as `type` (identity layout) with `sizes`: offset 0,
// row-major strides, static where every later size is.
Value ViewStackSlot(OpBuilder& b, Location loc, Value slot, MemRefType type, ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(sizes.size());
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    std::optional<int64_t> s = getConstantIntValue(stride), n = getConstantIntValue(sizes[d]);
    if (s && n) {
      stride = b.getIndexAttr(*s * *n);
    } else {
      stride = arith::MulIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, stride),
                                     getValueOrCreateConstantIndexOp(b, loc, sizes[d]))
                   .getResult();
    }
  }
  return memref::ReinterpretCastOp::create(b, loc, type, slot, b.getIndexAttr(0), sizes, strides);
}

}  // namespace

void SinkTemporariesIntoTheirBranch(func::FuncOp kernel) {
  SmallVector<memref::AllocOp> allocs;
  kernel.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
  for (memref::AllocOp alloc : allocs) {
    SmallVector<Operation*> users = UsersThroughViews(alloc.getResult());
    if (users.empty() || EscapesItsIteration(users)) continue;
    Block* home = alloc->getBlock();
    Block* branch = InnermostBranchHolding(home, users);
    // Its operands (defined before the alloc) dominate the branch: the scf.if holding it comes
    // after the alloc, as every user does.
    if (!branch || !alloc->isBeforeInBlock(home->findAncestorOpInBlock(*branch->getParentOp()))) continue;
    alloc->moveBefore(&branch->front());
  }
}

void PromoteSmallTemporariesToStack(func::FuncOp kernel) {
  constexpr int64_t kStackTemporaryBytes = 64 * 1024, kStackTemporariesBytes = 128 * 1024,
                    kDynamicSlotBytes = 16 * 1024;
  SmallVector<memref::AllocOp> allocs;
  kernel.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
  int64_t total = 0;
  OpBuilder entry = OpBuilder::atBlockBegin(&kernel.getBody().front());
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    if (type.getMemorySpace() || !type.getElementType().isIntOrFloat() || !alloc.getSymbolOperands().empty() ||
        (!type.hasStaticShape() && !type.getLayout().isIdentity()))
      continue;
    const int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
    // The slot's elements; bounded: no run-time choice.
    int64_t elements = 1;
    bool bounded = true;
    for (int64_t d = 0, dynamic = 0; d < type.getRank(); ++d) {
      int64_t n = type.getDimSize(d);
      if (ShapedType::isDynamic(n)) {
        std::optional<int64_t> bound = ConstantUpperBound(alloc.getDynamicSizes()[dynamic++]);
        if (!bound) {
          bounded = false;
          break;
        }
        n = *bound;
      }
      elements *= n;
    }
    if (!bounded) elements = kDynamicSlotBytes / elementBytes;
    const int64_t bytes = elements * elementBytes;
    if (bytes > kStackTemporaryBytes || total + bytes > kStackTemporariesBytes ||
        EscapesItsIteration(UsersThroughViews(alloc.getResult())))
      continue;
    total += bytes;
    Location loc = alloc.getLoc();
    if (type.hasStaticShape()) {
      auto alloca = memref::AllocaOp::create(entry, loc, type, alloc.getAlignmentAttr());
      alloc.getResult().replaceAllUsesWith(alloca.getResult());
      alloc.erase();
      continue;
    }
    auto slotType = MemRefType::get({elements}, type.getElementType());
    Value slot = memref::AllocaOp::create(entry, loc, slotType, alloc.getAlignmentAttr());
    OpBuilder b(alloc);
    SmallVector<OpFoldResult> sizes = alloc.getMixedSizes();
    Value buffer;
    if (bounded) {
      buffer = ViewStackSlot(b, loc, slot, type, sizes);
    } else {
      // elements <= slot: the view, else a heap buffer (deallocated where its ownership ends,
      // buffer-deallocation-pipeline).
      Value count = arith::ConstantIndexOp::create(b, loc, 1);
      for (Value size : alloc.getDynamicSizes()) count = arith::MulIOp::create(b, loc, count, size);
      int64_t staticCount = 1;
      for (int64_t n : type.getShape())
        if (!ShapedType::isDynamic(n)) staticCount *= n;
      count = arith::MulIOp::create(b, loc, count, arith::ConstantIndexOp::create(b, loc, staticCount));
      Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, count,
                                         arith::ConstantIndexOp::create(b, loc, elements));
      auto choice = scf::IfOp::create(
          b, loc, fits,
          [&](OpBuilder& t, Location l) { scf::YieldOp::create(t, l, ViewStackSlot(t, l, slot, type, sizes)); },
          [&](OpBuilder& e, Location l) {
            scf::YieldOp::create(e, l, memref::AllocOp::create(e, l, type, alloc.getDynamicSizes(),
                                                               alloc.getAlignmentAttr())
                                           .getResult());
          });
      buffer = choice.getResult(0);
    }
    alloc.getResult().replaceAllUsesWith(buffer);
    alloc.erase();
  }
}

}  // namespace hexir::codegen
