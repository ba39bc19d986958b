#include "hal/drivers/cuda/cuda_host_pinner.h"

#include <mutex>

namespace hexir::hal::cuda {
namespace {

class CudaHostPinner final : public HostPinner {
 public:
  CudaHostPinner(const CudaApi& api, CUcontext context) : api_(api), context_(context) {}

  bool Pin(void* p, uint64_t bytes) override {
    if (api_.cuCtxSetCurrent(context_) != CUDA_SUCCESS) return false;
    return api_.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
  }
  void Unpin(void* p) override {
    if (api_.cuCtxSetCurrent(context_) == CUDA_SUCCESS) (void)api_.cuMemHostUnregister(p);
  }

 private:
  const CudaApi& api_;
  const CUcontext context_;
};

}  // namespace

void InstallCudaHostPinner(const CudaApi& api, CUcontext context) {
  static std::once_flag once;
  std::call_once(once, [&] { InstallHostPinner(new CudaHostPinner(api, context)); });
}

}  // namespace hexir::hal::cuda
