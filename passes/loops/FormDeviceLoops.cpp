// hexir-form-device-loops{max-iterations=N}: each `scf.while` prepared by
// hexir-prepare-device-loops whose body is still device work only becomes a `hexir.execute`
// that repeats on the device (`hexir.repeat_while = array<i64: flag, limit>`, DeviceLoops.h:
// one command buffer, a CUDA conditional WHILE node), followed by the host check of its step
// limit; any other loop stays a host loop (convert-scf-to-cf).
//
//   %r:2 = scf.while (%f = %f0, %x = %x0) {      %l:2, %t = hexir.execute on(0, "compute")
//     %e = tensor.extract %f[%c0]                    -> ... {hexir.repeat_while = array<i64: 0, N>} {
//     %go = arith.cmpi ne, %e, %c0_i32      ==>    %x1 = hexir.dispatch @step(%x0) {tied 0}
//     scf.condition(%go) %f, %x                    %f1 = hexir.dispatch @more(%x1, %f0) {tied 1}
//   } do { ^bb0(%f, %x):                           hexir.yield %f1, %x1 }
//     %x1 = hexir.dispatch @step(%x) {tied 0}    %e = tensor.extract %l#0[%c0]
//     %f1 = hexir.dispatch @more(%x1, %f) ...    %done = arith.cmpi eq, %e, %c0_i32
//     scf.yield %f1, %x1 } {hexir.device_loop}   hexir.check %done, "... step limit ..."
//
// Qualifies when the body holds only hexir.dispatch ops (no collectives), tensor reshapes
// and casts, and scalar constants (moved before the loop); every scalar operand and result
// dim of a dispatch is defined outside the loop; every yielded value's buffer is its carried
// value's (schedule::BufferRoot: an in-place update or the argument itself); the inits are
// distinct values; and the module has one device. The body's uses of the carried values
// become uses of the inits. The step limit is the loop's `hexir.max_iterations` attribute,
// else the pass option; a loop that would run more iterations fails the call after it ran
// them (`hexir.repeat_while: the device loop reached its step limit of N iterations ...`).
#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/loops/DeviceLoopPasses.h"
#include "passes/loops/DeviceLoops.h"
#include "passes/schedule/Buffers.h"

namespace hexir {
#define GEN_PASS_DEF_FORMDEVICELOOPS
#include "passes/loops/DeviceLoopPasses.h.inc"

namespace {
using namespace mlir;

bool definedOutside(Value v, scf::WhileOp loop) {
  return !loop->isAncestor(v.getParentBlock()->getParentOp());
}

// The body qualifies (see the file comment).
bool deviceOnlyBody(scf::WhileOp loop) {
  Block& body = loop.getAfter().front();
  if (body.getOps<DispatchOp>().empty()) return false;
  for (Operation& op : body.without_terminator()) {
    if (isa<arith::ConstantOp>(op) || schedule::IsAlias(&op)) continue;
    auto dispatch = dyn_cast<DispatchOp>(op);
    if (!dispatch) return false;
    for (Value v : dispatch->getOperands())
      if (!isa<RankedTensorType>(v.getType()) && !definedOutside(v, loop) &&
          !v.getDefiningOp<arith::ConstantOp>())
        return false;
  }
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  for (auto [y, arg] : llvm::zip(yield.getOperands(), body.getArguments()))
    if (schedule::BufferRoot(y) != arg) return false;
  // The body reads the inits in place of the arguments: one buffer per carried value.
  llvm::SmallPtrSet<void*, 8> inits;
  for (Value init : loop.getInits())
    if (!inits.insert(init.getAsOpaquePointer()).second) return false;
  return true;
}

class FormDeviceLoops : public impl::FormDeviceLoopsBase<FormDeviceLoops> {
 public:
  using FormDeviceLoopsBase::FormDeviceLoopsBase;

  void runOnOperation() override {
    const int64_t defaultLimit = maxIterations;
    if (defaultLimit < 0 || defaultLimit > int64_t{0xffffffff}) {
      getOperation().emitError() << "hexir-form-device-loops: max-iterations must be in [0, 2^32), got "
                                 << defaultLimit;
      return signalPassFailure();
    }
    SmallVector<scf::WhileOp> loops;
    getOperation().walk([&](scf::WhileOp loop) {
      if (loop->hasAttr(kDeviceLoopAttr)) loops.push_back(loop);
    });
    // Regions of a module of several devices need their affinity and transfers: host loops.
    const bool oneDevice = !getOperation()->hasAttr(kDevicesAttr);
    for (scf::WhileOp loop : loops) {
      loop->removeAttr(kDeviceLoopAttr);
      std::optional<unsigned> condition = DeviceLoopCondition(loop);
      if (!oneDevice || !condition || !deviceOnlyBody(loop)) continue;
      int64_t limit = defaultLimit;
      if (auto attr = loop->getAttrOfType<IntegerAttr>(kMaxIterationsAttr)) limit = attr.getInt();
      if (limit < 0 || limit > int64_t{0xffffffff}) {
        loop.emitError() << kMaxIterationsAttr << " must be in [0, 2^32), got " << limit;
        return signalPassFailure();
      }
      form(loop, *condition, limit);
    }
  }

 private:
  void form(scf::WhileOp loop, unsigned condition, int64_t limit) {
    Block& body = loop.getAfter().front();
    for (auto constant : llvm::make_early_inc_range(body.getOps<arith::ConstantOp>()))
      constant->moveBefore(loop);
    // The body reads the inits themselves (updated in place every iteration).
    for (auto [arg, init] : llvm::zip(body.getArguments(), loop.getInits())) arg.replaceAllUsesWith(init);
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    auto execute = ExecuteOp::create(b, loc, loop.getResultTypes(), TimepointType::get(b.getContext()),
                                     b.getI64IntegerAttr(0), b.getStringAttr("compute"), ValueRange{});
    execute->setAttr(kRepeatWhileAttr, b.getDenseI64ArrayAttr({int64_t(condition), limit}));
    Block* region = b.createBlock(&execute.getBody());
    auto yield = cast<scf::YieldOp>(body.getTerminator());
    for (Operation& op : llvm::make_early_inc_range(body.without_terminator())) op.moveBefore(region, region->end());
    b.setInsertionPointToEnd(region);
    YieldOp::create(b, yield.getLoc(), yield.getOperands());

    // The step limit: after the loop the flag must be zero (the condition became false).
    b.setInsertionPointAfter(execute);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value flag = tensor::ExtractOp::create(b, loc, execute.getResults()[condition], ValueRange{zero});
    Value zeroI32 = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    Value done = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, flag, zeroI32);
    CheckOp::create(b, loc, done,
                    b.getStringAttr("hexir.repeat_while: the device loop reached its step limit of " +
                                    std::to_string(limit) + " iterations with its condition still true"),
                    ValueRange{});
    loop.replaceAllUsesWith(execute.getResults());
    loop.erase();
  }
};

}  // namespace
}  // namespace hexir
