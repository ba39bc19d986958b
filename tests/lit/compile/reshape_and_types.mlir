// RUN: hexir-compile %s --target=cpu --emit-vm-mlir -o - | FileCheck %s

// A host reshape reuses the producer's buffer; i8 tensors use element type 16.
// CHECK-LABEL: func.func @reshape(
// CHECK:         %[[BUF:.+]] = hexir_vm.call.import "hal.device.queue.alloca"
// CHECK:         hal.command_buffer.dispatch
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[BUF]], {{.*}}) : (!hexir_vm.ref, i64, i64, i64) -> !hexir_vm.ref
func.func @reshape(%a: tensor<6xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<6xf32>
  %d = linalg.add ins(%a, %a : tensor<6xf32>, tensor<6xf32>) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %r = tensor.expand_shape %d [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @bytes(
// CHECK-SAME:    hexir_vm.abi_args = "tensor<8xi8>"
// CHECK:         %[[ET8:.+]] = hexir_vm.const.i64 16
// CHECK:         hexir_vm.call.import "hal.buffer_view.assert"(%{{.+}}, %{{.+}}, %[[ET8]], %{{.+}})
func.func @bytes(%a: tensor<8xi8>) -> tensor<8xi8> {
  %e = tensor.empty() : tensor<8xi8>
  %d = linalg.add ins(%a, %a : tensor<8xi8>, tensor<8xi8>) outs(%e : tensor<8xi8>) -> tensor<8xi8>
  return %d : tensor<8xi8>
}
