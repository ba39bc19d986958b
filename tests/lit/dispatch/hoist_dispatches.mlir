// RUN: hexir-opt %s -split-input-file --loop-invariant-code-motion | FileCheck %s

// hexir.dispatch is Pure: a dispatch on loop-invariant operands (a weight layout change)
// and shape arithmetic leave the loop; the dispatch on the loop-carried value stays.
// CHECK-LABEL: func.func @hoist(
// CHECK:         %[[T:.+]] = hexir.dispatch @transpose(%arg1)
// CHECK:         %[[N:.+]] = arith.muli
// CHECK:         scf.for
// CHECK:           hexir.dispatch @matmul(%{{.+}}, %[[T]], %[[N]])
// CHECK:           scf.yield
hexir.executable @transpose attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @matmul attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @hoist(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %n: index, %k: index) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4x4xf32> {
    %t = hexir.dispatch @transpose(%w) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %kk = arith.muli %k, %k : index
    %m = hexir.dispatch @matmul(%a, %t, %kk) : (tensor<4x4xf32>, tensor<4x4xf32>, index) -> tensor<4x4xf32>
    scf.yield %m : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}
