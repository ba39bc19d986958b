// Which buffer a host tensor value lives in, for the scheduling passes and the VM lowering.
//
// A `hexir.dispatch` result is a fresh buffer unless `hexir.tied_operands` ties it to an
// operand (an in-place update writes the operand's buffer). So is a `func.call` result: the
// call carries `hexir.tied_operands` (TiedCallOperands, set by hexir-form-execution-regions)
// when its callee returns an argument's buffer updated in place (a donated argument,
// dispatch/InPlaceUpdates.h: the caller's KV cache written by @layer); host reshapes and casts
// (`tensor.expand_shape`, `collapse_shape`, `cast`) alias their source. The *root* of a value
// is the value whose definition created its buffer: following ties and aliases backwards until
// a fresh dispatch result or anything else (an argument, a constant, a block argument, a call
// result, a value defined outside the region being looked at).
//
// Pure analysis of the IR it is given; thread-compatible.
#pragma once

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

namespace hexir::schedule {

// The operand index whose buffer result `result` of `dispatch` is written into, or -1.
int64_t TiedOperandOf(DispatchOp dispatch, unsigned result);

// The operand of `op` (a dispatch or a call) whose buffer its result `result` is written
// into, or null.
mlir::Value TiedOperand(mlir::Operation* op, unsigned result);

// For each result of `callee` (one block, dispatches not yet in execution regions): the
// argument whose buffer it returns (through in-place dispatch results and reshapes), or -1.
llvm::SmallVector<int64_t> TiedCallOperands(mlir::func::FuncOp callee);

// The value whose definition created `v`'s buffer (see above).
mlir::Value BufferRoot(mlir::Value v);

// True for the host ops that only alias their source's buffer.
bool IsAlias(mlir::Operation* op);

}  // namespace hexir::schedule
