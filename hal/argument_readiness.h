// Argument readiness, the driver side: before a command runs, wait for the pending readiness
// (Buffer::SetReadyAfter) of every buffer it uses, so that a call's first commands start while
// later arguments are still being written (parameters uploaded in layer order while the first
// layers compute). Drivers that await arguments per command (Device::AwaitsArgumentsPerCommand)
// call it before each command or wave; once every timepoint is reached it costs one atomic load
// per buffer (the readiness is cleared for good).
//
// Thread-safety: thread-safe (host waits on the calling thread).
#pragma once

#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/stats.h"

namespace hexir::hal {

// Host-waits for the pending readiness of each buffer `command` reads (dispatch bindings and
// indirect count, copy source, collective send, repeat condition; slots resolved through
// `table`; a repeat's body is awaited when it runs). Copy and fill targets are not awaited:
// the queue write that fills a buffer is such a copy, and must not wait for itself. Counts
// each wait in `counters` argument_waits and reports it to the profiler as the host span
// "argument_wait". Returns the error of a failed readiness semaphore, naming the wait.
Status AwaitArgumentsReady(const Command& command, const std::vector<BufferRef>& table,
                           DeviceCounters& counters);

}  // namespace hexir::hal
