// RUN: hexir-opt %s -split-input-file --hexir-convert-to-vm | FileCheck %s

// Arguments are asserted (index, element type f32 = 1, dims) and unwrapped; results are
// allocated (byte size); bindings are inputs then outputs; one command buffer with a
// barrier between the dependent dispatches; submit with a null wait semaphore, wait,
// return views.
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: !hexir_vm.ref, %[[S:[a-z0-9]+]]: f64) -> !hexir_vm.ref
// CHECK-SAME:    hexir_vm.abi_args = "tensor<2x3xf32>;f32"
// CHECK-SAME:    hexir_vm.abi_results = "tensor<2x3xf32>"
// CHECK:         %[[DEV:.+]] = hexir_vm.call.import "hal.device.default"()
// CHECK:         %[[I0:.+]] = hexir_vm.const.i64 0
// CHECK:         %[[F32:.+]] = hexir_vm.const.i64 1
// CHECK:         %[[D0:.+]] = hexir_vm.const.i64 2
// CHECK:         %[[D1:.+]] = hexir_vm.const.i64 3
// CHECK:         hexir_vm.call.import "hal.buffer_view.assert"(%[[A]], %[[I0]], %[[F32]], %[[D0]], %[[D1]])
// CHECK:         %[[BUF:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%[[A]])
// CHECK:         %[[EXE:.+]] = hexir_vm.call.import "hal.executable.lookup"(%[[DEV]], %{{.+}})
// CHECK:         %[[BITS:.+]] = hexir_vm.trunc.f64.f32 %[[S]]
// CHECK:         %[[SIZE:.+]] = hexir_vm.const.i64 24
// CHECK:         %[[OUT0:.+]] = hexir_vm.call.import "hal.allocator.allocate"(%[[DEV]], %[[SIZE]])
// CHECK:         %[[CB:.+]] = hexir_vm.call.import "hal.command_buffer.create"(%[[DEV]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch"(%[[CB]], %[[EXE]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[BUF]], %[[OUT0]], %[[BITS]])
// CHECK:         %[[OUT1:.+]] = hexir_vm.call.import "hal.allocator.allocate"
// CHECK:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch"(%[[CB]], %[[EXE]], {{.*}}, %[[OUT0]], %[[OUT1]], %{{.+}})
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"(%[[CB]])
// CHECK:         %[[SEM:.+]] = hexir_vm.call.import "hal.semaphore.create"
// CHECK:         %[[NULL:.+]] = hexir_vm.null
// CHECK:         hexir_vm.call.import "hal.device.queue.execute"(%[[DEV]], %[[CB]], %[[NULL]], %{{.+}}, %[[SEM]], %{{.+}})
// CHECK:         hexir_vm.call.import "hal.semaphore.wait"(%[[SEM]], %{{.+}})
// CHECK:         %[[VIEW:.+]] = hexir_vm.call.import "hal.buffer_view.create"(%[[OUT1]], {{.*}}) : (!hexir_vm.ref, i64, i64, i64) -> !hexir_vm.ref
// CHECK:         hexir_vm.return %[[VIEW]]
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 2, 1, 1>} {
}
func.func @main(%a: tensor<2x3xf32>, %s: f32) -> tensor<2x3xf32> {
  %0 = hexir.dispatch @k(%a, %s) : (tensor<2x3xf32>, f32) -> tensor<2x3xf32>
  %1 = hexir.dispatch @k(%0, %s) : (tensor<2x3xf32>, f32) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Constant tensors become rodata copied into a device buffer.
// CHECK-LABEL: func.func @constant
// CHECK:         %[[RO:.+]] = hexir_vm.rodata dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK:         hexir_vm.call.import "hal.allocator.allocate_initialized"(%{{.+}}, %[[RO]])
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"
func.func @constant() -> tensor<2xf32> {
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}
