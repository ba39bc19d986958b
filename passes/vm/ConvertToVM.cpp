// hexir-convert-to-vm: lowers host functions (func.func on tensors and scalars, control flow
// already in `cf` form, dispatches grouped in `hexir.execute` regions by passes/schedule) to
// hexir_vm ops calling the HAL imports of hal/module/hal_imports.def.
//
// Why it looks like this (see passes/README.md and compiler/README.md "Runtime model"):
// - The schedule is explicit IR: each `hexir.execute` is one command buffer recorded once per
//   context (into a ref global) with binding-table slots only and replayed with this call's
//   buffers; `hexir.barrier` becomes a recorded barrier; non-yielded results are transients;
//   timepoints still awaited become semaphores. This pass lowers that mechanically.
// - The device queue is in order, so regions, calls and loop iterations need no semaphores
//   on one queue; the host waits only where it reads a value (`hal.device.read_*`, or the
//   caller reading a result view).
// - Tensors are (buffer ref, dims as i64 registers); dims of dynamic dimensions are read
//   from argument views once and then flow through registers.
// The lowering itself is HostLowering (HostLowering.h: one file per concern); this file is
// the pass driver and the module initializer.
#include <algorithm>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "passes/Passes.h"
#include "passes/vm/HalImports.h"
#include "passes/vm/HostLowering.h"

namespace hexir {
#define GEN_PASS_DEF_CONVERTTOVM
#include "passes/Passes.h.inc"

namespace vm_lowering {

// The module initializer: uploads every constant once into its ref global.
void BuildInitializer(ModuleState& state) {
  OpBuilder b(state.module.getContext());
  b.setInsertionPointToEnd(state.module.getBody());
  Location loc = state.module.getLoc();
  Type ref = vmir::RefType::get(b.getContext());
  auto init = func::FuncOp::create(b, loc, "__hexir_init", b.getFunctionType({}, {}));
  init.setPrivate();
  init->setAttr("hexir_vm.initializer", b.getUnitAttr());
  b.setInsertionPointToStart(init.addEntryBlock());
  DenseMap<int64_t, Value> devices;
  devices[0] = hal_import::DeviceDefault(b, loc);
  for (const ModuleState::Constant& c : state.constants) {
    Value& device = devices[c.device];
    if (!device)
      device = hal_import::DeviceAt(b, loc, vmir::ConstI64Op::create(b, loc, b.getI64Type(),
                                                                      b.getI64IntegerAttr(c.device)));
    Value data = vmir::RodataOp::create(b, loc, ref, c.value);
    Value buffer = hal_import::AllocatorAllocateInitialized(b, loc, device, data);
    vmir::GlobalStoreRefOp::create(b, loc, buffer, b.getI64IntegerAttr(c.global));
  }
  // Then the initializer forms (dispatches lifted out of functions), in module order.
  for (const std::string& form : state.initializerForms)
    vmir::CallOp::create(b, loc, TypeRange{}, FlatSymbolRefAttr::get(b.getContext(), form),
                         ValueRange{});
  vmir::ReturnOp::create(b, loc, ValueRange{});
}

}  // namespace vm_lowering

namespace {
using namespace mlir;
using vm_lowering::HostLowering;
using vm_lowering::ModuleState;

class ConvertToVM : public impl::ConvertToVMBase<ConvertToVM> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    ModuleState state(module);
    for (auto exe : module.getOps<ExecutableOp>())
      state.executableOrdinals[exe.getSymName()] = state.executableOrdinals.size();
    // Recorded callees first: their callers need their slots (vm_lowering::RecordedCallee).
    SmallVector<func::FuncOp> funcs = llvm::to_vector(module.getOps<func::FuncOp>());
    std::stable_partition(funcs.begin(), funcs.end(),
                          [](func::FuncOp f) { return f->hasAttr(kRecordsIntoCallerAttr); });
    for (func::FuncOp func : funcs) {
      if (func.isExternal()) continue;
      if (func->hasAttr(kInitializerAttr)) state.initializerForms.push_back(func.getName().str());
      if (failed(HostLowering(func, state).run())) return signalPassFailure();
    }
    for (auto global : llvm::to_vector(module.getOps<GlobalOp>())) global.erase();
    if (!state.constants.empty() || !state.initializerForms.empty())
      vm_lowering::BuildInitializer(state);
    OpBuilder b(module.getContext());
    module->setAttr("hexir_vm.ref_globals", b.getI64IntegerAttr(state.refGlobals));
  }
};


}  // namespace
}  // namespace hexir
