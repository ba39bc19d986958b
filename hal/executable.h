// hal.executable: kernels loaded onto a device from one ExecutableDef of a module.
//
// Loaded once (Device::CreateExecutable) and then dispatched many times; the HAL module caches
// one per (module instance, ordinal) per context. Drivers subclass it; driver() names the
// driver that can execute it ("cpu").
//
// Which bindings an entry writes comes from the module (ExecutableDef.entry_written_bindings,
// one mask per entry: bit i set = binding i may be written); without it, or for bindings past
// 64, every binding counts as written. Drivers use it to let commands that only read a
// collective's input run beside it (hal/command_ranges.h).
//
// Ownership: refcounted. Does not retain the bytes it was loaded from (drivers copy what they
// need) nor the device. Immutable after creation: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vm/ref.h"

namespace hexir::hal {

class Executable : public vm::RefObject {
  HEXIR_REF_TYPE(Executable, "hal.executable")
 public:
  std::string_view driver() const { return driver_; }
  const std::string& format() const { return format_; }
  size_t entry_count() const { return entry_names_.size(); }
  const std::string& entry_name(size_t ordinal) const { return entry_names_[ordinal]; }
  // "a, b, c" (for error messages).
  std::string EntryList() const;
  // False only when the module says `entry` never writes its binding `binding`.
  bool MayWriteBinding(size_t entry, size_t binding) const {
    if (entry >= written_bindings_.size() || binding >= 64) return true;
    return (written_bindings_[entry] >> binding) & 1;
  }

 protected:
  // `written_bindings`: empty (unknown) or one mask per entry (vm::ExecutableView's, checked
  // against the entry count when the module is verified).
  Executable(std::string_view driver, std::string format, std::vector<std::string> entry_names,
             std::vector<uint64_t> written_bindings = {})
      : driver_(driver),
        format_(std::move(format)),
        entry_names_(std::move(entry_names)),
        written_bindings_(std::move(written_bindings)) {}

 private:
  std::string_view driver_;  // a string literal owned by the driver
  std::string format_;
  std::vector<std::string> entry_names_;
  std::vector<uint64_t> written_bindings_;
};

inline std::string Executable::EntryList() const {
  std::string s;
  for (size_t i = 0; i < entry_names_.size(); ++i) {
    if (i) s += ", ";
    s += entry_names_[i];
  }
  return s;
}

}  // namespace hexir::hal
