// Internal to the CUDA driver: the process's HostPinner (hal/host_pinning.h), installed when the
// first CUDA device opens, so that a CPU device's large buffers are pinned (cuMemHostRegister,
// portable: every context's DMA reads them) and its transfers with CUDA devices go direct
// (cuda_transfer_queue.h). Thread-safety: thread-safe; the object lives for the process.
#pragma once

#include "hal/drivers/cuda/cuda_api.h"
#include "hal/host_pinning.h"

namespace hexir::hal::cuda {

// Installs the pinner once (later calls do nothing); `context` is made current on the thread
// that pins or unpins (the primary context, never released).
void InstallCudaHostPinner(const CudaApi& api, CUcontext context);

}  // namespace hexir::hal::cuda
