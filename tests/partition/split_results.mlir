// Results annotated as splits (partition_mpi_test.sh): y = relu(x @ W1) @ W2 + b with W1
// column-split and W2 row-split, its result split by rows; z = tanh(x @ W3) split by columns,
// nothing else annotated. Backward propagation makes the bias add ask for rows, so the
// partial sum becomes rows directly (hexir.reduce_scatter; with the rank count read at run
// time its rows are 8 / count), and makes z's matmul compute only this rank's columns of W3.
#id = affine_map<(i, j) -> (i, j)>
func.func @split_results(%x: tensor<8x16xf32>,
                         %w1: tensor<16x32xf32> {hexir.sharding = #hexir.sharding<split 1>},
                         %w2: tensor<32x8xf32> {hexir.sharding = #hexir.sharding<split 0>},
                         %b: tensor<8x8xf32>,
                         %w3: tensor<16x8xf32>)
    -> (tensor<8x8xf32> {hexir.sharding = #hexir.sharding<split 0>},
        tensor<8x8xf32> {hexir.sharding = #hexir.sharding<split 1>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%r, %w2 : tensor<8x32xf32>, tensor<32x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w3 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.tanh %a : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  return %y, %t : tensor<8x8xf32>, tensor<8x8xf32>
}
