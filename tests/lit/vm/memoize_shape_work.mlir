// RUN: hexir-opt %s -split-input-file --pass-pipeline='builtin.module(hexir-memoize-vm-shape-work)' | FileCheck %s

// The shape arithmetic of an argument's dim and its check run in ^miss, entered only when the
// dim differs from the one stored by the last ^miss (or none was stored: global 0 is 0); ^miss
// stores the value the rest of the function reads, then the key and the valid flag, last.
// The rest loads that value where its use is; the constants only ^miss reads leave it (copied
// into ^miss, any int64 among them).
// CHECK:       module attributes {hexir_vm.value_globals = 3 : i64}
// CHECK-LABEL: func.func @memoized(
// CHECK-SAME:    %[[V:[a-z0-9]+]]: !hexir_vm.ref
// CHECK:         %[[D:.+]] = hexir_vm.call.import "hal.buffer_view.dim"(%[[V]],
// CHECK-NEXT:    %[[VALID:.+]] = hexir_vm.global.load.i64 0
// CHECK-NEXT:    %[[KEY:.+]] = hexir_vm.global.load.i64 1
// CHECK-NEXT:    %[[EQ:.+]] = hexir_vm.inst "cmp.eq.i64"(%[[D]], %[[KEY]])
// CHECK-NEXT:    %[[SAME:.+]] = hexir_vm.inst "and.i64"(%[[VALID]], %[[EQ]])
// CHECK-NEXT:    hexir_vm.cond_br %[[SAME]], ^[[REST:.+]], ^[[MISS:[a-z0-9]+]]
// CHECK-NEXT:  ^[[MISS]]:
// CHECK-DAG:     hexir_vm.const.i64 9223372036854775807
// CHECK:         %[[OK:.+]] = hexir_vm.inst "cmp.le.u.i64"(%[[D]],
// CHECK-NEXT:    hexir_vm.inst "add.i64"(%[[D]],
// CHECK:         hexir_vm.assert %[[OK]], "dim {} past 1000"(%[[D]])
// CHECK-NEXT:    hexir_vm.global.store.i64 %[[D]], 1
// CHECK-NEXT:    hexir_vm.global.store.i64 %{{.+}}, 2
// CHECK-NEXT:    hexir_vm.global.store.i64 %{{.+}}, 0
// CHECK-NEXT:    hexir_vm.br ^[[REST]]
// CHECK-NEXT:  ^[[REST]]:
// CHECK-NEXT:    %[[BUF:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%[[V]])
// CHECK-NEXT:    hexir_vm.call.import "hal.buffer.length"(%[[BUF]])
// CHECK-NEXT:    %[[L:.+]] = hexir_vm.global.load.i64 2
// CHECK-NEXT:    hexir_vm.inst "add.i64"(%{{.+}}, %[[L]])
// CHECK-NOT:     hexir_vm.const.i64 1000
// CHECK-NOT:     hexir_vm.const.i64 9223372036854775807
// CHECK:         hexir_vm.return
func.func @memoized(%view: !hexir_vm.ref) -> i64 {
  %c0 = hexir_vm.const.i64 0
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c0) : (!hexir_vm.ref, i64) -> i64
  %buffer = hexir_vm.call.import "hal.buffer_view.buffer"(%view) : (!hexir_vm.ref) -> !hexir_vm.ref
  %c1 = hexir_vm.const.i64 1
  %bound = hexir_vm.const.i64 1000
  %ok = hexir_vm.inst "cmp.le.u.i64"(%d, %bound) : (i64, i64) -> i64
  hexir_vm.assert %ok, "dim {} past 1000"(%d)
  %a0 = hexir_vm.inst "add.i64"(%d, %c1) : (i64, i64) -> i64
  %a1 = hexir_vm.inst "add.i64"(%a0, %c1) : (i64, i64) -> i64
  %a2 = hexir_vm.inst "add.i64"(%a1, %c1) : (i64, i64) -> i64
  %a3 = hexir_vm.inst "add.i64"(%a2, %c1) : (i64, i64) -> i64
  %a4 = hexir_vm.inst "add.i64"(%a3, %c1) : (i64, i64) -> i64
  %a5 = hexir_vm.inst "add.i64"(%a4, %c1) : (i64, i64) -> i64
  %a6 = hexir_vm.inst "add.i64"(%a5, %c1) : (i64, i64) -> i64
  %a7 = hexir_vm.inst "add.i64"(%a6, %c1) : (i64, i64) -> i64
  %a8 = hexir_vm.inst "add.i64"(%a7, %c1) : (i64, i64) -> i64
  %a9 = hexir_vm.inst "add.i64"(%a8, %c1) : (i64, i64) -> i64
  %a10 = hexir_vm.inst "add.i64"(%a9, %c1) : (i64, i64) -> i64
  %a11 = hexir_vm.inst "add.i64"(%a10, %c1) : (i64, i64) -> i64
  %max = hexir_vm.const.i64 9223372036854775807
  %masked = hexir_vm.inst "and.i64"(%a11, %max) : (i64, i64) -> i64
  %length = hexir_vm.call.import "hal.buffer.length"(%buffer) : (!hexir_vm.ref) -> i64
  %r = hexir_vm.inst "add.i64"(%length, %masked) : (i64, i64) -> i64
  hexir_vm.return %r : i64
}

// -----

// Checks on the two sides of a branch on a slice value run in ^miss under the branch's
// condition (`select(reached, check, 1)`): the one-row side's check cannot trap when the dim
// is not 1. The branch stays; its condition is loaded. A check whose message reads a value
// outside the slice (an i64 argument) stays where it was.
// CHECK-LABEL: func.func @checks_under_branches(
// CHECK:         hexir_vm.cond_br %{{.+}}, ^[[REST:.+]], ^[[MISS:[a-z0-9]+]]
// CHECK-NEXT:  ^[[MISS]]:
// CHECK:         %[[ONE:.+]] = hexir_vm.inst "cmp.eq.i64"
// CHECK:         %[[OTHER:.+]] = hexir_vm.inst "cmp.eq.i64"(%[[ONE]],
// CHECK-NEXT:    %[[G2:.+]] = hexir_vm.inst "select.i64"(%[[OTHER]], %{{.+}}, %{{.+}})
// CHECK-NEXT:    hexir_vm.assert %[[G2]], "many rows"
// CHECK-NEXT:    %[[TAKEN:.+]] = hexir_vm.inst "cmp.ne.i64"(%[[ONE]],
// CHECK-NEXT:    %[[G:.+]] = hexir_vm.inst "select.i64"(%[[TAKEN]], %{{.+}}, %{{.+}})
// CHECK-NEXT:    hexir_vm.assert %[[G]], "one row"
// CHECK:         hexir_vm.br ^[[REST]]
// CHECK:       ^[[REST]]:
// CHECK:         hexir_vm.cond_br
// CHECK-NOT:     "one row"
// CHECK:         hexir_vm.assert %{{.+}}, "with the argument {}"
// CHECK-NOT:     "many rows"
// CHECK:         hexir_vm.return
func.func @checks_under_branches(%view: !hexir_vm.ref, %n: i64) -> i64 {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c0) : (!hexir_vm.ref, i64) -> i64
  %b0 = hexir_vm.inst "add.i64"(%d, %c1) : (i64, i64) -> i64
  %b1 = hexir_vm.inst "add.i64"(%b0, %c1) : (i64, i64) -> i64
  %b2 = hexir_vm.inst "add.i64"(%b1, %c1) : (i64, i64) -> i64
  %b3 = hexir_vm.inst "add.i64"(%b2, %c1) : (i64, i64) -> i64
  %b4 = hexir_vm.inst "add.i64"(%b3, %c1) : (i64, i64) -> i64
  %b5 = hexir_vm.inst "add.i64"(%b4, %c1) : (i64, i64) -> i64
  %b6 = hexir_vm.inst "add.i64"(%b5, %c1) : (i64, i64) -> i64
  %b7 = hexir_vm.inst "add.i64"(%b6, %c1) : (i64, i64) -> i64
  %b8 = hexir_vm.inst "add.i64"(%b7, %c1) : (i64, i64) -> i64
  %b9 = hexir_vm.inst "add.i64"(%b8, %c1) : (i64, i64) -> i64
  %b10 = hexir_vm.inst "add.i64"(%b9, %c1) : (i64, i64) -> i64
  %b11 = hexir_vm.inst "add.i64"(%b10, %c1) : (i64, i64) -> i64
  %one = hexir_vm.inst "cmp.eq.i64"(%d, %c1) : (i64, i64) -> i64
  hexir_vm.cond_br %one, ^single, ^many
^single:
  %s = hexir_vm.inst "cmp.le.u.i64"(%b11, %c1) : (i64, i64) -> i64
  hexir_vm.assert %s, "one row"
  %t = hexir_vm.inst "cmp.le.s.i64"(%b11, %n) : (i64, i64) -> i64
  hexir_vm.assert %t, "with the argument {}"(%n)
  hexir_vm.return %b11 : i64
^many:
  %m = hexir_vm.inst "cmp.lt.u.i64"(%c1, %b11) : (i64, i64) -> i64
  hexir_vm.assert %m, "many rows"
  hexir_vm.return %d : i64
}

// -----

// A block argument that receives slice values on every edge (a dim after a batch-1 switch)
// is in the slice: ^miss computes it as a select over the edges. A check after the join of a
// branch the slice does not decide (a cached command buffer or not, `ref.is_null`) is reached
// whenever the block dominating it is, so it moves too.
// CHECK-LABEL: func.func @joined(
// CHECK:         hexir_vm.cond_br %{{.+}}, ^[[REST:.+]], ^[[MISS:[a-z0-9]+]]
// CHECK-NEXT:  ^[[MISS]]:
// CHECK:         %[[ONE:.+]] = hexir_vm.inst "cmp.eq.i64"
// CHECK:         %[[TAKEN:.+]] = hexir_vm.inst "cmp.{{eq|ne}}.i64"(%[[ONE]],
// CHECK-NEXT:    %[[V:.+]] = hexir_vm.inst "select.i64"(%[[TAKEN]], %{{.+}}, %{{.+}})
// CHECK-NEXT:    %[[OK:.+]] = hexir_vm.inst "cmp.le.u.i64"(%[[V]],
// CHECK:         %[[G:.+]] = hexir_vm.inst "select.i64"(%{{.+}}, %[[OK]], %{{.+}})
// CHECK-NEXT:    hexir_vm.assert %[[G]], "joined {}"(%[[V]])
// CHECK:         hexir_vm.br ^[[REST]]
// CHECK:         hexir_vm.ref.is_null
// CHECK-NOT:     hexir_vm.assert
// CHECK:         hexir_vm.return
func.func @joined(%view: !hexir_vm.ref, %cached: !hexir_vm.ref) -> i64 {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c0) : (!hexir_vm.ref, i64) -> i64
  %j0 = hexir_vm.inst "add.i64"(%d, %c1) : (i64, i64) -> i64
  %j1 = hexir_vm.inst "add.i64"(%j0, %c1) : (i64, i64) -> i64
  %j2 = hexir_vm.inst "add.i64"(%j1, %c1) : (i64, i64) -> i64
  %j3 = hexir_vm.inst "add.i64"(%j2, %c1) : (i64, i64) -> i64
  %j4 = hexir_vm.inst "add.i64"(%j3, %c1) : (i64, i64) -> i64
  %j5 = hexir_vm.inst "add.i64"(%j4, %c1) : (i64, i64) -> i64
  %j6 = hexir_vm.inst "add.i64"(%j5, %c1) : (i64, i64) -> i64
  %j7 = hexir_vm.inst "add.i64"(%j6, %c1) : (i64, i64) -> i64
  %j8 = hexir_vm.inst "add.i64"(%j7, %c1) : (i64, i64) -> i64
  %j9 = hexir_vm.inst "add.i64"(%j8, %c1) : (i64, i64) -> i64
  %j10 = hexir_vm.inst "add.i64"(%j9, %c1) : (i64, i64) -> i64
  %j11 = hexir_vm.inst "add.i64"(%j10, %c1) : (i64, i64) -> i64
  %j12 = hexir_vm.inst "add.i64"(%j11, %c1) : (i64, i64) -> i64
  %j13 = hexir_vm.inst "add.i64"(%j12, %c1) : (i64, i64) -> i64
  %one = hexir_vm.inst "cmp.eq.i64"(%d, %c1) : (i64, i64) -> i64
  hexir_vm.cond_br %one, ^single, ^many
^single:
  hexir_vm.br ^join(%c1 : i64)
^many:
  hexir_vm.br ^join(%d : i64)
^join(%v: i64):
  %null = hexir_vm.ref.is_null %cached
  hexir_vm.cond_br %null, ^record, ^run
^record:
  hexir_vm.br ^run
^run:
  %bound = hexir_vm.const.i64 4096
  %ok = hexir_vm.inst "cmp.le.u.i64"(%v, %bound) : (i64, i64) -> i64
  hexir_vm.assert %ok, "joined {}"(%v)
  %r = hexir_vm.inst "add.i64"(%v, %j13) : (i64, i64) -> i64
  hexir_vm.return %r : i64
}

// -----

// A value used in a loop is loaded before the loop, not in it; a check after a branch on a
// value outside the slice (the argument %n) stays there.
// CHECK-LABEL: func.func @loop_use(
// CHECK:         hexir_vm.global.store.i64
// CHECK:         hexir_vm.br ^[[REST:bb[0-9]+]]
// CHECK-NEXT:  ^[[REST]]:
// CHECK-NEXT:    %[[L:.+]] = hexir_vm.global.load.i64
// CHECK-NEXT:    hexir_vm.br ^[[HEAD:bb[0-9]+]](
// CHECK:       ^[[HEAD]](
// CHECK-NOT:     global.load.i64
// CHECK:         hexir_vm.inst "add.i64"(%{{.+}}, %[[L]])
// CHECK:         hexir_vm.assert %{{.+}}, "after a data branch"
func.func @loop_use(%view: !hexir_vm.ref, %n: i64) -> i64 {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c0) : (!hexir_vm.ref, i64) -> i64
  %x0 = hexir_vm.inst "add.i64"(%d, %c1) : (i64, i64) -> i64
  %x1 = hexir_vm.inst "add.i64"(%x0, %c1) : (i64, i64) -> i64
  %x2 = hexir_vm.inst "add.i64"(%x1, %c1) : (i64, i64) -> i64
  %x3 = hexir_vm.inst "add.i64"(%x2, %c1) : (i64, i64) -> i64
  %x4 = hexir_vm.inst "add.i64"(%x3, %c1) : (i64, i64) -> i64
  %x5 = hexir_vm.inst "add.i64"(%x4, %c1) : (i64, i64) -> i64
  %x6 = hexir_vm.inst "add.i64"(%x5, %c1) : (i64, i64) -> i64
  %x7 = hexir_vm.inst "add.i64"(%x6, %c1) : (i64, i64) -> i64
  %x8 = hexir_vm.inst "add.i64"(%x7, %c1) : (i64, i64) -> i64
  %x9 = hexir_vm.inst "add.i64"(%x8, %c1) : (i64, i64) -> i64
  %x10 = hexir_vm.inst "add.i64"(%x9, %c1) : (i64, i64) -> i64
  %x11 = hexir_vm.inst "add.i64"(%x10, %c1) : (i64, i64) -> i64
  %x12 = hexir_vm.inst "add.i64"(%x11, %c1) : (i64, i64) -> i64
  %x13 = hexir_vm.inst "add.i64"(%x12, %c1) : (i64, i64) -> i64
  hexir_vm.br ^head(%c0, %c0 : i64, i64)
^head(%i: i64, %acc: i64):
  %p = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^body, ^exit
^body:
  %a = hexir_vm.inst "add.i64"(%acc, %x13) : (i64, i64) -> i64
  %j = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
  hexir_vm.br ^head(%j, %a : i64, i64)
^exit:
  %q = hexir_vm.inst "cmp.lt.s.i64"(%c0, %n) : (i64, i64) -> i64
  hexir_vm.cond_br %q, ^positive, ^done
^positive:
  %k = hexir_vm.inst "cmp.le.u.i64"(%d, %x13) : (i64, i64) -> i64
  hexir_vm.assert %k, "after a data branch"
  hexir_vm.br ^done
^done:
  hexir_vm.return %acc : i64
}

// -----

// Left alone: a function another calls (the callee could run with other dims while the
// caller holds loaded values: not here, but in general) and one with too little to save.
// CHECK-NOT:   hexir_vm.value_globals
// CHECK-LABEL: func.func @callee(
// CHECK-NOT:     global.load.i64
// CHECK-LABEL: func.func @caller(
// CHECK-LABEL: func.func @little(
// CHECK-NOT:     global.load.i64
// CHECK:         hexir_vm.return
func.func @callee(%view: !hexir_vm.ref) -> i64 {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c0) : (!hexir_vm.ref, i64) -> i64
  %y0 = hexir_vm.inst "add.i64"(%d, %c1) : (i64, i64) -> i64
  %y1 = hexir_vm.inst "add.i64"(%y0, %c1) : (i64, i64) -> i64
  %y2 = hexir_vm.inst "add.i64"(%y1, %c1) : (i64, i64) -> i64
  %y3 = hexir_vm.inst "add.i64"(%y2, %c1) : (i64, i64) -> i64
  %y4 = hexir_vm.inst "add.i64"(%y3, %c1) : (i64, i64) -> i64
  %y5 = hexir_vm.inst "add.i64"(%y4, %c1) : (i64, i64) -> i64
  %y6 = hexir_vm.inst "add.i64"(%y5, %c1) : (i64, i64) -> i64
  %y7 = hexir_vm.inst "add.i64"(%y6, %c1) : (i64, i64) -> i64
  %y8 = hexir_vm.inst "add.i64"(%y7, %c1) : (i64, i64) -> i64
  %y9 = hexir_vm.inst "add.i64"(%y8, %c1) : (i64, i64) -> i64
  %y10 = hexir_vm.inst "add.i64"(%y9, %c1) : (i64, i64) -> i64
  %y11 = hexir_vm.inst "add.i64"(%y10, %c1) : (i64, i64) -> i64
  hexir_vm.return %y11 : i64
}
func.func @caller(%view: !hexir_vm.ref) -> i64 {
  %r = hexir_vm.call @callee(%view) : (!hexir_vm.ref) -> i64
  hexir_vm.return %r : i64
}
func.func @little(%view: !hexir_vm.ref) -> i64 {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c0) : (!hexir_vm.ref, i64) -> i64
  %a = hexir_vm.inst "add.i64"(%d, %c1) : (i64, i64) -> i64
  hexir_vm.return %a : i64
}
