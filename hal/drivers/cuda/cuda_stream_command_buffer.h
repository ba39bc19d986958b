// A CUDA command buffer that launches its commands directly on the device stream at every
// submission (cuLaunchKernel, cuMemcpyAsync, cuMemsetD*Async): for one-shot work, generic
// command buffers re-recorded at submission, and HEXIR_CUDA_COMMAND_BUFFERS=stream. One
// stream serializes everything, so barriers need no work.
#pragma once

#include "hal/drivers/cuda/cuda_command_buffer.h"

namespace hexir::hal::cuda {

class CudaStreamCommandBuffer final : public CudaCommandBuffer {
 public:
  CudaStreamCommandBuffer(std::shared_ptr<DeviceCounters> counters,
                          std::shared_ptr<CudaShared> shared)
      : CudaCommandBuffer(std::move(counters), std::move(shared)) {}

 protected:
  Status Launch(const std::vector<BufferRef>& table, CUstream stream) override {
    return recording_.LaunchOnStream(table, stream);
  }
};

}  // namespace hexir::hal::cuda
