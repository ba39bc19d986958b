// Assembles the hexir-compile pipeline and registers everything the compiler tools need.
// Not thread-safe to call the Register* functions concurrently; call them once at startup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace hexir::compiler {

struct CompileOptions {
  std::string target = "cpu";       // "cpu" or "cuda"
  std::string cpu = "host";         // LLVM CPU name, or "host" (host CPU + features)
  int64_t max_workgroups = 64;      // per dispatch, along x
  bool fuse_elementwise = true;     // fuse elementwise consumers into producers' dispatches
  std::string cuda_chip = "sm_90";  // --target=cuda: SM for nvvm + ptxas -arch
  std::string cuda_features = "+ptx80";
  std::string cuda_format = "cubin";  // "cubin" (cubin + PTX) or "ptx" (PTX only)
};

// Upstream dialects, extensions and LLVM IR translations, plus hexir and hexir_vm.
void RegisterDialects(mlir::DialectRegistry& registry);
// Upstream passes (pipelines are built from their names) and all hexir passes.
void RegisterPasses();

// input -> dispatch -> codegen (per target) -> serialize -> VM, in that order.
mlir::LogicalResult BuildPipeline(mlir::OpPassManager& pm, const CompileOptions& options);

// Runs the pipeline on `module` (which it rewrites) and writes the .vmfb bytes to `out`.
// Errors are reported as diagnostics on the module's context.
mlir::LogicalResult CompileModule(mlir::ModuleOp module, const CompileOptions& options,
                                  std::vector<uint8_t>* out);

}  // namespace hexir::compiler
