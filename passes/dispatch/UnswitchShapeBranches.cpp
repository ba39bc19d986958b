// Unswitches a host function on the branches that its arguments' shapes decide, so that the
// path most calls take is one segment (one recording, one submission per call) instead of
// one before, one in and one after each branch:
//
//   %p1 = (dim(%x, 2) + 1) / 2 * 2 - dim(%x, 2)       %c = (%p1 == 0) and (%p2 == 0)
//   A(%x)                                             %r = scf.if %c {
//   %a = scf.if (%p1 == 0) {%x} else {pad(%x)}   =>       A(%x); B(%x); C; return value
//   B(%a)                                               } else {
//   %b = scf.if (%p2 == 0) {..} else {pad(..)}            A(%x); %a = scf.if ..; B(%a);
//   C(%b)                                                 %b = scf.if ..; C(%b); ..
//                                                       }
//
// The branches: the `scf.if` ops of the function's block whose condition is computed from
// constants, the function's arguments and their dims by host arithmetic alone (no data, no
// division by anything but a nonzero constant): a dynamic export's pad-or-not choices (the
// ONNX importer's run-time end pads: a ceil-mode pool's, a convolution's window past a small
// input; passes x itself when every amount is 0) and the specialization switches
// (dispatch/SpecializationSwitch.h). The predicted branch of each: the one holding fewer
// dispatches, the then branch on a tie (a switch's hot value). The function is unswitched
// when at least one of them is not a specialization switch (those hexir-merge-specialization-
// switches has already put behind one switch each): from the first such branch (or the last
// op holding regions before it) to the block's end, the ops are cloned into the then branch
// of one `scf.if` on "every branch takes its predicted side", with each branch replaced there
// by its predicted side, and moved as they are into its else branch. The conditions'
// arithmetic is cloned before it. The then branch holds no branch of its own, so it is one
// segment: a dynamic DenseNet's call on even sizes 4 submissions -> 1. Cost: those ops are in
// the bytecode twice (at most kMaxUnswitchedOps of them).
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/MapVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "passes/Passes.h"
#include "passes/dispatch/SpecializationSwitch.h"

namespace hexir {
#define GEN_PASS_DEF_UNSWITCHSHAPEBRANCHES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Ops (recursively) the unswitched range may hold: it is in the bytecode twice.
constexpr int64_t kMaxUnswitchedOps = 20000;

// Whether `v` is computed in `block` from constants, the block's arguments and their dims by
// host arithmetic without effects (a division only by a nonzero constant: the clone runs
// before the checks that guard the original); adds those ops to `slice`.
bool ShapeOnly(Value v, Block* block, llvm::SetVector<Operation*>& slice) {
  if (auto arg = dyn_cast<BlockArgument>(v)) return arg.getOwner() == block;
  Operation* op = v.getDefiningOp();
  if (slice.contains(op)) return true;
  if (op->getBlock() != block || op->getNumRegions() != 0 || !isMemoryEffectFree(op)) return false;
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    auto source = dyn_cast<BlockArgument>(dim.getSource());
    if (!source || source.getOwner() != block) return false;
  } else if (!isa<arith::ArithDialect>(op->getDialect())) {
    return false;
  }
  if (isa<arith::DivSIOp, arith::DivUIOp, arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp,
          arith::RemSIOp, arith::RemUIOp>(op)) {
    APInt divisor;
    if (!matchPattern(op->getOperand(1), m_ConstantInt(&divisor)) || divisor.isZero()) return false;
  }
  for (Value operand : op->getOperands())
    if (!ShapeOnly(operand, block, slice)) return false;
  slice.insert(op);
  return true;
}

int64_t DispatchesIn(Region& region) {
  int64_t n = 0;
  region.walk([&](DispatchOp) { ++n; });
  return n;
}

void Unswitch(func::FuncOp func) {
  if (!func.getBody().hasOneBlock()) return;
  Block* block = &func.getBody().front();
  // Each branch (in block order) and its predicted side: true for then.
  llvm::MapVector<scf::IfOp, bool> branches;
  llvm::SetVector<Operation*> slice;
  bool anyChoice = false;           // a branch that is not a specialization switch
  Operation* start = &block->front();  // the range's first op
  for (Operation& op : block->without_terminator()) {
    auto s = dyn_cast<scf::IfOp>(&op);
    if (!s && op.getNumRegions() == 0) continue;
    llvm::SetVector<Operation*> own;
    if (!s || !ShapeOnly(s.getCondition(), block, own)) {
      if (branches.empty()) start = op.getNextNode();  // ops with regions before the first stay out
      continue;
    }
    slice.insert(own.begin(), own.end());
    anyChoice = anyChoice || !s->hasAttr(kSpecializationSwitchAttr);
    branches[s] = DispatchesIn(s.getElseRegion()) >= DispatchesIn(s.getThenRegion());
  }
  if (!anyChoice) return;
  int64_t ops = 0;
  for (Operation* op = start; op != block->getTerminator(); op = op->getNextNode()) op->walk([&](Operation*) { ++ops; });
  if (ops > kMaxUnswitchedOps) return;

  Operation* terminator = block->getTerminator();
  OpBuilder b(start);
  Location loc = branches.front().first.getLoc();
  // The conditions' arithmetic, in block order, before the range.
  IRMapping early;
  for (Operation& op : *block)
    if (slice.contains(&op)) b.clone(op, early);
  Value predicted;
  for (auto [s, then] : branches) {
    Value c = early.lookup(s.getCondition());
    if (!then) c = arith::XOrIOp::create(b, loc, c, arith::ConstantIntOp::create(b, loc, 1, 1));
    predicted = predicted ? Value(arith::AndIOp::create(b, loc, predicted, c)) : c;
  }
  // The function's results computed in the range, or before it (yielded as they are).
  auto unswitched = scf::IfOp::create(b, loc, terminator->getOperandTypes(), predicted,
                                      /*addThenBlock=*/false, /*addElseBlock=*/false);
  // Then: every branch replaced by its predicted side.
  OpBuilder tb = OpBuilder::atBlockEnd(&unswitched.getThenRegion().emplaceBlock());
  IRMapping taken;
  for (Operation* op = start; op != terminator; op = op->getNextNode()) {
    auto s = dyn_cast<scf::IfOp>(op);
    auto branch = s ? branches.find(s) : branches.end();
    if (branch == branches.end()) {
      tb.clone(*op, taken);
      continue;
    }
    Region& side = branch->second ? s.getThenRegion() : s.getElseRegion();
    if (side.empty()) continue;  // a branch without results and without an else side
    for (Operation& inner : side.front().without_terminator()) tb.clone(inner, taken);
    for (auto [result, yielded] : llvm::zip(s.getResults(), side.front().getTerminator()->getOperands()))
      taken.map(result, taken.lookupOrDefault(yielded));
  }
  SmallVector<Value> thenResults;
  for (Value v : terminator->getOperands()) thenResults.push_back(taken.lookupOrDefault(v));
  scf::YieldOp::create(tb, loc, thenResults);
  // Else: the range as it was.
  Block* elseBlock = &unswitched.getElseRegion().emplaceBlock();
  SmallVector<Operation*> range;
  for (Operation* op = unswitched->getNextNode(); op != terminator; op = op->getNextNode()) range.push_back(op);
  for (Operation* op : range) op->moveBefore(elseBlock, elseBlock->end());
  OpBuilder eb = OpBuilder::atBlockEnd(elseBlock);
  scf::YieldOp::create(eb, loc, terminator->getOperands());
  terminator->setOperands(unswitched.getResults());
}

class UnswitchShapeBranches : public impl::UnswitchShapeBranchesBase<UnswitchShapeBranches> {
 public:
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) Unswitch(func);
  }
};

}  // namespace
}  // namespace hexir
