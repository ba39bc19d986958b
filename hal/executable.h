// hal.executable: kernels loaded onto a device from one ExecutableDef of a module.
//
// Loaded once (Device::CreateExecutable) and then dispatched many times; the HAL module caches
// one per (module instance, ordinal) per context. Drivers subclass it; driver() names the
// driver that can execute it ("cpu").
//
// Ownership: refcounted. Does not retain the bytes it was loaded from (drivers copy what they
// need) nor the device. Immutable after creation: thread-safe.
#pragma once

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

 protected:
  Executable(std::string_view driver, std::string format, std::vector<std::string> entry_names)
      : driver_(driver), format_(std::move(format)), entry_names_(std::move(entry_names)) {}

 private:
  std::string_view driver_;  // a string literal owned by the driver
  std::string format_;
  std::vector<std::string> entry_names_;
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
