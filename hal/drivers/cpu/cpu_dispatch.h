// What executing one command needs, shared by the CPU driver's sequential path
// (cpu_device.cc) and its concurrent waves (wave_runner.h): binding resolution, indirect
// counts, kernel failure messages, copies and fills.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/drivers/cpu/cpu_executable.h"
#include "hal/drivers/cpu/dispatch_abi.h"

namespace hexir::hal::cpu {

// Writes `binding`'s host pointer and length into *ptr / *length (a slot from `table`; null
// for a buffer the host cannot reach).
void ResolveBinding(const BufferRef& binding, const std::vector<BufferRef>& table, void** ptr,
                    uint64_t* length);

// Writes binding i's host pointer and length into ptrs[i] / lengths[i] (slots from `table`).
void ResolveBindings(const DispatchCommand& cmd, const std::vector<BufferRef>& table,
                     void** ptrs, uint64_t* lengths);

using WorkgroupCount = std::array<uint32_t, 3>;

// The workgroup count of a dispatch: its static count, or for an indirect one the count read
// now from its buffer (its producer ran earlier in queue order), checked against the slot's
// range and the 2^40 limit.
StatusOr<WorkgroupCount> DispatchWorkgroupCount(const DispatchCommand& cmd,
                                                         const std::vector<BufferRef>& table);

// A kernel's failure: the checks compiled into it (passes/codegen/KernelChecks.h) name the bad
// value; any other code is reported as a number, naming the entry and the workgroup.
Status WorkgroupError(const CpuExecutable& exe, uint32_t entry, const uint32_t id[3], int rc,
                      const hexir_cpu_kernel_error_t& error);

// Executes a copy or fill command (ranges were checked at record time).
void ExecuteCopy(const CopyCommand& copy);
void ExecuteFill(const FillCommand& fill);

}  // namespace hexir::hal::cpu
