// Which buffer a host tensor value lives in, for the scheduling passes and the VM lowering.
//
// A `hexir.dispatch` result is a fresh buffer unless `hexir.tied_operands` ties it to an
// operand (an in-place update writes the operand's buffer); host reshapes and casts
// (`tensor.expand_shape`, `collapse_shape`, `cast`) alias their source. The *root* of a value
// is the value whose definition created its buffer: following ties and aliases backwards until
// a fresh dispatch result or anything else (an argument, a constant, a block argument, a call
// result, a value defined outside the region being looked at).
//
// Pure analysis of the IR it is given; thread-compatible.
#pragma once

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/IR/Value.h"

namespace hexir::schedule {

// The operand index whose buffer result `result` of `dispatch` is written into, or -1.
int64_t TiedOperandOf(DispatchOp dispatch, unsigned result);

// The value whose definition created `v`'s buffer (see above).
mlir::Value BufferRoot(mlir::Value v);

// True for the host ops that only alias their source's buffer.
bool IsAlias(mlir::Operation* op);

}  // namespace hexir::schedule
