// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s

// Megatron's MLP from annotations: W1 split by columns (loop j) gives a split hidden layer;
// W2 split by rows (loop k, the reduction) gives a partial sum, all-reduced for the
// replicated result. The zero-filled outputs are created at the local size.
// CHECK-LABEL: func.func @column_then_row(
// CHECK-SAME:    %[[X:.+]]: tensor<8x16xf32>, %[[W1:.+]]: tensor<16x?xf32> {hexir.sharding = #hexir.sharding<split 1>}, %[[W2:.+]]: tensor<?x16xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x16xf32>
// CHECK:         %[[N:.+]] = hexir.channel.count
// CHECK:         hexir.check %{{.+}}, "hexir-partition: dimension 1 of argument 1 of @column_then_row ({}) is not divisible by the {} ranks"
// CHECK:         hexir.check %{{.+}}, "hexir-partition: dimension 1 of argument 1 of @column_then_row is {} on this rank, expected {}"
// CHECK:         %[[E1:.+]] = tensor.empty(%{{.+}}) : tensor<8x?xf32>
// CHECK:         %[[Z1:.+]] = linalg.fill {{.+}} outs(%[[E1]] : tensor<8x?xf32>)
// CHECK:         %[[H:.+]] = linalg.matmul ins(%[[X]], %[[W1]] : tensor<8x16xf32>, tensor<16x?xf32>) outs(%[[Z1]] : tensor<8x?xf32>) -> tensor<8x?xf32>
// CHECK:         %[[P:.+]] = linalg.matmul ins(%[[H]], %[[W2]] : tensor<8x?xf32>, tensor<?x16xf32>) outs(%{{.+}} : tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK:         %[[S:.+]] = hexir.all_reduce "sum" %[[P]] : tensor<8x16xf32>
// CHECK:         return %[[S]]
func.func @column_then_row(%x: tensor<8x16xf32>,
    %w1: tensor<16x32xf32> {hexir.sharding = #hexir.sharding<split 1>},
    %w2: tensor<32x16xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A replicated left operand meets a row-split right one: the left is sliced along k (no
// communication) and the product is partial.
// CHECK-LABEL: func.func @replicated_times_row_split(
// CHECK:         %[[R:.+]] = hexir.channel.rank
// CHECK:         %[[OFF:.+]] = arith.muli %[[R]], %{{.+}} : index
// CHECK:         %[[XS:.+]] = tensor.extract_slice %arg0[0, %[[OFF]]] [8, %{{.+}}] [1, 1] : tensor<8x16xf32> to tensor<8x?xf32>
// CHECK:         %[[P:.+]] = linalg.matmul ins(%[[XS]], %arg1 : tensor<8x?xf32>, tensor<?x4xf32>)
// CHECK:         hexir.all_reduce "sum" %[[P]] : tensor<8x4xf32>
func.func @replicated_times_row_split(%x: tensor<8x16xf32>,
    %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Rows split, weights replicated (data parallel): the result stays split, nothing is
// communicated.
// CHECK-LABEL: func.func @row_split_rows(
// CHECK-SAME:    -> (tensor<?x4xf32> {hexir.sharding = #hexir.sharding<split 0>})
// CHECK:         %[[Y:.+]] = linalg.matmul ins(%arg0, %arg1 : tensor<?x16xf32>, tensor<16x4xf32>) outs(%{{.+}} : tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[Y]]
func.func @row_split_rows(%x: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 0>},
    %w: tensor<16x4xf32>) -> (tensor<8x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
