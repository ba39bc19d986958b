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

// -----

// A slice read at a dynamic offset and size: one check per dim, offset and size against
// the source's extent (unsigned compares, so negative values fail too).
// CHECK-LABEL: func.func @extract_slice(
// CHECK-SAME:    %[[A:.+]]: tensor<?xf32>, %[[O:.+]]: index, %[[N:.+]]: index
// CHECK:         %[[D:.+]] = tensor.dim %[[A]], %{{.+}}
// CHECK:         %[[IN:.+]] = arith.cmpi ule, %[[O]], %[[D]]
// CHECK-NEXT:    %[[OK:.+]] = arith.andi %[[IN]]
// CHECK-NEXT:    hexir.check %[[OK]], "tensor.extract_slice reads the source: dimension 0 [{}, {} + {}) is outside [0, {})"(%[[O]], %[[O]], %[[N]], %[[D]]) : index, index, index, index
// CHECK-NOT:     hexir.check
// CHECK:         tensor.extract_slice
func.func @extract_slice(%a: tensor<?xf32>, %o: index, %n: index) -> tensor<?xf32> {
  %s = tensor.extract_slice %a[%o] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// A strided, rank-reducing insert: the destination's dim 0 must hold o + [0, n) * 2 (the
// static dim 1 needs no check) and the source must have n elements.
// CHECK-LABEL: func.func @insert_slice(
// CHECK-SAME:    %[[DST:.+]]: tensor<?x4xf32>, %[[SRC:.+]]: tensor<?xf32>, %[[O:.+]]: index, %[[N:.+]]: index
// CHECK:         %[[D:.+]] = tensor.dim %[[DST]], %{{.+}}
// CHECK:         arith.divui %{{.+}}, %c2
// CHECK:         %[[IN:.+]] = arith.cmpi ule, %[[O]], %[[D]]
// CHECK-NEXT:    %[[OK:.+]] = arith.andi %[[IN]]
// CHECK-NEXT:    hexir.check %[[OK]], "tensor.insert_slice writes the destination: dimension 0 {} + [0, {}) * 2 is outside [0, {})"(%[[O]], %[[N]], %[[D]]) : index, index, index
// CHECK:         %[[S:.+]] = tensor.dim %[[SRC]], %{{.+}}
// CHECK:         %[[EQ:.+]] = arith.cmpi eq, %[[S]], %[[N]]
// CHECK:         hexir.check %[[EQ]], "tensor.insert_slice: dimension 0 of the source is {}, expected {} (the slice size of dimension 0)"(%[[S]], %[[N]])
// CHECK-NOT:     hexir.check
// CHECK:         tensor.insert_slice
func.func @insert_slice(%d: tensor<?x4xf32>, %s: tensor<?xf32>, %o: index, %n: index) -> tensor<?x4xf32> {
  %r = tensor.insert_slice %s into %d[%o, 1] [%n, 1] [2, 1] : tensor<?xf32> into tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// A strided convolution: the input's width (indexed by d1 * 2 + d3) must hold the window's
// last index, (output width - 1) * 2 + (kernel width - 1), unless the output is empty.
// CHECK-LABEL: func.func @conv(
// CHECK-SAME:    %[[X:.+]]: tensor<1x?x1xf32>, %[[W:.+]]: tensor<3x1x1xf32>, %[[OUT:.+]]: tensor<1x?x1xf32>
// CHECK-DAG:     %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG:     %[[OW:.+]] = tensor.dim %[[OUT]], %c1
// CHECK-DAG:     %[[IW:.+]] = tensor.dim %[[X]], %c1
// CHECK:         %[[LAST:.+]] = arith.subi %[[OW]], %c1
// CHECK:         %[[STRIDED:.+]] = arith.muli %[[LAST]], %c2
// CHECK:         %[[MAX:.+]] = arith.addi %[[STRIDED]], %c2
// CHECK:         %[[EMPTY:.+]] = arith.cmpi eq, %[[OW]], %c0
// CHECK:         %[[FITS:.+]] = arith.cmpi slt, %[[MAX]], %[[IW]]
// CHECK:         %[[OK:.+]] = arith.ori %[[FITS]], %[[EMPTY]]
// CHECK:         hexir.check %[[OK]], "linalg.conv_1d_nwc_wcf: dimension 1 of operand 0 is {}, but its index d1 * 2 + d3 reaches {} (d1 < {}, d3 < {})"(%[[IW]], %[[MAX]], %[[OW]], %[[C3]])
// CHECK-NOT:     hexir.check
// CHECK:         linalg.conv_1d_nwc_wcf
func.func @conv(%x: tensor<1x?x1xf32>, %w: tensor<3x1x1xf32>, %out: tensor<1x?x1xf32>) -> tensor<1x?x1xf32> {
  %r = linalg.conv_1d_nwc_wcf {dilations = dense<1> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
     ins(%x, %w : tensor<1x?x1xf32>, tensor<3x1x1xf32>) outs(%out : tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  return %r : tensor<1x?x1xf32>
}

// -----

// A static convolution is proven by the verifier; so is a static slice.
// CHECK-LABEL: func.func @static_window(
// CHECK-NOT:     hexir.check
// CHECK:         return
func.func @static_window(%x: tensor<1x9x1xf32>, %w: tensor<3x1x1xf32>, %out: tensor<1x3x1xf32>) -> tensor<1x3x1xf32> {
  %r = linalg.conv_1d_nwc_wcf {dilations = dense<2> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
     ins(%x, %w : tensor<1x9x1xf32>, tensor<3x1x1xf32>) outs(%out : tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  %s = tensor.extract_slice %r[0, 1, 0] [1, 2, 1] [1, 1, 1] : tensor<1x3x1xf32> to tensor<1x2x1xf32>
  %e = tensor.insert_slice %s into %r[0, 0, 0] [1, 2, 1] [1, 1, 1] : tensor<1x2x1xf32> into tensor<1x3x1xf32>
  return %e : tensor<1x3x1xf32>
}

// -----

// A shifted read (d0 - 1) starts at -1: it can only be valid when the loop is empty, so the
// check folds to that, and names both ends over the loop extent the init gave.
// CHECK-LABEL: func.func @shift(
// CHECK-SAME:    %[[A:.+]]: tensor<?xf32>, %[[O:.+]]: tensor<?xf32>
// CHECK-DAG:     %[[N:.+]] = tensor.dim %[[O]], %c0
// CHECK-DAG:     %[[SIZE:.+]] = tensor.dim %[[A]], %c0
// CHECK:         %[[HI:.+]] = arith.addi %{{.+}}, %c-1
// CHECK:         %[[EMPTY:.+]] = arith.cmpi eq, %[[N]], %c0
// CHECK:         hexir.check %[[EMPTY]], "linalg.generic: dimension 0 of operand 0 is {}, but its index d0 - 1 ranges over [{}, {}] (d0 < {})"(%[[SIZE]], %c-1{{.*}}, %[[HI]], %[[N]])
// CHECK:         linalg.generic
#shl = affine_map<(i) -> (i - 1)>
#id = affine_map<(i) -> (i)>
func.func @shift(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#shl, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// d0 mod 3 stays in [lo, hi] when d0 does, else anywhere in [0, 3): selected at run time.
// CHECK-LABEL: func.func @modulo(
// CHECK:         %[[INSIDE:.+]] = arith.cmpi slt, %{{.+}}, %c3
// CHECK:         %[[LO:.+]] = arith.select %[[INSIDE]], %c0{{.*}}, %c0
// CHECK:         %[[HI:.+]] = arith.select %[[INSIDE]], %{{.+}}, %c2
// CHECK:         hexir.check %{{.+}}, "linalg.generic: dimension 0 of operand 0 is {}, but its index d0 mod 3 ranges over [{}, {}] (d0 < {})"(%{{.+}}, %[[LO]], %[[HI]], %{{.+}})
#md = affine_map<(i) -> (i mod 3)>
#id = affine_map<(i) -> (i)>
func.func @modulo(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#md, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A constant index reads element 2 of a dynamic operand, whatever the loops.
// CHECK-LABEL: func.func @constant_index(
// CHECK:         hexir.check %{{.+}}, "linalg.generic: dimension 0 of operand 0 is {}, but its index 2 reaches {}"
#c2 = affine_map<(i) -> (2)>
#id = affine_map<(i) -> (i)>
func.func @constant_index(%a: tensor<?xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#c2, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%o : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A pad's dynamic amounts are bounded (no wrap), then its result's byte size is checked
// like a tensor.empty's.
// CHECK-LABEL: func.func @pad(
// CHECK-SAME:    %[[A:.+]]: tensor<?xf32>, %[[L:.+]]: index
// CHECK:         %[[BIASED:.+]] = arith.addi %[[L]], %c4611686018427387904
// CHECK:         %[[IN:.+]] = arith.cmpi ule, %[[BIASED]], %c-9223372036854775808
// CHECK:         hexir.check %[[IN]], "tensor.pad: low padding of dimension 0 is {}, beyond 2^62 either way"(%[[L]]) : index
// CHECK:         %[[SRC:.+]] = tensor.dim %[[A]], %c0
// CHECK:         %[[SUM:.+]] = arith.addi %[[SRC]], %[[L]]
// CHECK:         %[[SIZE:.+]] = arith.addi %[[SUM]], %c2
// CHECK:         %[[FITS:.+]] = arith.cmpi ule, %[[SIZE]], %c2305843009213693951
// CHECK:         hexir.check %[[FITS]], "tensor.pad: dimension 0 of tensor<?xf32> is {}: the tensor would take more than 2^63-1 bytes (or the size is negative)"(%[[SIZE]]) : index
// CHECK:         tensor.pad
func.func @pad(%a: tensor<?xf32>, %l: index) -> tensor<?xf32> {
  %z = arith.constant 0.0 : f32
  %r = tensor.pad %a low[%l] high[2] { ^bb0(%i: index): tensor.yield %z : f32 } : tensor<?xf32> to tensor<?xf32>
  return %r : tensor<?xf32>
}
