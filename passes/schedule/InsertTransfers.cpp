// hexir-insert-transfers: after placement (hexir-place-devices), every tensor read on another
// device than the one holding it (passes/schedule/Affinity.h) goes through a
// `hexir.transfer`, and the elision rules keep the copies to the ones that move bytes:
//
//   where a value is read     the device it must be on
//   hexir.dispatch operand    the dispatch's device
//   func.return operand       the function's result device (ResultDevice)
//   func.call operand         the callee argument's device (ArgumentDevice)
//   scf.yield operand         the loop-carried value's device (its init's), or for scf.if the
//                             then-branch's
//   hexir.global.store value  the global's device
//
//   elision 1  shared memory: between devices that share memory (two CPU devices) the
//              transfer is `in_place`: no copy, only queue order (hal.device.queue.fence);
//              copy-shared-memory=true copies there too (the copy path, testable on CPUs)
//   elision 2  already resident: one transfer per (value, device), placed right after the
//              value's definition (the start of its block for a block argument) and read by
//              every use on that device
//   elision 3  round trips: reading on device A the transfer to B of a value held on A reads
//              the original
//   elision 4  unread: a transfer nobody reads is erased (also one that was already there)
//   constants  a tensor constant (or empty) read on several devices is cloned once per
//              memory (`hexir.device` on each clone: the initializer uploads it there once)
//
// A host read (tensor.extract) of a tensor held on device N != 0 gets `hexir.device = N`: it
// reads through that device.
//
//   %b = hexir.dispatch @f(%a) {hexir.device = 0}      %b = hexir.dispatch @f(%a) {hexir.device = 0}
//   %c = hexir.dispatch @g(%b) {hexir.device = 1} ==>  %t = hexir.transfer %b from(0) to(1)
//   %d = hexir.dispatch @h(%b) {hexir.device = 1}      %c = hexir.dispatch @g(%t) {hexir.device = 1}
//                                                      %d = hexir.dispatch @h(%t) {hexir.device = 1}
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/Passes.h"
#include "passes/schedule/Affinity.h"

namespace hexir {
#define GEN_PASS_DEF_INSERTTRANSFERS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// The device the use `use` needs its value on, or nullopt when any is fine (host reads,
// aliases, loop inits: they read the value where it is).
std::optional<int64_t> RequiredDevice(OpOperand& use) {
  Operation* user = use.getOwner();
  if (!isa<RankedTensorType>(use.get().getType())) return std::nullopt;
  if (isa<DispatchOp>(user)) return schedule::ExplicitDevice(user);
  if (isa<func::ReturnOp>(user)) return schedule::ResultDevice(user->getParentOfType<func::FuncOp>());
  if (auto call = dyn_cast<func::CallOp>(user)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(user, call.getCalleeAttr());
    if (callee) return schedule::ArgumentDevice(callee, use.getOperandNumber());
    return std::nullopt;
  }
  if (auto store = dyn_cast<GlobalStoreOp>(user)) {
    auto global = SymbolTable::lookupNearestSymbolFrom<GlobalOp>(user, store.getGlobalAttr());
    return global ? schedule::ExplicitDevice(global) : std::nullopt;
  }
  if (auto yield = dyn_cast<scf::YieldOp>(user)) {
    Operation* parent = yield->getParentOp();
    unsigned i = use.getOperandNumber();
    if (auto loop = dyn_cast<scf::ForOp>(parent)) return schedule::HomeDevice(loop.getInitArgs()[i]);
    if (auto loop = dyn_cast<scf::WhileOp>(parent)) return schedule::HomeDevice(loop.getInits()[i]);
    if (auto branch = dyn_cast<scf::IfOp>(parent)) return schedule::HomeDevice(branch.getResult(i));
  }
  return std::nullopt;
}

bool IsPerDeviceConstant(Operation* def) {
  return def && def->getNumResults() == 1 && isa<RankedTensorType>(def->getResult(0).getType()) &&
         (isa<tensor::EmptyOp>(def) || isa<arith::ConstantOp>(def));
}

class TransferInserter {
 public:
  TransferInserter(ModuleOp module, bool copySharedMemory)
      : kinds(schedule::DeviceKinds(module)), copySharedMemory(copySharedMemory) {}

  void run(func::FuncOp func) {
    SmallVector<OpOperand*> uses;
    func.walk([&](Operation* op) {
      for (OpOperand& use : op->getOpOperands()) uses.push_back(&use);
    });
    for (OpOperand* use : uses) {
      std::optional<int64_t> required = RequiredDevice(*use);
      if (!required) continue;
      Value v = use->get();
      if (IsPerDeviceConstant(v.getDefiningOp())) {
        use->set(constantOn(v, *required));
        continue;
      }
      std::optional<int64_t> home = schedule::HomeDevice(v);
      if (!home || *home == *required) continue;
      use->set(transferTo(v, *home, *required));
    }
    // Host reads go through the device holding the tensor (hexir.device on the extract).
    func.walk([&](tensor::ExtractOp e) {
      if (std::optional<int64_t> home = schedule::HomeDevice(e.getTensor()); home && *home != 0)
        e->setAttr(kDeviceAttr, IntegerAttr::get(IntegerType::get(e.getContext(), 64), *home));
    });
  }

 private:
  // The constant's copy for the memory of `device` (the first device of that memory names it).
  Value constantOn(Value v, int64_t device) {
    int64_t memory = device;
    for (int64_t d = 0; d < device; ++d)
      if (inPlace(d, device)) {
        memory = d;
        break;
      }
    Operation* def = v.getDefiningOp();
    Value& copy = constants[{def, memory}];
    if (copy) return copy;
    OpBuilder b(def);
    Operation* clone = def->hasAttr(kDeviceAttr) ? b.clone(*def) : def;
    clone->setAttr(kDeviceAttr, b.getI64IntegerAttr(memory));
    copy = clone->getResult(0);
    return copy;
  }

  // Rules 1-3: the value of `v` on `to`.
  Value transferTo(Value v, int64_t from, int64_t to) {
    if (auto earlier = v.getDefiningOp<TransferOp>(); earlier && earlier.getFrom() == to)
      return earlier.getSource();  // a round trip reads the original
    Value& resident = transfers[{v, to}];
    if (resident) return resident;
    OpBuilder b(v.getContext());
    if (auto arg = dyn_cast<BlockArgument>(v))
      b.setInsertionPointToStart(arg.getOwner());
    else
      b.setInsertionPointAfterValue(v);
    auto transfer = TransferOp::create(b, v.getLoc(), v.getType(), v, b.getI64IntegerAttr(from),
                                       b.getI64IntegerAttr(to),
                                       inPlace(from, to) ? b.getUnitAttr() : UnitAttr());
    resident = transfer.getResult();
    return resident;
  }

  bool inPlace(int64_t from, int64_t to) const {
    return !copySharedMemory && schedule::SharesMemory(kinds, from, to);
  }

  SmallVector<StringRef> kinds;
  bool copySharedMemory;
  DenseMap<std::pair<Operation*, int64_t>, Value> constants;
  DenseMap<std::pair<Value, int64_t>, Value> transfers;
};

class InsertTransfers : public impl::InsertTransfersBase<InsertTransfers> {
 public:
  using InsertTransfersBase::InsertTransfersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (schedule::DeviceKinds(module).empty()) {
      module.emitError("hexir-insert-transfers: the module has no hexir.devices list");
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal()) TransferInserter(module, copySharedMemory).run(func);
    // Rule 4, and constants no use reads any more (each use took its device's copy).
    SmallVector<Operation*> dead;
    module.walk([&](Operation* op) {
      if ((isa<TransferOp>(op) || (IsPerDeviceConstant(op) && op->getParentOfType<func::FuncOp>())) &&
          op->use_empty())
        dead.push_back(op);
    });
    for (Operation* op : dead) op->erase();
  }
};

}  // namespace
}  // namespace hexir
