#include "compiler/Pipeline.h"

#include "compiler/bytecode/BytecodeWriter.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "passes/Passes.h"
#include "passes/codegen/CUDAPasses.h"

namespace hexir::compiler {

void RegisterDialects(mlir::DialectRegistry& registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<hexir::HexirDialect, hexir::vmir::VMDialect>();
}

void RegisterPasses() {
  mlir::registerAllPasses();
  hexir::registerHexirPasses();
  hexir::registerHexirCUDAPasses();
}

mlir::LogicalResult BuildPipeline(mlir::OpPassManager& pm, const CompileOptions& options) {
  if (options.target != "cpu" && options.target != "cuda") return mlir::failure();
  pm.addPass(hexir::createVerifyInput(VerifyInputOptions{options.target}));
  pm.addPass(hexir::createFormDispatchRegions(
      FormDispatchRegionsOptions{options.fuse_elementwise}));
  pm.addPass(hexir::createOutlineDispatchRegions());
  pm.addPass(hexir::createDeduplicateExecutables());
  if (options.target == "cuda") {  // same host program; only the executables differ
    pm.addPass(hexir::createCUDADistributeThreads());
    pm.addPass(hexir::createCUDALowerExecutables(
        CUDALowerExecutablesOptions{options.cuda_chip, options.cuda_features}));
    pm.addPass(hexir::createCUDASerializeExecutables(
        CUDASerializeExecutablesOptions{options.cuda_chip, options.cuda_format, ""}));
    pm.addPass(hexir::createConvertToVM());
    return mlir::success();
  }
  pm.addPass(hexir::createCPUDistributeWorkgroups(
      CPUDistributeWorkgroupsOptions{options.max_workgroups}));
  pm.addPass(hexir::createCPULowerExecutables());
  CPUSerializeExecutablesOptions serialize;
  serialize.cpu = options.cpu;
  pm.addPass(hexir::createCPUSerializeExecutables(serialize));
  pm.addPass(hexir::createConvertToVM());
  return mlir::success();
}

mlir::LogicalResult CompileModule(mlir::ModuleOp module, const CompileOptions& options,
                                  std::vector<uint8_t>* out) {
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  if (mlir::failed(BuildPipeline(pm, options))) {
    return module.emitError() << "unsupported target '" << options.target
                              << "' (supported: cpu, cuda)";
  }
  if (mlir::failed(pm.run(module))) return mlir::failure();
  return WriteBytecodeModule(module, out);
}

}  // namespace hexir::compiler
