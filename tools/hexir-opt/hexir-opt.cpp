// mlir-opt with the Hexir dialects and passes registered.
#include "compiler/Pipeline.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  hexir::compiler::RegisterDialects(registry);
  hexir::compiler::RegisterPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "Hexir optimizer driver\n", registry));
}
