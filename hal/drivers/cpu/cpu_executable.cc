#include "hal/drivers/cpu/cpu_executable.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>


namespace hexir::hal::cpu {

CpuExecutable::CpuExecutable(std::vector<std::string> names, std::vector<uint64_t> written,
                             void* handle, int fd, std::vector<hexir_cpu_entry_fn_t> entries,
                             std::vector<EntryWork> work)
    : Executable(kCpuDriverName, kCpuExecutableFormat, std::move(names), std::move(written)),
      handle_(handle),
      fd_(fd),
      entries_(std::move(entries)),
      work_(std::move(work)) {}

// The memfd stays open while the library is loaded: glibc's dlopen reuses an already loaded
// object whose *path* matches, so closing the fd early would let a later executable that gets
// the same descriptor number (same "/proc/self/fd/N") silently receive this library.
CpuExecutable::~CpuExecutable() {
  dlclose(handle_);
  close(fd_);
}

StatusOr<vm::Ref<Executable>> CpuExecutable::Load(const vm::ExecutableView& view) {
  if (view.format != kCpuExecutableFormat) {
    return InvalidArgument("cpu driver: executable format '", view.format,
                           "' is not supported (expected '", kCpuExecutableFormat, "')");
  }
  if (view.data == nullptr || view.size < 4 || std::memcmp(view.data, "\x7f" "ELF", 4) != 0) {
    return InvalidArgument("cpu driver: executable data (", view.size,
                           " bytes) is not an ELF shared object");
  }
  // Named after its first entry point, so that profilers (perf's dso column, /proc/PID/maps)
  // tell the kernels apart: "memfd:hexir-cpu:layer_dispatch_6 (deleted)".
  std::string memfdName = "hexir-cpu";
  if (!view.entry_points.empty()) memfdName += ":" + std::string(view.entry_points[0]).substr(0, 200);
  int fd = memfd_create(memfdName.c_str(), MFD_CLOEXEC);
  if (fd < 0) return ResourceExhausted("cpu driver: memfd_create failed: ", std::strerror(errno));
  size_t written = 0;
  while (written < view.size) {
    ssize_t n = write(fd, view.data + written, view.size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string err = std::strerror(errno);
      close(fd);
      return ResourceExhausted("cpu driver: writing the executable to a memfd failed: ", err);
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    close(fd);
    return InvalidArgument("cpu driver: dlopen of the executable failed: ",
                           err ? err : "unknown error");
  }
  std::vector<std::string> names;
  std::vector<hexir_cpu_entry_fn_t> entries;
  for (size_t i = 0; i < view.entry_points.size(); ++i) {
    std::string name(view.entry_points[i]);
    dlerror();
    void* sym = dlsym(handle, name.c_str());
    if (sym == nullptr) {
      dlclose(handle);
      close(fd);
      return NotFound("cpu driver: entry point '", name, "' (ordinal ", i,
                      ") is not exported by the executable");
    }
    names.push_back(std::move(name));
    entries.push_back(reinterpret_cast<hexir_cpu_entry_fn_t>(sym));
  }
  return vm::Ref<Executable>::Adopt(
      new CpuExecutable(std::move(names), view.entry_written_bindings, handle, fd,
                        std::move(entries), EstimateEntryWork(view)));
}

}  // namespace hexir::hal::cpu
