#include "python/src/devices.h"

#include <map>
#include <mutex>
#include <utility>

#include "python/src/errors.h"
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
  py::class_<DeviceHandle>(m, "Device", "A HAL device (shared by every module loaded on it).")
      .def_property_readonly("uri", [](const DeviceHandle& d) { return std::string(d.device->uri()); })
      .def("stats", [](const DeviceHandle& d) { return StatsDict(d.device->stats()); },
           "The device's counters (hal/stats.h) as a dict: buffers_live, dispatches_executed, ...")
      .def("wait_idle", [](const DeviceHandle& d) {
             Status status;
             {
               py::gil_scoped_release unlocked;
               status = d.device->WaitIdle();
             }
             RaiseIfError(status);
           }, "Waits (GIL released) until the device has finished all submitted work.")
      .def("put", [](const DeviceHandle& d, py::handle value) {
             if (IsDlpackProducer(value) && !py::isinstance<py::array>(value))
               return Tensor{ViewFromDlpack(*d.device, value), d.device};
             return Tensor{ViewFromArray(*d.device, py::module_::import("numpy").attr("asarray")(value)), d.device};
           }, py::arg("value"),
           "A tensor on this device from a NumPy array, a DLPack producer or anything numpy.asarray "
           "takes (zero copy for host memory on the CPU).")
      .def("trim_pool", [](const DeviceHandle& d) { d.device->TrimPool(); },
           "Returns the buffer pool's cached memory to the system.")
      .def("__repr__", [](const DeviceHandle& d) { return StrCat("hexir.Device('", d.device->uri(), "')"); });

  m.def("device", [](const std::string& uri, int cpu_threads) {
          auto device = [&] {
            py::gil_scoped_release unlocked;  // creating a CUDA device takes a while
            return GetDevice(uri, cpu_threads);
          }();
          return DeviceHandle{ValueOrRaise(std::move(device))};
        },
        py::arg("uri") = "cpu", py::arg("cpu_threads") = -1,
        "The shared device for `uri` (\"cpu\", \"cuda\", \"cuda:N\"), created on first use.");

  m.def("devices", [] {
    std::vector<std::string> uris;
    {
      py::gil_scoped_release unlocked;
      uris = hal::EnumerateDevices();
    }
    py::list out;
    for (const std::string& uri : uris) {
      py::dict d;
      d["uri"] = uri;
      d["driver"] = uri.substr(0, uri.find(':'));
      d["host_memory"] = uri.rfind("cpu", 0) == 0;
      out.append(d);
    }
    return out;
  }, "The devices that can be created here: [{'uri': 'cpu', 'driver': 'cpu', 'host_memory': True}, ...].");
}

}  // namespace hexir::python
