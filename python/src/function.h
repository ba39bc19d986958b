// hexir.Function and hexir.Future: calling an exported function of a loaded module, on the
// calling thread or (async_) on the module's worker thread.
//
// hexir.Function is a plain CPython type called through vectorcall: a call builds no
// argument tuple, goes through no pybind11 dispatcher and, in the common case, allocates
// nothing but its result objects (the argument and result vectors are kept by the Function
// and reused). Arguments are converted with the GIL held, the invocation runs with it
// released, results are converted with it held again (python/README.md "Speed").
//
// Ownership: a Function holds its module's state (module_state.h) and its ABI; it outlives
// the Module it came from (calls then fail: the module is closed or gone).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "python/src/arguments.h"
#include "python/src/module_state.h"

namespace hexir::python {

// A new hexir.Function object calling `abi` on `module`.
pybind11::object MakeFunction(std::shared_ptr<ModuleState> module, std::shared_ptr<const FunctionAbi> abi);

// hexir.Function and hexir.Future.
void BindFunction(pybind11::module_& m);

}  // namespace hexir::python
