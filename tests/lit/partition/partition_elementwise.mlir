// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s

// A broadcast bias follows the split activation: the bias is sliced along its one dim.
// CHECK-LABEL: func.func @bias_follows_split(
// CHECK:         %[[B:.+]] = tensor.extract_slice %arg1[%{{.+}}] [%{{.+}}] [1] : tensor<8xf32> to tensor<?xf32>
// CHECK:         %[[Y:.+]] = linalg.generic {{.+}} ins(%arg0, %[[B]] : tensor<4x?xf32>, tensor<?xf32>) outs(%{{.+}} : tensor<4x?xf32>)
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[Y]] : tensor<4x?xf32>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @bias_follows_split(%h: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 1>},
                              %b: tensor<8xf32>) -> (tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// arith/math on tensors: the replicated operand is sliced to the split one's rows; the
// replicated result is gathered (shard placed into zeros, all_reduce).
// CHECK-LABEL: func.func @arith_on_tensors(
// CHECK:         %[[B:.+]] = tensor.extract_slice %arg1[%{{.+}}, 0] [%{{.+}}, 8] [1, 1] : tensor<4x8xf32> to tensor<?x8xf32>
// CHECK:         %[[M:.+]] = arith.mulf %arg0, %[[B]] : tensor<?x8xf32>
// CHECK:         %[[E:.+]] = math.exp %[[M]] : tensor<?x8xf32>
// CHECK:         %[[I:.+]] = tensor.insert_slice %[[E]] into %{{.+}}[%{{.+}}, 0] [%{{.+}}, 8] [1, 1] : tensor<?x8xf32> into tensor<4x8xf32>
// CHECK:         %[[G:.+]] = hexir.all_reduce "sum" %[[I]] : tensor<4x8xf32>
// CHECK:         return %[[G]]
func.func @arith_on_tensors(%a: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 0>},
                            %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = arith.mulf %a, %b : tensor<4x8xf32>
  %t = math.exp %s : tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}

// -----

// Split 0 against split 1: the first operand's split wins (equal cost, operand order); the
// second is gathered and sliced by rows.
// CHECK-LABEL: func.func @conflicting_splits(
// CHECK:         %[[I:.+]] = tensor.insert_slice %arg1 into %{{.+}}[0, %{{.+}}] [4, %{{.+}}] [1, 1] : tensor<4x?xf32> into tensor<4x8xf32>
// CHECK:         %[[G:.+]] = hexir.all_reduce "sum" %[[I]]
// CHECK:         %[[S:.+]] = tensor.extract_slice %[[G]][%{{.+}}, 0] [%{{.+}}, 8] [1, 1] : tensor<4x8xf32> to tensor<?x8xf32>
// CHECK:         arith.addf %arg0, %[[S]] : tensor<?x8xf32>
func.func @conflicting_splits(%a: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 0>},
                              %b: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<4x8xf32> {
  %s = arith.addf %a, %b : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
