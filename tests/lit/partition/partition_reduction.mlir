// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s

// A sum over the split dimension: each rank sums its columns into a zero start (partial),
// then one all_reduce.
// CHECK-LABEL: func.func @sum_over_split_dim(
// CHECK:         %[[R:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x?xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK:         %[[S:.+]] = hexir.all_reduce "sum" %[[R]] : tensor<4xf32>
// CHECK:         return %[[S]]
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (i)>
func.func @sum_over_split_dim(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A max over the split dimension does not add into its output: the input is gathered and
// the reduction runs whole.
// CHECK-LABEL: func.func @max_over_split_dim(
// CHECK:         %[[G:.+]] = hexir.all_reduce "sum" %{{.+}} : tensor<4x8xf32>
// CHECK:         %[[M:.+]] = linalg.generic {{.+}} ins(%[[G]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK:         arith.maximumf
// CHECK:         return %[[M]]
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (i)>
func.func @max_over_split_dim(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<4xf32> {
  %ninf = arith.constant -3.0e38 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A sum along the other dimension keeps the row split; nothing is communicated.
// CHECK-LABEL: func.func @sum_along_other_dim(
// CHECK:         %[[R:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<?x8xf32>) outs(%{{.+}} : tensor<?xf32>)
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[R]] : tensor<?xf32>
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (i)>
func.func @sum_along_other_dim(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> (tensor<4xf32> {hexir.sharding = #hexir.sharding<split 0>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}
