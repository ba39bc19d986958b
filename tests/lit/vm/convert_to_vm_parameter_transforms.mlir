// RUN: hexir-opt %s --convert-scf-to-cf --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm | FileCheck %s

// A function's parameter transforms (hexir-lift-constant-dispatches): the key global holds the
// buffer the transforms last ran on; `hexir.same_buffer` is one cmp.eq.ref against the
// argument's buffer, the transforms one region submitted in their own block, after which the
// argument's buffer is stored as the new key; the call's own region reads the result global.
// (Ref globals: the key 0, the transforms' recorded command buffer 1, the result 2, the
// call's command buffer 3.)
// CHECK-LABEL: module attributes {hexir_vm.ref_globals = 4 : i64}
// CHECK-LABEL: func.func @main(
// CHECK:         %[[W:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%arg1)
// CHECK:         %[[KEY:.+]] = hexir_vm.global.load.ref 0
// CHECK:         %[[SAME:.+]] = hexir_vm.cmp.eq.ref %[[W]], %[[KEY]]
// CHECK:         hexir_vm.cond_br %[[SAME]], ^[[SKIP:bb[0-9]+]], ^[[TRANSFORM:bb[0-9]+]]
// CHECK:       ^[[TRANSFORM]]:
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %[[W]], %[[T:[0-9a-z]+]])
// CHECK-NEXT:    hexir_vm.global.store.ref %[[T]], 2
// CHECK-NEXT:    hexir_vm.global.store.ref %[[W]], 0
// CHECK:         %[[R:.+]] = hexir_vm.global.load.ref 2
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %[[R]],
hexir.executable @t attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @mm attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.global @main_lifted_0 : tensor<4x2xf32>
hexir.global @main_parameter_1 : tensor<2x4xf32>
func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x4xf32> {hexir.parameter}) -> tensor<4x3xf32> {
  %k = hexir.global.load @main_parameter_1 : tensor<2x4xf32>
  %same = hexir.same_buffer %arg1, %k : tensor<2x4xf32>
  scf.if %same {
  } else {
    %t = hexir.dispatch @t(%arg1) : (tensor<2x4xf32>) -> tensor<4x2xf32>
    hexir.global.store %t, @main_lifted_0 : tensor<4x2xf32>
    hexir.global.store %arg1, @main_parameter_1 : tensor<2x4xf32>
  }
  %0 = hexir.global.load @main_lifted_0 : tensor<4x2xf32>
  %1 = hexir.dispatch @mm(%0, %arg0) : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
