// RUN: hexir-opt %s -split-input-file --hexir-place-devices | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-place-devices=placement=auto | FileCheck %s --check-prefix=AUTO

// Rule 1: an explicit annotation wins; rule 2: the rest follow their operands' device.
// CHECK-LABEL: func.func @explicit_then_operands(
// CHECK:         %[[A:.+]] = hexir.dispatch @k(%{{.+}}) {hexir.device = 1 : i64}
// CHECK:         %[[B:.+]] = hexir.dispatch @k(%[[A]]) {hexir.device = 1 : i64}
// CHECK:         hexir.dispatch @k(%[[B]]) {hexir.device = 0 : i64}
module attributes {hexir.devices = ["cpu", "cpu"]} {
  hexir.executable @k {
  }
  func.func @explicit_then_operands(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %c = hexir.dispatch @k(%b) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %c : tensor<4xf32>
  }
}

// -----

// A function's annotation places its unannotated dispatches; an argument's annotation gives
// the argument its device, which its readers follow (rule 2).
// CHECK-LABEL: func.func private @on_one(
// CHECK:         hexir.dispatch @k(%{{.+}}) {hexir.device = 1 : i64}
// CHECK-LABEL: func.func @argument(
// CHECK:         hexir.dispatch @k(%{{.+}}) {hexir.device = 1 : i64}
module attributes {hexir.devices = ["cpu", "cpu"]} {
  hexir.executable @k {
  }
  func.func private @on_one(%x: tensor<4xf32>) -> tensor<4xf32> attributes {hexir.device = 1 : i64} {
    %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
  func.func @argument(%x: tensor<4xf32> {hexir.device = 1 : i64}) -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// Rule 3: a dispatch on constants only takes its first placed consumer's device; constants
// do not vote. Rule 2 wins over rule 3 when an operand has a device (%m reads %x, device 0).
// CHECK-LABEL: func.func @consumers(
// CHECK:         %[[C:.+]] = hexir.dispatch @k(%{{.+}}) {hexir.device = 1 : i64}
// CHECK:         hexir.dispatch @k(%[[C]]) {hexir.device = 1 : i64}
// CHECK:         hexir.dispatch @k(%{{.+}}) {hexir.device = 0 : i64}
module attributes {hexir.devices = ["cpu", "cpu"]} {
  hexir.executable @k {
  }
  func.func @consumers(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %cst = arith.constant dense<1.0> : tensor<4xf32>
    %c = hexir.dispatch @k(%cst) : (tensor<4xf32>) -> tensor<4xf32>
    %d = hexir.dispatch @k(%c) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %m = hexir.dispatch @k(%x, %cst) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %d, %m : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Rule 4: nothing decides (constants only, read by the host): the function's device. A
// global lives where it is first read; the initializer's dispatch that computes it follows
// its store (rule 3).
// CHECK-LABEL: hexir.global @g : tensor<4xf32> {hexir.device = 1 : i64}
// CHECK-LABEL: func.func @reader(
// CHECK:         hexir.dispatch @k(%{{.+}}) {hexir.device = 0 : i64}
// CHECK:         hexir.dispatch @k(%{{.+}}) {hexir.device = 1 : i64}
// CHECK-LABEL: func.func private @init(
// CHECK:         hexir.dispatch @k(%{{.+}}) {hexir.device = 1 : i64}
module attributes {hexir.devices = ["cpu", "cpu"]} {
  hexir.executable @k {
  }
  hexir.global @g : tensor<4xf32>
  func.func @reader() -> (f32, tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %cst = arith.constant dense<1.0> : tensor<4xf32>
    %a = hexir.dispatch @k(%cst) : (tensor<4xf32>) -> tensor<4xf32>
    %v = tensor.extract %a[%c0] : tensor<4xf32>
    %g = hexir.global.load @g : tensor<4xf32>
    %b = hexir.dispatch @k(%g) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %v, %b : f32, tensor<4xf32>
  }
  func.func private @init() attributes {hexir.initializer} {
    %cst = arith.constant dense<2.0> : tensor<4xf32>
    %a = hexir.dispatch @k(%cst) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.global.store %a, @g : tensor<4xf32>
    return
  }
}

// -----

// placement=auto: a dispatch of 1e12 flops goes to the GPU (its 16 input bytes cost less to
// move than the CPU's time); a 16-flop one stays with its operand on the CPU.
// AUTO-LABEL: func.func @auto(
// AUTO:         %[[B:.+]] = hexir.dispatch @big(%{{.+}}) {hexir.device = 1 : i64}
// AUTO:         hexir.dispatch @small(%{{.+}}) {hexir.device = 0 : i64}
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @big attributes {hexir.costs = {"cost.big.flops" = "1000000000000", "cost.big.bytes_read" = "16", "cost.big.bytes_written" = "16"}} {
  }
  hexir.executable @small attributes {hexir.costs = {"cost.small.flops" = "16", "cost.small.bytes_read" = "16", "cost.small.bytes_written" = "16"}} {
  }
  func.func @auto(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %b = hexir.dispatch @big(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %s = hexir.dispatch @small(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %b, %s : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Rule 5: an unannotated argument of a public function read only on device 1 (through a
// reshape; a shape query reads no bytes) lives on device 1; one read on both devices, one
// read by the host and an annotated one keep their devices; a private function's arguments
// stay where its callers pass them.
// CHECK-LABEL: func.func private @helper(
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<4xf32>)
// CHECK-LABEL: func.func @arguments(
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<4xf32> {hexir.device = 1 : i64},
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<4xf32>,
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<4xf32>,
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<4xf32> {hexir.device = 0 : i64},
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<?xf32> {hexir.device = 1 : i64})
module attributes {hexir.devices = ["cpu", "cpu"]} {
  hexir.executable @k {
  }
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
  func.func @arguments(%only1: tensor<4xf32>, %both: tensor<4xf32>, %host: tensor<4xf32>,
                       %pinned: tensor<4xf32> {hexir.device = 0 : i64}, %dyn: tensor<?xf32>)
      -> (tensor<2x2xf32>, tensor<4xf32>, tensor<4xf32>, f32, tensor<4xf32>, tensor<4xf32>, index) {
    %c0 = arith.constant 0 : index
    %r = tensor.expand_shape %only1 [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
    %a = hexir.dispatch @k(%r) {hexir.device = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %b0 = hexir.dispatch @k(%both) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b1 = hexir.dispatch @k(%both) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %h = tensor.extract %host[%c0] : tensor<4xf32>
    %p = hexir.dispatch @k(%pinned) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %n = tensor.dim %dyn, %c0 : tensor<?xf32>
    %d = hexir.dispatch @k(%dyn) {hexir.device = 1 : i64} : (tensor<?xf32>) -> tensor<4xf32>
    return %a, %b0, %b1, %h, %p, %d, %n : tensor<2x2xf32>, tensor<4xf32>, tensor<4xf32>, f32, tensor<4xf32>, tensor<4xf32>, index
  }
}
