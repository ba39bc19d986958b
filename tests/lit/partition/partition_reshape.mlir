// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s

// Heads: a column split becomes a split of the heads dimension through expand_shape, moves
// with the transposes and comes back through collapse_shape, without communication.
// CHECK-LABEL: func.func @heads_through_reshapes(
// CHECK:         hexir.check %{{.+}}, "hexir-partition: dimension 1 of the result of tensor.expand_shape ({}) is not divisible by the {} ranks"
// CHECK:         %[[E:.+]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [8, %{{.+}}, 4] : tensor<8x?xf32> into tensor<8x?x4xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[E]] : tensor<8x?x4xf32>) outs(%{{.+}} : tensor<?x8x4xf32>) permutation = [1, 0, 2]
// CHECK:         %[[B:.+]] = linalg.transpose ins(%[[T]] : tensor<?x8x4xf32>) outs(%{{.+}} : tensor<8x?x4xf32>) permutation = [1, 0, 2]
// CHECK:         %[[C:.+]] = tensor.collapse_shape %[[B]] {{\[\[}}0], [1, 2]] : tensor<8x?x4xf32> into tensor<8x?xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[C]]
func.func @heads_through_reshapes(%q: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>})
    -> (tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [8, 4, 4] : tensor<8x16xf32> into tensor<8x4x4xf32>
  %e = tensor.empty() : tensor<4x8x4xf32>
  %t = linalg.transpose ins(%q3 : tensor<8x4x4xf32>) outs(%e : tensor<4x8x4xf32>) permutation = [1, 0, 2]
  %e2 = tensor.empty() : tensor<8x4x4xf32>
  %b = linalg.transpose ins(%t : tensor<4x8x4xf32>) outs(%e2 : tensor<8x4x4xf32>) permutation = [1, 0, 2]
  %c = tensor.collapse_shape %b [[0], [1, 2]] : tensor<8x4x4xf32> into tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// A split that is not the outermost dimension of its collapsed group: gathered first.
// CHECK-LABEL: func.func @split_inside_a_collapsed_group(
// CHECK:         %[[G:.+]] = hexir.all_reduce "sum" %{{.+}} : tensor<4x6xf32>
// CHECK:         tensor.collapse_shape %[[G]] {{\[\[}}0, 1]] : tensor<4x6xf32> into tensor<24xf32>
func.func @split_inside_a_collapsed_group(%x: tensor<4x6xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<24xf32> {
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<4x6xf32> into tensor<24xf32>
  return %c : tensor<24xf32>
}

// -----

// Extents of 1 do not move a split: 1x16 split 1 collapses to 16 split 0, and 16 split 0
// expands to 1x16 split 1 (the group's first extent other than 1), with no communication.
// CHECK-LABEL: func.func @unit_dimensions_keep_the_split(
// CHECK:         %[[C:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<1x?xf32> into tensor<?xf32>
// CHECK:         %[[N:.+]] = math.exp %[[C]] : tensor<?xf32>
// CHECK:         %[[E:.+]] = tensor.expand_shape %[[N]] {{\[\[}}0, 1]] output_shape [1, %{{.+}}] : tensor<?xf32> into tensor<1x?xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[E]] : tensor<1x?xf32>
func.func @unit_dimensions_keep_the_split(%x: tensor<1x16xf32> {hexir.sharding = #hexir.sharding<split 1>})
    -> (tensor<1x16xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
  %n = math.exp %c : tensor<16xf32>
  %e = tensor.expand_shape %n [[0, 1]] output_shape [1, 16] : tensor<16xf32> into tensor<1x16xf32>
  return %e : tensor<1x16xf32>
}

// -----

// Backward through reshapes: the result's heads split (dimension 1 of 8x4x4) asks the
// expand_shape's source for columns, and the matmul before it for its loop n, so W is sliced
// (free) and every rank computes its heads' columns only.
// CHECK-LABEL: func.func @heads_asked_through_expand(
// CHECK:         %[[W:.+]] = tensor.extract_slice %arg1[0, %{{.+}}] [16, %{{.+}}] [1, 1] : tensor<16x16xf32> to tensor<16x?xf32>
// CHECK:         %[[Q:.+]] = linalg.matmul ins(%arg0, %[[W]] : tensor<8x16xf32>, tensor<16x?xf32>) outs(%{{.+}} : tensor<8x?xf32>)
// CHECK:         tensor.expand_shape %[[Q]] {{\[\[}}0], [1, 2]] output_shape [8, %{{.+}}, 4] : tensor<8x?xf32> into tensor<8x?x4xf32>
// CHECK-NOT:     hexir.all_
func.func @heads_asked_through_expand(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>)
    -> (tensor<8x4x4xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [8, 4, 4] : tensor<8x16xf32> into tensor<8x4x4xf32>
  return %q3 : tensor<8x4x4xf32>
}
