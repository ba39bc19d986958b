// hexir-prepare-device-loops: makes each `scf.while` that may run on the device
// (passes/loops/DeviceLoops.h) write its carried values back in place, so that one
// recorded command buffer serves every iteration, and marks it `hexir.device_loop`.
//
//   scf.while (%f = %f0, %x = %x0) ... do {         scf.while (%f = %c0', %x = %x0') ... do {
//   ^bb0(%f: tensor<1xi32>, %x: tensor<4xf32>):      ^bb0(%f: ..., %x: ...):
//     %x1 = linalg.generic ... ins(%x) ...             %x1 = linalg.generic ... ins(%x) ...
//     %f1 = linalg.generic ... ins(%x1, %f) ...  ==>   %f1 = linalg.generic ... ins(%x1, %f) ...
//     scf.yield %f1, %x1                               %wf = tensor.insert_slice %f1 into %f[0][1][1]
//   }                                                  %wx = tensor.insert_slice %x1 into %x[0][4][1]
//                                                      scf.yield %wf, %wx
//                                                    } {hexir.device_loop}
//
// A yield that already updates its carried value in place (a chain of tensor.insert_slice
// into the body argument: a KV-cache row), passes it through, or is a generic whose init is
// the body argument (marked `hexir.in_place` when it may write it: CanUpdateInitInPlace,
// each point reading only its own element) needs nothing; any other
// yield gets a full-size insert_slice into its body argument (the write-back; a static shape
// is required), which dispatch formation makes an in-place copy kernel. In-place updates
// need a loop that owns its carried buffers (passes/dispatch/InPlaceUpdates.h): an init that
// is not a kernel result of the loop's block used only before the loop (a function argument,
// a constant, a value read later) is first copied (a gather kernel). If the updates still
// could not be in place, everything is undone and the loop stays a host loop.
// The body must be device work: no host reads (tensor.extract, tensor.dim), calls, checks,
// collectives or nested host control flow.
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/loops/DeviceLoopPasses.h"
#include "passes/loops/DeviceLoops.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir {

#define GEN_PASS_DEF_PREPAREDEVICELOOPS
#include "passes/loops/DeviceLoopPasses.h.inc"

namespace {
using namespace mlir;

// Device work only: linalg ops, tensor ops that become kernels or aliases, scalar arith.
bool isDeviceWork(Operation& op) {
  if (isa<linalg::LinalgOp>(op)) return true;
  if (op.getNumRegions() != 0) return false;
  if (isa<tensor::ExtractOp, tensor::DimOp>(op)) return false;
  StringRef dialect = op.getDialect() ? op.getDialect()->getNamespace() : "";
  return dialect == "tensor" || dialect == "arith";
}

// The insert_slice ops through which `y` updates body argument `arg` in place, outermost
// first, when `y` is such a chain (empty when `y` is `arg` itself); nullopt otherwise.
std::optional<SmallVector<tensor::InsertSliceOp>> inPlaceChain(Value y, BlockArgument arg) {
  SmallVector<tensor::InsertSliceOp> chain;
  while (y != arg) {
    auto insert = y.getDefiningOp<tensor::InsertSliceOp>();
    if (!insert || insert->getBlock() != arg.getOwner()) return std::nullopt;
    chain.push_back(insert);
    y = insert.getDest();
  }
  return chain;
}

// A copy of `v` in a new buffer: a gather kernel (not an identity generic, which dispatch
// formation would fold away).
Value copyOf(OpBuilder& b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i)) sizes.push_back(tensor::DimOp::create(b, loc, v, i));
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(), sizes);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(type.getRank())};
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  auto gather = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{}, ValueRange{empty}, maps, iterators,
      [&](OpBuilder& nb, Location l, ValueRange) {
        SmallVector<Value> indices;
        for (int64_t i = 0; i < type.getRank(); ++i) indices.push_back(linalg::IndexOp::create(nb, l, i));
        Value element = tensor::ExtractOp::create(nb, l, v, indices);
        linalg::YieldOp::create(nb, l, element);
      });
  return gather.getResult(0);
}

// `g` (in the loop body) computes body argument `arg`'s next value from its own elements:
// `arg` is its one init (identity map, all loops parallel) and it reads `arg` nowhere else.
bool updatesOwnElements(linalg::GenericOp g, BlockArgument arg) {
  if (g->getBlock() != arg.getOwner() || g.getNumDpsInits() != 1 || g->getNumResults() != 1 ||
      g.getNumReductionLoops() != 0)
    return false;
  OpOperand* init = g.getDpsInitOperand(0);
  if (init->get() != arg || !g.getMatchingIndexingMap(init).isIdentity()) return false;
  return llvm::all_of(arg.getUses(), [&](OpOperand& use) {
    return &use == init || !g->isAncestor(use.getOwner());
  });
}

// An init the loop may update in place as it is: a linalg result of the loop's block whose
// other uses come before the loop.
bool ownedInit(Value init, scf::WhileOp loop) {
  Operation* def = init.getDefiningOp();
  if (!def || !isa<linalg::LinalgOp>(def) || def->getBlock() != loop->getBlock()) return false;
  return llvm::all_of(init.getUsers(), [&](Operation* user) {
    return user == loop.getOperation() || user->isBeforeInBlock(loop);
  });
}

class PrepareDeviceLoops : public impl::PrepareDeviceLoopsBase<PrepareDeviceLoops> {
 public:
  void runOnOperation() override {
    SmallVector<scf::WhileOp> loops;
    getOperation().walk([&](scf::WhileOp loop) { loops.push_back(loop); });
    for (scf::WhileOp loop : loops) prepare(loop);
  }

 private:
  void prepare(scf::WhileOp loop) {
    if (!DeviceLoopCondition(loop)) return;
    Block& body = loop.getAfter().front();
    if (!llvm::all_of(body.without_terminator(), isDeviceWork)) return;
    auto yield = cast<scf::YieldOp>(body.getTerminator());
    OpBuilder b(yield);
    SmallVector<tensor::InsertSliceOp> updates, writeBacks;
    SmallVector<linalg::GenericOp> initUpdates;  // generics computing their carried value in place
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      Value y = yield.getOperand(i);
      if (std::optional<SmallVector<tensor::InsertSliceOp>> chain = inPlaceChain(y, arg)) {
        updates.append(chain->begin(), chain->end());
        continue;
      }
      if (auto g = y.getDefiningOp<linalg::GenericOp>(); g && updatesOwnElements(g, arg)) {
        initUpdates.push_back(g);
        continue;
      }
      auto type = cast<RankedTensorType>(arg.getType());
      if (!type.hasStaticShape() || type.getRank() == 0) return undo(writeBacks, {}, loop);
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes;
      for (int64_t extent : type.getShape()) sizes.push_back(b.getIndexAttr(extent));
      auto writeBack = tensor::InsertSliceOp::create(b, y.getLoc(), y, arg, offsets, sizes, strides);
      yield.setOperand(i, writeBack.getResult());
      writeBacks.push_back(writeBack);
    }
    updates.append(writeBacks.begin(), writeBacks.end());
    // Marked first: ownership through the loop follows the marks (InPlaceUpdates.h).
    for (linalg::GenericOp g : initUpdates) g->setAttr(kInPlaceAttr, UnitAttr::get(g.getContext()));
    if (allInPlace(updates, initUpdates)) return mark(loop);
    // Own the carried buffers: copy the inits the loop may not update as they are.
    SmallVector<std::pair<unsigned, Value>> copied;  // (init index, original init)
    OpBuilder before(loop);
    for (auto [i, init] : llvm::enumerate(loop.getInits())) {
      if (ownedInit(init, loop)) continue;
      copied.push_back({static_cast<unsigned>(i), init});
      loop->setOperand(i, copyOf(before, loop.getLoc(), init));
    }
    if (!copied.empty() && allInPlace(updates, initUpdates)) return mark(loop);
    for (linalg::GenericOp g : initUpdates) g->removeAttr(kInPlaceAttr);
    undo(writeBacks, copied, loop);
  }

  static bool allInPlace(ArrayRef<tensor::InsertSliceOp> updates, ArrayRef<linalg::GenericOp> initUpdates) {
    return llvm::all_of(updates, [](tensor::InsertSliceOp op) { return CanInsertInPlace(op); }) &&
           llvm::all_of(initUpdates, [](linalg::GenericOp op) { return CanUpdateInitInPlace(op); });
  }

  void mark(scf::WhileOp loop) { loop->setAttr(kDeviceLoopAttr, UnitAttr::get(loop.getContext())); }

  // Restores the loop: yields and inits as they were, the added ops erased.
  void undo(ArrayRef<tensor::InsertSliceOp> writeBacks, ArrayRef<std::pair<unsigned, Value>> copied,
            scf::WhileOp loop) {
    for (tensor::InsertSliceOp w : writeBacks) {
      w.getResult().replaceAllUsesWith(w.getSource());
      w.erase();
    }
    for (auto [i, init] : copied) {
      Value copy = loop.getInits()[i];
      loop->setOperand(i, init);
      SmallVector<Operation*> dead = {copy.getDefiningOp()};
      for (size_t k = 0; k < dead.size(); ++k)
        for (Value operand : dead[k]->getOperands())
          if (Operation* def = operand.getDefiningOp(); def && isa<tensor::EmptyOp, tensor::DimOp>(def))
            dead.push_back(def);
      for (Operation* op : dead)
        if (op->use_empty()) op->erase();
    }
  }
};

}  // namespace
}  // namespace hexir
