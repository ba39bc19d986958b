// Register allocation for one function in VM form (func.func of hexir_vm ops).
//
// Liveness: live-in / live-out values per block (backward dataflow over the CFG).
// RegisterAssignment: each value's live range is a set of segments, one per block where it
// is live (from its definition or the block's start to its last use or the block's end).
// Two values share a register only when their ranges are disjoint, with one exception: the
// result of a value-register instruction (hexir_vm.inst) may take the register of an
// operand that dies at that instruction, because every such instruction reads its operands
// before it writes. Values are assigned in definition order, each to the first register
// whose segments it does not overlap, except that a branch operand and the block argument it
// flows into (either way round) first try each other's register: where the live ranges
// allow, the edge's parallel copy is then empty (coalescing). A block's arguments that can
// join a partner are placed before their siblings take registers by first fit. Entry
// arguments take V0.. / R0.. in order. Without `coalesce`, every value takes its first fit.
#pragma once

#include <cstdint>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/IR/Region.h"
#include "mlir/IR/Value.h"

namespace hexir::compiler {

struct Liveness {
  explicit Liveness(mlir::Region& region);
  llvm::DenseMap<mlir::Block*, llvm::SetVector<mlir::Value>> liveIn, liveOut;
};

class RegisterAssignment {
 public:
  struct Segment {
    unsigned start, end;  // closed, in half-steps of the region's positions
  };
  RegisterAssignment(mlir::Region& region, const Liveness& live, bool coalesce = true);

  // True for values in the ref bank (!hexir_vm.ref), false for the value bank (i64, f64).
  static bool isRef(mlir::Value v);

  llvm::DenseMap<mlir::Value, uint32_t> regs;
  uint32_t valueCount = 0, refCount = 0;
};

}  // namespace hexir::compiler
