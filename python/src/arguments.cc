#include "python/src/arguments.h"

#include <pybind11/numpy.h>

#include <cstring>

#include "python/src/devices.h"
#include "python/src/element_types.h"
#include "python/src/errors.h"
#include "python/src/parameters.h"
#include "python/src/tensor.h"
#include "vm/module.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

std::string TypeText(const FunctionAbi& abi, size_t i) {
  return i < abi.args.size() ? abi.args[i].text : std::string(1, abi.arg_kinds[i]);
}

std::string PythonTypeName(py::handle value) { return py::str(py::type::of(value).attr("__name__")); }

// A tensor made on another device: the same memory when both use host memory (after the
// producer's queue is idle), else a copy through the host.
vm::Ref<hal::BufferView> ViewOfTensor(const Tensor& t, hal::Device& device) {
  if (t.device.get() == &device) return t.view;
  if (UsesHostMemory(device) && t.view->buffer().host_data()) {
    Status idle;
    {
      py::gil_scoped_release unlocked;
      idle = t.device->WaitIdle();
    }
    RaiseIfError(idle);
    return t.view;
  }
  py::array host = py::module_::import("numpy").attr("asarray")(WrapTensor(t));
  return ViewFromArray(device, host);
}

vm::Ref<hal::BufferView> ViewOfValue(const FunctionAbi& abi, size_t i, hal::Device& device,
                                     py::handle value) {
  if (const Tensor* t = AsTensor(value)) return ViewOfTensor(*t, device);
  if (py::isinstance<py::array>(value)) return ViewFromArray(device, py::reinterpret_borrow<py::array>(value));
  if (IsDlpackProducer(value)) return ViewFromDlpack(device, value);
  // Scalars and nested lists: NumPy in the reflected element type.
  py::object dtype = py::none();
  if (i < abi.args.size()) {
    if (const ElementTypeInfo* info = FindByCode(abi.args[i].element_type))
      if (info->code != static_cast<int32_t>(hal::ElementType::kBF16)) dtype = py::str(std::string(info->numpy_name));
  }
  py::object array;
  try {
    array = py::module_::import("numpy").attr("asarray")(value, dtype);
  } catch (py::error_already_set&) {
    RaiseIfError(InvalidArgument("function '", abi.function.name, "' input ", i, ": expected ",
                                 TypeText(abi, i), ", got ", PythonTypeName(value)));
  }
  return ViewFromArray(device, py::reinterpret_borrow<py::array>(array));
}

// The buffer view in `v`, moved out of it (no refcount traffic); null, with `v` untouched,
// when it holds none.
vm::Ref<hal::BufferView> TakeView(vm::Variant& v) {
  if (!vm::RefCast<hal::BufferView>(v.ref.get())) return nullptr;
  return vm::Ref<hal::BufferView>::Adopt(static_cast<hal::BufferView*>(v.ref.release()));
}

bool IsInteger(py::handle v) {
  return PyLong_Check(v.ptr()) || (PyIndex_Check(v.ptr()) && !PyFloat_Check(v.ptr()));
}

}  // namespace

std::string FunctionAbi::Describe() const {
  auto list = [](const std::vector<tools::AbiType>& types, const std::string& kinds) {
    std::string s;
    for (size_t i = 0; i < kinds.size(); ++i)
      s += (i ? ", " : "") + (i < types.size() ? types[i].text : std::string(1, kinds[i]));
    return s;
  };
  return StrCat(function.name, "(", list(args, arg_kinds), ") -> (", list(results, result_kinds), ")");
}

StatusOr<FunctionAbi> DescribeFunction(vm::Function function) {
  FunctionAbi abi;
  size_t us = function.signature.find('_');
  abi.arg_kinds = function.signature.substr(0, us);
  abi.result_kinds = us == std::string::npos ? "" : function.signature.substr(us + 1);
  auto args = tools::ParseAbiTypes(std::string(function.attr("abi.args")));
  auto results = tools::ParseAbiTypes(std::string(function.attr("abi.results")));
  if (!args.ok()) return std::move(args).status().WithContext(StrCat("function '", function.name, "'"));
  if (!results.ok()) return std::move(results).status().WithContext(StrCat("function '", function.name, "'"));
  abi.args = std::move(*args);
  abi.results = std::move(*results);
  abi.one_ref_result = abi.result_kinds == "r";
  abi.function = std::move(function);
  return abi;
}

namespace {

// args[0..count) as the function's first `count` arguments, into out[0..count) (`out` is
// empty on entry).
void ConvertPositional(const FunctionAbi& abi, hal::Device& device, PyObject* const* args,
                       size_t count, std::vector<vm::Variant>& out) {
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    py::handle value = args[i];
    if (AsParameters(value)) {
      RaiseIfError(InvalidArgument("function '", abi.function.name, "' input ", i,
                                   ": a hexir.Parameters must be the last argument"));
    }
    switch (abi.arg_kinds[i]) {
      case 'r':
        out[i].ref = ViewOfValue(abi, i, device, value);
        break;
      case 'i':
        if (!IsInteger(value)) {
          RaiseIfError(InvalidArgument("function '", abi.function.name, "' input ", i, ": expected ",
                                       TypeText(abi, i), " (an int), got ", PythonTypeName(value)));
        }
        out[i].bits = value.cast<int64_t>();
        break;
      default: {  // 'f': the bits of an f64
        if (!IsInteger(value) && !PyFloat_Check(value.ptr()) && !py::hasattr(value, "__float__")) {
          RaiseIfError(InvalidArgument("function '", abi.function.name, "' input ", i, ": expected ",
                                       TypeText(abi, i), " (a float), got ", PythonTypeName(value)));
        }
        double f = py::float_(py::reinterpret_borrow<py::object>(value));
        std::memcpy(&out[i].bits, &f, 8);
      }
    }
  }
}

}  // namespace

void ConvertArguments(const FunctionAbi& abi, hal::Device& device, PyObject* const* args,
                      size_t count, std::vector<vm::Variant>& out) {
  out.clear();
  const size_t expected = abi.arg_kinds.size();
  // A hexir.Parameters as the last argument fills every remaining argument.
  Parameters* parameters = count > 0 ? AsParameters(args[count - 1]) : nullptr;
  if (parameters && count <= expected) {
    const size_t first = count - 1;
    std::vector<vm::Ref<hal::BufferView>> views = BindParameters(
        *parameters, device, abi.args, first,
        StrCat("module '", abi.function.module->name(), "': @", abi.function.name));
    ConvertPositional(abi, device, args, first, out);
    out.resize(expected);
    for (size_t i = 0; i < views.size(); ++i) out[first + i].ref = std::move(views[i]);
    return;
  }
  if (count != expected) {
    RaiseIfError(InvalidArgument("function '", abi.function.name, "' expects ", expected,
                                 " inputs (", abi.Describe(), "), got ", count));
  }
  ConvertPositional(abi, device, args, count, out);
}

py::object ConvertResults(const FunctionAbi& abi, const vm::Ref<hal::Device>& device,
                          std::vector<vm::Variant>& results) {
  if (abi.one_ref_result && results.size() == 1) {  // the common case: no tuple
    if (vm::Ref<hal::BufferView> view = TakeView(results[0])) return WrapTensor(Tensor{std::move(view), device});
  }
  py::tuple out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const char kind = i < abi.result_kinds.size() ? abi.result_kinds[i] : 'r';
    if (kind == 'i') {
      out[i] = py::int_(results[i].bits);
    } else if (kind == 'f') {
      double f;
      std::memcpy(&f, &results[i].bits, 8);
      out[i] = py::float_(f);
    } else {
      vm::Ref<hal::BufferView> view = TakeView(results[i]);
      if (!view) {
        RaiseIfError(Unimplemented("function '", abi.function.name, "' result ", i, " is a ",
                                   results[i].ref ? results[i].ref->type_name() : "null ref",
                                   ", which Python cannot receive yet"));
      }
      out[i] = WrapTensor(Tensor{std::move(view), device});
    }
  }
  if (out.size() == 0) return py::none();
  if (out.size() == 1) return out[0];
  return std::move(out);
}

}  // namespace hexir::python
