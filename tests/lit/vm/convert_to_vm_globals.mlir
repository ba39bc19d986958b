// RUN: hexir-opt %s --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm | FileCheck %s

// A tensor global is one ref global: the initializer form stores the buffer its dispatch
// wrote, functions load it (static dims as constants), and the module initializer calls
// the form after uploading the constants. No hexir.global op is left.
// CHECK-LABEL: module attributes {hexir_vm.ref_globals = 4 : i64}
// CHECK-NOT:   hexir.global
// CHECK-LABEL: func.func @main(
// CHECK:         %[[W:.+]] = hexir_vm.global.load.ref 0
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK-LABEL: func.func private @__hexir_lifted_init()
// CHECK:         hexir_vm.global.load.ref [[CONST:[0-9]+]]
// CHECK:         %[[T:.+]] = hexir_vm.call.import "hal.device.queue.alloca"
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"
// CHECK:         hexir_vm.global.store.ref %[[T]], 0
// CHECK-LABEL: func.func private @__hexir_init()
// CHECK-SAME:    hexir_vm.initializer
// CHECK:         hexir_vm.call.import "hal.allocator.allocate_initialized"
// CHECK:         hexir_vm.global.store.ref %{{.+}}, [[CONST]]
// CHECK:         hexir_vm.call @__hexir_lifted_init() : () -> ()
// CHECK-NEXT:    hexir_vm.return
hexir.executable @t attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @mm attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.global @main_lifted_0 : tensor<4x2xf32>
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = hexir.global.load @main_lifted_0 : tensor<4x2xf32>
  %1 = hexir.dispatch @mm(%0, %arg0) : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
func.func private @__hexir_lifted_init() attributes {hexir.initializer} {
  %w = arith.constant dense<1.0> : tensor<2x4xf32>
  %0 = hexir.dispatch @t(%w) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  hexir.global.store %0, @main_lifted_0 : tensor<4x2xf32>
  return
}
