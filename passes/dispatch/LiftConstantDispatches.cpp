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
//
// A dispatch that also reads `hexir.parameter` arguments of its public function (weights
// passed in by the caller: dispatch/LoadTimeValues.h) becomes one of the function's parameter
// transforms, which run at its entry only when some parameter they read is not the buffer
// they last ran on (the first call, or a caller that passes other weights):
//
//   func @f(%x, %w {hexir.parameter}) {       hexir.global @f_parameter_1 : tensor<8x16xf32>
//     %t = hexir.dispatch @transpose(%w)  =>  hexir.global @f_lifted_0 : tensor<16x8xf32>
//     ... hexir.dispatch @mm(%t, %x)          func @f(%x, %w {hexir.parameter}) {
//   }                                           %k = hexir.global.load @f_parameter_1
//                                               %same = hexir.same_buffer %w, %k
//                                               scf.if %same {} else {
//                                                 %t = hexir.dispatch @transpose(%w)
//                                                 hexir.global.store %t, @f_lifted_0
//                                                 hexir.global.store %w, @f_parameter_1 }
//                                               %t = hexir.global.load @f_lifted_0
//                                               ... hexir.dispatch @mm(%t, %x) }
//
// Every call then costs a load, a comparison and a conjunction per parameter read (a few VM
// instructions), and the transforms' results hold device memory as constants' do. Only in
// one-device modules (a module of several places its arguments later, passes/schedule).
#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "passes/Passes.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/dispatch/LoadTimeValues.h"

namespace hexir {
#define GEN_PASS_DEF_LIFTCONSTANTDISPATCHES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

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

// A function's parameter transforms: `scf.if %same {} else { transforms }` at its entry, and
// the parameter arguments they read (each keyed by a global holding the buffer last used).
struct ParameterTransforms {
  scf::IfOp guard;
  llvm::SetVector<BlockArgument> parameters;
};

class LiftConstantDispatches : public impl::LiftConstantDispatchesBase<LiftConstantDispatches> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto devices = module->getAttrOfType<ArrayAttr>(kDevicesAttr);
    const bool oneDevice = !devices || devices.size() <= 1;
    SmallVector<std::pair<func::FuncOp, DispatchOp>> work;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func->hasAttr(kInitializerAttr)) continue;
      // Walk order: a dispatch's constant producers come before it, so chains lift whole.
      func.walk([&](DispatchOp d) { work.push_back({func, d}); });
    }
    for (auto [func, d] : work) {
      LoadTimeKind kind = classify(func, d);
      if (kind == LoadTimeKind::kConstant) lift(func, d);
      if (kind == LoadTimeKind::kParameter && oneDevice) liftIntoTransforms(func, d);
    }
    for (auto& [func, transforms] : transforms) keyTransforms(func, transforms);
  }

 private:
  // What `v` (an operand of a dispatch of `func`) is known from; a global that `func`'s
  // parameter transforms store is a parameter's.
  LoadTimeKind kindOf(func::FuncOp func, Value v) {
    if (auto load = ThroughStaticReshapes(v).getDefiningOp<GlobalLoadOp>();
        load && transformedValues[func].count(load.getGlobalAttr().getAttr()))
      return LoadTimeKind::kParameter;
    return ClassifyLoadTime(v);
  }

  // kConstant: every operand a constant; kParameter: parameters (and constants); else kRunTime.
  LoadTimeKind classify(func::FuncOp func, DispatchOp d) {
    if (d->hasAttr(kTiedOperandsAttr) || !d.getResultDims().empty()) return LoadTimeKind::kRunTime;
    for (Value r : d.getResults())
      if (!cast<RankedTensorType>(r.getType()).hasStaticShape() || !onlyRead(r)) return LoadTimeKind::kRunTime;
    LoadTimeKind kind = LoadTimeKind::kConstant;
    for (Value v : d.getArgs()) {
      LoadTimeKind k = kindOf(func, v);
      if (k == LoadTimeKind::kRunTime) return k;
      if (k == LoadTimeKind::kParameter) kind = k;
    }
    return kind;
  }

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
    OpBuilder ib(initializer().getBody().front().getTerminator());
    move(func, d, ib, stored);
  }

  void liftIntoTransforms(func::FuncOp func, DispatchOp d) {
    ParameterTransforms& t = transforms[func];
    if (!t.guard) {
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      // The condition is set once every transform is known (keyTransforms).
      Value placeholder = arith::ConstantIntOp::create(b, func.getLoc(), 0, 1);
      t.guard = scf::IfOp::create(b, func.getLoc(), placeholder, /*withElseRegion=*/true);
    }
    for (Value v : d.getArgs())
      if (Value root = ThroughStaticReshapes(v); IsParameterArgument(root)) t.parameters.insert(cast<BlockArgument>(root));
    OpBuilder tb = t.guard.getElseBodyBuilder();
    move(func, d, tb, transformedValues[func]);
  }

  // Moves `d` to `ib` (the initializer, or a function's transforms) with clones of its
  // constant producers, storing each result into a new global that the function reads.
  void move(func::FuncOp func, DispatchOp d, OpBuilder& ib, DenseMap<StringAttr, Value>& values) {
    ModuleOp module = getOperation();
    IRMapping map;
    for (Value v : d.getArgs()) cloneProducers(ib, v, map, values);
    Operation* copy = ib.clone(*d, map);

    OpBuilder hb(d);
    OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
    gb.setInsertionPoint(func);
    for (auto [r, result] : llvm::enumerate(d.getResults())) {
      std::string name = (func.getName() + "_lifted_" + Twine(count++)).str();
      auto global = GlobalOp::create(gb, d.getLoc(), gb.getStringAttr(name), TypeAttr::get(result.getType()));
      auto symbol = FlatSymbolRefAttr::get(global.getSymNameAttr());
      GlobalStoreOp::create(ib, d.getLoc(), copy->getResult(r), symbol);
      values[global.getSymNameAttr()] = copy->getResult(r);
      result.replaceAllUsesWith(GlobalLoadOp::create(hb, d.getLoc(), result.getType(), symbol));
    }
    SmallVector<Value> operands(d.getArgs());
    d.erase();
    eraseDeadProducers(operands);
  }

  // Maps `v` (a constant, a lifted global, a parameter argument or a static reshape of one)
  // to its value at `ib`, cloning its producers.
  void cloneProducers(OpBuilder& ib, Value v, IRMapping& map, const DenseMap<StringAttr, Value>& values) {
    if (map.contains(v) || isa<BlockArgument>(v)) return;  // a parameter: the function's own
    Operation* def = v.getDefiningOp();
    if (auto load = dyn_cast<GlobalLoadOp>(def)) {
      // Stored earlier where the clone goes: use the stored value itself. A constant's global
      // read by a parameter transform is loaded there (the initializer ran before any call).
      if (Value stored = values.lookup(load.getGlobalAttr().getAttr())) {
        map.map(v, stored);
        return;
      }
    }
    for (Value operand : def->getOperands()) cloneProducers(ib, operand, map, values);
    ib.clone(*def, map);
  }

  // The transforms' condition: every parameter they read is the buffer they last ran on
  // (a global per parameter, stored at the end of the transforms; unset before the first
  // call, which therefore runs them).
  void keyTransforms(func::FuncOp func, ParameterTransforms& t) {
    ModuleOp module = getOperation();
    OpBuilder gb = OpBuilder::atBlockBegin(module.getBody());
    gb.setInsertionPoint(func);
    OpBuilder b(t.guard);
    OpBuilder tb = t.guard.getElseBodyBuilder();
    Location loc = t.guard.getLoc();
    Value same;
    for (BlockArgument p : t.parameters) {
      std::string name = (func.getName() + "_parameter_" + Twine(p.getArgNumber())).str();
      auto global = GlobalOp::create(gb, loc, gb.getStringAttr(name), TypeAttr::get(p.getType()));
      auto symbol = FlatSymbolRefAttr::get(global.getSymNameAttr());
      Value key = GlobalLoadOp::create(b, loc, p.getType(), symbol);
      Value s = SameBufferOp::create(b, loc, b.getI1Type(), p, key);
      same = same ? arith::AndIOp::create(b, loc, same, s).getResult() : s;
      GlobalStoreOp::create(tb, loc, p, symbol);
    }
    // The stores last: a store ends the region computing its value (passes/vm/LowerTensors.cpp),
    // so the transforms record as one command buffer.
    Operation* terminator = t.guard.elseBlock()->getTerminator();
    SmallVector<GlobalStoreOp> stores(t.guard.elseBlock()->getOps<GlobalStoreOp>());
    for (GlobalStoreOp store : stores) store->moveBefore(terminator);
    Operation* placeholder = t.guard.getCondition().getDefiningOp();
    t.guard.getConditionMutable().assign(same);
    placeholder->erase();
  }

  // Erases the producers of `roots` left without uses, and theirs in turn. Each op is looked
  // at from a worklist, never through a value whose producer may already be erased: a
  // dispatch may take one value twice, or a value and another operand's producer's operand
  // (recursing per operand erased such a producer twice: torchvision's Swin-T crashed here).
  static void eraseDeadProducers(ArrayRef<Value> roots) {
    SmallVector<Operation*> work;
    llvm::SmallPtrSet<Operation*, 16> pending;
    auto push = [&](Value v) {
      Operation* def = v.getDefiningOp();
      if (def && pending.insert(def).second) work.push_back(def);
    };
    for (Value v : roots) push(v);
    while (!work.empty()) {
      Operation* def = work.pop_back_val();
      pending.erase(def);
      if (!def->use_empty()) continue;  // looked at again if a user goes
      SmallVector<Value> operands(def->getOperands());
      def->erase();
      for (Value operand : operands) push(operand);
    }
  }

  func::FuncOp init;
  int64_t count = 0;
  DenseMap<StringAttr, Value> stored;  // global -> the initializer's value stored into it
  llvm::MapVector<func::FuncOp, ParameterTransforms> transforms;
  // Per function, as `stored`: the globals its parameter transforms store.
  DenseMap<func::FuncOp, DenseMap<StringAttr, Value>> transformedValues;
};

}  // namespace
}  // namespace hexir
