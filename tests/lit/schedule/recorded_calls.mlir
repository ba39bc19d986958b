// RUN: hexir-opt %s -split-input-file --hexir-form-execution-regions --hexir-schedule-concurrency | FileCheck %s

// A private callee whose body is device work records into its caller: it is marked, forms one
// region of its own, and each call to it is a command of the caller's region (no region
// boundary at the calls: one command buffer). A call is ordered by its buffers like a
// dispatch, not a fence: the first call waits for %a (a barrier), the second for the first
// (its operand, and calls of one callee are kept in order), and @k(%x), which reads
// neither, shares the first wave with %a instead of a wave of its own after the calls (before:
// barrier, call, barrier, call, barrier, @k(%x)).
// CHECK-LABEL: func.func @net(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[W:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         %[[R:.+]]:2, %{{.+}} = hexir.execute on(0, "compute") -> tensor<4xf32>, tensor<4xf32> {
// CHECK-NEXT:      %[[A:.+]] = hexir.dispatch @k(%[[X]])
// CHECK-NEXT:      %[[B:.+]] = hexir.dispatch @k(%[[X]])
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      %[[H0:.+]] = func.call @layer(%[[A]], %[[W]])
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      %[[H1:.+]] = func.call @layer(%[[H0]], %[[W]])
// CHECK-NEXT:      hexir.yield %[[H1]], %[[B]]
// CHECK-NOT:     hexir.execute
// CHECK:         return %[[R]]#0, %[[R]]#1
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME:    hexir.records_into_caller
// CHECK:         hexir.execute on(0, "compute") -> tensor<4xf32> {
// CHECK-NEXT:      hexir.dispatch @k
// CHECK-NEXT:      hexir.dispatch @k
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      hexir.dispatch @k
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @net(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %h0 = func.call @layer(%a, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = func.call @layer(%h0, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %h1, %b : tensor<4xf32>, tensor<4xf32>
}
func.func private @layer(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %p = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %q = hexir.dispatch @k(%w) : (tensor<4xf32>) -> tensor<4xf32>
  %r = hexir.dispatch @k(%p, %q) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A callee that updates an argument in place (its result tied to the argument: a KV cache
// donated by its callers, dispatch/InPlaceUpdates.h) says so at each call site
// (`hexir.tied_operands`, like a dispatch): the call follows the earlier reader of the buffer
// it writes (write after read: a barrier before it), and the reader of its tied result follows
// the call.
// CHECK-LABEL: func.func @step(
// CHECK:         hexir.execute on(0, "compute")
// CHECK-NEXT:      %[[CACHE:.+]] = hexir.dispatch @k(
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      hexir.dispatch @k(%[[CACHE]])
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      %[[U:.+]]:2 = func.call @update(%{{.+}}, %[[CACHE]]) {hexir.tied_operands = array<i64: -1, 1>}
// CHECK-NEXT:      hexir.barrier
// CHECK-NEXT:      hexir.dispatch @k(%[[U]]#1)
// CHECK-LABEL: func.func private @update(
// CHECK-SAME:    hexir.records_into_caller
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @row attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @step(%x: tensor<4xf32>, %c: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>) {
  %cache = hexir.dispatch @k(%c) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %read = hexir.dispatch @k(%cache) : (tensor<8x4xf32>) -> tensor<4xf32>
  %u:2 = func.call @update(%x, %cache) : (tensor<4xf32>, tensor<8x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>)
  %after = hexir.dispatch @k(%u#1) : (tensor<8x4xf32>) -> tensor<4xf32>
  return %u#0, %u#1, %after : tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>
}
func.func private @update(%x: tensor<4xf32>, %cache: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) {
  %y = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %w = hexir.dispatch @row(%y, %cache) {hexir.tied_operands = array<i64: 1>} : (tensor<4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y, %w : tensor<4xf32>, tensor<8x4xf32>
}

// -----

// Dynamic dims: the callee's host work (its dim and check) runs at each call, before the
// caller's region is submitted; a dim of a call result is the dim the callee gives it (its
// dispatch's `dims`, a dim of its argument): a dim of the call's operand in the caller, which
// reads nothing of the region (the result, unused then, is not yielded).
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?xf32>
// CHECK:         hexir.execute on(0, "compute") {
// CHECK-NEXT:      func.call @scale(%[[X]])
// CHECK-NEXT:      hexir.yield
// CHECK:         %[[N:.+]] = tensor.dim %[[X]]
// CHECK:         return %[[N]]
// CHECK-LABEL: func.func private @scale(
// CHECK-SAME:    hexir.records_into_caller
// CHECK:         tensor.dim
// CHECK:         hexir.check
// CHECK:         hexir.execute
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @dynamic(%x: tensor<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %r = func.call @scale(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %n = tensor.dim %r, %c0 : tensor<?xf32>
  return %n : index
}
func.func private @scale(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %ok = arith.cmpi sge, %n, %c0 : index
  hexir.check %ok, "x {}"(%n) : index
  %r = hexir.dispatch @k(%x) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Calls that keep ending the caller's region: a public callee, a callee reading a value on
// the host (two regions), a callee returning a host scalar, a placed callee. None is marked.
// CHECK-LABEL: func.func @others(
// CHECK:         hexir.execute
// CHECK-NEXT:      hexir.dispatch @k
// CHECK-NEXT:      hexir.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{.+}} = call @public_layer(
// CHECK-NEXT:    %{{.+}} = call @reads(
// CHECK-NEXT:    %{{.+}} = call @scalar(
// CHECK-NEXT:    %{{.+}} = call @placed(
// CHECK-NOT:     hexir.records_into_caller
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @others(%x: tensor<4xf32>) -> (tensor<4xf32>, f32, index, tensor<4xf32>) {
  %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @public_layer(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %c = func.call @reads(%b) : (tensor<4xf32>) -> f32
  %d = func.call @scalar(%b) : (tensor<4xf32>) -> index
  %e = func.call @placed(%b) : (tensor<4xf32>) -> tensor<4xf32>
  return %b, %c, %d, %e : tensor<4xf32>, f32, index, tensor<4xf32>
}
func.func @public_layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @reads(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %r = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %v = tensor.extract %r[%c0] : tensor<4xf32>
  return %v : f32
}
func.func private @scalar(%x: tensor<4xf32>) -> index {
  %c4 = arith.constant 4 : index
  %r = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %c4 : index
}
func.func private @placed(%x: tensor<4xf32>) -> tensor<4xf32> attributes {hexir.device = 0 : i64} {
  %r = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A dim of a recorded call's result is the dim its callee gives it (the `dims` of the
// dispatch it returns, a dim of its argument), resolved in the caller to a dim of the call's
// operand: a host op before the region, so the call and the dispatch after it stay in one
// region (before: the dim read the call's result and split the caller's command buffer).
// CHECK-LABEL: func.func @rows(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x4xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x4xf32>
// CHECK:         hexir.execute on(0, "compute")
// CHECK:           func.call @scale(%[[X]])
// CHECK:           hexir.dispatch @k2({{.+}}) dims(%[[N]])
// CHECK-NOT:     hexir.execute
// CHECK-LABEL: func.func private @scale(
// CHECK-SAME:    hexir.records_into_caller
hexir.executable @k2 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @rows(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %h = func.call @scale(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?x4xf32>
  %r = hexir.dispatch @k2(%h, %n) dims(%n) : (tensor<?x4xf32>, index) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
func.func private @scale(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x4xf32>
  %r = hexir.dispatch @k2(%x, %m) dims(%m) : (tensor<?x4xf32>, index) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
