// A two-layer perceptron: relu(x * w1 + b1) * w2, with the weights as constants.
// bash tools/quickstart.sh compiles it with hexir-compile and runs it with hexir-run.
#bias = affine_map<(i, j) -> (j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w1 = arith.constant dense<[[0.5, -1.0, 0.25, 2.0, 0.0],
                              [1.0, 0.5, -0.5, 0.0, 1.5],
                              [-0.25, 1.0, 1.0, -1.0, 0.5],
                              [0.75, 0.0, 0.5, 1.0, -2.0]]> : tensor<4x5xf32>
  %b1 = arith.constant dense<[0.1, -0.2, 0.3, -0.4, 0.5]> : tensor<5xf32>
  %w2 = arith.constant dense<[[1.0, 0.0, -1.0],
                              [0.5, 0.5, 0.5],
                              [-1.0, 2.0, 0.0],
                              [0.0, -0.5, 1.0],
                              [0.25, 0.25, 0.25]]> : tensor<5x3xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x5xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x5xf32>) -> tensor<2x5xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<2x4xf32>, tensor<4x5xf32>) outs(%f1 : tensor<2x5xf32>) -> tensor<2x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<2x5xf32>, tensor<5xf32>) outs(%e1 : tensor<2x5xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      %m = arith.maximumf %s, %zero : f32
      linalg.yield %m : f32
  } -> tensor<2x5xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<2x5xf32>, tensor<5x3xf32>) outs(%f2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
