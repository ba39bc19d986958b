// CPU executables: ELF shared objects (format "cpu-elf-x86_64") loaded from memory.
//
// Loading copies the bytes into an anonymous memfd, dlopens it through /proc/self/fd/N
// (RTLD_NOW | RTLD_LOCAL: symbols stay private to this executable) and resolves every entry
// point once. Nothing touches the file system.
//
// Ownership: refcounted; owns the dlopen handle and the memfd, released together on
// destruction. Immutable: thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "hal/drivers/cpu/dispatch_abi.h"
#include "hal/drivers/cpu/work_estimate.h"
#include "hal/executable.h"
#include "hal/stats.h"
#include "vm/native_module.h"

namespace hexir::hal::cpu {

inline constexpr const char kCpuDriverName[] = "cpu";
inline constexpr const char kCpuExecutableFormat[] = "cpu-elf-x86_64";

class CpuExecutable final : public Executable {
 public:
  // Errors: wrong format, bytes that are not ELF, dlopen failure (dlerror text), a missing
  // entry point (named with its ordinal).
  static StatusOr<vm::Ref<Executable>> Load(const vm::ExecutableView& view);

  hexir_cpu_entry_fn_t entry(size_t ordinal) const { return entries_[ordinal]; }
  // The entry's estimated one-thread work from the module's cost attrs (work_estimate.h;
  // unknown when the module does not say; DispatchWorkNs evaluates it for a dispatch).
  const EntryWork& work(size_t ordinal) const { return work_[ordinal]; }

 private:
  CpuExecutable(std::vector<std::string> names, std::vector<uint64_t> written, void* handle,
                int fd, std::vector<hexir_cpu_entry_fn_t> entries, std::vector<EntryWork> work);
  ~CpuExecutable() override;

  void* handle_;
  int fd_;
  std::vector<hexir_cpu_entry_fn_t> entries_;
  std::vector<EntryWork> work_;  // by entry ordinal
};

}  // namespace hexir::hal::cpu
