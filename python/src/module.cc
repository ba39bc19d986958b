#include "python/src/module.h"

#include <map>
#include <memory>

#include <pybind11/stl.h>

#include "hal/module/hal_module.h"
#include "python/src/arguments.h"
#include "python/src/devices.h"
#include "python/src/errors.h"
#include "python/src/function.h"
#include "python/src/module_state.h"
#include "vm/module.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

class Module {
 public:
  explicit Module(std::shared_ptr<ModuleState> state) : state_(std::move(state)) {}

  // The hexir.Function for `name`, made on first use; later lookups return the same object.
  py::object Get(const std::string& name) {
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    vm::Function fn = ValueOrRaise(state_->Lookup(name));
    py::object f = MakeFunction(state_, std::make_shared<const FunctionAbi>(ValueOrRaise(DescribeFunction(std::move(fn)))));
    functions_.emplace(name, f);
    return f;
  }
  std::vector<std::string> Exports() const {
    std::vector<std::string> names;
    for (const auto& e : state_->module().exports()) names.emplace_back(e.name);
    return names;
  }
  void Close() {
    py::gil_scoped_release unlocked;
    state_->Close();
  }
  ModuleState& state() { return *state_; }

 private:
  std::shared_ptr<ModuleState> state_;
  std::map<std::string, py::object> functions_;  // hexir.Function objects (no cycle: they hold state_)
};

Module Load(py::object source, py::object devices, int cpu_threads) {
  std::vector<std::string> uris;
  if (py::isinstance<py::str>(devices)) {
    uris.push_back(devices.cast<std::string>());
  } else {
    for (py::handle d : devices) uris.push_back(py::str(d));
  }
  if (uris.size() != 1) {
    RaiseIfError(Unimplemented("hexir.load: devices=", py::repr(devices).cast<std::string>(),
                               ": a module is bound to exactly one device so far"));
  }
  py::buffer_info bytes;  // the module's bytes when given in memory
  std::string path;
  const bool from_memory = PyObject_CheckBuffer(source.ptr());
  if (from_memory) {
    bytes = py::reinterpret_borrow<py::buffer>(source).request();
  } else {
    path = py::str(py::module_::import("os").attr("fspath")(source));
  }
  auto state = [&]() -> StatusOr<std::shared_ptr<ModuleState>> {
    py::gil_scoped_release unlocked;
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<hal::Device> device, GetDevice(uris[0], cpu_threads));
    StatusOr<vm::Ref<vm::Module>> module =
        from_memory ? vm::Module::LoadFromMemory(bytes.ptr, size_t(bytes.size * bytes.itemsize))
                    : vm::Module::LoadFromFile(path);
    if (!module.ok()) return std::move(module).status();
    std::unique_ptr<vm::Context> context = vm::Context::Create();
    HEXIR_RETURN_IF_ERROR(context->RegisterNativeModule(hal::CreateHalModule(device)));
    Status st = context->LoadModule(**module);
    if (!st.ok()) return std::move(st).WithContext(StrCat("module '", from_memory ? (*module)->name() : path, "'"));
    return std::make_shared<ModuleState>(std::move(*module), std::move(device), std::move(context));
  }();
  return Module(ValueOrRaise(std::move(state)));
}

}  // namespace

void BindModule(py::module_& m) {
  BindFunction(m);

  // dynamic_attr: `module.name` caches the Function in the instance's __dict__, so later
  // lookups are a dict hit (no __getattr__, no pybind11 dispatch).
  py::class_<Module>(m, "Module", py::dynamic_attr(), "A compiled module loaded on a device.")
      .def("__getitem__", &Module::Get)
      .def("__getattr__", [](py::object self, const std::string& name) -> py::object {
        Module& mod = self.cast<Module&>();
        if (mod.state().module().FindExport(name) < 0) {
          std::string exports;
          for (const std::string& e : mod.Exports()) exports += (exports.empty() ? "" : ", ") + e;
          throw py::attribute_error(StrCat("module '", mod.state().name(), "' has no function '",
                                           name, "' (exports: ", exports, ")"));
        }
        py::object function = mod.Get(name);
        py::setattr(self, name.c_str(), function);
        return function;
      })
      .def_property_readonly("functions", &Module::Exports)
      .def_property_readonly("name", [](Module& mod) { return mod.state().name(); })
      .def_property_readonly("device", [](Module& mod) { return DeviceHandle{mod.state().device()}; })
      .def_property_readonly("closed", [](Module& mod) { return mod.state().closed(); })
      .def("close", &Module::Close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Module& mod, py::args) { mod.Close(); })
      .def("__repr__", [](Module& mod) {
        return StrCat("hexir.Module('", mod.state().name(), "', device='", mod.state().device()->uri(), "')");
      });

  m.def("load", &Load, py::arg("module"), py::arg("devices") = std::vector<std::string>{"cpu"},
        py::arg("cpu_threads") = -1,
        "Loads a .vmfb (bytes or a path) on devices=[uri] (\"cpu\", \"cuda\", \"cuda:N\").");
}

}  // namespace hexir::python
