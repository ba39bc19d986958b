// The C++ object inside an instance of a final pybind11 class, found by an exact type
// compare: cheaper than py::isinstance + cast (no type-map lookups), for what every call
// checks (arguments, `self` of Function.__call__).
#pragma once

#include <pybind11/pybind11.h>

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

}  // namespace hexir::python
