// The CTS on the CUDA driver. Until that driver exists (or on a machine without a GPU),
// CreateDevice returns Unavailable and every case prints "HEXIR_SKIPPED: ..." instead of passing.
#include "hal/cts/cts.h"

namespace {

hexir::hal::cts::DriverConfig CudaConfig() {
  return {"cuda",
          [](const hexir::hal::DeviceOptions& o) { return hexir::hal::CreateDevice("cuda", o); },
          [](std::vector<std::string_view> e) {
            // Filled in with the CTS kernels as a cubin when the CUDA driver lands.
            hexir::vm::ExecutableView v;
            v.format = "cuda-cubin-sm_90";
            v.entry_points = std::move(e);
            return v;
          }};
}

}  // namespace

HEXIR_HAL_CTS_REGISTER("cuda", CudaConfig)
