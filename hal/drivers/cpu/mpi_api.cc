#include "hal/drivers/cpu/mpi_api.h"

#include <dlfcn.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace hexir::hal::cpu {
namespace {

const MpiApi* g_api = nullptr;

// How long MPI_Finalize may take at exit before the process leaves without it.
constexpr auto kFinalizeLimit = std::chrono::seconds(20);

// Abandoned collectives (a failed channel) do not hold MPI_Finalize back (Open MPI 4.1), so
// every rank finalizes and mpirun sees a clean exit whatever the tool's exit status. A rank
// that died does: Open MPI's finalize waits for every process of the job, so when mpirun
// keeps the job after a death (orte_abort_on_non_zero_status 0) it would never return. A
// watchdog ends such a process with exit status 1 after kFinalizeLimit, saying why.
void FinalizeAtExit() {
  int finalized = 0;
  if (g_api == nullptr) return;
  if (g_api->MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  std::thread([] {
    std::this_thread::sleep_for(kFinalizeLimit);
    std::fprintf(stderr, "hexir: MPI_Finalize did not return within %lld s (a rank of the job died?): "
                 "exiting without it\n", static_cast<long long>(kFinalizeLimit.count()));
    std::fflush(stderr);
    _exit(1);
  }).detach();
  g_api->MPI_Finalize();
}

StatusOr<const MpiApi*> Load() {
  const char* env = std::getenv("HEXIR_MPI_LIBRARY");
  std::string path = env && *env ? env : "libmpi.so.40";
  // RTLD_GLOBAL: Open MPI's own plugins (mca_*.so) resolve libmpi's symbols through it.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return Unavailable("mpi channel: ", path, " could not be loaded (apt-get install "
                       "openmpi-bin, or name the library in HEXIR_MPI_LIBRARY): ",
                       err ? err : "unknown dlopen error");
  }
  auto* api = new MpiApi();
#define HEXIR_MPI_RESOLVE_(name)                                                       \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(lib, #name));                \
  if (api->name == nullptr) {                                                          \
    delete api;                                                                        \
    return Unavailable("mpi channel: ", path, " lacks ", #name, " (not MPI 3?)");      \
  }
  HEXIR_MPI_FUNCTIONS(HEXIR_MPI_RESOLVE_)
#undef HEXIR_MPI_RESOLVE_
#define HEXIR_MPI_RESOLVE_HANDLE_(type, field, symbol)                                     \
  api->field = reinterpret_cast<type>(dlsym(lib, "ompi_mpi_" #symbol));                   \
  if (api->field == nullptr) {                                                            \
    delete api;                                                                           \
    return Unavailable("mpi channel: ", path, " lacks ompi_mpi_" #symbol, " (not Open MPI 4?)"); \
  }
  HEXIR_MPI_HANDLES(HEXIR_MPI_RESOLVE_HANDLE_)
#undef HEXIR_MPI_RESOLVE_HANDLE_
  int initialized = 0;
  api->MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc = api->MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      delete api;
      return Unavailable("mpi channel: MPI_Init_thread failed with code ", rc);
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      delete api;
      return Unavailable("mpi channel: ", path, " provides thread level ", provided,
                         "; MPI_THREAD_SERIALIZED is needed (collectives run on a queue thread)");
    }
    std::atexit(FinalizeAtExit);
  }
  api->MPI_Comm_set_errhandler(api->comm_world, api->errors_return);
  api->MPI_Comm_rank(api->comm_world, &api->rank);
  api->MPI_Comm_size(api->comm_world, &api->size);
  g_api = api;
  return static_cast<const MpiApi*>(api);
}

}  // namespace

StatusOr<const MpiApi*> LoadMpiApi() {
  static const StatusOr<const MpiApi*> api = Load();
  return api;
}

std::string MpiErrorText(const MpiApi& api, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (api.MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return StrCat("MPI error ", code);
  }
  return StrCat("MPI error ", code, " (", std::string(text, length), ")");
}

}  // namespace hexir::hal::cpu
