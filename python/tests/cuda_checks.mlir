// python/tests/cuda_checks.py's module: @same returns its argument (torch's memory used in
// place), @double computes into a buffer Hexir allocates on the GPU.
#id = affine_map<(i) -> (i)>
func.func @same(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
func.func @double(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
