// RUN: hexir-compile %s --target=cpu --emit-vm-mlir -o - | FileCheck %s

// TOSA goes through MLIR's tosa-to-linalg pipelines first; the elementwise chain becomes
// one fused dispatch, the constant an initializer-uploaded global.
// CHECK-COUNT-1: hexir.executable @
// CHECK-NOT:     hexir.executable @
// CHECK-LABEL:   func.func @model(
// CHECK:         hal.command_buffer.dispatch_slots
// CHECK-NOT:     hal.command_buffer.dispatch_slots
// CHECK-LABEL:   func.func private @__hexir_init()
// CHECK:         hexir_vm.rodata
func.func @model(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = "tosa.const"() {values = dense<[[1.0, -1.0, 0.5, 2.0]]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %a = tosa.add %x, %w : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %r = tosa.clamp %a {min_val = 0.0 : f32, max_val = 3.0 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = tosa.tanh %r : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}
