// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions --hexir-outline-dispatch-regions | FileCheck %s

// A loop-carried tensor that only the loop sees (filled here, carried, updated once per
// iteration, read after the update): the row update writes into the carried buffer. The
// dispatch's result is tied to its destination operand; its kernel inserts into the output
// argument.
// CHECK-LABEL: hexir.executable @carried_dispatch_1
// CHECK:         tensor.insert_slice %{{.+}} into %arg2[
// CHECK-LABEL: func.func @carried(
// CHECK:         scf.for
// CHECK:           hexir.dispatch @carried_dispatch_1(%{{.+}}, %{{.+}}, %{{.+}}) {hexir.tied_operands = array<i64: 1>}
func.func @carried(%row: tensor<1x4xf32>, %n: index) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<8x4xf32>) {
    %u = tensor.insert_slice %row into %acc[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %u : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}

// -----

// Not owned, so copied (the kernel computes a fresh result, no tie): a function argument
// (the caller's buffer), a destination read again after the update, and a destination
// defined outside the loop that updates it (each iteration must see the original).
// CHECK-LABEL: func.func @not_owned
// CHECK-NOT:     hexir.tied_operands
// CHECK:         return
func.func @not_owned(%arg: tensor<8x4xf32>, %row: tensor<1x4xf32>, %n: index) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %u1 = tensor.insert_slice %row into %arg[0, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %u2 = tensor.insert_slice %row into %c[1, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %twice = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%c, %u2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %d = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %d) -> (tensor<8x4xf32>) {
    %u3 = tensor.insert_slice %row into %d[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %u3 : tensor<8x4xf32>
  }
  return %u1, %twice, %last : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
