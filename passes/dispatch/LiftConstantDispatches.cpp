// Runs a dispatch whose inputs are all module constants once at load instead of on every
// call (IREE's and Relax's LiftTransformParams): weight layout changes such as transpose(W).
//
//   func @f(%x) {                              hexir.global @f_lifted_0 : tensor<16x8xf32>
//     %w = arith.constant dense<...>           func private @__hexir_lifted_init() attributes
//     %t = hexir.dispatch @transpose(%w)   =>      {hexir.initializer} {
//     ... hexir.dispatch @mm(%t, %x)             %w = arith.constant dense<...>
//   }                                            %t = hexir.dispatch @transpose(%w)
//                                                hexir.global.store %t, @f_lifted_0 }
//                                              func @f(%x) {
//                                                %t = hexir.global.load @f_lifted_0
//                                                ... hexir.dispatch @mm(%t, %x) }
//
// Operands may be dense constants, scalar constants, globals lifted earlier (chains lift
// whole) or static reshapes and casts of those. Results must be statically shaped; in-place
// updates stay. The initializer form runs from the VM module initializer after the constants
// are uploaded (hexir-convert-to-vm).
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "passes/Passes.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir {
#define GEN_PASS_DEF_LIFTCONSTANTDISPATCHES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// A constant, a lifted global, or a static reshape of one.
bool isConstantValue(Value v) {
  Operation* def = v.getDefiningOp();
  if (!def) return false;
  if (isa<GlobalLoadOp, arith::ConstantOp>(def)) return true;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(def))
    return cast<RankedTensorType>(v.getType()).hasStaticShape() && isConstantValue(def->getOperand(0));
  return false;
}

// True when `v` (a lifted result: one buffer shared by every call) is only ever read: each
// use, through reshapes, is a dispatch operand that no result is tied to. A value carried
// into a loop, a branch, a call or a private function's return could become the destination of an in-place
// update (passes/dispatch/InPlaceUpdates.h), which would write into the global and change
// what the next call reads; such results stay in the function.
bool onlyRead(Value v) {
  for (OpOperand& use : v.getUses()) {
    Operation* user = use.getOwner();
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(user)) {
      if (!onlyRead(user->getResult(0))) return false;
      continue;
    }
    // Returned to the program's caller (a public function): a view of the global like a
    // returned constant. A private function's result may be updated in place by its caller.
    if (isa<func::ReturnOp>(user)) {
      if (user->getParentOfType<func::FuncOp>().isPublic()) continue;
      return false;
    }
    auto d = dyn_cast<DispatchOp>(user);
    if (!d) return false;
    if (auto tied = d->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr))
      if (llvm::is_contained(tied.asArrayRef(), int64_t(use.getOperandNumber()))) return false;
  }
  return true;
}

bool isLiftable(DispatchOp d) {
  if (d->hasAttr(kTiedOperandsAttr) || !d.getResultDims().empty()) return false;
  for (Value r : d.getResults())
    if (!cast<RankedTensorType>(r.getType()).hasStaticShape() || !onlyRead(r)) return false;
  return llvm::all_of(d.getArgs(), isConstantValue);
}

class LiftConstantDispatches : public impl::LiftConstantDispatchesBase<LiftConstantDispatches> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<func::FuncOp, DispatchOp>> work;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func->hasAttr(kInitializerAttr)) continue;
      // Walk order: a dispatch's constant producers come before it, so chains lift whole.
      func.walk([&](DispatchOp d) { work.push_back({func, d}); });
    }
    for (auto [func, d] : work)
      if (isLiftable(d)) lift(func, d);
  }

 private:
  func::FuncOp initializer() {
    if (init) return init;
    ModuleOp module = getOperation();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    init = func::FuncOp::create(b, module.getLoc(), "__hexir_lifted_init", b.getFunctionType({}, {}));
    init.setPrivate();
    init->setAttr(kInitializerAttr, b.getUnitAttr());
    b.setInsertionPointToStart(init.addEntryBlock());
    func::ReturnOp::create(b, module.getLoc());
    return init;
  }

  void lift(func::FuncOp func, DispatchOp d) {
    ModuleOp module = getOperation();
    OpBuilder ib(initializer().getBody().front().getTerminator());
    IRMapping map;
    for (Value v : d.getArgs()) cloneProducers(ib, v, map);
    Operation* copy = ib.clone(*d, map);

    OpBuilder hb(d);
    OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
    gb.setInsertionPoint(func);
    for (auto [r, result] : llvm::enumerate(d.getResults())) {
      std::string name = (func.getName() + "_lifted_" + Twine(count++)).str();
      auto global = GlobalOp::create(gb, d.getLoc(), gb.getStringAttr(name), TypeAttr::get(result.getType()));
      auto symbol = FlatSymbolRefAttr::get(global.getSymNameAttr());
      GlobalStoreOp::create(ib, d.getLoc(), copy->getResult(r), symbol);
      stored[global.getSymNameAttr()] = copy->getResult(r);
      result.replaceAllUsesWith(GlobalLoadOp::create(hb, d.getLoc(), result.getType(), symbol));
    }
    SmallVector<Value> operands(d.getArgs());
    d.erase();
    for (Value v : operands) eraseIfDead(v);
  }

  // Maps `v` (isConstantValue) to its value in the initializer, cloning its producers.
  void cloneProducers(OpBuilder& ib, Value v, IRMapping& map) {
    if (map.contains(v)) return;
    Operation* def = v.getDefiningOp();
    if (auto load = dyn_cast<GlobalLoadOp>(def)) {
      // Stored earlier in the initializer: use the stored value itself.
      map.map(v, stored.lookup(load.getGlobalAttr().getAttr()));
      return;
    }
    for (Value operand : def->getOperands()) cloneProducers(ib, operand, map);
    ib.clone(*def, map);
  }

  static void eraseIfDead(Value v) {
    Operation* def = v.getDefiningOp();
    if (!def || !def->use_empty()) return;
    SmallVector<Value> operands(def->getOperands());
    def->erase();
    for (Value operand : operands) eraseIfDead(operand);
  }

  func::FuncOp init;
  int64_t count = 0;
  DenseMap<StringAttr, Value> stored;  // global -> the initializer's value stored into it
};

}  // namespace
}  // namespace hexir
