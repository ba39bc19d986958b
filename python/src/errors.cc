#include "python/src/errors.h"

namespace py = pybind11;

namespace hexir::python {
namespace {
PyObject* error_type = nullptr;  // a strong reference kept for the life of the process
}  // namespace

void DefineErrorType(py::module_& module) {
  error_type = PyErr_NewExceptionWithDoc(
      "hexir._runtime.Error",
      "A Hexir runtime error: .code is the status code (\"invalid_argument\", \"not_found\", "
      "...), str() is the runtime's message naming the offending thing.",
      PyExc_RuntimeError, nullptr);
  if (!error_type) throw py::error_already_set();
  module.add_object("Error", py::handle(error_type).inc_ref());
}

void RaiseError(const Status& status) {
  py::object error = py::reinterpret_borrow<py::object>(error_type)(status.message());
  error.attr("code") = StatusCodeName(status.code());
  PyErr_SetObject(error_type, error.ptr());
  throw py::error_already_set();
}

}  // namespace hexir::python
