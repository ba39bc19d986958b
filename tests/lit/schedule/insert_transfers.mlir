// RUN: hexir-opt %s -split-input-file --hexir-insert-transfers | FileCheck %s

// A value read on another device gets one transfer, right after its definition, read by
// every use on that device (already resident: %[[T]] twice); a public function returns on
// device 0.
// CHECK-LABEL: func.func @resident(
// CHECK-SAME:    %[[X:.+]]: tensor<4xf32>)
// CHECK:         %[[A:.+]] = hexir.dispatch @k(%[[X]]) {hexir.device = 0 : i64}
// CHECK-NEXT:    %[[T:.+]] = hexir.transfer %[[A]] from(0) to(1) : tensor<4xf32>
// CHECK-NEXT:    %[[B:.+]] = hexir.dispatch @k(%[[T]]) {hexir.device = 1 : i64}
// CHECK-NEXT:    %[[C:.+]] = hexir.dispatch @k(%[[T]], %[[B]]) {hexir.device = 1 : i64}
// CHECK-NEXT:    %[[R:.+]] = hexir.transfer %[[C]] from(1) to(0) : tensor<4xf32>
// CHECK-NEXT:    return %[[R]]
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @k {
  }
  func.func @resident(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @k(%a) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = hexir.dispatch @k(%a, %b) {hexir.device = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %c : tensor<4xf32>
  }
}

// -----

// Devices that share memory (two CPU devices): the transfer is in place (no copy, only queue
// order).
// CHECK-LABEL: func.func @shared_memory(
// CHECK:         %[[A:.+]] = hexir.dispatch @k(%{{.+}}) {hexir.device = 0 : i64}
// CHECK-NEXT:    %[[T:.+]] = hexir.transfer %[[A]] from(0) to(1) in_place : tensor<4xf32>
// CHECK-NEXT:    hexir.dispatch @k(%[[T]]) {hexir.device = 1 : i64}
module attributes {hexir.devices = ["cpu", "cpu"]} {
  hexir.executable @k {
  }
  func.func @shared_memory(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @k(%a) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// A round trip reads the original: device 0 reads %x itself, not %t sent back. A transfer
// nobody reads (%unread) is erased.
// CHECK-LABEL: func.func @round_trip(
// CHECK-SAME:    %[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[T:.+]] = hexir.transfer %[[X]] from(0) to(1) : tensor<4xf32>
// CHECK-NEXT:    %[[B:.+]] = hexir.dispatch @k(%[[T]]) {hexir.device = 1 : i64}
// CHECK-NEXT:    %[[BT:.+]] = hexir.transfer %[[B]] from(1) to(0) : tensor<4xf32>
// CHECK-NEXT:    %[[C:.+]] = hexir.dispatch @k(%[[X]], %[[BT]]) {hexir.device = 0 : i64}
// CHECK-NEXT:    return %[[C]]
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @k {
  }
  func.func @round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
    %t = hexir.transfer %x from(0) to(1) : tensor<4xf32>
    %unread = hexir.transfer %x from(0) to(1) in_place : tensor<4xf32>
    %b = hexir.dispatch @k(%t) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = hexir.dispatch @k(%t, %b) {hexir.device = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %c : tensor<4xf32>
  }
}

// -----

// A constant read on three devices is uploaded once per memory: devices 0 and 2 (both CPU)
// share one copy, the GPU gets its own.
// CHECK-LABEL: func.func @constants(
// CHECK-DAG:     %[[C1:.+]] = arith.constant {hexir.device = 1 : i64}
// CHECK-DAG:     %[[C0:.+]] = arith.constant {hexir.device = 0 : i64}
// CHECK:         hexir.dispatch @k(%[[C0]]) {hexir.device = 0 : i64}
// CHECK-NEXT:    hexir.dispatch @k(%[[C1]]) {hexir.device = 1 : i64}
// CHECK-NEXT:    hexir.dispatch @k(%[[C0]]) {hexir.device = 2 : i64}
// CHECK-NOT:     hexir.transfer
module attributes {hexir.devices = ["cpu", "cuda", "cpu"]} {
  hexir.executable @k {
  }
  func.func @constants() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %cst = arith.constant dense<1.0> : tensor<4xf32>
    %a = hexir.dispatch @k(%cst) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @k(%cst) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = hexir.dispatch @k(%cst) {hexir.device = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// A loop-carried value stays on its init's device: read on device 1 inside the body (one
// transfer at the start of the body), yielded back to device 0.
// CHECK-LABEL: func.func @loop(
// CHECK:         scf.for {{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %{{[a-z0-9_]+}})
// CHECK-NEXT:      %[[T:.+]] = hexir.transfer %[[ACC]] from(0) to(1) : tensor<4xf32>
// CHECK-NEXT:      %[[A:.+]] = hexir.dispatch @k(%[[T]]) {hexir.device = 1 : i64}
// CHECK-NEXT:      %[[B:.+]] = hexir.transfer %[[A]] from(1) to(0) : tensor<4xf32>
// CHECK-NEXT:      scf.yield %[[B]]
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @k {
  }
  func.func @loop(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<4xf32>) {
      %a = hexir.dispatch @k(%acc) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %a : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}

// -----

// Calls: an argument goes to the callee argument's device; a private callee returns on its
// own device, and a host read of its result reads through that device.
// CHECK-LABEL: func.func @caller(
// CHECK-SAME:    %[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[T:.+]] = hexir.transfer %[[X]] from(0) to(1) : tensor<4xf32>
// CHECK-NEXT:    %[[R:.+]] = call @on_one(%[[T]])
// CHECK:         tensor.extract %[[R]][%{{.+}}] {hexir.device = 1 : i64}
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @k {
  }
  func.func private @on_one(%x: tensor<4xf32>) -> tensor<4xf32> attributes {hexir.device = 1 : i64} {
    %a = hexir.dispatch @k(%x) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
  func.func @caller(%x: tensor<4xf32>) -> f32 {
    %r = call @on_one(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %c0 = arith.constant 0 : index
    %v = tensor.extract %r[%c0] : tensor<4xf32>
    return %v : f32
  }
}
