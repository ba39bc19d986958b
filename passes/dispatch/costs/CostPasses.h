// Dispatch cost passes (CostPasses.td): metadata for hexir-bench's roofline and baselines.
#pragma once

#include <memory>

#include "mlir/Pass/Pass.h"

namespace hexir {

#define GEN_PASS_DECL
#include "passes/dispatch/costs/CostPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/dispatch/costs/CostPasses.h.inc"

}  // namespace hexir
