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

// Split by vocabulary: rows are chosen by data, so each rank looks the ids up in its own rows
// (local index = id - rank x rows) and yields zero for the others: the lookup is a partial
// sum, and making it replicated is an all_reduce of the 6x8 result, never of the table. An
// id outside the whole table keeps its out-of-range local index (the kernel check names it).
// CHECK-LABEL: func.func @embedding_split_by_vocabulary(
// CHECK:         %[[RANK:.+]] = hexir.channel.rank : index
// CHECK:         tensor.empty() : tensor<6x8xf32>
// CHECK:         %[[ROWS:.+]] = tensor.dim %arg1, %c0{{.*}} : tensor<?x8xf32>
// CHECK:         %[[BASE:.+]] = arith.muli %[[RANK]], %[[ROWS]] : index
// CHECK:         %[[ALL:.+]] = arith.muli %[[ROWS]], %{{.+}} : index
// CHECK:         %[[G:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<6xi64>) outs(%{{.+}} : tensor<6x8xf32>)
// CHECK:           %[[ROW:.+]] = arith.index_cast
// CHECK:           %[[LOCAL:.+]] = arith.subi %[[ROW]], %[[BASE]] : index
// CHECK:           %[[MINE:.+]] = arith.cmpi ult, %[[LOCAL]], %[[ROWS]] : index
// CHECK:           %[[OUTSIDE:.+]] = arith.cmpi uge, %[[ROW]], %[[ALL]] : index
// CHECK:           %[[KEEP:.+]] = arith.ori %[[MINE]], %[[OUTSIDE]] : i1
// CHECK:           %[[AT:.+]] = arith.select %[[KEEP]], %[[LOCAL]], %c0{{.*}} : index
// CHECK:           %[[V:.+]] = tensor.extract %arg1[%[[AT]], %{{.+}}] : tensor<?x8xf32>
// CHECK:           %[[M:.+]] = arith.select %[[MINE]], %[[V]], %cst{{.*}} : f32
// CHECK:           linalg.yield %[[M]] : f32
// CHECK:         %[[S:.+]] = hexir.all_reduce "sum" %[[G]] : tensor<6x8xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[S]] : tensor<6x8xf32>
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

// -----

// The lookup's result split by width (the consumer asks): the request reaches the table
// through the column loop it is read at (linalg.index 1), and the exp computing the table,
// so the replicated argument is sliced (free), exp runs on this rank's columns only and
// every rank looks up only its columns.
// CHECK-LABEL: func.func @computed_table_result_split_by_width(
// CHECK:         %[[S:.+]] = tensor.extract_slice %arg1[0, %{{.+}}] [10, %{{.+}}] [1, 1] : tensor<10x8xf32> to tensor<10x?xf32>
// CHECK:         %[[T:.+]] = math.exp %[[S]] : tensor<10x?xf32>
// CHECK:         %[[G:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<6x?xf32>)
// CHECK:           tensor.extract %[[T]][%{{.+}}, %{{.+}}] : tensor<10x?xf32>
// CHECK:         %[[N:.+]] = math.tanh %[[G]] : tensor<6x?xf32>
// CHECK-NOT:     hexir.all_
// CHECK:         return %[[N]] : tensor<6x?xf32>
#ids = affine_map<(t, j) -> (t)>
#out = affine_map<(t, j) -> (t, j)>
func.func @computed_table_result_split_by_width(%ids: tensor<6xi64>, %logits: tensor<10x8xf32>)
    -> (tensor<6x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %table = math.exp %logits : tensor<10x8xf32>
  %e = tensor.empty() : tensor<6x8xf32>
  %g = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  %n = math.tanh %g : tensor<6x8xf32>
  return %n : tensor<6x8xf32>
}
