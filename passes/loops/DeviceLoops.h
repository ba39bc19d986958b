// Which `scf.while` loops can run on the device as one command buffer (a CUDA conditional
// WHILE node): the rule shared by hexir-prepare-device-loops (tensor level, before dispatch
// formation) and hexir-form-device-loops (after codegen, before convert-scf-to-cf).
//
// The condition must be a device value: the before region only reads the one element of a
// carried one-element i32 tensor (the *flag*) and compares it with zero, and forwards its
// arguments unchanged:
//
//   scf.while (%f = %flag0, %x = %x0) : (tensor<1xi32>, T) -> (tensor<1xi32>, T) {
//     %e = tensor.extract %f[%c0] : tensor<1xi32>
//     %go = arith.cmpi ne, %e, %c0_i32 : i32
//     scf.condition(%go) %f, %x : tensor<1xi32>, T
//   } do { ... device work computing the next flag and x ... }
//
// Every loop-carried value is a ranked tensor (no host scalars change per iteration).
//
// MLIR-only; thread-compatible (pure analysis of the IR it is given).
#pragma once

#include <cstdint>
#include <optional>

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace hexir {

// Unit attribute hexir-prepare-device-loops puts on an scf.while it prepared (carried values
// written back in place); hexir-form-device-loops lowers only those.
inline constexpr char kDeviceLoopAttr[] = "hexir.device_loop";
// `hexir.repeat_while` (kRepeatWhileAttr, dialects/hexir/IR/HexirAttributes.h: read by
// passes/vm/LowerExecutionRegions.cpp too) on a `hexir.execute` (hexir-form-device-loops):
// `array<i64: flag, limit>`, the region is a device loop. Its body runs again and again while the i32 in the buffer of yielded value
// `flag` (one element) is nonzero, read before every run (the first included), at most
// `limit` runs. Each yielded value's buffer root (schedule/Buffers.h) is a distinct value
// from above, its *init*: the body reads the inits and updates them in place, so one
// recording serves every run. hexir-convert-to-vm gives each carried value a buffer of the
// execution filled with a copy of its init (the inits are never written) and lowers the
// region to `hal.command_buffer.repeat_while_slot`; the results are those buffers after the
// last run.
// Optional i64 attribute on an scf.while: the device loop's step limit (else the pass option).
inline constexpr char kMaxIterationsAttr[] = "hexir.max_iterations";

// The index of the flag among the carried values when `loop`'s condition has the form above
// and every carried value is a ranked tensor; nullopt otherwise.
std::optional<unsigned> DeviceLoopCondition(mlir::scf::WhileOp loop);

}  // namespace hexir
