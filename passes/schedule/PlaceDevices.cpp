// hexir-place-devices: the affinity analysis. In a module of several devices (`hexir.devices`)
// every hexir.dispatch gets `hexir.device = N`, every tensor global the device of its first
// reader; passes/schedule/Affinity.h says where every other value then lives.
//
//   rule 1  explicit: a dispatch's own annotation (carried from the linalg op it was formed
//           from), else its function's `hexir.device`
//   rule 2  operands: the device holding most of its tensor operands' bytes (the first such
//           operand on a tie); constants have no device and do not vote
//   rule 3  consumers: a dispatch none of whose operands has a device (constants, globals,
//           undecided producers) takes the device of its first placed consumer: a dispatch, a
//           return (the function's result device), a call (the callee's device), a global store
//   rule 4  the rest: its function's device
//   rule 5  arguments: an unannotated tensor argument of a public function whose readers all
//           need it on one device (dispatches placed there, through reshapes and casts; shape
//           queries read no bytes) lives on that device: its caller uploads it there
//           (abi.arg_devices) rather than the function sending it over on every call
//
// Rules 2 and 3 alternate until nothing changes. With placement=auto, rule 2 becomes a cost
// model: each device's estimated time for the dispatch (its hexir-annotate-dispatch-costs
// flops and bytes over the device kind's throughput, plus a launch) plus the transfers its
// operands would need (bytes over the link's bandwidth; none between devices that share
// memory); the cheapest wins, ties to the operands' device.
//
// The initializer form (hexir.initializer) is placed last, so that lifted globals are computed
// on the device that reads them.
#include <functional>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/Passes.h"
#include "passes/schedule/Affinity.h"

namespace hexir {
#define GEN_PASS_DEF_PLACEDEVICES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Throughput of a device kind for the auto cost model: peak f32 FLOP/s, memory bytes/s and
// the cost of one dispatch. CUDA: the H200 figures of TOOLCHAIN.md (f32 51 TFLOP/s, 4.3 TB/s;
// 2 us: a graph node plus its share of a launch and of the host's wait); CPU: a few cores of
// a server and a function call per workgroup (estimates).
struct KindModel {
  StringRef kind;
  double flopsPerSecond, bytesPerSecond, launchSeconds;
};
constexpr KindModel kKindModels[] = {
    {"cpu", 2e11, 4e10, 1e-6},
    {"cuda", 5.1e13, 4.3e12, 2e-6},
};
// Host <-> GPU and GPU <-> GPU copies without shared memory: pinned PCIe, 55 GB/s on the H200.
constexpr double kLinkBytesPerSecond = 5.5e10;
// A dynamic dimension counts as this many elements in byte estimates.
constexpr int64_t kDynamicExtent = 1024;

const KindModel& ModelOf(StringRef kind) {
  for (const KindModel& m : kKindModels)
    if (m.kind == kind) return m;
  return kKindModels[0];
}

int64_t EstimatedBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t) return 0;
  int64_t n = std::max<int64_t>(1, (t.getElementTypeBitWidth() + 7) / 8);
  for (int64_t d : t.getShape()) n *= ShapedType::isDynamic(d) ? kDynamicExtent : d;
  return n;
}

// A numeric cost of executable `exe` (hexir.costs "cost.<exe>.<key>"), or `fallback` when
// unknown or dynamic.
double ExecutableCost(ExecutableOp exe, StringRef key, double fallback) {
  auto costs = exe ? exe->getAttrOfType<DictionaryAttr>(kCostsAttr) : DictionaryAttr();
  if (!costs) return fallback;
  auto value = costs.getAs<StringAttr>(("cost." + exe.getSymName() + "." + key).str());
  double parsed = 0;
  if (!value || value.getValue().getAsDouble(parsed)) return fallback;
  return parsed;
}

class Placer {
 public:
  Placer(ModuleOp module, bool autoMode)
      : module(module), kinds(schedule::DeviceKinds(module)), autoMode(autoMode) {}

  LogicalResult run() {
    SmallVector<func::FuncOp> functions, initializers;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal()) continue;
      if (failed(checkAnnotations(func))) return failure();
      (func->hasAttr(kInitializerAttr) ? initializers : functions).push_back(func);
    }
    for (func::FuncOp func : functions) {
      place(func);
      placeArguments(func);
    }
    placeGlobals();
    for (func::FuncOp func : initializers) place(func);
    return success();
  }

 private:
  LogicalResult checkOrdinal(Operation* at, Attribute attr, StringRef what) {
    auto i = dyn_cast_or_null<IntegerAttr>(attr);
    if (!attr) return success();
    if (!i) return at->emitError() << what << ": hexir.device must be an integer";
    if (i.getInt() < 0 || i.getInt() >= static_cast<int64_t>(kinds.size()))
      return at->emitError() << what << ": hexir.device = " << i.getInt()
                             << " is not a device of this module (" << kinds.size()
                             << " target(s))";
    return success();
  }

  LogicalResult checkAnnotations(func::FuncOp func) {
    if (failed(checkOrdinal(func, func->getAttr(kDeviceAttr), "function '" + func.getName().str() + "'")))
      return failure();
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (failed(checkOrdinal(func, func.getArgAttr(i, kDeviceAttr),
                              "argument " + std::to_string(i) + " of '" + func.getName().str() + "'")))
        return failure();
    WalkResult r = func.walk([&](DispatchOp d) {
      return failed(checkOrdinal(d, d->getAttr(kDeviceAttr), "dispatch")) ? WalkResult::interrupt()
                                                                           : WalkResult::advance();
    });
    return failure(r.wasInterrupted());
  }

  void setDevice(Operation* op, int64_t device) {
    op->setAttr(kDeviceAttr, IntegerAttr::get(IntegerType::get(op->getContext(), 64), device));
  }

  // Rule 2 (or the auto cost model): the device its operands suggest, if any has one.
  std::optional<int64_t> fromOperands(DispatchOp d) {
    llvm::SmallMapVector<int64_t, int64_t, 4> bytesOn;
    for (Value v : d.getArgs())
      if (std::optional<int64_t> home = schedule::HomeDevice(v)) bytesOn[*home] += EstimatedBytes(v);
    std::optional<int64_t> best;
    for (auto [device, bytes] : bytesOn)
      if (!best || bytes > bytesOn[*best]) best = device;
    if (!autoMode) return best;
    auto exe = SymbolTable::lookupNearestSymbolFrom<ExecutableOp>(d, d.getExecutableAttr());
    double flops = ExecutableCost(exe, "flops", 1e6);
    double bytes = ExecutableCost(exe, "bytes_read", 4e6) + ExecutableCost(exe, "bytes_written", 4e6);
    std::optional<int64_t> cheapest;
    double cheapestSeconds = 0;
    for (int64_t device = 0; device < static_cast<int64_t>(kinds.size()); ++device) {
      const KindModel& m = ModelOf(kinds[device]);
      double seconds = flops / m.flopsPerSecond + bytes / m.bytesPerSecond + m.launchSeconds;
      for (auto [home, homeBytes] : bytesOn)
        if (!schedule::SharesMemory(kinds, home, device)) seconds += homeBytes / kLinkBytesPerSecond;
      bool better = !cheapest || seconds < cheapestSeconds ||
                    (seconds == cheapestSeconds && best && device == *best);
      if (better) {
        cheapest = device;
        cheapestSeconds = seconds;
      }
    }
    return cheapest;
  }

  // Rule 3: the device of its first placed consumer.
  std::optional<int64_t> fromConsumers(DispatchOp d) {
    for (Value result : d.getResults())
      for (OpOperand& use : result.getUses()) {
        Operation* user = use.getOwner();
        if (isa<DispatchOp>(user))
          if (std::optional<int64_t> device = schedule::ExplicitDevice(user)) return device;
        if (isa<func::ReturnOp>(user))
          return schedule::ResultDevice(user->getParentOfType<func::FuncOp>());
        if (auto call = dyn_cast<func::CallOp>(user))
          if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(user, call.getCalleeAttr()))
            return schedule::ArgumentDevice(callee, use.getOperandNumber());
        if (auto store = dyn_cast<GlobalStoreOp>(user))
          if (auto global = SymbolTable::lookupNearestSymbolFrom<GlobalOp>(user, store.getGlobalAttr()))
            if (std::optional<int64_t> device = schedule::ExplicitDevice(global)) return device;
      }
    return std::nullopt;
  }

  void place(func::FuncOp func) {
    SmallVector<DispatchOp> open;
    func.walk([&](DispatchOp d) {
      if (schedule::ExplicitDevice(d)) return;
      if (std::optional<int64_t> device = schedule::ExplicitDevice(func)) {
        setDevice(d, *device);
        return;
      }
      open.push_back(d);
    });
    for (bool changed = true; changed && !open.empty();) {
      changed = false;
      SmallVector<DispatchOp> still;
      for (DispatchOp d : open) {
        if (std::optional<int64_t> device = fromOperands(d)) {
          setDevice(d, *device);
          changed = true;
        } else {
          still.push_back(d);
        }
      }
      open.clear();
      for (DispatchOp d : llvm::reverse(still)) {
        if (std::optional<int64_t> device = fromConsumers(d)) {
          setDevice(d, *device);
          changed = true;
        } else {
          open.push_back(d);
        }
      }
      std::reverse(open.begin(), open.end());
    }
    for (DispatchOp d : open) setDevice(d, schedule::FunctionDevice(func));
  }

  // Rule 5.
  void placeArguments(func::FuncOp func) {
    if (!func.isPublic()) return;
    for (BlockArgument arg : func.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()) || func.getArgAttr(arg.getArgNumber(), kDeviceAttr))
        continue;
      std::optional<int64_t> device = soleReaderDevice(arg);
      if (device && *device != schedule::FunctionDevice(func))
        func.setArgAttr(arg.getArgNumber(), kDeviceAttr,
                        IntegerAttr::get(IntegerType::get(func.getContext(), 64), *device));
    }
  }

  // The one device on which every reader of `v` needs it; nullopt when nothing reads it, the
  // readers disagree, or one is not a dispatch (the host, a call, a loop, a return, a store).
  std::optional<int64_t> soleReaderDevice(Value v) {
    std::optional<int64_t> device;
    bool agreed = true;
    std::function<void(Value)> visit = [&](Value value) {
      for (Operation* user : value.getUsers()) {
        if (!agreed) return;
        if (isa<tensor::DimOp>(user)) continue;
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(user)) {
          visit(user->getResult(0));
          continue;
        }
        std::optional<int64_t> on = isa<DispatchOp>(user) ? schedule::ExplicitDevice(user) : std::nullopt;
        if (!on || (device && *device != *on)) {
          agreed = false;
          return;
        }
        device = on;
      }
    };
    visit(v);
    return agreed ? device : std::nullopt;
  }

  // A global lives where it is first read by a dispatch (else on device 0).
  void placeGlobals() {
    for (auto global : module.getOps<GlobalOp>()) {
      if (schedule::ExplicitDevice(global)) continue;
      std::optional<int64_t> device;
      module.walk([&](GlobalLoadOp load) {
        if (device || load.getGlobal() != global.getSymName()) return;
        for (Operation* user : load->getUsers())
          if (isa<DispatchOp>(user) && !device) device = schedule::ExplicitDevice(user);
      });
      setDevice(global, device.value_or(0));
    }
  }

  ModuleOp module;
  SmallVector<StringRef> kinds;
  bool autoMode;
};

class PlaceDevices : public impl::PlaceDevicesBase<PlaceDevices> {
 public:
  using PlaceDevicesBase::PlaceDevicesBase;

  void runOnOperation() override {
    if (placement != "annotations" && placement != "auto") {
      getOperation().emitError() << "hexir-place-devices: placement must be annotations or auto, got '"
                                 << placement << "'";
      return signalPassFailure();
    }
    if (schedule::DeviceKinds(getOperation()).empty()) {
      getOperation().emitError("hexir-place-devices: the module has no hexir.devices list");
      return signalPassFailure();
    }
    if (failed(Placer(getOperation(), placement == "auto").run())) signalPassFailure();
  }
};

}  // namespace
}  // namespace hexir
