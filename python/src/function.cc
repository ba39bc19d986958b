#include "python/src/function.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <structmember.h>

#include "python/src/errors.h"
#include "python/src/fast_path.h"
#include "python/src/foreign_buffer.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

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

// The C++ part of a hexir.Function object.
struct FunctionData {
  std::shared_ptr<ModuleState> module;
  std::shared_ptr<const FunctionAbi> abi;
  // Argument and result vectors reused call after call (their capacity stays). `vectors_busy`
  // is read and written with the GIL held only: a call of this function from a second thread,
  // made while the first one runs with the GIL released, uses vectors of its own.
  std::vector<vm::Variant> args;
  std::vector<vm::Variant> results;
  bool vectors_busy = false;
};

// Standard layout (offsetof below); the data is made once per Function, not per call.
struct FunctionObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;  // at the type's tp_vectorcall_offset
  FunctionData* data;
};

PyTypeObject* function_type = nullptr;  // set once by BindFunction

FunctionData& Self(PyObject* self) { return *reinterpret_cast<FunctionObject*>(self)->data; }

// The vectors one call uses: the function's own when free, else fresh ones. Given back
// (emptied, the refs they held released) when the call ends, however it ends.
class CallVectors {
 public:
  explicit CallVectors(FunctionData& f) : f_(f), reused_(!f.vectors_busy) { f.vectors_busy = true; }
  ~CallVectors() {
    args().clear();
    results().clear();
    if (reused_) f_.vectors_busy = false;
  }
  std::vector<vm::Variant>& args() { return reused_ ? f_.args : own_args_; }
  std::vector<vm::Variant>& results() { return reused_ ? f_.results : own_results_; }

 private:
  FunctionData& f_;
  const bool reused_;
  std::vector<vm::Variant> own_args_, own_results_;
};

py::object Call(FunctionData& f, PyObject* const* args, size_t count) {
  RunDeferredReleases();
  CallVectors vectors(f);
  std::vector<vm::Variant>& inputs = vectors.args();
  std::vector<vm::Variant>& results = vectors.results();
  ConvertArguments(*f.abi, *f.module->device(), args, count, inputs);
  Status status;
  Py_BEGIN_ALLOW_THREADS
  status = f.module->Invoke(f.abi->function, inputs, &results);
  inputs.clear();  // the inputs' refs are released without the GIL
  Py_END_ALLOW_THREADS
  RaiseIfError(status);
  return ConvertResults(*f.abi, f.module->device(), results);
}

Future CallAsync(FunctionData& f, PyObject* const* args, size_t count) {
  RunDeferredReleases();
  auto inputs = std::make_shared<std::vector<vm::Variant>>();
  ConvertArguments(*f.abi, *f.module->device(), args, count, *inputs);
  auto state = std::make_shared<FutureState>();
  ModuleState* module = f.module.get();  // outlives its worker's jobs (it joins the worker)
  std::shared_ptr<const FunctionAbi> abi = f.abi;
  module->Post([module, abi, inputs, state] {
    std::vector<vm::Variant> results;
    Status status = module->Invoke(abi->function, *inputs, &results);
    inputs->clear();
    std::lock_guard<std::mutex> lock(state->mu);
    state->status = std::move(status);
    state->results = std::move(results);
    state->done = true;
    state->cv.notify_all();
  });
  return Future(std::move(state), f.abi, f.module->device());
}

PyObject* VectorCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_SetString(PyExc_TypeError, "hexir.Function takes positional arguments only");
    return nullptr;
  }
  return CallGuarded([&] { return Call(Self(self), args, PyVectorcall_NARGS(nargsf)); });
}

PyObject* AsyncMethod(PyObject* self, PyObject* const* args, Py_ssize_t count) {
  return CallGuarded([&] { return py::cast(CallAsync(Self(self), args, static_cast<size_t>(count))); });
}

PyObject* FunctionName(PyObject* self, void*) {
  const std::string& name = Self(self).abi->function.name;
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

PyObject* FunctionSignature(PyObject* self, void*) {
  const std::string text = Self(self).abi->Describe();
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

PyObject* FunctionRepr(PyObject* self) {
  const std::string text = "hexir.Function(" + Self(self).abi->Describe() + ")";
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

void DeallocFunction(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  delete reinterpret_cast<FunctionObject*>(self)->data;
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyMemberDef function_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef function_getset[] = {
    {"name", FunctionName, nullptr, "The exported name.", nullptr},
    {"signature", FunctionSignature, nullptr, "\"main(tensor<2x4xf32>) -> (tensor<2x3xf32>)\"", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef function_methods[] = {
    {"async_", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(AsyncMethod)), METH_FASTCALL,
     "Queues the call on the module's worker thread; returns a hexir.Future."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot function_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(DeallocFunction)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_repr, reinterpret_cast<void*>(FunctionRepr)},
    {Py_tp_members, function_members},
    {Py_tp_getset, function_getset},
    {Py_tp_methods, function_methods},
    {Py_tp_doc, const_cast<char*>("An exported function of a loaded module: f(*args) calls it, "
                                  "f.async_(*args) queues the call.")},
    {0, nullptr},
};

PyType_Spec function_spec = {
    "hexir._runtime.Function", sizeof(FunctionObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,  // final
    function_slots,
};

}  // namespace

py::object MakeFunction(std::shared_ptr<ModuleState> module, std::shared_ptr<const FunctionAbi> abi) {
  PyObject* object = function_type->tp_alloc(function_type, 0);
  if (object == nullptr) throw py::error_already_set();
  auto* f = reinterpret_cast<FunctionObject*>(object);
  f->vectorcall = VectorCall;
  f->data = new FunctionData{std::move(module), std::move(abi), {}, {}, false};
  return py::reinterpret_steal<py::object>(object);
}

void BindFunction(py::module_& m) {
  py::class_<Future>(m, "Future", "The pending result of Function.async_(...).")
      .def("done", &Future::done)
      .def("wait", &Future::wait, py::arg("timeout") = py::none(),
           "Waits (GIL released) until the call has run; False on timeout.")
      .def("result", &Future::result, py::arg("timeout") = py::none(),
           "The call's results (tensors stay on the device until read); raises its error.");

  py::object type = py::reinterpret_steal<py::object>(PyType_FromSpec(&function_spec));
  if (!type) throw py::error_already_set();
  function_type = reinterpret_cast<PyTypeObject*>(type.ptr());
  m.attr("Function") = type;  // the module keeps the type alive
}

}  // namespace hexir::python
