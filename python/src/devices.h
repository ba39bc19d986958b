// Devices seen from Python: one hal::Device per (uri, options), shared by every module loaded
// in the process, so that a result of one module passed to another stays on the same queue.
//
// Ownership: the cache holds its devices for the life of the process (a device is expensive to
// create and may be referenced by tensors until exit); it is guarded by a mutex.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "hal/api.h"
#include "vm/ref.h"

namespace hexir::python {

// The cached device for `uri` ("cpu", "cuda", "cuda:N") with `cpu_threads` CPU workers
// (-1: the driver's default; 0: inline), created on first use. Errors name the uri.
StatusOr<vm::Ref<hal::Device>> GetDevice(const std::string& uri, int cpu_threads = -1);

// True for devices whose buffers are host memory (the CPU driver): host memory can be passed
// to them without a copy.
bool UsesHostMemory(const hal::Device& device);

// hexir.Device (uri, stats(), trim_pool()) and hexir.devices().
void BindDevices(pybind11::module_& m);

// Python wrapper: a reference to a device.
struct DeviceHandle {
  vm::Ref<hal::Device> device;
};

}  // namespace hexir::python
