// Internal to the CUDA driver: what a repeat_while (hal/command_buffer.h RepeatCommand) needs
// to run as a conditional WHILE graph node, and the answer to "can this GPU do that".
//
// The condition of a WHILE node is a handle that only device code can set
// (cudaGraphSetConditional is a device function of the CUDA runtime). The driver carries
// one small kernel as PTX text, hexir_repeat_condition(handle, condition, counter, limit,
// first), run by one thread:
//   count = first ? 0 : *counter + 1;  *counter = count;
//   handle <- (*condition != 0 && count < limit)
// A recorded repeat becomes  enter(first=1) -> WHILE{ body..., step(first=0) }: the enter
// kernel makes the first check before any iteration, the step kernel after each one.
//
// Thread-safety: thread-safe; the module is loaded once per context and never unloaded (the
// primary context it lives in is never released either, cuda_shared.h).
#pragma once

#include "base/status.h"
#include "hal/drivers/cuda/cuda_shared.h"

namespace hexir::hal::cuda {

// The hexir_repeat_condition function on `shared`'s context when conditional WHILE nodes
// are usable there; Unavailable naming the reason otherwise: HEXIR_CUDA_DEVICE_LOOPS=0 in the
// environment, a driver older than CUDA 12.4 (its version), cuGraphConditionalHandleCreate or
// cuGraphAddNode missing, or the PTX failing to load. Callers then run the repeat as a host
// loop over stream launches (one condition read-back per iteration). The answer is cached per
// context (also a failure).
StatusOr<CUfunction> RepeatConditionKernel(const CudaShared& shared);

// The driver version conditional WHILE nodes need (CUDA 12.4).
inline constexpr int kDeviceLoopDriverVersion = 12040;

}  // namespace hexir::hal::cuda
