// An embedding split by vocabulary rows, a row-parallel projection and a reshape to one
// head (partition_mpi_test.sh). h = table[ids] (replicated result): each rank looks the ids
// up in its rows, a partial sum gathered by one all_reduce of the 6x8 result (the table is
// never communicated). z = expand(h @ W + b) to 6x1x12 split 2: backward propagation asks
// the reshape's source for columns (the group's first extent other than 1), the bias add
// for columns, so W's partial sum becomes columns directly (hexir.reduce_scatter on
// dimension 1 with --partition=N, else all_reduce and a slice).
#ids = affine_map<(t, j) -> (t)>
#out = affine_map<(t, j) -> (t, j)>
func.func @embed_project(%ids: tensor<6xi64>,
                         %table: tensor<16x8xf32> {hexir.sharding = #hexir.sharding<split 0>},
                         %w: tensor<8x12xf32> {hexir.sharding = #hexir.sharding<split 0>},
                         %b: tensor<6x12xf32>)
    -> (tensor<6x8xf32>, tensor<6x1x12xf32> {hexir.sharding = #hexir.sharding<split 2>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8xf32>
  %h = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<6xi64>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  %e2 = tensor.empty() : tensor<6x12xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<6x12xf32>) -> tensor<6x12xf32>
  %p = linalg.matmul ins(%h, %w : tensor<6x8xf32>, tensor<8x12xf32>) outs(%z2 : tensor<6x12xf32>) -> tensor<6x12xf32>
  %y = linalg.generic {indexing_maps = [#out, #out, #out], iterator_types = ["parallel", "parallel"]}
      ins(%p, %b : tensor<6x12xf32>, tensor<6x12xf32>) outs(%e2 : tensor<6x12xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<6x12xf32>
  %z = tensor.expand_shape %y [[0], [1, 2]] output_shape [6, 1, 12] : tensor<6x12xf32> into tensor<6x1x12xf32>
  return %h, %z : tensor<6x8xf32>, tensor<6x1x12xf32>
}
