#include "python/src/module.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <pybind11/stl.h>

#include "hal/module/hal_module.h"
#include "python/src/arguments.h"
#include "python/src/devices.h"
#include "python/src/errors.h"
#include "python/src/foreign_buffer.h"
#include "python/src/fast_path.h"
#include "vm/module.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

// Runs jobs in order on one thread; Stop() runs what is queued, then joins.
class Worker {
 public:
  ~Worker() { Stop(); }
  void Post(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) return;
      stopping_ = true;
      cv_.notify_one();
    }
    thread_.join();
    stopping_ = false;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and everything queued has run
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // destroy the captured arguments outside the lock
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

class ModuleState {
 public:
  ModuleState(vm::Ref<vm::Module> module, vm::Ref<hal::Device> device, std::unique_ptr<vm::Context> context)
      : module_(std::move(module)), device_(std::move(device)), context_(std::move(context)) {}
  ~ModuleState() { worker_.Stop(); }

  std::string name() const { return std::string(module_->name()); }
  const vm::Ref<hal::Device>& device() const { return device_; }
  const vm::Module& module() const { return *module_; }

  Status Invoke(const vm::Function& fn, std::vector<vm::Variant>& args, std::vector<vm::Variant>* results) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!context_) return FailedPrecondition("module '", name(), "' is closed; function '", fn.name, "' cannot be called");
    return context_->Invoke(fn, Span<vm::Variant>(args.data(), args.size()), results);
  }
  StatusOr<vm::Function> Lookup(const std::string& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!context_) return FailedPrecondition("module '", name(), "' is closed");
    return context_->LookupFunction(fn);
  }
  void Post(std::function<void()> job) { worker_.Post(std::move(job)); }
  void Close() {
    worker_.Stop();
    std::lock_guard<std::mutex> lock(mu_);
    context_.reset();
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !context_;
  }

 private:
  vm::Ref<vm::Module> module_;
  vm::Ref<hal::Device> device_;
  std::mutex mu_;
  std::unique_ptr<vm::Context> context_;  // null once closed
  Worker worker_;
};

struct FutureState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::vector<vm::Variant> results;
};

class Future {
 public:
  Future(std::shared_ptr<FutureState> state, std::shared_ptr<const FunctionAbi> abi, vm::Ref<hal::Device> device)
      : state_(std::move(state)), abi_(std::move(abi)), device_(std::move(device)) {}

  bool done() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->done;
  }
  // Waits (GIL released) up to timeout seconds (None: forever); true when done.
  bool wait(py::object timeout) const {
    const double seconds = timeout.is_none() ? -1.0 : timeout.cast<double>();
    py::gil_scoped_release unlocked;
    std::unique_lock<std::mutex> lock(state_->mu);
    auto ready = [&] { return state_->done; };
    if (seconds < 0) {
      state_->cv.wait(lock, ready);
      return true;
    }
    return state_->cv.wait_for(lock, std::chrono::duration<double>(seconds), ready);
  }
  py::object result(py::object timeout) {
    if (!wait(timeout)) {
      RaiseIfError(DeadlineExceeded("function '", abi_->function.name, "' did not finish within ",
                                    py::str(timeout).cast<std::string>(), " s"));
    }
    if (!converted_) {
      RaiseIfError(state_->status);
      converted_ = ConvertResults(*abi_, device_, state_->results);
      state_->results.clear();
    }
    return *converted_;
  }

 private:
  std::shared_ptr<FutureState> state_;
  std::shared_ptr<const FunctionAbi> abi_;
  vm::Ref<hal::Device> device_;
  std::optional<py::object> converted_;
};

class Function {
 public:
  Function(std::shared_ptr<ModuleState> module, std::shared_ptr<const FunctionAbi> abi)
      : module_(std::move(module)), abi_(std::move(abi)) {}

  py::object Call(py::args args) {
    RunDeferredReleases();
    std::vector<vm::Variant> inputs = ConvertArguments(*abi_, *module_->device(), args);
    std::vector<vm::Variant> results;
    Status status;
    {
      py::gil_scoped_release unlocked;
      status = module_->Invoke(abi_->function, inputs, &results);
      inputs.clear();
    }
    RaiseIfError(status);
    return ConvertResults(*abi_, module_->device(), results);
  }

  Future CallAsync(py::args args) {
    RunDeferredReleases();
    auto inputs = std::make_shared<std::vector<vm::Variant>>(ConvertArguments(*abi_, *module_->device(), args));
    auto state = std::make_shared<FutureState>();
    ModuleState* module = module_.get();  // outlives its worker's jobs (it joins the worker)
    std::shared_ptr<const FunctionAbi> abi = abi_;
    module_->Post([module, abi, inputs, state] {
      std::vector<vm::Variant> results;
      Status status = module->Invoke(abi->function, *inputs, &results);
      inputs->clear();
      std::lock_guard<std::mutex> lock(state->mu);
      state->status = std::move(status);
      state->results = std::move(results);
      state->done = true;
      state->cv.notify_all();
    });
    return Future(std::move(state), abi_, module_->device());
  }

  const FunctionAbi& abi() const { return *abi_; }

 private:
  std::shared_ptr<ModuleState> module_;
  std::shared_ptr<const FunctionAbi> abi_;
};

class Module {
 public:
  explicit Module(std::shared_ptr<ModuleState> state) : state_(std::move(state)) {}

  Function Get(const std::string& name) {
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    vm::Function fn = ValueOrRaise(state_->Lookup(name));
    Function f(state_, std::make_shared<const FunctionAbi>(ValueOrRaise(DescribeFunction(std::move(fn)))));
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
  std::map<std::string, Function> functions_;
};

// Set once by BindModule.
const py::detail::type_info* function_type = nullptr;

// Function.__call__ as the type's tp_call slot: a call skips pybind11's dispatcher (overload
// resolution, casting `self` and packing py::args), the largest part of the binding's
// per-call cost (python/README.md "Speed").
PyObject* CallFunctionSlot(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) > 0) {
    PyErr_SetString(PyExc_TypeError, "hexir.Function takes positional arguments only");
    return nullptr;
  }
  Function* function = InstanceOf<Function>(self, function_type);
  if (function == nullptr) {
    PyErr_SetString(PyExc_TypeError, "hexir.Function.__call__ needs a hexir.Function");
    return nullptr;
  }
  return CallGuarded([&] { return function->Call(py::reinterpret_borrow<py::args>(args)); });
}

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
  py::class_<Future>(m, "Future", "The pending result of Function.async_(...).")
      .def("done", &Future::done)
      .def("wait", &Future::wait, py::arg("timeout") = py::none(),
           "Waits (GIL released) until the call has run; False on timeout.")
      .def("result", &Future::result, py::arg("timeout") = py::none(),
           "The call's results (tensors stay on the device until read); raises its error.");

  py::class_<Function> function(m, "Function", py::is_final(),
                                "An exported function of a loaded module.");
  function.def("async_", &Function::CallAsync,
           "Queues the call on the module's worker thread; returns a hexir.Future.")
      .def_property_readonly("name", [](const Function& f) { return f.abi().function.name; })
      .def_property_readonly("signature", [](const Function& f) { return f.abi().Describe(); })
      .def("__repr__", [](const Function& f) { return "hexir.Function(" + f.abi().Describe() + ")"; });
  function_type = RegisteredType<Function>();
  reinterpret_cast<PyTypeObject*>(function.ptr())->tp_call = CallFunctionSlot;

  py::class_<Module>(m, "Module", "A compiled module loaded on a device.")
      .def("__getitem__", &Module::Get)
      .def("__getattr__", [](Module& mod, const std::string& name) -> Function {
        if (mod.state().module().FindExport(name) < 0) {
          std::string exports;
          for (const std::string& e : mod.Exports()) exports += (exports.empty() ? "" : ", ") + e;
          throw py::attribute_error(StrCat("module '", mod.state().name(), "' has no function '",
                                           name, "' (exports: ", exports, ")"));
        }
        return mod.Get(name);
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
