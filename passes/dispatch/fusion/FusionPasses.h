// Fusion across reductions for small layers (FusionPasses.td, README.md).
#pragma once

#include <memory>

#include "mlir/Pass/Pass.h"

namespace hexir {

#define GEN_PASS_DECL
#include "passes/dispatch/fusion/FusionPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/dispatch/fusion/FusionPasses.h.inc"

}  // namespace hexir
