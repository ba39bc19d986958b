// RUN: hexir-opt %s -split-input-file --hexir-form-execution-regions --hexir-schedule-concurrency | FileCheck %s

// A collective is a command of the region: it waits for the dispatch writing its source
// (a barrier), its result is read after another barrier, and the rank and count are host
// values that do not close the region.
// CHECK-LABEL: func.func @row_parallel(
// CHECK:         hexir.channel.rank
// CHECK:         hexir.execute on(0, "compute")
// CHECK-NEXT:      %[[P:.+]] = hexir.dispatch @mm(%arg0, %arg1)
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      %[[S:.+]] = hexir.all_reduce "sum" %[[P]] : tensor<4xf32>
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      %[[R:.+]] = hexir.dispatch @add(%[[S]], %arg0)
// CHECK-NEXT:      hexir.yield %[[R]]
// CHECK-NOT:     hexir.execute
hexir.executable @mm attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @row_parallel(%x: tensor<4xf32>, %w: tensor<4x4xf32>) -> (tensor<4xf32>, index) {
  %p = hexir.dispatch @mm(%x, %w) : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  %rank = hexir.channel.rank : index
  %s = hexir.all_reduce "sum" %p : tensor<4xf32>
  %r = hexir.dispatch @add(%s, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r, %rank : tensor<4xf32>, index
}

// -----

// Collectives count as the largest command: the independent dispatch is deferred to the last
// wave (latency hiding) and comes after the collective issued first in that wave; the two
// collectives keep their program order although no buffer orders them (every rank must
// issue them alike).
// CHECK-LABEL: func.func @order(
// CHECK:         hexir.execute
// CHECK-NEXT:      hexir.all_gather %arg0 : tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      hexir.all_reduce "max" %arg1
// CHECK-NEXT:      hexir.dispatch @add(%arg1, %arg1)
// CHECK-NEXT:      hexir.yield
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @order(%x: tensor<2xf32>, %y: tensor<64xf32>) -> (tensor<4xf32>, tensor<64xf32>, tensor<64xf32>) {
  %a = hexir.dispatch @add(%y, %y) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %g = hexir.all_gather %x : tensor<2xf32> -> tensor<4xf32>
  %m = hexir.all_reduce "max" %y : tensor<64xf32>
  return %g, %a, %m : tensor<4xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// send has no result; recv's result is read by a later dispatch.
// CHECK-LABEL: func.func @ring(
// CHECK:         hexir.execute
// CHECK-NEXT:      hexir.send %arg0 to %{{.+}} : tensor<4xf32>
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      %[[V:.+]] = hexir.recv from %{{.+}} : tensor<4xf32>
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      hexir.dispatch @add(%[[V]], %[[V]])
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @ring(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c1 = arith.constant 1 : index
  %rank = hexir.channel.rank : index
  %count = hexir.channel.count : index
  %next0 = arith.addi %rank, %c1 : index
  %next = arith.remui %next0, %count : index
  %prev0 = arith.addi %rank, %count : index
  %prev1 = arith.subi %prev0, %c1 : index
  %prev = arith.remui %prev1, %count : index
  hexir.send %x to %next : tensor<4xf32>
  %v = hexir.recv from %prev : tensor<4xf32>
  %r = hexir.dispatch @add(%v, %v) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
