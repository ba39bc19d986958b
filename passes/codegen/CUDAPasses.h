// Hexir CUDA code generation passes (declared in CUDAPasses.td): distribute threads,
// lower to NVVM with the CUDA dispatch ABI v1 entry, serialize to PTX + cubin. The last
// one is implemented in compiler/targets/cuda/ and linked from //compiler/targets/cuda.
#pragma once

#include <memory>
#include <string>

#include "mlir/Pass/Pass.h"

namespace hexir {

#define GEN_PASS_DECL
#include "passes/codegen/CUDAPasses.h.inc"

// Executable attributes from lowering to serialization: the chip of an executable whose
// kernel needs another than the pipeline's (the wgmma GEMM: sm_90a), and the dynamic shared
// memory its kernel is launched with (bytes; the driver's "cuda.shared_bytes.<entry>").
inline constexpr char kExecutableChipAttr[] = "hexir.cuda.chip";
inline constexpr char kSharedBytesAttr[] = "hexir.cuda.shared_bytes";

// Registers the CUDA passes with the global registry (hexir-opt, pipelines).
#define GEN_PASS_REGISTRATION
#include "passes/codegen/CUDAPasses.h.inc"

}  // namespace hexir
