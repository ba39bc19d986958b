// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2" | FileCheck %s

// With the rank count known (hexir-compile --partition=2), shards have static shapes and
// rows are gathered by hexir.all_gather; no run-time divisibility check is left.
// CHECK-LABEL: func.func @gathered_rows(
// CHECK-SAME:    %arg0: tensor<4x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x4xf32>
// CHECK-NOT:     hexir.check
// CHECK:         %[[Y:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:         %[[G:.+]] = hexir.all_gather %[[Y]] : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK:         return %[[G]]
func.func @gathered_rows(%x: tensor<8x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// An op's own annotation wins over what its operands imply: the matmul's result (split by
// columns through W) is made replicated right after it, and the consumer runs whole.
// CHECK-LABEL: func.func @pinned_result(
// CHECK:         %[[Y:.+]] = linalg.matmul ins(%arg0, %arg1 : tensor<8x16xf32>, tensor<16x2xf32>) outs(%{{.+}} : tensor<8x2xf32>) -> tensor<8x2xf32>
// CHECK:         %[[I:.+]] = tensor.insert_slice %[[Y]] into %{{.+}}[0, %{{.+}}] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x4xf32>
// CHECK:         %[[G:.+]] = hexir.all_reduce "sum" %[[I]] : tensor<8x4xf32>
// CHECK:         arith.negf %[[G]] : tensor<8x4xf32>
func.func @pinned_result(%x: tensor<8x16xf32>,
    %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul {hexir.sharding = #hexir.sharding<replicated>}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %n = arith.negf %y : tensor<8x4xf32>
  return %n : tensor<8x4xf32>
}
