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
