// Calls recorded into the caller's command buffer (hexir-form-execution-regions decides, the
// scheduling passes order them, hexir-convert-to-vm lowers them).
//
// A private function whose one-block body is device work (dispatches, reshapes and host-value
// ops: checks, dims, arith, empties; tensor results; no calls, collectives, host reads, global
// stores, placement attributes) becomes one execution region plus host work. Such a callee is
// marked `hexir.records_into_caller` (kRecordsIntoCallerAttr), and every call to it is a *command* of the caller's
// region, like a dispatch: the callee's host work runs at the call (before the caller's region
// is submitted) and its commands are recorded into the caller's command buffer with the call
// site's buffers in binding-table slots of their own. So L calls of a layer are one submission
// (one CUDA graph launch) and the bytecode holds the layer once.
//
// Pure queries of the IR; thread-compatible.
#pragma once

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::schedule {

// The callee of `op` when it is a call to a function marked kRecordsIntoCallerAttr, else null.
mlir::func::FuncOp RecordedCallee(mlir::Operation* op);

// The one execution region of a marked callee's body, or null (with the reason in `why`)
// when its body is not host work around one region.
ExecuteOp RecordedRegionOf(mlir::func::FuncOp callee, std::string* why = nullptr);

}  // namespace hexir::schedule
