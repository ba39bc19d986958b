#include "python/src/tensor.h"

#include <dlpack/dlpack.h>

#include <cstring>
#include <string>
#include <vector>

#include "python/src/devices.h"
#include "python/src/element_types.h"
#include "python/src/errors.h"
#include "python/src/foreign_buffer.h"
#include "python/src/fast_path.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

const ElementTypeInfo& InfoOf(const hal::BufferView& view) {
  const ElementTypeInfo* info = FindByCode(view.element_type());
  if (!info) RaiseIfError(Internal("buffer view of unknown element type ", view.element_type()));
  return *info;
}

// Waits for the work queued on the tensor's device (it may still write the buffer).
void WaitForPendingWork(const Tensor& t) {
  Status status;
  {
    py::gil_scoped_release unlocked;
    status = t.device->WaitIdle();
  }
  RaiseIfError(status);
}

py::array ToNumpy(const Tensor& t) {
  const ElementTypeInfo& info = InfoOf(*t.view);
  if (info.code == static_cast<int32_t>(hal::ElementType::kBF16)) {
    RaiseIfError(Unimplemented("tensor ", t.view->ShapeString(),
                               ": NumPy has no bfloat16 dtype; use torch.from_dlpack(tensor)"));
  }
  py::array out(py::dtype(std::string(info.numpy_name)), t.view->dims());
  Status status;
  {
    py::gil_scoped_release unlocked;
    status = t.device->ReadBufferAfterPendingWork(t.view->buffer(), 0, out.mutable_data(),
                                                  t.view->byte_size());
  }
  RaiseIfError(std::move(status).WithContext(StrCat("reading tensor ", t.view->ShapeString())));
  return out;
}

// DLPack export: the managed tensor owns a reference to the view.
struct Exported {
  vm::Ref<hal::BufferView> view;
  std::vector<int64_t> shape;
  DLManagedTensor managed;
};

void DeleteExported(DLManagedTensor* managed) { delete static_cast<Exported*>(managed->manager_ctx); }

// A capsule nobody consumed still owns its tensor.
void DestroyCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // consumed: renamed "used_dltensor"
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed && managed->deleter) managed->deleter(managed);
}

// Where a result's memory is, as DLPack names devices: host memory (the CPU driver, or a
// host-visible buffer) is kDLCPU; a GPU's memory is kDLCUDA with the GPU's ordinal.
DLDevice DlpackDeviceOf(const Tensor& t) {
  if (t.view->buffer().host_data()) return {kDLCPU, 0};
  const hal::Device::MemorySpace space = t.device->memory_space();
  if (space.kind == hal::Device::MemorySpace::Kind::kGpu) return {kDLCUDA, space.ordinal};
  RaiseIfError(Unimplemented("tensor ", t.view->ShapeString(), " on device '", t.device->uri(),
                             "': its memory has no DLPack device; use .numpy()"));
  return {};
}

py::tuple DlpackDevice(const Tensor& t) {
  const DLDevice d = DlpackDeviceOf(t);
  return py::make_tuple(int(d.device_type), d.device_id);
}

// The consumer's `stream` needs no event: the export waits on the host for the device's
// pending work, after which any stream of the consumer may read the memory.
py::capsule ToDlpack(const Tensor& t, py::object /*stream*/) {
  const DLDevice device = DlpackDeviceOf(t);
  const hal::Buffer& buffer = t.view->buffer();
  const uint64_t address = buffer.host_data() ? reinterpret_cast<uintptr_t>(buffer.host_data())
                                              : buffer.device_address();
  if (address == 0 && t.view->byte_size() > 0) {
    RaiseIfError(Unimplemented("tensor ", t.view->ShapeString(), " on device '", t.device->uri(),
                               "': its buffer has no address to export; use .numpy()"));
  }
  const ElementTypeInfo& info = InfoOf(*t.view);
  WaitForPendingWork(t);  // the consumer reads the memory directly
  auto* e = new Exported{t.view, t.view->dims(), {}};
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = reinterpret_cast<void*>(address);
  dl.device = device;
  dl.ndim = static_cast<int32_t>(e->shape.size());
  dl.dtype = {info.dlpack_code, info.bits, 1};
  dl.shape = e->shape.data();
  dl.strides = nullptr;  // compact row-major
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = DeleteExported;
  PyObject* capsule = PyCapsule_New(&e->managed, kCapsuleName, DestroyCapsule);
  if (!capsule) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

void ReleasePyObject(void* owner) { Py_DECREF(static_cast<PyObject*>(owner)); }

void ReleaseManagedTensor(void* owner) {
  auto* managed = static_cast<DLManagedTensor*>(owner);
  if (managed->deleter) managed->deleter(managed);
}

vm::Ref<hal::BufferView> MakeView(vm::Ref<hal::Buffer> buffer, int32_t code,
                                  std::vector<int64_t> dims) {
  return ValueOrRaise(hal::BufferView::Create(std::move(buffer), code, std::move(dims)));
}

vm::Ref<hal::BufferView> Upload(hal::Device& device, int32_t code, const std::vector<int64_t>& dims,
                                const void* data, size_t bytes) {
  auto view = [&] {
    py::gil_scoped_release unlocked;
    return hal::BufferViewFromHost(device, code, Span<const int64_t>(dims.data(), dims.size()),
                                   data, bytes);
  }();
  return ValueOrRaise(std::move(view));
}

// hexir.Tensor is a plain CPython type holding the Tensor inline: a call's result is made
// and freed without pybind11's instance registry (a hash-map insert and erase per object,
// a third of the binding's per-call cost before).
struct TensorObject {
  PyObject_HEAD
  Tensor tensor;
};

PyTypeObject* tensor_type = nullptr;  // set once by BindTensor

const Tensor& Self(PyObject* self) { return reinterpret_cast<TensorObject*>(self)->tensor; }

bool IsAligned(const void* p, size_t n) { return n == 0 || reinterpret_cast<uintptr_t>(p) % n == 0; }

}  // namespace

const Tensor* AsTensor(py::handle object) {
  if (Py_TYPE(object.ptr()) != tensor_type) return nullptr;  // hexir.Tensor is final
  return &Self(object.ptr());
}

py::object WrapTensor(Tensor tensor) {
  PyObject* object = tensor_type->tp_alloc(tensor_type, 0);
  if (object == nullptr) throw py::error_already_set();
  new (&reinterpret_cast<TensorObject*>(object)->tensor) Tensor(std::move(tensor));
  return py::reinterpret_steal<py::object>(object);
}

bool IsDlpackProducer(py::handle object) {
  return py::hasattr(object, "__dlpack__") || PyCapsule_IsValid(object.ptr(), kCapsuleName);
}

vm::Ref<hal::BufferView> ViewFromArray(hal::Device& device, py::array array) {
  py::dtype dtype = array.dtype();
  const ElementTypeInfo* info = FindByNumpyKind(dtype.kind(), dtype.itemsize());
  if (!info || py::detail::array_descriptor_proxy(dtype.ptr())->byteorder == '>') {
    RaiseIfError(InvalidArgument("NumPy dtype '", py::str(dtype).cast<std::string>(),
                                 "' has no Hexir element type (supported: float32 float16 float64 "
                                 "int8 int16 int32 int64 bool, native byte order)"));
  }
  if (!(array.flags() & py::array::c_style) || !IsAligned(array.data(), array.itemsize()))
    array = py::array::ensure(py::module_::import("numpy").attr("ascontiguousarray")(array));
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  const size_t bytes = static_cast<size_t>(array.nbytes());
  if (!UsesHostMemory(device)) return Upload(device, info->code, dims, array.data(), bytes);
  // The buffer takes over this reference to the array when the device accepts the memory.
  StatusOr<vm::Ref<hal::Buffer>> buffer = WrapPythonOwnedMemory(
      device, reinterpret_cast<uintptr_t>(array.data()), bytes, array.ptr(), ReleasePyObject);
  RaiseIfError(buffer.status());
  array.release();
  return MakeView(std::move(*buffer), info->code, std::move(dims));
}

// DLPack device types whose memory the host can read.
bool IsHostMemory(int32_t device_type) {
  return device_type == kDLCPU || device_type == kDLCUDAHost;
}

// Refuses (before the producer hands its tensor over) memory `device` can neither use in
// place nor copy: another GPU's, or a GPU's for a host-memory device (no driver here reads it).
void CheckDlpackDeviceUsable(hal::Device& device, int32_t type, int32_t id) {
  if (IsHostMemory(type)) return;
  if (type == kDLCUDA) {
    const hal::Device::MemorySpace space = device.memory_space();
    if (space.kind == hal::Device::MemorySpace::Kind::kGpu && space.ordinal == id) return;
    RaiseIfError(InvalidArgument("DLPack tensor on cuda:", id, " cannot be used by device '",
                                 device.uri(), "' (it uses only memory of its own; move the "
                                 "tensor there first, e.g. tensor.to('",
                                 space.kind == hal::Device::MemorySpace::Kind::kGpu
                                     ? StrCat("cuda:", space.ordinal)
                                     : std::string("cpu"),
                                 "'))"));
  }
  RaiseIfError(Unimplemented("DLPack tensor on device type ", type,
                             ": only CPU and CUDA memory can be imported"));
}

vm::Ref<hal::BufferView> ViewFromDlpack(hal::Device& device, py::handle producer) {
  py::object capsule;
  if (PyCapsule_IsValid(producer.ptr(), kCapsuleName)) {
    capsule = py::reinterpret_borrow<py::object>(producer);
  } else {
    int32_t type = kDLCPU, id = 0;
    if (py::hasattr(producer, "__dlpack_device__")) {
      py::tuple where = producer.attr("__dlpack_device__")();
      type = where[0].cast<int32_t>();
      id = where[1].cast<int32_t>();
    }
    CheckDlpackDeviceUsable(device, type, id);
    const uintptr_t queue = device.NativeQueueHandle();
    // GPU memory: DLPack's `stream` makes our queue wait for the producer's pending work on
    // its own stream (an event, no host wait).
    capsule = type == kDLCUDA && queue != 0 ? producer.attr("__dlpack__")(py::arg("stream") = queue)
                                            : producer.attr("__dlpack__")();
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (!managed) throw py::error_already_set();  // not a dltensor capsule, or already consumed
  const DLTensor& dl = managed->dl_tensor;
  CheckDlpackDeviceUsable(device, dl.device.device_type, dl.device.device_id);
  std::vector<int64_t> dims(dl.shape, dl.shape + dl.ndim);
  const ElementTypeInfo* info = FindByDlpack(dl.dtype);
  if (!info) {
    RaiseIfError(InvalidArgument("DLPack dtype (code ", int(dl.dtype.code), ", ", int(dl.dtype.bits),
                                 " bits, ", dl.dtype.lanes, " lanes) has no Hexir element type"));
  }
  if (dl.strides) {
    int64_t expected = 1;
    for (int i = dl.ndim - 1; i >= 0; --i) {
      if (dl.shape[i] != 1 && dl.strides[i] != expected) {
        RaiseIfError(InvalidArgument("DLPack tensor of shape ",
                                     hal::FormatShape(Span<const int64_t>(dims.data(), dims.size()), info->code),
                                     " is not contiguous (dimension ", i, " has stride ", dl.strides[i],
                                     ", expected ", expected, "); make it contiguous first"));
      }
      expected *= dl.shape[i];
    }
  }
  uint8_t* data = static_cast<uint8_t*>(dl.data) + dl.byte_offset;
  const uint64_t bytes = ValueOrRaise(hal::ComputeByteSize(Span<const int64_t>(dims.data(), dims.size()), info->code));
  const bool host_memory = IsHostMemory(dl.device.device_type);
  const bool aligned = IsAligned(data, info->bits / 8);
  if (!host_memory && !aligned) {
    RaiseIfError(InvalidArgument("DLPack tensor of shape ",
                                 hal::FormatShape(Span<const int64_t>(dims.data(), dims.size()), info->code),
                                 " on cuda:", dl.device.device_id, " is not aligned to its ",
                                 info->bits / 8, "-byte elements; make a copy first"));
  }
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);  // the managed tensor is ours now
  if (host_memory && (!UsesHostMemory(device) || !aligned)) {
    vm::Ref<hal::BufferView> view;
    Status status;
    {
      py::gil_scoped_release unlocked;
      StatusOr<vm::Ref<hal::BufferView>> v = hal::BufferViewFromHost(
          device, info->code, Span<const int64_t>(dims.data(), dims.size()), data, bytes);
      if (v.ok()) view = std::move(*v); else status = v.status();
    }
    ReleaseManagedTensor(managed);
    RaiseIfError(status);
    return view;
  }
  // In place: host memory on a host-memory device, or this GPU's memory on this GPU.
  StatusOr<vm::Ref<hal::Buffer>> buffer = WrapPythonOwnedMemory(
      device, reinterpret_cast<uintptr_t>(data), bytes, managed, ReleaseManagedTensor);
  if (!buffer.ok()) {
    ReleaseManagedTensor(managed);
    RaiseIfError(buffer.status());
  }
  return MakeView(std::move(*buffer), info->code, std::move(dims));
}

namespace {

void DeallocTensor(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<TensorObject*>(self)->tensor.~Tensor();
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyObject* TensorShape(PyObject* self, void*) {
  return CallGuarded([&] {
    const hal::BufferView& v = *Self(self).view;
    py::tuple shape(v.rank());
    for (size_t i = 0; i < v.rank(); ++i) shape[i] = v.dim(i);
    return py::object(std::move(shape));
  });
}

PyObject* TensorDtype(PyObject* self, void*) {
  return CallGuarded([&]() -> py::object {
    const ElementTypeInfo& info = InfoOf(*Self(self).view);
    if (info.code == static_cast<int32_t>(hal::ElementType::kBF16)) return py::str("bfloat16");
    return py::dtype(std::string(info.numpy_name));
  });
}

PyObject* TensorDevice(PyObject* self, void*) {
  return CallGuarded([&] { return py::cast(DeviceHandle{Self(self).device}); });
}

PyObject* TensorNbytes(PyObject* self, void*) {
  return CallGuarded([&] { return py::object(py::int_(Self(self).view->byte_size())); });
}

PyObject* TensorNumpy(PyObject* self, PyObject*) {
  return CallGuarded([&] { return py::object(ToNumpy(Self(self))); });
}

// numpy.asarray(t, dtype) (NumPy 2 also passes copy=: a new array is made either way).
PyObject* TensorArray(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"dtype", "copy", nullptr};
  PyObject* dtype = Py_None;
  PyObject* copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", const_cast<char**>(names), &dtype, &copy))
    return nullptr;
  return CallGuarded([&] {
    py::array a = ToNumpy(Self(self));
    return dtype == Py_None ? py::object(std::move(a)) : a.attr("astype")(py::handle(dtype));
  });
}

PyObject* TensorDataPtr(PyObject* self, PyObject*) {
  const hal::Buffer& b = Self(self).view->buffer();
  const uint64_t address = b.host_data() ? reinterpret_cast<uintptr_t>(b.host_data()) : b.device_address();
  if (!address) Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(address);
}

// __dlpack__(stream=None, max_version=None, dl_device=None, copy=None): newer consumers pass
// the last three; the legacy (unversioned) capsule is the answer DLPack allows then.
PyObject* TensorDlpack(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject* stream = Py_None;
  PyObject* ignored[3] = {Py_None, Py_None, Py_None};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$OOO:__dlpack__", const_cast<char**>(names),
                                   &stream, &ignored[0], &ignored[1], &ignored[2]))
    return nullptr;
  return CallGuarded([&] {
    return py::object(ToDlpack(Self(self), py::reinterpret_borrow<py::object>(stream)));
  });
}

PyObject* TensorDlpackDevice(PyObject* self, PyObject*) {
  return CallGuarded([&] { return py::object(DlpackDevice(Self(self))); });
}

PyObject* TensorRepr(PyObject* self) {
  const Tensor& t = Self(self);
  const std::string text = StrCat("hexir.Tensor(", t.view->ShapeString(), ", device='", t.device->uri(), "')");
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

PyGetSetDef tensor_getset[] = {
    {"shape", TensorShape, nullptr, "Dimensions (a tuple of ints).", nullptr},
    {"dtype", TensorDtype, nullptr, "numpy.dtype of the elements ('bfloat16', a string, for bf16).", nullptr},
    {"device", TensorDevice, nullptr, "The hexir.Device holding the data.", nullptr},
    {"nbytes", TensorNbytes, nullptr, "Size of the data in bytes.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef tensor_methods[] = {
    {"numpy", TensorNumpy, METH_NOARGS, "Copies the tensor into a new NumPy array (waits for its producer)."},
    {"__array__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(TensorArray)),
     METH_VARARGS | METH_KEYWORDS, "numpy.asarray(tensor): a copy (waits for its producer)."},
    {"data_ptr", TensorDataPtr, METH_NOARGS,
     "Address of the data as torch's data_ptr() gives it: host memory's host address, a GPU "
     "buffer's device address; None when the buffer has neither."},
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(TensorDlpack)),
     METH_VARARGS | METH_KEYWORDS, "A DLPack capsule of the data (waits for the device first)."},
    {"__dlpack_device__", TensorDlpackDevice, METH_NOARGS, "(DLPack device type, device id)."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot tensor_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(DeallocTensor)},
    {Py_tp_repr, reinterpret_cast<void*>(TensorRepr)},
    {Py_tp_getset, tensor_getset},
    {Py_tp_methods, tensor_methods},
    {Py_tp_doc, const_cast<char*>("A tensor on a device (a function's result). It stays on the device "
                                  "until read: numpy(), numpy.from_dlpack(t), torch.from_dlpack(t).")},
    {0, nullptr},
};

PyType_Spec tensor_spec = {
    "hexir._runtime.Tensor", sizeof(TensorObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,  // final; made by calls only
    tensor_slots,
};

}  // namespace

void BindTensor(py::module_& m) {
  py::object type = py::reinterpret_steal<py::object>(PyType_FromSpec(&tensor_spec));
  if (!type) throw py::error_already_set();
  tensor_type = reinterpret_cast<PyTypeObject*>(type.ptr());
  m.attr("Tensor") = type;  // the module keeps the type alive

  m.def("from_dlpack", [](py::handle producer) {
        std::string uri = "cpu";
        if (!PyCapsule_IsValid(producer.ptr(), kCapsuleName) && py::hasattr(producer, "__dlpack_device__")) {
          py::tuple where = producer.attr("__dlpack_device__")();
          if (where[0].cast<int32_t>() == kDLCUDA) uri = StrCat("cuda:", where[1].cast<int32_t>());
        }
        auto device = [&] {
          py::gil_scoped_release unlocked;
          return GetDevice(uri);
        }();
        vm::Ref<hal::Device> d = ValueOrRaise(std::move(device));
        return WrapTensor(Tensor{ViewFromDlpack(*d, producer), d});
      }, py::arg("tensor"),
      "Wraps a DLPack producer's tensor (torch, NumPy, a capsule) as a hexir.Tensor without a "
      "copy: CPU memory on the 'cpu' device, CUDA memory of GPU N on 'cuda:N'.");
}

}  // namespace hexir::python
