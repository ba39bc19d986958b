// RUN: hexir-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(hexir-erase-implied-vm-asserts))' | FileCheck %s

// A dynamic export's shape checks after CSE: the same condition asserted again, a first dim
// bounded by a larger constant after a smaller one (a narrower tensor), and a second dim
// bounded by a larger constant divided by the same product. Each later one is implied by the
// first and erased with the comparisons only it read; the first keeps its message.
// CHECK-LABEL: func.func @implied(
// CHECK-SAME:    %[[D0:[a-z0-9]+]]: i64, %[[D1:[a-z0-9]+]]: i64
// CHECK:         %[[K96:.+]] = hexir_vm.const.i64 24019198012642645
// CHECK:         %[[A:.+]] = hexir_vm.inst "cmp.le.u.i64"(%[[D0]], %[[K96]])
// CHECK-NEXT:    hexir_vm.assert %[[A]], "dim 0 of ?x?x96"(%[[D0]])
// CHECK:         %[[Q:.+]] = hexir_vm.inst "div.u.i64"(%[[K96]], %{{.+}})
// CHECK-NEXT:    %[[B:.+]] = hexir_vm.inst "cmp.le.u.i64"(%[[D1]], %[[Q]])
// CHECK-NEXT:    hexir_vm.assert %[[B]], "dim 1 of ?x?x96"(%[[D1]])
// CHECK-NOT:     hexir_vm.assert
// CHECK-NOT:     72057594037927935
// CHECK:         return
func.func @implied(%d0: i64, %d1: i64) -> i64 {
  %one = hexir_vm.const.i64 1
  %k96 = hexir_vm.const.i64 24019198012642645
  %a = hexir_vm.inst "cmp.le.u.i64"(%d0, %k96) : (i64, i64) -> i64
  hexir_vm.assert %a, "dim 0 of ?x?x96"(%d0)
  %m = hexir_vm.inst "max.s.i64"(%d0, %one) : (i64, i64) -> i64
  %q96 = hexir_vm.inst "div.u.i64"(%k96, %m) : (i64, i64) -> i64
  %b = hexir_vm.inst "cmp.le.u.i64"(%d1, %q96) : (i64, i64) -> i64
  hexir_vm.assert %b, "dim 1 of ?x?x96"(%d1)
  hexir_vm.assert %a, "dim 0 of ?x?x96 again"(%d0)
  %k32 = hexir_vm.const.i64 72057594037927935
  %c = hexir_vm.inst "cmp.le.u.i64"(%d0, %k32) : (i64, i64) -> i64
  hexir_vm.assert %c, "dim 0 of ?x?x32"(%d0)
  %q32 = hexir_vm.inst "div.u.i64"(%k32, %m) : (i64, i64) -> i64
  %d = hexir_vm.inst "cmp.le.u.i64"(%d1, %q32) : (i64, i64) -> i64
  hexir_vm.assert %d, "dim 1 of ?x?x32"(%d1)
  return %d1 : i64
}

// -----

// Kept: a weaker check before a stronger one (32's bound does not imply 96's), a bound divided
// by another product, and asserts on two branches (neither dominates the other) even of one
// condition; the assert after the branches is implied by the one before them.
// CHECK-LABEL: func.func @kept(
// CHECK:         hexir_vm.assert %{{.+}}, "dim 0 of ?x32"
// CHECK:         hexir_vm.assert %{{.+}}, "dim 0 of ?x96"
// CHECK:         hexir_vm.assert %{{.+}}, "dim 1 of ?x?x32 over d0"
// CHECK:         hexir_vm.assert %{{.+}}, "dim 1 of ?x?x32 over d2"
// CHECK:       ^{{.+}}:
// CHECK-NEXT:    hexir_vm.assert %{{.+}}, "left"
// CHECK:       ^{{.+}}:
// CHECK-NEXT:    hexir_vm.assert %{{.+}}, "right"
// CHECK:       ^{{.+}}:
// CHECK-NOT:     hexir_vm.assert
// CHECK:         return
func.func @kept(%d0: i64, %d1: i64, %d2: i64, %p: i64) -> i64 {
  %k32 = hexir_vm.const.i64 72057594037927935
  %k96 = hexir_vm.const.i64 24019198012642645
  %a = hexir_vm.inst "cmp.le.u.i64"(%d0, %k32) : (i64, i64) -> i64
  hexir_vm.assert %a, "dim 0 of ?x32"(%d0)
  %b = hexir_vm.inst "cmp.le.u.i64"(%d0, %k96) : (i64, i64) -> i64
  hexir_vm.assert %b, "dim 0 of ?x96"(%d0)
  %one = hexir_vm.const.i64 1
  %m0 = hexir_vm.inst "max.s.i64"(%d0, %one) : (i64, i64) -> i64
  %m2 = hexir_vm.inst "max.s.i64"(%d2, %one) : (i64, i64) -> i64
  %q0 = hexir_vm.inst "div.u.i64"(%k32, %m0) : (i64, i64) -> i64
  %c = hexir_vm.inst "cmp.le.u.i64"(%d1, %q0) : (i64, i64) -> i64
  hexir_vm.assert %c, "dim 1 of ?x?x32 over d0"(%d1)
  %q2 = hexir_vm.inst "div.u.i64"(%k32, %m2) : (i64, i64) -> i64
  %d = hexir_vm.inst "cmp.le.u.i64"(%d1, %q2) : (i64, i64) -> i64
  hexir_vm.assert %d, "dim 1 of ?x?x32 over d2"(%d1)
  %e = hexir_vm.inst "cmp.lt.s.i64"(%d2, %d1) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^left, ^right
^left:
  hexir_vm.assert %e, "left"(%d2)
  hexir_vm.br ^join
^right:
  hexir_vm.assert %e, "right"(%d2)
  hexir_vm.br ^join
^join:
  hexir_vm.assert %b, "dim 0 of ?x96 after the branches"(%d0)
  return %d1 : i64
}
