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

// A max over the split dimension: each rank takes the max of its columns from the same start
// (max is idempotent: any start serves, here -3e38), then one all_reduce "max" of the results.
// CHECK-LABEL: func.func @max_over_split_dim(
// CHECK-NOT:     hexir.all_reduce "sum"
// CHECK:         %[[M:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<4x?xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK:         arith.maximumf
// CHECK:         %[[S:.+]] = hexir.all_reduce "max" %[[M]] : tensor<4xf32>
// CHECK:         return %[[S]]
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

// A signed integer min: partial min, all_reduce "min".
// CHECK-LABEL: func.func @min_over_split_dim(
// CHECK:         %[[M:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<4x?xi32>) outs(%{{.+}} : tensor<4xi32>)
// CHECK:         arith.minsi
// CHECK:         %[[S:.+]] = hexir.all_reduce "min" %[[M]] : tensor<4xi32>
// CHECK:         return %[[S]]
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (i)>
func.func @min_over_split_dim(%x: tensor<4x8xi32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<4xi32> {
  %big = arith.constant 1000 : i32
  %e = tensor.empty() : tensor<4xi32>
  %z = linalg.fill ins(%big : i32) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xi32>) outs(%z : tensor<4xi32>) {
  ^bb0(%a: i32, %o: i32):
    %r = arith.minsi %o, %a : i32
    linalg.yield %r : i32
  } -> tensor<4xi32>
  return %s : tensor<4xi32>
}

// -----

// A product is not made partial (only sums, maxima and minima are): the input is gathered
// and the reduction runs whole.
// CHECK-LABEL: func.func @product_over_split_dim(
// CHECK:         %[[G:.+]] = hexir.all_reduce "sum" %{{.+}} : tensor<4x8xf32>
// CHECK:         %[[P:.+]] = linalg.generic {{.+}} ins(%[[G]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK:         arith.mulf
// CHECK:         return %[[P]]
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (i)>
func.func @product_over_split_dim(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%one : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %o : f32
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
