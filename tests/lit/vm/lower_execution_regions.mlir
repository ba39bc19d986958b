// RUN: hexir-opt %s -split-input-file --hexir-convert-to-vm | FileCheck %s

// Barriers are recorded exactly where the region has hexir.barrier (two waves: one barrier
// after the second dispatch); the region's non-yielded results (%a, %b) are transients
// (ref globals), the yielded one a queue allocation.
// CHECK-LABEL: func.func @waves(
// CHECK-COUNT-2: hexir_vm.call.import "hal.device.transient"
// CHECK:         hexir_vm.call.import "hal.device.queue.alloca"
// CHECK:         hexir_vm.call.import "hal.command_buffer.create"
// CHECK:         hexir_vm.call.import "hal.executable.lookup"
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK-NOT:     hal.command_buffer.barrier
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK-NEXT:    hexir_vm.call.import "hal.command_buffer.barrier"
// CHECK-NOT:     hal.command_buffer.barrier
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"
// CHECK-NOT:     hal.semaphore
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @waves(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %c = hexir.dispatch @k(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %c : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// Awaits that hexir-elide-timepoints kept become timeline semaphores: a region whose
// timepoint is awaited creates one and signals it to 1 on submission; the awaiting region
// waits on it in its submission. A second await is waited for on the host first (no import
// takes several wait pairs).
// CHECK-LABEL: func.func @semaphores(
// CHECK:         %[[S0:.+]] = hexir_vm.call.import "hal.semaphore.create"
// CHECK:         %[[ONE:.+]] = hexir_vm.const.i64 1
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[S0]], %[[ONE]],
// CHECK:         %[[S1:.+]] = hexir_vm.call.import "hal.semaphore.create"
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %{{.+}}, %[[S0]], %{{.+}}, %[[S1]], %{{.+}},
// CHECK:         hexir_vm.call.import "hal.semaphore.wait"(%[[S0]], %{{.+}})
// CHECK-NOT:     hal.semaphore.create
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %{{.+}}, %[[S1]], %{{.+}}, %{{.+}}, %{{.+}},
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @semaphores(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a, %t0 = hexir.execute on(0, "transfer") -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %b, %t1 = hexir.execute on(0, "compute") await(%t0) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %c, %t2 = hexir.execute on(0, "compute") await(%t0, %t1) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  return %c : tensor<4xf32>
}

// -----

// A result updated in place by a later dispatch of the region lives on in the yielded tied
// result: it is not a transient (queue-allocated, bound once as operand and output), while a
// result only read inside the region is.
// CHECK-LABEL: func.func @tied_result_is_not_transient(
// CHECK:         %[[X:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%arg0)
// CHECK:         %[[T:.+]] = hexir_vm.call.import "hal.device.transient"
// CHECK-NOT:     hal.device.transient
// CHECK:         %[[CACHE:.+]] = hexir_vm.call.import "hal.device.queue.alloca"
// CHECK-NOT:     hal.device.queue.alloca
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[X]], %[[T]], %[[CACHE]])
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[CACHE]],
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @update attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @tied_result_is_not_transient(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %row = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %cache = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %new = hexir.dispatch @update(%cache, %row) {hexir.tied_operands = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %new : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
