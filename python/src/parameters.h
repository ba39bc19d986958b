// hexir.Parameters: a llama2.c / GGUF checkpoint's weights (tools/common/llama_parameters.h),
// mapped once and uploaded once per (device, element type), passed as the last argument of a
// call to fill every remaining argument (the weights of @generate).
//
// Ownership: the Python object owns the mapping and the uploaded views (shared by every call);
// guarded by a mutex (async calls convert arguments on the calling thread, under the GIL).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "hal/api.h"
#include "tools/common/invocation.h"
#include "vm/ref.h"

namespace hexir::python {

class Parameters;

// The Parameters inside a hexir.Parameters object, or nullptr.
Parameters* AsParameters(pybind11::handle object);

// The weights for args[first..] of `function` on `device`: checked against the reflected
// types (errors name the argument and the tensor), uploaded on first use. Raises hexir.Error.
std::vector<vm::Ref<hal::BufferView>> BindParameters(Parameters& parameters, hal::Device& device,
                                                     const std::vector<tools::AbiType>& args,
                                                     size_t first, const std::string& function);

void BindParametersType(pybind11::module_& m);

}  // namespace hexir::python
