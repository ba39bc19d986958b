// The CPU driver's device: host memory buffers, in-memory ELF executables, one in-order queue.
//
// Threading (see README.md): unless inline, one queue thread executes submissions in order;
// each dispatch's workgroups are spread over a WorkerPool of options.cpu_worker_count threads
// (the queue thread is worker 0). In inline mode QueueExecute executes on the caller.
#pragma once

#include "base/status.h"
#include "hal/device.h"

namespace hexir::hal::cpu {

// Creates a CPU device. Never fails for valid options.
StatusOr<vm::Ref<Device>> CreateCpuDevice(const DeviceOptions& options);

}  // namespace hexir::hal::cpu
