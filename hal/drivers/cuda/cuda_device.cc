#include "hal/drivers/cuda/cuda_device.h"

namespace hexir::hal::cuda {

StatusOr<vm::Ref<Device>> CreateCudaDevice(int ordinal, const DeviceOptions& options) {
  (void)options;
  return Unavailable("cuda:", ordinal, ": the CUDA driver is not built yet");
}

}  // namespace hexir::hal::cuda
