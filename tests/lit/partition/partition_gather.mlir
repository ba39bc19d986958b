// RUN: hexir-opt %s -split-input-file --hexir-partition | FileCheck %s

// An embedding table split by width: the lookup's column loop reads the table through
// linalg.index 1, so the result is split by width and the table is read locally.
// CHECK-LABEL: func.func @embedding_split_by_width(
// CHECK:         %[[G:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<6xi64>) outs(%{{.+}} : tensor<6x?xf32>)
// CHECK:           tensor.extract %arg1[%{{.+}}, %{{.+}}] : tensor<10x?xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[G]] : tensor<6x?xf32>
#ids = affine_map<(t, j) -> (t)>
#out = affine_map<(t, j) -> (t, j)>
func.func @embedding_split_by_width(%ids: tensor<6xi64>,
    %table: tensor<10x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> (tensor<6x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %e = tensor.empty() : tensor<6x8xf32>
  %g = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  return %g : tensor<6x8xf32>
}

// -----

// Split by vocabulary: rows are chosen by data, so the table is gathered first.
// CHECK-LABEL: func.func @embedding_split_by_vocabulary(
// CHECK:         %[[T:.+]] = hexir.all_reduce "sum" %{{.+}} : tensor<10x8xf32>
// CHECK:         linalg.generic
// CHECK:           tensor.extract %[[T]][%{{.+}}, %{{.+}}] : tensor<10x8xf32>
#ids = affine_map<(t, j) -> (t)>
#out = affine_map<(t, j) -> (t, j)>
func.func @embedding_split_by_vocabulary(%ids: tensor<6xi64>,
    %table: tensor<10x8xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<6x8xf32> {
  %e = tensor.empty() : tensor<6x8xf32>
  %g = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  return %g : tensor<6x8xf32>
}
