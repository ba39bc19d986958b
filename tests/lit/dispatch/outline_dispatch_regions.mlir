// RUN: hexir-opt %s -split-input-file --hexir-outline-dispatch-regions | FileCheck %s

// Kernel signature: (tensor captures, outputs, scalar captures); the empty init becomes
// the output argument; the host calls hexir.dispatch.
// CHECK-LABEL: hexir.executable @main_dispatch_0
// CHECK:         func.func @main_dispatch_0(%[[A:[a-z0-9]+]]: tensor<8xf32>, %[[OUT:[a-z0-9]+]]: tensor<8xf32>, %[[S:[a-z0-9]+]]: f32) -> tensor<8xf32>
// CHECK:           %[[F:.+]] = linalg.fill ins(%[[S]] : f32) outs(%[[OUT]] : tensor<8xf32>)
// CHECK:           %[[R:.+]] = linalg.add ins(%[[A]], %[[A]] : {{.*}}) outs(%[[F]] : tensor<8xf32>)
// CHECK:           return %[[R]]
// CHECK-LABEL: func.func @main(
// CHECK:         %[[D:.+]] = hexir.dispatch @main_dispatch_0(%arg0, %arg1) : (tensor<8xf32>, f32) -> tensor<8xf32>
// CHECK:         return %[[D]]
func.func @main(%a: tensor<8xf32>, %s: f32) -> tensor<8xf32> {
  %0 = hexir.dispatch_region -> (tensor<8xf32>) {
    %e = tensor.empty() : tensor<8xf32>
    %f = linalg.fill ins(%s : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %r = linalg.add ins(%a, %a : tensor<8xf32>, tensor<8xf32>) outs(%f : tensor<8xf32>) -> tensor<8xf32>
    hexir.yield %r : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

// An init that is not an empty tensor is copied into the output first.
// CHECK-LABEL: func.func @acc_dispatch_0(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<2x2xf32>, %[[C:[a-z0-9]+]]: tensor<2x2xf32>, %[[OUT:[a-z0-9]+]]: tensor<2x2xf32>
// CHECK:         %[[COPY:.+]] = linalg.copy ins(%[[C]] : tensor<2x2xf32>) outs(%[[OUT]] : tensor<2x2xf32>)
// CHECK:         linalg.matmul ins(%[[A]], %[[A]] : {{.*}}) outs(%[[COPY]] : tensor<2x2xf32>)
func.func @acc(%a: tensor<2x2xf32>, %c: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = hexir.dispatch_region -> (tensor<2x2xf32>) {
    %m = linalg.matmul ins(%a, %a : tensor<2x2xf32>, tensor<2x2xf32>) outs(%c : tensor<2x2xf32>) -> tensor<2x2xf32>
    hexir.yield %m : tensor<2x2xf32>
  }
  return %0 : tensor<2x2xf32>
}

// -----

// A dynamic result's size is computed on the host before the dispatch (here the size of
// the empty init, a host value) and carried by `dims(...)`; the kernel keeps `?` types.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME:    %[[X:.+]]: tensor<?xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[X]]
// CHECK:         hexir.dispatch @dynamic_dispatch_0(%[[X]], %[[N]]) dims(%[[N]]) : (tensor<?xf32>, index) -> tensor<?xf32>
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %r = hexir.dispatch_region -> (tensor<?xf32>) {
    %e = tensor.empty(%n) : tensor<?xf32>
    %d = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %w = arith.negf %v : f32
      linalg.yield %w : f32
    } -> tensor<?xf32>
    hexir.yield %d : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}


// -----

// An identity copy after the root (ONNX Identity) is folded before the outputs are chosen:
// the broadcast division writes the output argument directly (the canonicalizer would
// otherwise erase the copy later and leave the result in a temporary).
// CHECK-LABEL: func.func @identity_tail_dispatch_0(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<1x12xf32>, %[[S:[a-z0-9]+]]: tensor<1x1xf32>, %[[OUT:[a-z0-9]+]]: tensor<1x12xf32>
// CHECK:         %[[R:.+]] = linalg.generic {{.*}} ins(%[[A]], %[[S]] : {{.*}}) outs(%[[OUT]] : tensor<1x12xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
#map = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d0, 0)>
func.func @identity_tail(%a: tensor<1x12xf32>, %s: tensor<1x1xf32>) -> tensor<1x12xf32> {
  %0 = hexir.dispatch_region -> (tensor<1x12xf32>) {
    %e = tensor.empty() : tensor<1x12xf32>
    %d = linalg.generic {indexing_maps = [#map, #b, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %s : tensor<1x12xf32>, tensor<1x1xf32>) outs(%e : tensor<1x12xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %t = arith.divf %x, %y : f32
      linalg.yield %t : f32
    } -> tensor<1x12xf32>
    %e2 = tensor.empty() : tensor<1x12xf32>
    %c = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<1x12xf32>) outs(%e2 : tensor<1x12xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
    } -> tensor<1x12xf32>
    hexir.yield %c : tensor<1x12xf32>
  }
  return %0 : tensor<1x12xf32>
}

// -----

// In-place insert_slice updates: the kernel writes its output argument (tied to the capture).
// A whole overwrite by an elementwise generic reading the capture at the index it writes
// keeps reading the capture argument (bufferization computes it straight into the output);
// an op before the update reading other elements (the position read before a row write)
// reads the same buffer through the output argument.
// CHECK-LABEL: func.func @whole_dispatch_0(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[OUT:[a-z0-9]+]]: tensor<4xf32>)
// CHECK:         %[[G:.+]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4xf32>)
// CHECK:         tensor.insert_slice %[[G]] into %[[OUT]][0] [4] [1]
// CHECK-LABEL: func.func @whole(
// CHECK:         hexir.dispatch @whole_dispatch_0(%arg0) {hexir.tied_operands = array<i64: 0>}
#id = affine_map<(d0) -> (d0)>
func.func @whole(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hexir.dispatch_region -> (tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %h = arith.constant 0.5 : f32
      %m = arith.mulf %a, %h : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    %u = tensor.insert_slice %g into %x[0] [4] [1] {hexir.in_place} : tensor<4xf32> into tensor<4xf32>
    hexir.yield %u : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @row_dispatch_0(
// CHECK-SAME:    %[[C:[a-z0-9]+]]: tensor<4x2xf32>, %{{[a-z0-9]+}}: tensor<1x2xf32>, %[[OUT:[a-z0-9]+]]: tensor<4x2xf32>)
// CHECK:         tensor.extract %[[OUT]]
// CHECK:         tensor.insert_slice {{.*}} into %[[OUT]]
func.func @row(%c: tensor<4x2xf32>, %r: tensor<1x2xf32>) -> tensor<4x2xf32> {
  %0 = hexir.dispatch_region -> (tensor<4x2xf32>) {
    %i0 = arith.constant 0 : index
    %v = tensor.extract %c[%i0, %i0] : tensor<4x2xf32>
    %p = arith.fptosi %v : f32 to i64
    %i = arith.index_cast %p : i64 to index
    %u = tensor.insert_slice %r into %c[%i, 0] [1, 2] [1, 1] {hexir.in_place} : tensor<1x2xf32> into tensor<4x2xf32>
    hexir.yield %u : tensor<4x2xf32>
  }
  return %0 : tensor<4x2xf32>
}
