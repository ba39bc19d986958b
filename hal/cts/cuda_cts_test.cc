// The CTS on the CUDA driver, with the nvcc-built test kernels (hal/drivers/cuda/testing) as a
// cubin. On a machine without a GPU, or when nvcc was missing at build time, every case prints
// "HEXIR_SKIPPED: ..." and makes no assertion. The channel cases run on the NCCL channel (one
// rank: world size 1), skipped loudly when libnccl.so.2 cannot be loaded (HEXIR_NCCL_LIBRARY).
#include "hal/cts/cts.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace {

hexir::hal::cts::DriverConfig CudaConfig() {
  return {"cuda",
          [](const hexir::hal::DeviceOptions& o)
              -> hexir::StatusOr<hexir::vm::Ref<hexir::hal::Device>> {
            auto device = hexir::hal::CreateDevice("cuda", o);
            std::string missing = hexir::hal::cuda::testing::KernelsMissingReason();
            if (device.ok() && !missing.empty()) return hexir::Unavailable(missing);
            return device;
          },
          [](std::vector<std::string_view> e) {
            return hexir::hal::cuda::testing::CubinView(std::move(e));
          },
          {{"pool",
            "the CUDA driver pools through CUDA's stream-ordered memory pool "
            "(cuMemAllocAsync), which reports no per-size-class hits"}},
          /*orders_cross_device_waits_on_device=*/true};
}

}  // namespace

HEXIR_HAL_CTS_REGISTER("cuda", CudaConfig)
