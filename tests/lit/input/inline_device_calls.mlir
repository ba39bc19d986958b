// RUN: hexir-opt %s -split-input-file --hexir-inline-device-calls | FileCheck %s

// A layer called twice: each call site gets its own copy of the body, on its own operands
// (the second copy reads the first one's result); the private callee is erased.
// CHECK-LABEL: func.func @two_layers(
// CHECK-SAME:    %[[X:.+]]: tensor<4xf32>, %[[W0:.+]]: tensor<4xf32>, %[[W1:.+]]: tensor<4xf32>
// CHECK-NOT:     call @
// CHECK:         %[[E0:.+]] = tensor.empty()
// CHECK:         %[[A0:.+]] = linalg.add ins(%[[X]], %[[W0]] : {{.+}}) outs(%[[E0]] :
// CHECK:         %[[E1:.+]] = tensor.empty()
// CHECK:         %[[A1:.+]] = linalg.add ins(%[[A0]], %[[W1]] : {{.+}}) outs(%[[E1]] :
// CHECK:         return %[[A1]]
// CHECK-NOT:     func.func private @layer
func.func @two_layers(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %h = func.call @layer(%x, %w0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = func.call @layer(%h, %w1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @layer(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Nested calls flatten, also inside a loop body; a public callee is inlined and kept.
// CHECK-LABEL: func.func @outer(
// CHECK:         scf.for
// CHECK-NOT:       call @
// CHECK:           linalg.add
// CHECK:           linalg.add
// CHECK:           scf.yield
// CHECK-LABEL: func.func @middle(
// CHECK-NOT:     call @
// CHECK:         linalg.add
// CHECK:         linalg.add
// CHECK-NOT:     func.func private @leaf
func.func @outer(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x) -> (tensor<4xf32>) {
    %u = func.call @middle(%t) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %u : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
func.func @middle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @leaf(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @leaf(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
func.func private @leaf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Stay calls: a host-only callee, a recursive one, one placed on a device.
// CHECK-LABEL: func.func @kept(
// CHECK:         call @scale(
// CHECK:         call @countdown(
// CHECK:         call @placed(
// CHECK:       func.func private @scale(
// CHECK:       func.func private @countdown(
// CHECK:       func.func private @placed(
func.func @kept(%a: i64, %x: tensor<4xf32>) -> (i64, tensor<4xf32>) {
  %s = func.call @scale(%a) : (i64) -> i64
  %c = func.call @countdown(%x, %s) : (tensor<4xf32>, i64) -> tensor<4xf32>
  %p = func.call @placed(%c) : (tensor<4xf32>) -> tensor<4xf32>
  return %s, %p : i64, tensor<4xf32>
}
func.func private @scale(%a: i64) -> i64 {
  %c3 = arith.constant 3 : i64
  %r = arith.muli %a, %c3 : i64
  return %r : i64
}
func.func private @countdown(%x: tensor<4xf32>, %n: i64) -> tensor<4xf32> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %done = arith.cmpi sle, %n, %c0 : i64
  %r = scf.if %done -> (tensor<4xf32>) {
    scf.yield %x : tensor<4xf32>
  } else {
    %m = arith.subi %n, %c1 : i64
    %y = func.call @countdown(%x, %m) : (tensor<4xf32>, i64) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
func.func private @placed(%x: tensor<4xf32>) -> tensor<4xf32> attributes {hexir.device = 1 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A dispatch group in a callee names one instance: each inlined copy gets its own instance
// name (so FormDispatchRegions makes one region per call site, not one over both).
// CHECK-LABEL: func.func @grouped(
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "attention.n1_c[[A:[0-9]+]]"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "attention.n1_c[[A]]"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "attention.n1_c[[B:[0-9]+]]"
// CHECK-NOT:     "attention.n1_c[[A]]"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "attention.n1_c[[B]]"
func.func @grouped(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @attend(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @attend(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
func.func private @attend(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>], iterator_types = ["parallel"], hexir.dispatch_group = "attention.n1"} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>], iterator_types = ["parallel"], hexir.dispatch_group = "attention.n1"} ins(%s : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.addf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %t : tensor<4xf32>
}
