// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2" | FileCheck %s --check-prefix=STATIC

// Backward propagation: only the result is annotated (split 1). The request travels back
// through the elementwise max and the matmul's parallel loop n to W, which is sliced (free):
// every rank computes its 8x(4/N) columns and nothing is communicated.
// CHECK-LABEL: func.func @result_split_reaches_weights(
// CHECK-SAME:    -> (tensor<8x?xf32> {hexir.sharding = #hexir.sharding<split 1>})
// CHECK:         %[[W:.+]] = tensor.extract_slice %arg1[0, %{{.+}}] [16, %{{.+}}] [1, 1] : tensor<16x4xf32> to tensor<16x?xf32>
// CHECK:         %[[C:.+]] = linalg.matmul ins(%arg0, %[[W]] : tensor<8x16xf32>, tensor<16x?xf32>) outs(%{{.+}} : tensor<8x?xf32>) -> tensor<8x?xf32>
// CHECK:         %[[R:.+]] = arith.maximumf %[[C]], %{{.+}} : tensor<8x?xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[R]]
// STATIC-LABEL: func.func @result_split_reaches_weights(
// STATIC:         linalg.matmul ins(%arg0, %{{.+}} : tensor<8x16xf32>, tensor<16x2xf32>) outs(%{{.+}} : tensor<8x2xf32>) -> tensor<8x2xf32>
// STATIC-NOT:     hexir.all_
func.func @result_split_reaches_weights(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>)
    -> (tensor<8x4xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = arith.maximumf %c, %z : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// A partial sum (W split by rows: loop k) feeding a consumer whose result is split by rows:
// the consumer asks for rows, so the partial sum becomes rows directly. With the rank count
// known each rank receives its 4 rows, summed; read at run time, its 8 / count rows: one
// hexir.reduce_scatter either way.
// CHECK-LABEL: func.func @partial_into_row_split(
// CHECK:         %[[P:.+]] = linalg.matmul ins(%{{.+}}, %arg1 : tensor<8x?xf32>, tensor<?x4xf32>) outs(%{{.+}} : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NOT:     hexir.all_reduce
// CHECK:         %[[ROWS:.+]] = hexir.reduce_scatter "sum" %[[P]] : tensor<8x4xf32> -> tensor<?x4xf32>
// CHECK:         %[[B:.+]] = tensor.extract_slice %arg2[%{{.+}}, 0] [%{{.+}}, 4] [1, 1] : tensor<8x4xf32> to tensor<?x4xf32>
// CHECK:         %[[Y:.+]] = arith.addf %[[ROWS]], %[[B]] : tensor<?x4xf32>
// CHECK:         return %[[Y]]
// STATIC-LABEL: func.func @partial_into_row_split(
// STATIC:         %[[P:.+]] = linalg.matmul ins(%{{.+}}, %arg1 : tensor<8x8xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<8x4xf32>) -> tensor<8x4xf32>
// STATIC-NOT:     hexir.all_reduce
// STATIC:         %[[ROWS:.+]] = hexir.reduce_scatter "sum" %[[P]] : tensor<8x4xf32> -> tensor<4x4xf32>
// STATIC:         %[[Y:.+]] = arith.addf %[[ROWS]], %{{.+}} : tensor<4x4xf32>
// STATIC-NOT:     hexir.all_
// STATIC:         return %[[Y]] : tensor<4x4xf32>
func.func @partial_into_row_split(%x: tensor<8x16xf32>,
    %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>},
    %b: tensor<8x4xf32>) -> (tensor<8x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = arith.addf %p, %b : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// An op's own annotation is asked of its producers too: the transpose is pinned to split 0,
// so its input is asked for split 1 (the same loop) and the generic before it computes
// columns; the pin then needs no conversion.
// CHECK-LABEL: func.func @pinned_op_asks_backwards(
// CHECK:         %[[A:.+]] = tensor.extract_slice %arg0[0, %{{.+}}] [4, %{{.+}}] [1, 1] : tensor<4x8xf32> to tensor<4x?xf32>
// CHECK:         %[[E:.+]] = math.exp %[[A]] : tensor<4x?xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[E]] : tensor<4x?xf32>)
// CHECK:         arith.negf %[[T]] : tensor<?x4xf32>
// CHECK:         hexir.all_reduce
func.func @pinned_op_asks_backwards(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %x = math.exp %a : tensor<4x8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
       {hexir.sharding = #hexir.sharding<split 0>}
  %n = arith.negf %t : tensor<8x4xf32>
  return %n : tensor<8x4xf32>
}
