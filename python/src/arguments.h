// Python values <-> VM variants for one function, following its signature ("rri_r") and its
// reflection ("abi.args", "abi.results").
//
// Arguments: a ref ('r') takes a hexir.Tensor, a NumPy array, a DLPack producer (torch
// tensors) or anything numpy.asarray accepts (Python scalars and lists, converted to the
// reflected element type); an i64 ('i') takes an int or bool; an f64 ('f') an int or float.
// Shapes and element types of tensors are checked by the module itself (hal.buffer_view.assert),
// whose message names the input.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "hal/api.h"
#include "tools/common/invocation.h"
#include "vm/api.h"

namespace hexir::python {

struct FunctionAbi {
  vm::Function function;
  std::string arg_kinds;     // one of 'i', 'f', 'r' per argument
  std::string result_kinds;
  std::vector<tools::AbiType> args;     // reflected types (may be empty: no reflection)
  std::vector<tools::AbiType> results;
  bool one_ref_result = false;  // result_kinds == "r": the result is returned bare, no tuple
  std::string Describe() const;  // "main(tensor<2x4xf32>) -> tensor<2x3xf32>"
};

// Parses the signature and reflection of `function` (errors name the function).
StatusOr<FunctionAbi> DescribeFunction(vm::Function function);

// Converts args[0..count) (with the GIL held) to VM arguments on `device` into `out`
// (cleared first; its capacity is reused). Raises hexir.Error naming the input for a wrong
// count or kind; `out` may then hold the inputs converted so far. A hexir.Parameters as the
// last argument supplies every remaining argument (parameters.h).
void ConvertArguments(const FunctionAbi& abi, hal::Device& device, PyObject* const* args,
                      size_t count, std::vector<vm::Variant>& out);

// Converts results: None for none, the value for one, a tuple for several. Moves the refs
// out of `results` (the tensors take them over).
pybind11::object ConvertResults(const FunctionAbi& abi, const vm::Ref<hal::Device>& device,
                                std::vector<vm::Variant>& results);

}  // namespace hexir::python
