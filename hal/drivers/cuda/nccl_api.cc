#include "hal/drivers/cuda/nccl_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace hexir::hal::cuda {
namespace {

StatusOr<const NcclApi*> Load() {
  const char* env = std::getenv("HEXIR_NCCL_LIBRARY");
  const std::string path = env && *env ? env : "libnccl.so.2";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return Unavailable("nccl channel: ", path, " could not be loaded (name NCCL's library in "
                       "HEXIR_NCCL_LIBRARY): ", err ? err : "unknown dlopen error");
  }
  auto* api = new NcclApi();
#define HEXIR_NCCL_RESOLVE_(name)                                                 \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(lib, #name));           \
  if (api->name == nullptr) {                                                     \
    delete api;                                                                   \
    return Unavailable("nccl channel: ", path, " lacks ", #name, " (not NCCL 2?)"); \
  }
  HEXIR_NCCL_FUNCTIONS(HEXIR_NCCL_RESOLVE_)
#undef HEXIR_NCCL_RESOLVE_
  if (api->ncclGetVersion(&api->version) != ncclSuccess) api->version = 0;
  return static_cast<const NcclApi*>(api);
}

}  // namespace

StatusOr<const NcclApi*> LoadNcclApi() {
  static const StatusOr<const NcclApi*> api = Load();
  return api;
}

Status NcclStatus(const NcclApi& api, ncclResult_t result, std::string_view operation) {
  if (result == ncclSuccess) return Status::Ok();
  const char* text = api.ncclGetErrorString(result);
  return Internal(operation, ": ", text ? text : "unknown NCCL error", " (ncclResult_t ",
                  int(result), ")");
}

}  // namespace hexir::hal::cuda
