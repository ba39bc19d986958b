// The CUDA driver's entry point. Not built yet: CreateCudaDevice always returns Unavailable.
// The next issue implements it (dlopen of libcuda.so.1, cubin executables, CUDA graphs for
// command buffers).
#pragma once

#include "base/status.h"
#include "hal/device.h"

namespace hexir::hal::cuda {

StatusOr<vm::Ref<Device>> CreateCudaDevice(int ordinal, const DeviceOptions& options);

}  // namespace hexir::hal::cuda
