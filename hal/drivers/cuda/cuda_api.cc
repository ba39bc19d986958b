#include "hal/drivers/cuda/cuda_api.h"

#include <dlfcn.h>

namespace hexir::hal::cuda {
namespace {

#define HEXIR_CUDA_STR2_(x) #x
#define HEXIR_CUDA_STR_(x) HEXIR_CUDA_STR2_(x)

StatusOr<const CudaApi*> Load() {
  // RTLD_LOCAL: nothing else in the process sees these symbols; the handle is never closed
  // (the driver's threads may outlive any object of ours).
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return Unavailable("cuda driver: libcuda.so.1 could not be loaded (no NVIDIA driver on this "
                       "machine?): ", err ? err : "unknown dlopen error");
  }
  auto* api = new CudaApi();
  // The macro-expanded name is the versioned symbol the header's declaration refers to.
#define HEXIR_CUDA_RESOLVE_(name)                                                      \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(lib, HEXIR_CUDA_STR_(name))); \
  if (api->name == nullptr) {                                                          \
    delete api;                                                                        \
    return Unavailable("cuda driver: libcuda.so.1 lacks ", HEXIR_CUDA_STR_(name),        \
                       " (driver too old for CUDA 12+ graphs and memory pools?)");      \
  }
  HEXIR_CUDA_FUNCTIONS(HEXIR_CUDA_RESOLVE_)
#undef HEXIR_CUDA_RESOLVE_
#define HEXIR_CUDA_RESOLVE_OPTIONAL_(name) \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(lib, HEXIR_CUDA_STR_(name)));
  HEXIR_CUDA_OPTIONAL_FUNCTIONS(HEXIR_CUDA_RESOLVE_OPTIONAL_)
#undef HEXIR_CUDA_RESOLVE_OPTIONAL_
  CUresult r = api->cuInit(0);
  if (r != CUDA_SUCCESS) {
    std::string text = CudaErrorText(*api, r);
    delete api;
    return Unavailable("cuda driver: cuInit(0) failed: ", text);
  }
  if (api->cuDriverGetVersion(&api->driver_version) != CUDA_SUCCESS) api->driver_version = 0;
  return static_cast<const CudaApi*>(api);
}

}  // namespace

StatusOr<const CudaApi*> LoadCudaApi() {
  static const StatusOr<const CudaApi*> api = Load();
  return api;
}

std::string CudaErrorText(const CudaApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return StrCat("CUDA error ", static_cast<int>(result));
  }
  if (api.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) return name;
  return StrCat(name, " (", text, ")");
}

Status CudaStatus(const CudaApi& api, CUresult result, std::string_view operation) {
  if (result == CUDA_SUCCESS) return Status::Ok();
  std::string message = StrCat(operation, ": ", CudaErrorText(api, result));
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    return Status(StatusCode::kResourceExhausted, std::move(message));
  }
  return Status(StatusCode::kInternal, std::move(message));
}

}  // namespace hexir::hal::cuda
