// RUN: hexir-opt %s --split-input-file --hexir-sink-loop-constants | FileCheck %s

// %k is used only in the loop body: it moves in. %c0/%c1/%n bound the loop and stay; %z is
// also returned and stays.
// CHECK-LABEL: func.func @sum(
// CHECK-NOT:   arith.constant 3
// CHECK:       %[[Z:.+]] = arith.constant 0 : i64
// CHECK:       scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[Z]]) -> (i64) {
// CHECK-NEXT:    %[[K:.+]] = arith.constant 3 : i64
// CHECK-NEXT:    %[[S:.+]] = arith.addi %[[ACC]], %[[K]] : i64
// CHECK-NEXT:    scf.yield %[[S]]
// CHECK:       return %{{.+}}, %[[Z]]
func.func @sum(%n: index) -> (i64, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %k = arith.constant 3 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i64) {
    %s = arith.addi %acc, %k : i64
    scf.yield %s : i64
  }
  return %r, %z : i64, i64
}

// -----

// Used only in the inner loop: the constant ends up there; a use in each of two loops gives
// one clone per loop. Tensor constants stay.
// CHECK-LABEL: func.func @nested(
// CHECK:       arith.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK:       scf.for
// CHECK-NOT:     arith.constant 2.5
// CHECK:         scf.for
// CHECK-NEXT:      %[[F:.+]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:      arith.mulf %{{.+}}, %[[F]]
// CHECK:       scf.while
// CHECK-NEXT:    %[[G:.+]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT:    arith.cmpf olt, %{{.+}}, %[[G]]
func.func @nested(%n: index, %x: f32) -> (f32, f32, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 2.5 : f32
  %t = arith.constant dense<1.0> : tensor<4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f32) {
    %r2 = scf.for %j = %c0 to %n step %c1 iter_args(%b = %a) -> (f32) {
      %m = arith.mulf %b, %f : f32
      scf.yield %m : f32
    }
    scf.yield %r2 : f32
  }
  %w = scf.while (%v = %x) : (f32) -> f32 {
    %lt = arith.cmpf olt, %v, %f : f32
    scf.condition(%lt) %v : f32
  } do {
  ^bb0(%v: f32):
    %one = arith.constant 1.0 : f32
    %v2 = arith.addf %v, %one : f32
    scf.yield %v2 : f32
  }
  return %r, %w, %t : f32, f32, tensor<4xf32>
}
