// hexir._runtime: the part of `import hexir` that runs modules. Links the runtime only (no
// LLVM, no MLIR); the compiler is hexir._compiler, imported on first use.
#include <pybind11/pybind11.h>

#include "python/src/devices.h"
#include "python/src/errors.h"
#include "python/src/module.h"
#include "python/src/parameters.h"
#include "python/src/tensor.h"

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "Hexir runtime: load .vmfb modules and call them with NumPy/DLPack tensors.";
  hexir::python::DefineErrorType(m);
  hexir::python::BindDevices(m);
  hexir::python::BindTensor(m);
  hexir::python::BindModule(m);
  hexir::python::BindParametersType(m);
}
