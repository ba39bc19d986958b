// RUN: hexir-opt %s -split-input-file --hexir-schedule-concurrency | FileCheck %s --check-prefixes=CHECK,WAVES
// RUN: hexir-opt %s -split-input-file --hexir-schedule-concurrency=mode=serial | FileCheck %s --check-prefixes=CHECK,SERIAL

// Independent q/k/v projections of one input run in one wave; the product of k and v waits
// for both (one barrier). Serial: a barrier between every pair, body order.
// CHECK-LABEL: func.func @qkv(
// WAVES:         hexir.dispatch @mm(%arg0, %arg1)
// WAVES-NEXT:    hexir.dispatch @mm(%arg0, %arg2)
// WAVES-NEXT:    hexir.dispatch @mm(%arg0, %arg3)
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    hexir.dispatch @add
// WAVES-NEXT:    hexir.yield
// SERIAL:        hexir.dispatch @mm(%arg0, %arg1)
// SERIAL-NEXT:   hexir.barrier
// SERIAL-NEXT:   hexir.dispatch @mm(%arg0, %arg2)
// SERIAL-NEXT:   hexir.barrier
// SERIAL-NEXT:   hexir.dispatch @mm(%arg0, %arg3)
// SERIAL-NEXT:   hexir.barrier
// SERIAL-NEXT:   hexir.dispatch @add
hexir.executable @mm attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @qkv(%x: tensor<1x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x16xf32>, %wv: tensor<64x16xf32>) -> (tensor<1x64xf32>, tensor<1x16xf32>) {
  %r:2, %t = hexir.execute on(0, "compute") -> tensor<1x64xf32>, tensor<1x16xf32> {
    %q = hexir.dispatch @mm(%x, %wq) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
    %k = hexir.dispatch @mm(%x, %wk) : (tensor<1x64xf32>, tensor<64x16xf32>) -> tensor<1x16xf32>
    %v = hexir.dispatch @mm(%x, %wv) : (tensor<1x64xf32>, tensor<64x16xf32>) -> tensor<1x16xf32>
    %kv = hexir.dispatch @add(%k, %v) : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
    hexir.yield %q, %kv : tensor<1x64xf32>, tensor<1x16xf32>
  }
  return %r#0, %r#1 : tensor<1x64xf32>, tensor<1x16xf32>
}

// -----

// Two interleaved chains: each step depends on the previous one of its chain, so the waves
// pair the chains' steps (a1 b1 | a2 b2 | a3 b3): 2 barriers instead of 5. Existing
// barriers are recomputed.
// CHECK-LABEL: func.func @chains(
// WAVES:         %[[A1:.+]] = hexir.dispatch @add(%arg0, %arg0)
// WAVES-NEXT:    %[[B1:.+]] = hexir.dispatch @add(%arg1, %arg1)
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    %[[A2:.+]] = hexir.dispatch @add(%[[A1]], %[[A1]])
// WAVES-NEXT:    %[[B2:.+]] = hexir.dispatch @add(%[[B1]], %[[B1]])
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    hexir.dispatch @add(%[[A2]], %[[A2]])
// WAVES-NEXT:    hexir.dispatch @add(%[[B2]], %[[B2]])
// WAVES-NEXT:    hexir.yield
// SERIAL-COUNT-5: hexir.barrier
// SERIAL-NOT:    hexir.barrier
func.func @chains(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2, %t = hexir.execute on(0, "compute") -> tensor<4xf32>, tensor<4xf32> {
    %a1 = hexir.dispatch @add(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %a2 = hexir.dispatch @add(%a1, %a1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %a3 = hexir.dispatch @add(%a2, %a2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b1 = hexir.dispatch @add(%b, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b2 = hexir.dispatch @add(%b1, %b1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b3 = hexir.dispatch @add(%b2, %b2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %a3, %b3 : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}

// -----

// An in-place update (tied operand 0: it writes %cache's buffer) must follow the earlier
// reader of that buffer (write after read) although no SSA value connects them; the
// independent %other still shares the first wave.
// CHECK-LABEL: func.func @in_place_after_reader(
// WAVES:         %[[CACHE:.+]] = hexir.dispatch @make
// WAVES-NEXT:    hexir.dispatch @make(%arg1)
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    hexir.dispatch @read(%[[CACHE]])
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    hexir.dispatch @update(%[[CACHE]], %arg1)
// WAVES-NEXT:    hexir.yield
hexir.executable @make attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @read attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @update attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @in_place_after_reader(%a: tensor<8xf32>, %row: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %r:3, %t = hexir.execute on(0, "compute") -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32> {
    %cache = hexir.dispatch @make(%a) : (tensor<8xf32>) -> tensor<8xf32>
    %seen = hexir.dispatch @read(%cache) : (tensor<8xf32>) -> tensor<8xf32>
    %new = hexir.dispatch @update(%cache, %row) {hexir.tied_operands = array<i64: 0>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %other = hexir.dispatch @make(%row) : (tensor<8xf32>) -> tensor<8xf32>
    hexir.yield %seen, %new, %other : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1, %r#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A reshape aliases its source: a dispatch reading the reshape depends on the dispatch that
// wrote the source, and the reshape stays right after its source.
// CHECK-LABEL: func.func @reshape_alias(
// WAVES:         %[[A:.+]] = hexir.dispatch @row(%arg0)
// WAVES-NEXT:    %[[E:.+]] = tensor.expand_shape %[[A]]
// WAVES-NEXT:    hexir.dispatch @row(%arg0)
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    hexir.dispatch @mat(%[[E]])
hexir.executable @row attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @mat attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @reshape_alias(%x: tensor<8xf32>) -> (tensor<2x4xf32>, tensor<8xf32>) {
  %r:2, %t = hexir.execute on(0, "compute") -> tensor<2x4xf32>, tensor<8xf32> {
    %a = hexir.dispatch @row(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %e = tensor.expand_shape %a [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
    %m = hexir.dispatch @mat(%e) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %b = hexir.dispatch @row(%x) : (tensor<8xf32>) -> tensor<8xf32>
    hexir.yield %m, %b : tensor<2x4xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<2x4xf32>, tensor<8xf32>
}

// -----

// Latency hiding: %small has slack (nothing in the region consumes it) and would share
// wave 0 with the larger critical-path dispatch %big: it goes to the last wave instead, so
// the big one starts alone and the small one overlaps the chain's tail. Within a wave the
// larger dispatch comes first.
// CHECK-LABEL: func.func @defer_small(
// WAVES:         %[[BIG:.+]] = hexir.dispatch @big(%arg0)
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    %[[MID:.+]] = hexir.dispatch @big(%[[BIG]])
// WAVES-NEXT:    hexir.barrier
// WAVES-NEXT:    hexir.dispatch @big(%[[MID]])
// WAVES-NEXT:    hexir.dispatch @small(%arg1)
// WAVES-NEXT:    hexir.yield
// SERIAL:        hexir.dispatch @small(%arg1)
// SERIAL-NEXT:   hexir.barrier
// SERIAL-NEXT:   hexir.dispatch @big(%arg0)
hexir.executable @big attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @small attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @defer_small(%x: tensor<4096xf32>, %y: tensor<16xf32>) -> (tensor<4096xf32>, tensor<16xf32>) {
  %r:2, %t = hexir.execute on(0, "compute") -> tensor<4096xf32>, tensor<16xf32> {
    %small = hexir.dispatch @small(%y) : (tensor<16xf32>) -> tensor<16xf32>
    %big = hexir.dispatch @big(%x) : (tensor<4096xf32>) -> tensor<4096xf32>
    %mid = hexir.dispatch @big(%big) : (tensor<4096xf32>) -> tensor<4096xf32>
    %end = hexir.dispatch @big(%mid) : (tensor<4096xf32>) -> tensor<4096xf32>
    hexir.yield %end, %small : tensor<4096xf32>, tensor<16xf32>
  }
  return %r#0, %r#1 : tensor<4096xf32>, tensor<16xf32>
}
