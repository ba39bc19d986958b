// RUN: hexir-opt %s --hexir-form-execution-regions | FileCheck %s

// Regions hold the dispatches of one device; each transfer is a region of its own on its
// target's transfer queue, awaiting the region producing its source.
// CHECK-LABEL: func.func @split(
// CHECK:         %[[R0:.+]], %[[T0:.+]] = hexir.execute on(0, "compute") -> tensor<4xf32> {
// CHECK-COUNT-2:   hexir.dispatch @k
// CHECK:         %[[R1:.+]], %[[T1:.+]] = hexir.execute on(1, "transfer") await(%[[T0]]) -> tensor<4xf32> {
// CHECK-NEXT:      hexir.transfer %[[R0]] from(0) to(1) : tensor<4xf32>
// CHECK:         %[[R2:.+]], %[[T2:.+]] = hexir.execute on(1, "compute") await(%[[T1]]) -> tensor<4xf32> {
// CHECK-NEXT:      hexir.dispatch @k(%[[R1]])
// CHECK:         %[[R3:.+]], %{{.+}} = hexir.execute on(0, "transfer") await(%[[T2]]) -> tensor<4xf32> {
// CHECK-NEXT:      hexir.transfer %[[R2]] from(1) to(0) : tensor<4xf32>
// CHECK:         return %[[R3]]
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @k {
  }
  func.func @split(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @k(%a) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %t = hexir.transfer %b from(0) to(1) : tensor<4xf32>
    %c = hexir.dispatch @k(%t) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %r = hexir.transfer %c from(1) to(0) : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
