#include "python/src/tensor.h"

#include <dlpack/dlpack.h>

#include <cstring>
#include <string>
#include <vector>

#include "python/src/devices.h"
#include "python/src/element_types.h"
#include "python/src/errors.h"
#include "python/src/foreign_buffer.h"

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

py::tuple DlpackDevice(const Tensor& t) {
  if (t.view->buffer().host_data()) return py::make_tuple(int(kDLCPU), 0);
  std::string_view uri = t.device->uri();
  size_t colon = uri.find(':');
  int ordinal = colon == std::string_view::npos ? 0 : std::atoi(std::string(uri.substr(colon + 1)).c_str());
  return py::make_tuple(int(kDLCUDA), ordinal);
}

py::capsule ToDlpack(const Tensor& t, py::object /*stream*/) {
  uint8_t* data = t.view->buffer().host_data();
  if (!data) {
    RaiseIfError(Unimplemented("tensor ", t.view->ShapeString(), " on device '", t.device->uri(),
                               "': DLPack export of device-only memory is not supported yet; "
                               "use .numpy()"));
  }
  const ElementTypeInfo& info = InfoOf(*t.view);
  WaitForPendingWork(t);  // the consumer reads the memory directly
  auto* e = new Exported{t.view, t.view->dims(), {}};
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = data;
  dl.device = {kDLCPU, 0};
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

// Set once by BindTensor: pybind11's record of hexir.Tensor.
const py::detail::type_info* tensor_type_info = nullptr;

bool IsAligned(const void* p, size_t n) { return n == 0 || reinterpret_cast<uintptr_t>(p) % n == 0; }

}  // namespace

const Tensor* AsTensor(py::handle object) {
  if (Py_TYPE(object.ptr()) != tensor_type_info->type) return nullptr;  // hexir.Tensor is final
  auto* instance = reinterpret_cast<py::detail::instance*>(object.ptr());
  return static_cast<const Tensor*>(instance->get_value_and_holder(tensor_type_info).value_ptr());
}

py::object WrapTensor(Tensor tensor) {
  auto* owned = new Tensor(std::move(tensor));
  return py::reinterpret_steal<py::object>(py::detail::type_caster_generic::cast(
      owned, py::return_value_policy::take_ownership, py::handle(), tensor_type_info, nullptr, nullptr));
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
  auto* data = static_cast<uint8_t*>(const_cast<void*>(array.data()));
  PyObject* owner = array.release().ptr();  // the buffer's reference
  return MakeView(WrapForeignHostMemory(data, bytes, owner, ReleasePyObject), info->code,
                  std::move(dims));
}

vm::Ref<hal::BufferView> ViewFromDlpack(hal::Device& device, py::handle producer) {
  py::object capsule = PyCapsule_IsValid(producer.ptr(), kCapsuleName)
                           ? py::reinterpret_borrow<py::object>(producer)
                           : producer.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (!managed) throw py::error_already_set();  // not a dltensor capsule, or already consumed
  const DLTensor& dl = managed->dl_tensor;
  std::vector<int64_t> dims(dl.shape, dl.shape + dl.ndim);
  const ElementTypeInfo* info = FindByDlpack(dl.dtype);
  if (!info) {
    RaiseIfError(InvalidArgument("DLPack dtype (code ", int(dl.dtype.code), ", ", int(dl.dtype.bits),
                                 " bits, ", dl.dtype.lanes, " lanes) has no Hexir element type"));
  }
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost) {
    RaiseIfError(Unimplemented("DLPack tensor on device type ", int(dl.device.device_type),
                               " (", dl.device.device_type == kDLCUDA ? "CUDA" : "not host memory",
                               "): only CPU memory can be imported so far; move it to the CPU first"));
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
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);  // the managed tensor is ours now
  if (!UsesHostMemory(device) || !IsAligned(data, info->bits / 8)) {
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
  return MakeView(WrapForeignHostMemory(data, bytes, managed, ReleaseManagedTensor), info->code,
                  std::move(dims));
}

void BindTensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", py::is_final(),
                     "A tensor on a device (a function's result). It stays on the device until "
                     "read: numpy(), numpy.from_dlpack(t), torch.from_dlpack(t).")
      .def_property_readonly("shape", [](const Tensor& t) {
        py::tuple shape(t.view->rank());
        for (size_t i = 0; i < t.view->rank(); ++i) shape[i] = t.view->dim(i);
        return shape;
      })
      .def_property_readonly("dtype", [](const Tensor& t) -> py::object {
        const ElementTypeInfo& info = InfoOf(*t.view);
        if (info.code == static_cast<int32_t>(hal::ElementType::kBF16)) return py::str("bfloat16");
        return py::dtype(std::string(info.numpy_name));
      }, "numpy.dtype of the elements ('bfloat16', a string, for bf16)")
      .def_property_readonly("device", [](const Tensor& t) { return DeviceHandle{t.device}; })
      .def_property_readonly("nbytes", [](const Tensor& t) { return t.view->byte_size(); })
      .def("numpy", &ToNumpy, "Copies the tensor into a new NumPy array (waits for its producer).")
      .def("__array__", [](const Tensor& t, py::object dtype) {
        py::array a = ToNumpy(t);
        return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
      }, py::arg("dtype") = py::none())
      .def("data_ptr", [](const Tensor& t) -> py::object {
        uint8_t* p = t.view->buffer().host_data();
        if (!p) return py::none();
        return py::int_(reinterpret_cast<uintptr_t>(p));
      }, "Host address of the data for host-memory tensors, else None.")
      .def("__dlpack__", &ToDlpack, py::arg("stream") = py::none())
      .def("__dlpack_device__", &DlpackDevice)
      .def("__repr__", [](const Tensor& t) {
        return StrCat("hexir.Tensor(", t.view->ShapeString(), ", device='", t.device->uri(), "')");
      });
  tensor_type_info = py::detail::get_type_info(typeid(Tensor));

  m.def("from_dlpack", [](py::handle producer) {
        vm::Ref<hal::Device> device = ValueOrRaise(GetDevice("cpu"));
        return Tensor{ViewFromDlpack(*device, producer), device};
      }, py::arg("tensor"),
      "Wraps a DLPack producer's CPU tensor (torch, NumPy, a capsule) as a hexir.Tensor "
      "without a copy.");
}

}  // namespace hexir::python
