// RUN: hexir-opt %s -split-input-file --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm | FileCheck %s

// A count from the shape: N = 4 * parameter word 0 (the operand's dim 0);
// tile = max(256, ceil(N / 1056)); count = max(1, ceil(N / tile)), stored after the two
// parameter words as x = count, y = 1 (one i64: count | 1 << 32) and z = 1; the dispatch is
// recorded indirect from the parameter buffer's slot (2) at byte 16. The recording holds no
// count, so a replay with another N launches another grid.
// CHECK-LABEL: func.func @rows(
// CHECK:         %[[D0:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK:         hal.device.queue.alloca
// CHECK-NEXT:    %[[FOUR:.+]] = hexir_vm.const.i64 4
// CHECK-NEXT:    %[[N:.+]] = hexir_vm.inst "mul.i64"(%[[FOUR]], %[[D0]])
// CHECK-NEXT:    %[[L:.+]] = hexir_vm.const.i64 1056
// CHECK-NEXT:    %[[A1:.+]] = hexir_vm.inst "add.i64"(%[[N]], %[[L]])
// CHECK-NEXT:    %[[ONE1:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[B1:.+]] = hexir_vm.inst "sub.i64"(%[[A1]], %[[ONE1]])
// CHECK-NEXT:    %[[GROWN:.+]] = hexir_vm.inst "div.s.i64"(%[[B1]], %[[L]])
// CHECK-NEXT:    %[[T:.+]] = hexir_vm.const.i64 256
// CHECK-NEXT:    %[[TILE:.+]] = hexir_vm.inst "max.s.i64"(%[[GROWN]], %[[T]])
// CHECK-NEXT:    %[[A2:.+]] = hexir_vm.inst "add.i64"(%[[N]], %[[TILE]])
// CHECK-NEXT:    %[[ONE2:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[B2:.+]] = hexir_vm.inst "sub.i64"(%[[A2]], %[[ONE2]])
// CHECK-NEXT:    %[[Q:.+]] = hexir_vm.inst "div.s.i64"(%[[B2]], %[[TILE]])
// CHECK-NEXT:    %[[ONE3:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[COUNT:.+]] = hexir_vm.inst "max.s.i64"(%[[Q]], %[[ONE3]])
// CHECK-NEXT:    %[[Y:.+]] = hexir_vm.const.i64 4294967296
// CHECK-NEXT:    %[[XY:.+]] = hexir_vm.inst "or.i64"(%[[COUNT]], %[[Y]])
// CHECK-NEXT:    %[[Z:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[BYTES:.+]] = hexir_vm.const.i64 32
// CHECK-NEXT:    %[[P:.+]] = hexir_vm.call.import "hal.allocator.allocate_uniform"(%{{.+}}, %[[BYTES]])
// CHECK:         hexir_vm.call.import "hal.buffer.store_i64"(%[[P]], %{{.+}}, %[[D0]], %[[D0]], %[[XY]], %[[Z]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.create"
// CHECK:         %[[SLOT:.+]] = hexir_vm.const.i64 2
// CHECK-NEXT:    %[[OFFSET:.+]] = hexir_vm.const.i64 16
// CHECK-NEXT:    %[[BINDINGS:.+]] = hexir_vm.const.i64 3
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_indirect_slots"(%{{.+}}, %{{.+}}, %{{.+}}, %[[SLOT]], %[[OFFSET]], %[[BINDINGS]], %{{.+}}, %{{.+}}, %{{.+}})
// CHECK-NOT:     hal.command_buffer.dispatch_slots
// CHECK:         hal.command_buffer.finalize
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"({{.*}}, %[[P]])
hexir.executable @k attributes {hexir.workgroup_count_dynamic = {extent_factor = 4 : i64, extent_words = array<i64: 0>, limit = 1056 : i64, tile = 256 : i64}} {
}
func.func @rows(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Two dispatches of one segment with equal parameters and the same description share one
// parameter buffer and one count computation: one allocate_uniform, one "or.i64".
// CHECK-LABEL: func.func @twice(
// CHECK-COUNT-1: hexir_vm.inst "or.i64"
// CHECK-NOT:     hexir_vm.inst "or.i64"
// CHECK-COUNT-1: hal.allocator.allocate_uniform
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK-COUNT-2: hal.command_buffer.dispatch_indirect_slots
hexir.executable @k attributes {hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 0>, limit = 64 : i64, tile = 32 : i64}} {
}
func.func @twice(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = hexir.dispatch @k(%0) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}
