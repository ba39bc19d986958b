// RUN: hexir-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(hexir-hoist-vm-loop-invariants))' | FileCheck %s

// Hoisted: a metadata query of an invariant view and an add of invariant values move to the
// preheader, with a copy of their constant operand; the constant itself stays for the add of
// the induction variable (a hoisted constant would hold a register across the loop), and so
// does the add of the carried sum.
// CHECK-LABEL: func.func @pure_invariants(
// CHECK-SAME:    %[[V:[a-z0-9]+]]: !hexir_vm.ref, %[[N:[a-z0-9]+]]: i64
// CHECK:         %[[C1:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[D:.+]] = hexir_vm.call.import "hal.buffer_view.dim"(%[[V]], %[[C1]])
// CHECK-NEXT:    %[[D2:.+]] = hexir_vm.inst "add.i64"(%[[D]], %[[N]])
// CHECK-NEXT:    hexir_vm.br ^[[HEAD:.+]](
// CHECK:       ^[[HEAD]](%[[I:.+]]: i64, %[[ACC:.+]]: i64):
// CHECK:         hexir_vm.cond_br
// CHECK-NEXT:  ^{{.+}}:
// CHECK-NEXT:    %[[C1B:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    hexir_vm.inst "add.i64"(%[[ACC]], %[[D2]])
// CHECK-NEXT:    hexir_vm.inst "add.i64"(%[[I]], %[[C1B]])
// CHECK-NEXT:    hexir_vm.br ^[[HEAD]]
func.func @pure_invariants(%view: !hexir_vm.ref, %n: i64) -> i64 {
  %c0 = hexir_vm.const.i64 0
  hexir_vm.br ^head(%c0, %c0 : i64, i64)
^head(%i: i64, %acc: i64):
  %p = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^body, ^exit
^body:
  %c1 = hexir_vm.const.i64 1
  %d = hexir_vm.call.import "hal.buffer_view.dim"(%view, %c1) : (!hexir_vm.ref, i64) -> i64
  %d2 = hexir_vm.inst "add.i64"(%d, %n) : (i64, i64) -> i64
  %a = hexir_vm.inst "add.i64"(%acc, %d2) : (i64, i64) -> i64
  %j = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
  hexir_vm.br ^head(%j, %a : i64, i64)
^exit:
  hexir_vm.return %acc : i64
}

// -----

// Refused: a division by an invariant value that may be zero, in a body the loop may never
// reach (the header exits first), stays; the same division in the header, which runs
// whenever the loop is entered, is hoisted.
// CHECK-LABEL: func.func @division_only_when_reached(
// CHECK-SAME:    %[[N:[a-z0-9]+]]: i64, %[[M:[a-z0-9]+]]: i64
// CHECK:         %[[Q:.+]] = hexir_vm.inst "div.s.i64"(%[[M]], %[[N]])
// CHECK-NEXT:    hexir_vm.br ^[[HEAD:.+]](
// CHECK:       ^[[HEAD]](%[[I:.+]]: i64):
// CHECK-NEXT:    hexir_vm.inst "cmp.lt.s.i64"(%[[I]], %[[Q]])
// CHECK-NEXT:    hexir_vm.cond_br
// CHECK-NEXT:  ^{{.+}}:
// CHECK-NEXT:    hexir_vm.inst "div.u.i64"(%[[N]], %[[M]])
func.func @division_only_when_reached(%n: i64, %m: i64) -> i64 {
  %c0 = hexir_vm.const.i64 0
  hexir_vm.br ^head(%c0 : i64)
^head(%i: i64):
  %q = hexir_vm.inst "div.s.i64"(%m, %n) : (i64, i64) -> i64
  %p = hexir_vm.inst "cmp.lt.s.i64"(%i, %q) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^body, ^exit
^body:
  %r = hexir_vm.inst "div.u.i64"(%n, %m) : (i64, i64) -> i64
  %j = hexir_vm.inst "add.i64"(%i, %r) : (i64, i64) -> i64
  hexir_vm.br ^head(%j : i64)
^exit:
  hexir_vm.return %i : i64
}

// -----

// A division in the body by max(n, 512) (a workgroup count's shape arithmetic: the divisor is
// at least 512) cannot trap: hoisted with its divisor although the body may never run; one by
// max(n, -1) (may be 0 or -1) or a 32-bit one (truncates its divisor) stays.
// CHECK-LABEL: func.func @division_by_positive_max(
// CHECK-SAME:    %[[N:[a-z0-9]+]]: i64, %[[M:[a-z0-9]+]]: i64
// CHECK:         %[[C512:.+]] = hexir_vm.const.i64 512
// CHECK-NEXT:    %[[D:.+]] = hexir_vm.inst "max.s.i64"(%[[N]], %[[C512]])
// CHECK-NEXT:    %[[Q:.+]] = hexir_vm.inst "div.s.i64"(%[[M]], %[[D]])
// CHECK:         hexir_vm.br ^[[HEAD:.+]](
// CHECK:       ^[[HEAD]](%{{.+}}: i64):
// CHECK:         hexir_vm.cond_br
// CHECK-NEXT:  ^{{.+}}:
// CHECK-NOT:     "div.s.i64"(%[[M]], %[[D]])
// CHECK:         hexir_vm.inst "div.s.i64"(%[[M]], %{{.+}})
// CHECK:         hexir_vm.inst "div.s.i32"(%[[M]], %{{.+}})
// CHECK:         hexir_vm.inst "add.i64"(%{{.+}}, %[[Q]])
func.func @division_by_positive_max(%n: i64, %m: i64) -> i64 {
  %c0 = hexir_vm.const.i64 0
  hexir_vm.br ^head(%c0 : i64)
^head(%i: i64):
  %p = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^body, ^exit
^body:
  %c512 = hexir_vm.const.i64 512
  %d = hexir_vm.inst "max.s.i64"(%n, %c512) : (i64, i64) -> i64
  %q = hexir_vm.inst "div.s.i64"(%m, %d) : (i64, i64) -> i64
  %cm1 = hexir_vm.const.i64 -1
  %e = hexir_vm.inst "max.s.i64"(%n, %cm1) : (i64, i64) -> i64
  %r = hexir_vm.inst "div.s.i64"(%m, %e) : (i64, i64) -> i64
  %s = hexir_vm.inst "div.s.i32"(%m, %d) : (i64, i64) -> i64
  %t = hexir_vm.inst "add.i64"(%r, %s) : (i64, i64) -> i64
  %u = hexir_vm.inst "add.i64"(%t, %q) : (i64, i64) -> i64
  %j = hexir_vm.inst "add.i64"(%i, %u) : (i64, i64) -> i64
  hexir_vm.br ^head(%j : i64)
^exit:
  hexir_vm.return %i : i64
}

// -----

// Refused: imports with effects (an allocation whose buffer is per iteration, queue work) and
// globals (a store in the loop may change what a load reads) stay, although their operands
// are invariant.
// CHECK-LABEL: func.func @effects_stay(
// CHECK:         hexir_vm.br ^[[HEAD:.+]](
// CHECK:       ^[[HEAD]](
// CHECK:         hexir_vm.cond_br
// CHECK-NEXT:  ^{{.+}}:
// CHECK-NEXT:    hexir_vm.call.import "hal.allocator.allocate"
// CHECK-NEXT:    hexir_vm.call.import "hal.device.wait_idle"
// CHECK-NEXT:    hexir_vm.global.load.ref 3
// CHECK-NEXT:    hexir_vm.global.store.ref
func.func @effects_stay(%dev: !hexir_vm.ref, %n: i64, %size: i64) {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  hexir_vm.br ^head(%c0 : i64)
^head(%i: i64):
  %p = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^body, ^exit
^body:
  %b = hexir_vm.call.import "hal.allocator.allocate"(%dev, %size) : (!hexir_vm.ref, i64) -> !hexir_vm.ref
  hexir_vm.call.import "hal.device.wait_idle"(%dev) : (!hexir_vm.ref) -> ()
  %g = hexir_vm.global.load.ref 3
  hexir_vm.global.store.ref %b, 4
  %j = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
  hexir_vm.br ^head(%j : i64)
^exit:
  hexir_vm.return
}

// -----

// A uniform buffer cached in ref global 5 with invariant values leaves the loop with its load
// and store; the one holding the induction variable (global 6) stays, and so does the one
// whose global another op of the loop reads (global 7). A header argument that receives %n on
// both edges is %n, so the values it feeds are invariant too. A transient (may fail to
// allocate) in a body the loop may never reach stays.
// CHECK-LABEL: func.func @cached_in_global(
// CHECK-SAME:    %[[DEV:[a-z0-9]+]]: !hexir_vm.ref, %[[N:[a-z0-9]+]]: i64
// CHECK:         %[[G5:.+]] = hexir_vm.global.load.ref 5
// CHECK-NEXT:    %[[U5:.+]] = hexir_vm.call.import "hal.allocator.reuse_uniform"(%[[DEV]], %[[G5]], %[[N]])
// CHECK-NEXT:    hexir_vm.global.store.ref %[[U5]], 5
// CHECK-NEXT:    hexir_vm.br ^[[HEAD:.+]](
// CHECK:       ^[[HEAD]](%[[I:.+]]: i64, %{{.+}}: i64):
// CHECK:         hexir_vm.cond_br
// CHECK-NEXT:  ^{{.+}}:
// CHECK-NEXT:    hexir_vm.global.load.ref 6
// CHECK-NEXT:    hexir_vm.call.import "hal.allocator.reuse_uniform"(%[[DEV]], %{{.+}}, %[[I]])
// CHECK-NEXT:    hexir_vm.global.store.ref %{{.+}}, 6
// CHECK-NEXT:    hexir_vm.global.load.ref 7
// CHECK-NEXT:    hexir_vm.call.import "hal.allocator.reuse_uniform"
// CHECK-NEXT:    hexir_vm.global.store.ref %{{.+}}, 7
// CHECK-NEXT:    hexir_vm.global.load.ref 7
// CHECK-NEXT:    hexir_vm.global.load.ref 8
// CHECK-NEXT:    hexir_vm.call.import "hal.device.transient"
// CHECK-NEXT:    hexir_vm.global.store.ref %{{.+}}, 8
func.func @cached_in_global(%dev: !hexir_vm.ref, %n: i64) {
  %c0 = hexir_vm.const.i64 0
  %c1 = hexir_vm.const.i64 1
  hexir_vm.br ^head(%c0, %n : i64, i64)
^head(%i: i64, %same: i64):
  %p = hexir_vm.inst "cmp.lt.s.i64"(%i, %same) : (i64, i64) -> i64
  hexir_vm.cond_br %p, ^body, ^exit
^body:
  %g5 = hexir_vm.global.load.ref 5
  %u5 = hexir_vm.call.import "hal.allocator.reuse_uniform"(%dev, %g5, %same) : (!hexir_vm.ref, !hexir_vm.ref, i64) -> !hexir_vm.ref
  hexir_vm.global.store.ref %u5, 5
  %g6 = hexir_vm.global.load.ref 6
  %u6 = hexir_vm.call.import "hal.allocator.reuse_uniform"(%dev, %g6, %i) : (!hexir_vm.ref, !hexir_vm.ref, i64) -> !hexir_vm.ref
  hexir_vm.global.store.ref %u6, 6
  %g7 = hexir_vm.global.load.ref 7
  %u7 = hexir_vm.call.import "hal.allocator.reuse_uniform"(%dev, %g7, %n) : (!hexir_vm.ref, !hexir_vm.ref, i64) -> !hexir_vm.ref
  hexir_vm.global.store.ref %u7, 7
  %again = hexir_vm.global.load.ref 7
  %g8 = hexir_vm.global.load.ref 8
  %t8 = hexir_vm.call.import "hal.device.transient"(%dev, %g8, %n) : (!hexir_vm.ref, !hexir_vm.ref, i64) -> !hexir_vm.ref
  hexir_vm.global.store.ref %t8, 8
  %j = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
  hexir_vm.br ^head(%j, %n : i64, i64)
^exit:
  hexir_vm.return
}
