// RUN: hexir-opt %s -split-input-file | hexir-opt -split-input-file | FileCheck %s

// An execution region round-trips: affinity, awaited timepoints, barrier, yielded tensors
// and the signalled timepoint.
// CHECK-LABEL: func.func @region(
// CHECK:         %[[R:.+]], %[[T:.+]] = hexir.execute on(0, "compute") -> tensor<4xf32> {
// CHECK:           %[[A:.+]] = hexir.dispatch @k(%arg0)
// CHECK:           hexir.barrier
// CHECK:           %[[B:.+]] = hexir.dispatch @k(%[[A]])
// CHECK:           hexir.yield %[[B]] : tensor<4xf32>
// CHECK:         %{{.+}}, %{{.+}} = hexir.execute on(0, "transfer") await(%[[T]]) -> tensor<4xf32> {
// CHECK:         %[[T3:.+]] = hexir.execute on(1, "compute") await(%[[T]], %{{.+}}) {
// CHECK:           hexir.yield
// CHECK:         return %[[R]]
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %b = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %b : tensor<4xf32>
  }
  %s, %t2 = hexir.execute on(0, "transfer") await(%t) -> tensor<4xf32> {
    %c = hexir.dispatch @k(%r) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %c : tensor<4xf32>
  }
  %t3 = hexir.execute on(1, "compute") await(%t, %t2) {
    %d = hexir.dispatch @k(%s) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield
  }
  return %r : tensor<4xf32>
}
