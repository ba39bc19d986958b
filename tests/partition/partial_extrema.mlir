// Maxima and minima over a split dimension (partition_mpi_test.sh): x is split by columns;
// each rank takes the max and the min of its columns of every row from the same start
// (partial max / min: max and min are idempotent, so any start serves). The row maxima are
// returned replicated (hexir.all_reduce "max"), the row minima split by rows
// (hexir.reduce_scatter "min": rank r receives only its rows' minima; with the rank count
// read at run time, 8 / count of them).
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @extrema(%x: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>})
    -> (tensor<8xf32>, tensor<8xf32> {hexir.sharding = #hexir.sharding<split 0>}) {
  %low = arith.constant -3.0e38 : f32
  %high = arith.constant 3.0e38 : f32
  %e = tensor.empty() : tensor<8xf32>
  %lo = linalg.fill ins(%low : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %hi = linalg.fill ins(%high : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%lo : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %mn = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%hi : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.minimumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %mx, %mn : tensor<8xf32>, tensor<8xf32>
}
