// Status -> Python exception: the one place where a runtime error becomes a raise.
//
// Runtime code below python/ returns Status; pybind11 reports Python errors by C++ exception,
// so the binding layer (and only it) throws: RaiseIfError sets hexir.Error (a RuntimeError
// subclass with `.code`, e.g. "invalid_argument") carrying the C++ message unchanged, then
// throws pybind11::error_already_set, which pybind11 turns back into the Python exception.
#pragma once

#include <pybind11/pybind11.h>

#include "base/status.h"

namespace hexir::python {

// Creates hexir._runtime.Error in `module` (call once, from the module initializer).
void DefineErrorType(pybind11::module_& module);

// Raises hexir.Error for `status` (not ok).
[[noreturn]] void RaiseError(const Status& status);

// Raises hexir.Error for a non-ok status; returns for ok (inline: one compare per call).
inline void RaiseIfError(const Status& status) {
  if (!status.ok()) RaiseError(status);
}

template <typename T>
T ValueOrRaise(StatusOr<T>&& value) {
  RaiseIfError(value.status());
  return std::move(value).value();
}

}  // namespace hexir::python
