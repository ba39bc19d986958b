// The "hal" native module: the VM imports listed in hal_imports.def, implemented on one Device.
//
//   context->RegisterNativeModule(hal::CreateHalModule(device));
//
// Every function in hal_imports.def is exported with exactly its name and signature pattern
// (the function table is generated from the .def). Each function type-checks its ref
// arguments: a null or wrongly typed ref is InvalidArgument "<import>: argument <i>: expected
// <type>, got <type|null>".
//
// Ownership: the module retains the device; each context's HalModuleState retains the device
// and the executables it loaded. Thread-safety: the module is immutable; a state is used by
// one context, one invocation at a time (no locking).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "hal/device.h"
#include "hal/executable.h"
#include "vm/native_module.h"

namespace hexir::hal {

std::shared_ptr<vm::NativeModule> CreateHalModule(vm::Ref<Device> device);

// Per-context state: the device, its default channel and the executable cache of hal.executable.lookup, keyed by
// (calling module's instance_id(), executable ordinal), so each executable loads once per
// context.
class HalModuleState final : public vm::NativeModuleState {
 public:
  explicit HalModuleState(vm::Ref<Device> device) : device_(std::move(device)) {}
  Device& device() const { return *device_; }
  const vm::Ref<Device>& device_ref() const { return device_; }
  size_t cached_executable_count() const { return executables_.size(); }

  // The context's channel (hal.channel.default): Device::CreateChannel on first use, then
  // the same channel.
  StatusOr<vm::Ref<Channel>> DefaultChannel();

  // The cached executable, loading it through the device on first use.
  StatusOr<vm::Ref<Executable>> LookupExecutable(const vm::CallerModule& caller, int64_t ordinal);

 private:
  vm::Ref<Device> device_;
  std::map<std::pair<uint64_t, int64_t>, vm::Ref<Executable>> executables_;
  vm::Ref<Channel> channel_;
};

}  // namespace hexir::hal
