// RUN: hexir-opt %s -split-input-file --hexir-elide-timepoints | FileCheck %s

// Queue order: %t0's region runs on the same device and queue and dominates the awaiting
// region (also across blocks), so both awaits are removed.
// CHECK-LABEL: func.func @same_queue(
// CHECK:         hexir.execute on(0, "compute") -> tensor<4xf32>
// CHECK:         hexir.execute on(0, "compute") -> tensor<4xf32>
// CHECK:       ^bb1:
// CHECK:         hexir.execute on(0, "compute") -> tensor<4xf32>
// CHECK-NOT:     await
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @same_queue(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a, %t0 = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %b, %t1 = hexir.execute on(0, "compute") await(%t0) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  cf.br ^next
^next:
  %c, %t2 = hexir.execute on(0, "compute") await(%t0, %t1) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%b) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  return %c : tensor<4xf32>
}

// -----

// Across queues and devices nothing is implied by queue order: the transfer region's
// timepoint stays awaited by the compute region of device 1. The region of device 2 awaits
// both, but device 1's region already awaited the transfer: that await is implied and
// removed, the other stays.
// CHECK-LABEL: func.func @implied(
// CHECK:         %{{.+}}, %[[T0:.+]] = hexir.execute on(0, "transfer")
// CHECK:         %{{.+}}, %[[T1:.+]] = hexir.execute on(1, "compute") await(%[[T0]])
// CHECK:         hexir.execute on(2, "compute") await(%[[T1]]) -> tensor<4xf32>
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @implied(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a, %t0 = hexir.execute on(0, "transfer") -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %b, %t1 = hexir.execute on(1, "compute") await(%t0) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %c, %t2 = hexir.execute on(2, "compute") await(%t0, %t1) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  return %c : tensor<4xf32>
}

// -----

// Transitive queue order: the transfer region is awaited by compute region %t1, which
// precedes the last region on the compute queue, so the last region's await of the
// transfer is implied too; %t1's own await (another queue) stays.
// CHECK-LABEL: func.func @through_queue(
// CHECK:         %{{.+}}, %[[T0:.+]] = hexir.execute on(0, "transfer")
// CHECK:         hexir.execute on(0, "compute") await(%[[T0]])
// CHECK:         hexir.execute on(0, "compute") -> tensor<4xf32>
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @through_queue(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a, %t0 = hexir.execute on(0, "transfer") -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %b, %t1 = hexir.execute on(0, "compute") await(%t0) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  %c, %t2 = hexir.execute on(0, "compute") await(%t0) -> tensor<4xf32> {
    %0 = hexir.dispatch @k(%a, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %0 : tensor<4xf32>
  }
  return %c : tensor<4xf32>
}
