// The HAL's public API: include this one header.
//
//   HEXIR_ASSIGN_OR_RETURN(auto device, hal::CreateDevice("cpu", {}));
//   HEXIR_ASSIGN_OR_RETURN(auto view, hal::BufferViewFromHost(*device, f32, dims, data, n));
//   ... record a CommandBuffer once, QueueExecute it many times, Semaphore::Wait ...
//   hal::BufferViewToHost(*device, *view, &bytes);
//
// See hal/README.md for ownership and threading; each part header states its own contract.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "hal/buffer.h"
#include "hal/buffer_view.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/element_type.h"
#include "hal/executable.h"
#include "hal/host_io.h"
#include "hal/semaphore.h"
#include "hal/stats.h"

namespace hexir::hal {

// Creates a device from a uri: "cpu"; "cuda" or "cuda:N" (device ordinal N).
// Errors: NotFound for an unknown driver (the message lists the known ones), Unavailable when
// the driver exists but cannot run here, InvalidArgument for a malformed uri.
StatusOr<vm::Ref<Device>> CreateDevice(std::string_view uri, const DeviceOptions& options = {});

// The driver names CreateDevice knows ("cpu", "cuda"), whether or not they can run here.
std::vector<std::string> KnownDrivers();

// The uris of the devices that can be created now, in driver order: "cpu", then "cuda:0",
// "cuda:1", ... for each GPU the CUDA driver can open (probed by creating the device; up to
// 16 per driver). Drivers that are unavailable contribute nothing. Thread-safe.
std::vector<std::string> EnumerateDevices();

}  // namespace hexir::hal
