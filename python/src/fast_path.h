// The per-call path without pybind11's machinery: the C++ object inside an instance of a
// final pybind11 class found by an exact type compare (no type-map lookups), and C++
// exceptions turned into the Python error for functions registered with the C API
// (hexir.Function's vectorcall, Device.wait_idle, hexir.Tensor's methods).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

namespace hexir::python {

// The type_info pybind11 registered for T (call after binding the class).
template <typename T>
const pybind11::detail::type_info* RegisteredType() {
  return pybind11::detail::get_type_info(typeid(T));
}

// `object`'s T, or nullptr when `object` is not exactly of `type` (a final class).
template <typename T>
T* InstanceOf(pybind11::handle object, const pybind11::detail::type_info* type) {
  if (type == nullptr || Py_TYPE(object.ptr()) != type->type) return nullptr;
  auto* instance = reinterpret_cast<pybind11::detail::instance*>(object.ptr());
  return static_cast<T*>(instance->get_value_and_holder(type).value_ptr());
}

// Runs `body` (returning a pybind11::object) for a C-API function: its result as a new
// reference, or nullptr with the Python error set from whatever it threw.
template <typename Body>
PyObject* CallGuarded(Body&& body) {
  try {
    return body().release().ptr();
  } catch (pybind11::error_already_set& e) {
    e.restore();
  } catch (pybind11::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace hexir::python
