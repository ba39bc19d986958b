// Which `tensor.insert_slice` ops may write their slice into the destination's buffer instead
// of producing a copy of it (an LLM's KV-cache row update: O(row) instead of O(cache)).
//
// Tensor semantics say insert_slice returns a new tensor. Writing in place is equivalent when
// no one can observe the old destination afterwards: the destination is a buffer this program
// owns (produced by a kernel or an allocation of this function, or returned fresh by a
// callee, possibly carried through scf loop arguments and results), every other use of it
// (and of every value it was forwarded from) comes earlier in the same block, and the update
// runs once per definition of the destination (same block). An argument of a private
// function of a one-device module is owned when every use of the function is a call whose
// operand is owned at that call (the call is its last use): the callers *donate* it, so a
// callee's KV-cache row update writes the caller's cache (the call's result is then tied to
// that operand, schedule/Buffers.h). Public functions' arguments, constants, reshapes
// (aliases) and anything else are not owned: those inserts copy, as before.
//
// MLIR-free callers do not exist; thread-compatible (pure analysis of the IR it is given).
#pragma once

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace hexir {

// Unit attribute marking an insert_slice that is lowered as an in-place update: its dispatch
// result is tied to the destination operand (`kTiedOperandsAttr` on hexir.dispatch).
inline constexpr char kInPlaceAttr[] = "hexir.in_place";
// On hexir.dispatch: i64 array, one entry per result: the operand index whose buffer the
// result is written into (the kernel updates it in place), or -1 for a fresh result.
inline constexpr char kTiedOperandsAttr[] = "hexir.tied_operands";

// True when `op` (unit strides, same rank) can update its destination's buffer in place.
bool CanInsertInPlace(mlir::tensor::InsertSliceOp op);

// True when `op` (one init, no reduction loops, the init's map the identity) may write its
// result into its init's buffer: the init is owned as for an insert_slice destination (its
// other uses, a second operand use or a read in the body included, come earlier). Device loops
// (passes/loops/PrepareDeviceLoops.cpp) mark such generics `hexir.in_place`.
bool CanUpdateInitInPlace(mlir::linalg::GenericOp op);

}  // namespace hexir
