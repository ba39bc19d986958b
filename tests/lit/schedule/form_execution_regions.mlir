// RUN: hexir-opt %s -split-input-file --hexir-form-execution-regions | FileCheck %s

// A run of dispatches becomes one region; host-value ops (dims, arith, checks) stay before
// it, and a dim of a region value is the host value that sized it (%n). A reshape of a
// region value aliases inside the region. The first read ends the region; the next region
// awaits the timepoint of the one producing its operand. %b is used only inside its region:
// not yielded (a transient).
// CHECK-LABEL: func.func @run(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: tensor<?xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[A]]
// CHECK:         %[[EQ:.+]] = arith.cmpi eq, %[[N]], %[[N]]
// CHECK:         hexir.check %[[EQ]], "x {}"(%[[N]])
// CHECK:         %[[R:.+]], %[[T:.+]] = hexir.execute on(0, "compute") -> tensor<?xf32> {
// CHECK:           %[[B:.+]] = hexir.dispatch @add(%[[A]], %[[A]]) dims(%[[N]])
// CHECK:           %[[E:.+]] = tensor.expand_shape %[[B]]
// CHECK:           %[[F:.+]] = tensor.collapse_shape %[[E]]
// CHECK:           %[[C:.+]] = hexir.dispatch @add(%[[F]], %[[B]]) dims(%[[N]])
// CHECK:           hexir.yield %[[C]] : tensor<?xf32>
// CHECK:         tensor.extract %[[R]]
// CHECK:         %[[R2:.+]], %{{.+}} = hexir.execute on(0, "compute") await(%[[T]]) -> tensor<?xf32> {
// CHECK:           hexir.dispatch @add(%[[R]], %[[R]])
// CHECK:         tensor.extract %[[R2]]
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @run(%a: tensor<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %b = hexir.dispatch @add(%a, %a) dims(%n) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %m = tensor.dim %b, %c0 : tensor<?xf32>
  %eq = arith.cmpi eq, %m, %n : index
  hexir.check %eq, "x {}"(%m) : index
  %e = tensor.expand_shape %b [[0, 1]] output_shape [%m, 1] : tensor<?xf32> into tensor<?x1xf32>
  %f = tensor.collapse_shape %e [[0, 1]] : tensor<?x1xf32> into tensor<?xf32>
  %c = hexir.dispatch @add(%f, %b) dims(%m) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %v = tensor.extract %c[%c0] : tensor<?xf32>
  %d = hexir.dispatch @add(%c, %c) dims(%m) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %w = tensor.extract %d[%c0] : tensor<?xf32>
  %s = arith.addf %v, %w : f32
  return %s : f32
}

// -----

// A host op that reads a region value it cannot be computed without (here a dim whose
// index is not a constant) closes the region before it. A call ends a region; each block
// gets its own regions.
// CHECK-LABEL: func.func @split(
// CHECK:         %[[R:.+]], %{{.+}} = hexir.execute on(0, "compute") -> tensor<?xf32> {
// CHECK-NEXT:      hexir.dispatch @add
// CHECK-NEXT:      hexir.yield
// CHECK:         %[[I:.+]] = tensor.dim %[[R]], %arg1
// CHECK:         hexir.execute on(0, "compute") await(%{{.+}}) -> tensor<?xf32> {
// CHECK-NEXT:      hexir.dispatch @add(%[[R]], %[[R]]) dims(%[[I]])
// CHECK:         call @f
// CHECK:         cf.br ^bb1
// CHECK:       ^bb1:
// CHECK:         hexir.execute on(0, "compute")
hexir.executable @add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func private @f()
func.func @split(%a: tensor<?xf32>, %i: index) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %b = hexir.dispatch @add(%a, %a) dims(%n) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %m = tensor.dim %b, %i : tensor<?xf32>
  %c = hexir.dispatch @add(%b, %b) dims(%m) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  func.call @f() : () -> ()
  cf.br ^next
^next:
  %d = hexir.dispatch @add(%c, %c) dims(%m) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %d : tensor<?xf32>
}

// -----

// An in-place update of a buffer read by an earlier region awaits that region (write after
// read), besides the region producing the value it reads.
// CHECK-LABEL: func.func @write_after_read(
// CHECK:         %[[R:.+]], %[[T0:.+]] = hexir.execute on(0, "compute") -> tensor<8xf32> {
// CHECK:         %{{.+}}, %[[T1:.+]] = hexir.execute on(0, "compute") await(%[[T0]]) -> tensor<8xf32> {
// CHECK-NEXT:      hexir.dispatch @read(%[[R]])
// CHECK:         call @f
// CHECK:         hexir.execute on(0, "compute") await(%[[T0]], %[[T1]]) -> tensor<8xf32> {
// CHECK-NEXT:      hexir.dispatch @update(%[[R]], %arg1) {hexir.tied_operands = array<i64: 0>}
hexir.executable @make attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @read attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @update attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func private @f()
func.func @write_after_read(%a: tensor<8xf32>, %row: tensor<2xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %cache = hexir.dispatch @make(%a) : (tensor<8xf32>) -> tensor<8xf32>
  func.call @f() : () -> ()
  %seen = hexir.dispatch @read(%cache) : (tensor<8xf32>) -> tensor<8xf32>
  func.call @f() : () -> ()
  %new = hexir.dispatch @update(%cache, %row) {hexir.tied_operands = array<i64: 0>} : (tensor<8xf32>, tensor<2xf32>) -> tensor<8xf32>
  return %seen, %new : tensor<8xf32>, tensor<8xf32>
}
