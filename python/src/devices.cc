#include "python/src/devices.h"

#include <map>
#include <mutex>
#include <utility>

#include "hal/topology.h"
#include "python/src/errors.h"
#include "python/src/fast_path.h"
#include "python/src/tensor.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

struct DeviceCache {
  std::mutex mu;
  std::map<std::pair<std::string, int>, vm::Ref<hal::Device>> devices;
};

DeviceCache& cache() {
  static DeviceCache* c = new DeviceCache();  // never destroyed: see devices.h
  return *c;
}

py::dict StatsDict(const hal::DeviceStats& s) {
  py::dict d;
#define HEXIR_DEVICE_STAT(name, meaning) d[#name] = s.name;
#include "hal/device_stats.def"
  return d;
}

// Set once by BindDevices.
const py::detail::type_info* device_type = nullptr;

// Device.wait_idle as a METH_NOARGS method: the wait that follows a call in a loop, without
// pybind11's dispatcher.
PyObject* WaitIdleMethod(PyObject* self, PyObject* /*unused*/) {
  const DeviceHandle* handle = InstanceOf<const DeviceHandle>(self, device_type);
  if (handle == nullptr) {
    PyErr_SetString(PyExc_TypeError, "hexir.Device.wait_idle needs a hexir.Device");
    return nullptr;
  }
  Status status;
  Py_BEGIN_ALLOW_THREADS
  status = handle->device->WaitIdle();
  Py_END_ALLOW_THREADS
  return CallGuarded([&] {
    RaiseIfError(status);
    return py::none();
  });
}

PyMethodDef wait_idle_method = {"wait_idle", WaitIdleMethod, METH_NOARGS,
                                "Waits (GIL released) until the device has finished all submitted work."};

}  // namespace

StatusOr<vm::Ref<hal::Device>> GetDevice(const std::string& uri, int cpu_threads) {
  DeviceCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto key = std::make_pair(uri, cpu_threads);
  auto it = c.devices.find(key);
  if (it != c.devices.end()) return it->second;
  hal::DeviceOptions options;
  if (cpu_threads >= 0) {
    options.cpu_worker_count = cpu_threads;
    options.cpu_inline = cpu_threads == 0;
  }
  StatusOr<vm::Ref<hal::Device>> device = hal::CreateDevice(uri, options);
  if (!device.ok()) return std::move(device).status().WithContext(StrCat("device '", uri, "'"));
  c.devices.emplace(key, *device);
  return device;
}

bool UsesHostMemory(const hal::Device& device) { return device.uri().rfind("cpu", 0) == 0; }

void BindDevices(py::module_& m) {
  py::class_<DeviceHandle> device_class(m, "Device", py::is_final(),
                                  "A HAL device (shared by every module loaded on it).");
  device_class.def_property_readonly("uri", [](const DeviceHandle& d) { return std::string(d.device->uri()); })
      .def("stats", [](const DeviceHandle& d) { return StatsDict(d.device->stats()); },
           "The device's counters (hal/stats.h) as a dict: buffers_live, dispatches_executed, ...")
      .def("put", [](const DeviceHandle& d, py::handle value) {
             if (IsDlpackProducer(value) && !py::isinstance<py::array>(value))
               return WrapTensor(Tensor{ViewFromDlpack(*d.device, value), d.device});
             return WrapTensor(Tensor{ViewFromArray(*d.device, py::module_::import("numpy").attr("asarray")(value)), d.device});
           }, py::arg("value"),
           "A tensor on this device from a NumPy array, a DLPack producer or anything numpy.asarray "
           "takes (zero copy for host memory on the CPU).")
      .def("trim_pool", [](const DeviceHandle& d) { d.device->TrimPool(); },
           "Returns the buffer pool's cached memory to the system.")
      .def("__repr__", [](const DeviceHandle& d) { return StrCat("hexir.Device('", d.device->uri(), "')"); });
  device_type = RegisteredType<DeviceHandle>();
  py::object wait_idle = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(device_class.ptr()), &wait_idle_method));
  if (!wait_idle || PyObject_SetAttrString(device_class.ptr(), "wait_idle", wait_idle.ptr()) != 0)
    throw py::error_already_set();

  m.def("device", [](const std::string& uri, int cpu_threads) {
          auto device = [&] {
            py::gil_scoped_release unlocked;  // creating a CUDA device takes a while
            return GetDevice(uri, cpu_threads);
          }();
          return DeviceHandle{ValueOrRaise(std::move(device))};
        },
        py::arg("uri") = "cpu", py::arg("cpu_threads") = -1,
        "The shared device for `uri` (\"cpu\", \"cuda\", \"cuda:N\"), created on first use.");

  m.def("devices", [](py::object uris_or_none, uint64_t measure_bytes) {
    std::vector<std::string> uris;
    std::vector<vm::Ref<hal::Device>> devices;
    Status status;
    if (!uris_or_none.is_none()) {
      for (py::handle u : uris_or_none) uris.push_back(py::str(u));
    }
    {
      py::gil_scoped_release unlocked;  // enumerating and creating devices takes a while
      if (uris_or_none.is_none()) uris = hal::EnumerateDevices();
      for (const std::string& uri : uris) {
        StatusOr<vm::Ref<hal::Device>> d = GetDevice(uri);
        if (!d.ok()) {
          status = d.status();
          break;
        }
        devices.push_back(std::move(*d));
      }
    }
    RaiseIfError(status);
    py::list out;
    for (size_t i = 0; i < devices.size(); ++i) {
      const hal::Device::MemorySpace space = devices[i]->memory_space();
      py::dict d;
      d["uri"] = uris[i];
      d["driver"] = uris[i].substr(0, uris[i].find(':'));
      d["host_memory"] = space.kind == hal::Device::MemorySpace::Kind::kHost;
      d["memory"] = space.kind == hal::Device::MemorySpace::Kind::kHost
                        ? std::string("host")
                        : StrCat("gpu:", space.ordinal);
      py::list links;
      for (size_t j = 0; j < devices.size(); ++j) {
        if (j == i) continue;
        const hal::DeviceLink link = hal::DescribeLink(*devices[i], *devices[j]);
        py::dict l;
        l["to"] = uris[j];
        l["shared_memory"] = link.shared_memory;
        l["peer_access"] = link.peer_access;
        l["link"] = std::string(hal::LinkKindName(link.link));
        if (measure_bytes > 0) {
          StatusOr<double> gbps = [&] {
            py::gil_scoped_release unlocked;
            return hal::MeasureCopyBandwidth(*devices[i], *devices[j], measure_bytes);
          }();
          l["gbps"] = ValueOrRaise(std::move(gbps));
        }
        links.append(l);
      }
      d["links"] = links;
      out.append(d);
    }
    return out;
  }, py::arg("uris") = py::none(), py::arg("measure_bytes") = 0,
  "The devices that can be created here (or those of `uris`) and how each reaches the others: "
  "[{'uri': 'cpu', 'driver': 'cpu', 'host_memory': True, 'memory': 'host', 'links': [{'to', "
  "'shared_memory', 'peer_access', 'link', 'gbps' (copies of measure_bytes, when > 0)}]}, ...].");
}

}  // namespace hexir::python
