// RUN: hexir-opt %s -split-input-file --hexir-insert-shape-checks | FileCheck %s

// Elementwise: operand 1 against operand 0; the init is tensor.empty(dim %a) — the same
// value as operand 0's size, so it needs no check. The empty's size is checked to fit.
// CHECK-LABEL: func.func @add(
// CHECK-SAME:    %[[A:.+]]: tensor<?xf32>, %[[B:.+]]: tensor<?xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[A]], %{{.+}}
// CHECK:         %[[LIM:.+]] = arith.constant 2305843009213693951 : index
// CHECK:         %[[FITS:.+]] = arith.cmpi ule, %[[N]], %[[LIM]]
// CHECK:         hexir.check %[[FITS]], "tensor.empty: dimension 0 of tensor<?xf32> is {}: the tensor would take more than 2^63-1 bytes (or the size is negative)"(%[[N]]) : index
// CHECK:         %[[E:.+]] = tensor.empty(%[[N]])
// CHECK:         %[[NB:.+]] = tensor.dim %[[B]], %{{.+}}
// CHECK:         %[[EQ:.+]] = arith.cmpi eq, %[[NB]], %[[N]]
// CHECK:         hexir.check %[[EQ]], "linalg.add: dimension 0 of operand 1 is {}, expected {} (dimension 0 of operand 0)"(%[[NB]], %[[N]]) : index, index
// CHECK-NOT:     hexir.check
// CHECK:         linalg.add
func.func @add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.add ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Static shapes are proven by the verifier: no check, no leftover ops.
// CHECK-LABEL: func.func @static(
// CHECK-NOT:     hexir.check
// CHECK-NOT:     arith.constant
// CHECK:         linalg.add
func.func @static(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Matmul: K of B (dim 0 of operand 1) against K of A (dim 1 of operand 0); the caller's
// init (an argument) is checked against M and N too. A static side compares to a constant.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %[[A:.+]]: tensor<?x?xf32>, %[[B:.+]]: tensor<?x3xf32>, %[[C:.+]]: tensor<?x3xf32>
// CHECK-DAG:     %[[M:.+]] = tensor.dim %[[A]], %c0
// CHECK-DAG:     %[[K:.+]] = tensor.dim %[[A]], %c1
// CHECK-DAG:     %[[KB:.+]] = tensor.dim %[[B]], %c0
// CHECK:         %[[EQK:.+]] = arith.cmpi eq, %[[KB]], %[[K]]
// CHECK:         hexir.check %[[EQK]], "linalg.matmul: dimension 0 of operand 1 is {}, expected {} (dimension 1 of operand 0)"(%[[KB]], %[[K]])
// CHECK:         %[[MC:.+]] = tensor.dim %[[C]], %c0
// CHECK:         %[[EQM:.+]] = arith.cmpi eq, %[[MC]], %[[M]]
// CHECK:         hexir.check %[[EQM]], "linalg.matmul: dimension 0 of operand 2 is {}, expected {} (dimension 0 of operand 0)"(%[[MC]], %[[M]])
// CHECK-NOT:     hexir.check
// CHECK:         linalg.matmul
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x3xf32>, %c: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x3xf32>) outs(%c : tensor<?x3xf32>) -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
}

// -----

// linalg.generic: dims tied by the indexing maps (a transposed read: dim 1 of operand 1 is
// loop 0, the loop bound taken from dim 0 of operand 0). A result's dims are its init's,
// so a consumer's checks do not use the producer's result (fusion stays as it was).
// CHECK-LABEL: func.func @generic(
// CHECK-SAME:    %[[A:.+]]: tensor<?x?xf32>, %[[B:.+]]: tensor<?x?xf32>
// CHECK:         hexir.check %{{.+}}, "linalg.generic: dimension 0 of operand 1 is {}, expected {} (dimension 1 of operand 0)"
// CHECK:         hexir.check %{{.+}}, "linalg.generic: dimension 1 of operand 1 is {}, expected {} (dimension 0 of operand 0)"
// CHECK:         %[[G:.+]] = linalg.generic
// CHECK-NOT:     tensor.dim %[[G]]
// CHECK:         linalg.exp
func.func @generic(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%a : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %e = linalg.exp ins(%r : tensor<?x?xf32>) outs(%a : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %e : tensor<?x?xf32>
}

// -----

// tensor.cast to a static dim, and an expansion whose sizes must multiply to the source's.
// CHECK-LABEL: func.func @cast_and_expand(
// CHECK-SAME:    %[[A:.+]]: tensor<?xf32>, %[[H:.+]]: index
// CHECK-DAG:     %[[N:.+]] = tensor.dim %[[A]], %c0
// CHECK-DAG:     %[[C8:.+]] = arith.constant 8 : index
// CHECK:         %[[EQ:.+]] = arith.cmpi eq, %[[N]], %[[C8]]
// CHECK:         hexir.check %[[EQ]], "tensor.cast: dimension 0 of the source is {}, expected {}"(%[[N]], %[[C8]])
// CHECK:         tensor.cast
// CHECK:         %[[P:.+]] = arith.muli %[[H]], %{{.+}}
// CHECK:         %[[EQE:.+]] = arith.cmpi eq, %[[P]], %[[N]]
// CHECK:         hexir.check %[[EQE]], "tensor.expand_shape: output dimensions 0..1 hold {} elements, expected {} (dimension 0 of the source)"(%[[P]], %[[N]])
// CHECK:         tensor.expand_shape
func.func @cast_and_expand(%a: tensor<?xf32>, %h: index) -> (tensor<8xf32>, tensor<?x4xf32>) {
  %s = tensor.cast %a : tensor<?xf32> to tensor<8xf32>
  %x = tensor.expand_shape %a [[0, 1]] output_shape [%h, 4] : tensor<?xf32> into tensor<?x4xf32>
  return %s, %x : tensor<8xf32>, tensor<?x4xf32>
}

// -----

// Two dynamic sizes: the second is bounded by the limit divided by the first (at least 1).
// CHECK-LABEL: func.func @empty_2d(
// CHECK-SAME:    %[[M:.+]]: index, %[[N:.+]]: index
// CHECK:         %[[LIM:.+]] = arith.constant 1152921504606846975 : index
// CHECK:         %[[ONE:.+]] = arith.constant 1 : index
// CHECK:         arith.cmpi ule, %[[M]], %[[LIM]]
// CHECK:         hexir.check {{.+}} "tensor.empty: dimension 0 of tensor<?x?xf64>
// CHECK:         %[[AT_LEAST_1:.+]] = arith.maxsi %[[M]], %[[ONE]]
// CHECK:         %[[BOUND:.+]] = arith.divui %[[LIM]], %[[AT_LEAST_1]]
// CHECK:         arith.cmpi ule, %[[N]], %[[BOUND]]
// CHECK:         hexir.check {{.+}} "tensor.empty: dimension 1 of tensor<?x?xf64>
func.func @empty_2d(%m: index, %n: index) -> tensor<?x?xf64> {
  %e = tensor.empty(%m, %n) : tensor<?x?xf64>
  %z = arith.constant 0.0 : f64
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  return %f : tensor<?x?xf64>
}
