// Selection of the fused branch instructions of vm/isa.def for VM-form control flow.
//
// Compare-and-branch: `%c = hexir_vm.inst "cmp.<p>.i64"(%a, %b)` immediately followed by the
// `cond_br %c` that is its only use becomes one `br.<p>.i64 a, b, @dest, P` that falls
// through to the other destination (every i64 comparison has a `br.*` for it and for its
// negation, with the operands swapped where needed).
//
// Loop latches: a block ending in `br ^header(...)` back to an earlier block (in region
// order) that is exactly a fused compare,
//     ^header(%x...):
//       %c = hexir_vm.inst "cmp.<p>.i64"(%a, %b)      ; %c has no other use
//       cond_br %c, ^body(...), ^exit(...)
// repeats the header's test at the latch (loop rotation): `br.<p>.i64 a', b', @body, P`
// then `br @header, P`, where a', b' are what %a, %b will be once the latch's copies P are
// done (the latch's operand for a header argument, else the value itself). Taken, this is
// exactly the latch branch plus the header's test when it holds; otherwise the header runs
// as before. A counted loop folds its increment in as well:
//     %next = hexir_vm.inst "add.i64"(%i, %step)      ; in the latch, %next has no other use
//     br ^header(..., %next, ...)                      ; with the header testing lt.s(%i, %b)
// (in an scf.while the body adds to its own argument that the header's true edge copies %i
// into; that counts as %i where the two share a register)
// becomes `for.i64 i, step, b', @body, P` then `br @header, P`. for.i64 falls through when
// the loop is done and also when i + step overflows, and then the header's own test decides,
// so the unfused semantics hold for every step sign, bound and overflow.
#pragma once

#include <optional>

#include "compiler/bytecode/Encoder.h"
#include "dialects/vm/IR/VMOps.h"

namespace hexir::compiler {

struct FusedCompare {
  vmir::InstOp compare;        // the comparison folded into the branch
  bytecode::Opcode opcode;     // br.<p>.i64, taken when (lhs <p> rhs)
  mlir::Value lhs, rhs;
  bool toTrueDest = true;      // false: the negated test, taken to the false destination
};

// The compare-and-branch for `br` (toward its true destination), if it has that shape.
std::optional<FusedCompare> MatchFusedCompare(vmir::CondBrOp br);
// The same test negated: taken toward the false destination.
FusedCompare Negated(const FusedCompare& fused);

struct LoopLatch {
  mlir::Block* header;
  mlir::Block* body;           // the header's true destination
  FusedCompare test;           // the header's test, operands as the latch sees them
  // A counted loop when set: test is lt.s(%next, b') and for.i64 may replace the increment.
  vmir::InstOp increment;      // %next = add.i64 %counter, %step
  mlir::Value induction, step; // %i (a header argument) and %step
  mlir::Value counter;         // %i, or the body argument the header's true edge copies %i into
};

// The latch ending in `br`, if its destination has that shape. What depends on registers is
// the writer's to check: the header's copies into ^body and its releases on entry must be
// empty (the rotated branch skips the header), and for for.i64 %next, %counter and %i must
// share a register and %step must still be in its register at the branch.
std::optional<LoopLatch> MatchLoopLatch(vmir::BrOp br);

}  // namespace hexir::compiler
