// The "hal" native module: the VM imports listed in hal_imports.def, implemented on the devices
// a context binds (one per module device ordinal; `hal.device.default` is ordinal 0,
// `hal.device.at(N)` ordinal N).
//
//   HEXIR_RETURN_IF_ERROR(hal::CheckModuleDevices(*module, devices));  // names a missing one
//   context->RegisterNativeModule(hal::CreateHalModule(devices));
//
// Every function in hal_imports.def is exported with exactly its name and signature pattern
// (the function table is generated from the .def). Each function type-checks its ref
// arguments: a null or wrongly typed ref is InvalidArgument "<import>: argument <i>: expected
// <type>, got <type|null>".
//
// Ownership: the module retains the devices; each context's HalModuleState retains the devices
// and the executables it loaded. Thread-safety: the module is immutable; a state is used by
// one context, one invocation at a time (no locking).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "hal/device.h"
#include "hal/executable.h"
#include "vm/module.h"
#include "vm/native_module.h"

namespace hexir::hal {

// `devices[i]` runs module device ordinal i (at least one device).
std::shared_ptr<vm::NativeModule> CreateHalModule(std::vector<vm::Ref<Device>> devices);
inline std::shared_ptr<vm::NativeModule> CreateHalModule(vm::Ref<Device> device) {
  return CreateHalModule(std::vector<vm::Ref<Device>>{std::move(device)});
}
// The same with each device's channel given (hal.channel.default returns `channels[i]` for
// `devices[i]`; a null entry is created on first use as above): how one rank of a group
// driven by this process gets its channel (runtime/rank_group.h).
std::shared_ptr<vm::NativeModule> CreateHalModule(std::vector<vm::Ref<Device>> devices,
                                                  std::vector<vm::Ref<Channel>> channels);

// The device kind of a uri ("cpu:threads=2" -> "cpu", "cuda:1" -> "cuda").
std::string_view DeviceKind(std::string_view uri);

// Checks that `devices` binds every device of `module`'s list (vm::Module::devices()) with a
// device of that kind: InvalidArgument "module 'm' runs on 2 devices (0=cpu 1=cuda): device 1
// (cuda) is not given (1 device given: cpu)" or "... device 1 (cuda) is given a cpu device
// ('cpu')". A module without a list accepts any one device or more.
Status CheckModuleDevices(const vm::Module& module, const std::vector<vm::Ref<Device>>& devices);

// Per-context state: the devices, their default channels and the executable cache of hal.executable.lookup, keyed by
// (device ordinal, calling module's instance_id(), executable ordinal), so each executable
// loads once per context and device.
class HalModuleState final : public vm::NativeModuleState {
 public:
  explicit HalModuleState(std::vector<vm::Ref<Device>> devices,
                          const std::vector<vm::Ref<Channel>>& channels = {});
  Device& device() const { return *devices_[0]; }
  const vm::Ref<Device>& device_ref() const { return devices_[0]; }
  const std::vector<vm::Ref<Device>>& devices() const { return devices_; }
  // The ordinal of `d` among the context's devices, or -1.
  int64_t OrdinalOf(const Device* d) const;
  size_t cached_executable_count() const { return executables_.size(); }

  // `device`'s channel (hal.channel.default), created on first use, then the same channel.
  // A context bound to one device: its Device::CreateChannel. Bound to N devices: one group,
  // made at the first use by devices()[0]->CreateGroupChannels(all N), device i being rank i
  // (CPU: an in-process Gloo group; hal/channel.h CreateHostChannels for multi-process).
  StatusOr<vm::Ref<Channel>> DefaultChannel(Device& device);

  // The cached executable, loading it through device `device_ordinal` on first use.
  StatusOr<vm::Ref<Executable>> LookupExecutable(const vm::CallerModule& caller,
                                                 int64_t device_ordinal, int64_t ordinal);

  // Keeps `buffer` alive until `until` is reached (the source of a queued cross-device
  // transfer that reads host memory by pointer); entries already reached are dropped.
  void RetainUntil(vm::Ref<Buffer> buffer, SemaphoreValue until);

 private:
  std::vector<vm::Ref<Device>> devices_;
  std::map<std::tuple<int64_t, uint64_t, int64_t>, vm::Ref<Executable>> executables_;
  std::vector<std::pair<vm::Ref<Buffer>, SemaphoreValue>> retained_;
  std::map<const Device*, vm::Ref<Channel>> channels_;
};

}  // namespace hexir::hal
