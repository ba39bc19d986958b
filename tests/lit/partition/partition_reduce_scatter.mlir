// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2" | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s --check-prefix=DYNAMIC

// A partial sum (W split by rows: loop k) whose consumer is split by columns: the collective
// scatters dimension 0, so the sum goes there by a transpose and comes back by another;
// each rank receives only its 8x2 columns, summed. With the rank count read at run time the
// same collective gives each rank extent / count columns (checked to divide).
// CHECK-LABEL: func.func @partial_into_column_split(
// CHECK:         %[[P:.+]] = linalg.matmul ins(%{{.+}}, %arg1 : tensor<8x8xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[P]] : tensor<8x4xf32>) outs(%{{.+}} : tensor<4x8xf32>) permutation = [1, 0]
// CHECK:         %[[S:.+]] = hexir.reduce_scatter "sum" %[[T]] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK:         %[[B:.+]] = linalg.transpose ins(%[[S]] : tensor<2x8xf32>) outs(%{{.+}} : tensor<8x2xf32>) permutation = [1, 0]
// CHECK:         %[[Y:.+]] = arith.addf %[[B]], %{{.+}} : tensor<8x2xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[Y]] : tensor<8x2xf32>
// DYNAMIC-LABEL: func.func @partial_into_column_split(
// DYNAMIC-NOT:   hexir.all_reduce
// DYNAMIC:       hexir.check %{{.+}}, "hexir-partition: dimension 1 of operand 0 of arith.addf ({}) is not divisible by the {} ranks"
// DYNAMIC:       linalg.transpose ins(%{{.+}} : tensor<8x4xf32>) outs(%{{.+}} : tensor<4x8xf32>) permutation = [1, 0]
// DYNAMIC:       %[[S:.+]] = hexir.reduce_scatter "sum" %{{.+}} : tensor<4x8xf32> -> tensor<?x8xf32>
// DYNAMIC:       linalg.transpose ins(%[[S]] : tensor<?x8xf32>) outs(%{{.+}} : tensor<8x?xf32>) permutation = [1, 0]
// DYNAMIC-NOT:   hexir.all_reduce
func.func @partial_into_column_split(%x: tensor<8x16xf32>,
    %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>},
    %b: tensor<8x4xf32>) -> (tensor<8x4xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = arith.addf %p, %b : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Decode's shape (one row): only extents of 1 precede the split dimension, so a reshape
// gives the collective its rows without moving data.
// CHECK-LABEL: func.func @one_row_into_column_split(
// CHECK:         %[[P:.+]] = linalg.matmul
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[F:.+]] = tensor.collapse_shape %[[P]] {{\[\[}}0, 1]] : tensor<1x6xf32> into tensor<6xf32>
// CHECK:         %[[S:.+]] = hexir.reduce_scatter "sum" %[[F]] : tensor<6xf32> -> tensor<3xf32>
// CHECK:         %[[R:.+]] = tensor.expand_shape %[[S]] {{\[\[}}0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[R]] : tensor<1x3xf32>
func.func @one_row_into_column_split(%x: tensor<1x16xf32>,
    %w: tensor<16x6xf32> {hexir.sharding = #hexir.sharding<split 0>})
    -> (tensor<1x6xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6xf32>) -> tensor<1x6xf32>
  %p = linalg.matmul ins(%x, %w : tensor<1x16xf32>, tensor<16x6xf32>) outs(%z : tensor<1x6xf32>) -> tensor<1x6xf32>
  return %p : tensor<1x6xf32>
}

// -----

// Dimension 1 of three (8x6x4 split 1 on 2 ranks): moved to the front as 6x8x4 and back.
// CHECK-LABEL: func.func @middle_dimension(
// CHECK:         linalg.transpose ins(%{{.+}} : tensor<8x6x4xf32>) outs(%{{.+}} : tensor<6x8x4xf32>) permutation = [1, 0, 2]
// CHECK:         hexir.reduce_scatter "sum" %{{.+}} : tensor<6x8x4xf32> -> tensor<3x8x4xf32>
// CHECK:         linalg.transpose ins(%{{.+}} : tensor<3x8x4xf32>) outs(%{{.+}} : tensor<8x3x4xf32>) permutation = [1, 0, 2]
#a = affine_map<(i, j, l, k) -> (i, j, k)>
#w = affine_map<(i, j, l, k) -> (k, l)>
#o = affine_map<(i, j, l, k) -> (i, j, l)>
func.func @middle_dimension(%x: tensor<8x6x16xf32>,
    %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>})
    -> (tensor<8x6x4xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x6x4xf32>) -> tensor<8x6x4xf32>
  %p = linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x6x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x6x4xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %m = arith.mulf %xv, %wv : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x6x4xf32>
  return %p : tensor<8x6x4xf32>
}

// -----

// A max over the split dimension whose result is asked split: reduce_scatter "max", each
// rank receiving its rows' maxima (the start, -3e38, on every rank: max is idempotent).
// CHECK-LABEL: func.func @max_into_row_split(
// CHECK:         %[[M:.+]] = linalg.generic {{.+}} ins(%{{.+}} : tensor<8x8xf32>) outs(%{{.+}} : tensor<8xf32>)
// CHECK:         %[[S:.+]] = hexir.reduce_scatter "max" %[[M]] : tensor<8xf32> -> tensor<4xf32>
// CHECK:         return %[[S]] : tensor<4xf32>
// DYNAMIC-LABEL: func.func @max_into_row_split(
// DYNAMIC:         %[[S:.+]] = hexir.reduce_scatter "max" %{{.+}} : tensor<8xf32> -> tensor<?xf32>
// DYNAMIC:         return %[[S]] : tensor<?xf32>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @max_into_row_split(%x: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>})
    -> (tensor<8xf32> {hexir.sharding = #hexir.sharding<split 0>}) {
  %ninf = arith.constant -3.0e38 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maxnumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %m : tensor<8xf32>
}
