// RUN: hexir-compile %s --target=cpu -o %t.vmfb && hexir-dump %t.vmfb | FileCheck %s
// RUN: hexir-compile %s --target=cpu --no-branch-selection -o %t.unopt.vmfb && hexir-dump %t.unopt.vmfb | FileCheck %s --check-prefix=UNOPT
//
// The bytecode writer selects the fused branches of vm/isa.def for compiled host loops and
// coalesces block arguments with their incoming values (compiler/README.md);
// --no-branch-selection writes the unoptimised form (UNOPT).

// A counted scf.for: the header's test falls through into the body, the latch is one
// for.i64, and the loop body copies nothing: 4 instructions per iteration.
// CHECK-LABEL: #0 "sum_mod"
// CHECK:       br @[[HEAD:[0-9]+]], [v1 -> v5]
// CHECK-NEXT:  @[[HEAD]]: br.le.s.i64 v0, v1, @[[EXIT:[0-9]+]], []
// CHECK-NEXT:  @[[BODY:[0-9]+]]: mul.i64 v6, v1, v3
// CHECK-NEXT:  rem.s.i64 v6, v6, v4
// CHECK-NEXT:  add.i64 v5, v5, v6
// CHECK-NEXT:  for.i64 v1, v2, v0, @[[BODY]], []
// CHECK-NEXT:  br @[[HEAD]], []
// CHECK-NEXT:  @[[EXIT]]: return (v5)
// Unoptimised: the header is cmp + cond_br, the latch an add and a br back to it (7).
// UNOPT-LABEL: #0 "sum_mod"
// UNOPT:       @[[HEAD:[0-9]+]]: cmp.lt.s.i64 v6, v1, v0
// UNOPT-NEXT:  cond_br v6, @[[BODY:[0-9]+]], [], @[[EXIT:[0-9]+]], []
// UNOPT-NEXT:  @[[BODY]]: mul.i64
// UNOPT-NEXT:  rem.s.i64
// UNOPT-NEXT:  add.i64
// UNOPT-NEXT:  add.i64 v1, v1, v2
// UNOPT-NEXT:  br @[[HEAD]], []
// UNOPT-NEXT:  @[[EXIT]]: return
// UNOPT-NOT:   for.i64
func.func @sum_mod(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %c13 = arith.constant 13 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c0) -> (i64) : i64 {
    %a = arith.muli %i, %c7 : i64
    %b = arith.remsi %a, %c13 : i64
    %t = arith.addi %s, %b : i64
    scf.yield %t : i64
  }
  return %r : i64
}

// An scf.while counting down: the latch repeats the header's test (i > lo, as lo < i) and
// branches straight back into the body; no compare or cond_br instruction is left.
// CHECK-LABEL: #1 "countdown"
// CHECK-NOT:   cmp.
// CHECK:       @[[HEAD:[0-9]+]]: br.le.s.i64 v0, v1, @[[EXIT:[0-9]+]], []
// CHECK-NEXT:  @[[BODY:[0-9]+]]: add.i64 v3, v3, v0
// CHECK-NEXT:  sub.i64 v0, v0, v2
// CHECK-NEXT:  br.lt.s.i64 v1, v0, @[[BODY]], []
// CHECK-NEXT:  br @[[HEAD]], []
// CHECK-NEXT:  @[[EXIT]]: return (v3)
func.func @countdown(%hi: i64, %lo: i64, %step: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %r:2 = scf.while (%i = %hi, %s = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi sgt, %i, %lo : i64
    scf.condition(%more) %i, %s : i64, i64
  } do {
  ^bb0(%i: i64, %s: i64):
    %s2 = arith.addi %s, %i : i64
    %i2 = arith.subi %i, %step : i64
    scf.yield %i2, %s2 : i64, i64
  }
  return %r#1 : i64
}

// A condition that is not a single compare keeps cond_br.
// CHECK-LABEL: #2 "both"
// CHECK:       and.i64
// CHECK-NOT:   br.
// CHECK:       cond_br
func.func @both(%a: i64, %b: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %x = arith.cmpi slt, %a, %b : i64
  %y = arith.cmpi sgt, %a, %c0 : i64
  %z = arith.andi %x, %y : i1
  %r = scf.if %z -> i64 {
    scf.yield %c1 : i64
  } else {
    scf.yield %c0 : i64
  }
  return %r : i64
}

// The same counted loop as an scf.while: the body increments its own copy of i, which shares
// i's register, so the latch is for.i64 as for scf.for.
// CHECK-LABEL: #3 "sum_mod_while"
// CHECK:       @[[HEAD:[0-9]+]]: br.le.s.i64 v0, v1, @[[EXIT:[0-9]+]], []
// CHECK-NEXT:  @[[BODY:[0-9]+]]: mul.i64 v6, v1, v3
// CHECK-NEXT:  rem.s.i64 v6, v6, v4
// CHECK-NEXT:  add.i64 v5, v5, v6
// CHECK-NEXT:  for.i64 v1, v2, v0, @[[BODY]], []
// CHECK-NEXT:  br @[[HEAD]], []
// CHECK-NEXT:  @[[EXIT]]: return (v5)
func.func @sum_mod_while(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %c13 = arith.constant 13 : i64
  %r:2 = scf.while (%i = %c0, %s = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi slt, %i, %n : i64
    scf.condition(%more) %i, %s : i64, i64
  } do {
  ^bb0(%i: i64, %s: i64):
    %a = arith.muli %i, %c7 : i64
    %b = arith.remsi %a, %c13 : i64
    %t = arith.addi %s, %b : i64
    %i2 = arith.addi %i, %c1 : i64
    scf.yield %i2, %t : i64, i64
  }
  return %r#1 : i64
}

// An scf.if with a result in a loop: the else block and the (empty) merge block fall through
// into the latch instead of branching to the block laid out next; only the then block jumps
// over the else block.
// CHECK-LABEL: #4 "if_loop"
// CHECK:       @[[BODY:[0-9]+]]: rem.s.i64 v6, v4, v3
// CHECK-NEXT:  br.ne.i64 v6, v1, @[[ELSE:[0-9]+]], []
// CHECK-NEXT:  add.i64 v5, v5, v4
// CHECK-NEXT:  br @[[LATCH:[0-9]+]], []
// CHECK-NEXT:  @[[ELSE]]: sub.i64 v5, v5, v2
// CHECK-NEXT:  @[[LATCH]]: for.i64 v4, v2, v0, @[[BODY]], []
func.func @if_loop(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c0) -> (i64) : i64 {
    %m = arith.remsi %i, %c3 : i64
    %z = arith.cmpi eq, %m, %c0 : i64
    %t = scf.if %z -> i64 {
      %a = arith.addi %s, %i : i64
      scf.yield %a : i64
    } else {
      %b = arith.subi %s, %c1 : i64
      scf.yield %b : i64
    }
    scf.yield %t : i64
  }
  return %r : i64
}
