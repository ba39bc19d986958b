// Internal to the CUDA driver: the free list of completion events of one queue (a device's
// compute stream, a transfer stream). Events are created on demand (timing disabled) and
// recycled after their owner no longer waits on them, so a warm queue creates none; all are
// destroyed with the pool's owner (DestroyAll, with the context current).
//
// Thread-safety: none of its own; the owning queue guards it with its lock.
#pragma once

#include <vector>

#include "base/status.h"
#include "hal/drivers/cuda/cuda_api.h"

namespace hexir::hal::cuda {

class CudaEventPool {
 public:
  // A recycled event, or a new one (`what` names the queue in the error).
  StatusOr<CUevent> Take(const CudaApi& api, const char* what) {
    if (!free_.empty()) {
      CUevent e = free_.back();
      free_.pop_back();
      return e;
    }
    CUevent e = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING),
                               "cuEventCreate(", what, ")");
    return e;
  }
  void Give(CUevent e) { free_.push_back(e); }
  void DestroyAll(const CudaApi& api) {
    for (CUevent e : free_) api.cuEventDestroy(e);
    free_.clear();
  }

 private:
  std::vector<CUevent> free_;
};

}  // namespace hexir::hal::cuda
