// The device-loop passes (DeviceLoopPasses.td): hexir-prepare-device-loops,
// hexir-form-device-loops. Registered by hexir::compiler::RegisterPasses.
#pragma once

#include <memory>

#include "mlir/Pass/Pass.h"

namespace hexir {

#define GEN_PASS_DECL
#include "passes/loops/DeviceLoopPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/loops/DeviceLoopPasses.h.inc"

}  // namespace hexir
