// Hexir compiler passes (declared in Passes.td). Pipeline order: see passes/README.md.
#pragma once

#include <memory>
#include <string>

#include "mlir/Pass/Pass.h"

namespace hexir {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

// Registers every pass above with the global registry (for hexir-opt and pipelines).
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

}  // namespace hexir
