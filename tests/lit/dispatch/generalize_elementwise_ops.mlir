// RUN: hexir-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(hexir-generalize-elementwise-ops))' | FileCheck %s
// RUN: hexir-compile %s --target=cpu --emit-vm-mlir -o - | FileCheck %s --check-prefix=FUSED

// Named elementwise ops of run-time dims become the generics they stand for (their payload,
// identity maps, parallel loops), so that dispatch formation fuses the chain: one dispatch.
// CHECK-LABEL: func.func @chain(
// CHECK-NOT:     linalg.add
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:           arith.addf
// CHECK:         linalg.generic
// CHECK:           arith.mulf
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK-NOT:     linalg.mul
// CHECK-NOT:     linalg.exp
// FUSED-LABEL:  func.func @chain(
// FUSED-COUNT-1: hal.command_buffer.dispatch
// FUSED-NOT:     hal.command_buffer.dispatch
// FUSED:         hexir_vm.return
func.func @chain(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x?xf32>
  %n = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %a = linalg.add ins(%x, %y : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %e2 = tensor.empty(%m, %n) : tensor<?x?xf32>
  %b = linalg.mul ins(%a, %x : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %e3 = tensor.empty(%m, %n) : tensor<?x?xf32>
  %c = linalg.exp ins(%b : tensor<?x?xf32>) outs(%e3 : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}

// -----

// A broadcast and a transpose become generics too (a projected permutation in, the identity
// out), so a bias broadcast over rows fuses into the add that reads it: one dispatch.
// CHECK-LABEL: func.func @broadcast_add(
// CHECK-NOT:     linalg.broadcast
// CHECK:         linalg.generic {indexing_maps = [#[[ROW:.+]], #[[ID:.+]]], iterator_types = ["parallel", "parallel"]}
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.generic
// FUSED-LABEL:  func.func @broadcast_add(
// FUSED-COUNT-2: hal.command_buffer.dispatch
// FUSED-NOT:     hal.command_buffer.dispatch
// FUSED:         hexir_vm.return
func.func @broadcast_add(%x: tensor<?x16xf32>, %b: tensor<16xf32>) -> (tensor<?x16xf32>, tensor<16x?xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x16xf32>
  %eb = tensor.empty(%m) : tensor<?x16xf32>
  %bb = linalg.broadcast ins(%b : tensor<16xf32>) outs(%eb : tensor<?x16xf32>) dimensions = [0]
  %e = tensor.empty(%m) : tensor<?x16xf32>
  %s = linalg.add ins(%x, %bb : tensor<?x16xf32>, tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %et = tensor.empty(%m) : tensor<16x?xf32>
  %t = linalg.transpose ins(%x : tensor<?x16xf32>) outs(%et : tensor<16x?xf32>) permutation = [1, 0]
  return %s, %t : tensor<?x16xf32>, tensor<16x?xf32>
}

// -----

// Left named: a fill (a scalar operand), a copy and a matmul (a contraction).
// CHECK-LABEL: func.func @kept(
// CHECK:         linalg.fill
// CHECK:         linalg.copy
// CHECK:         linalg.matmul
// CHECK-NOT:     linalg.generic
func.func @kept(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.copy ins(%x : tensor<4x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %em = tensor.empty() : tensor<4x4xf32>
  %fm = linalg.fill ins(%z : f32) outs(%em : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x4xf32>) outs(%fm : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c, %m : tensor<4x8xf32>, tensor<4x4xf32>
}
