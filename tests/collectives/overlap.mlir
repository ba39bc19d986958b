// A collective and independent compute (overlap_trace_test.sh): rank r all_reduces a 16 MiB
// tensor a of (r + 1)s while a 1024^3 matmul of a corner of a (not of the all_reduce's result)
// runs, then the row sums of both results: the sums of the all_reduce's result wait for it,
// those of the matmul's need not.
//   sums[i] = 1024 * (1 + 2 + ... + N)    products[i] = 1024 * 1024 * (r + 1)^2
#ij = affine_map<(i, j) -> (i, j)>
#i = affine_map<(i, j) -> (i)>
func.func @main() -> (tensor<4096xf32>, tensor<1024xf32>) {
  %rank = hexir.channel.rank : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<4096x1024xf32>
  %a = linalg.generic {indexing_maps = [#ij], iterator_types = ["parallel", "parallel"]}
      outs(%ea : tensor<4096x1024xf32>) {
  ^bb0(%o: f32):
    %r1 = arith.addi %rank, %c1 : index
    %ri = arith.index_cast %r1 : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    linalg.yield %rf : f32
  } -> tensor<4096x1024xf32>
  %s = hexir.all_reduce "sum" %a : tensor<4096x1024xf32>
  %b = tensor.extract_slice %a[0, 0] [1024, 1024] [1, 1] : tensor<4096x1024xf32> to tensor<1024x1024xf32>
  %eb = tensor.empty() : tensor<1024x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%eb : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %m = linalg.matmul ins(%b, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>)
      outs(%z : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %es = tensor.empty() : tensor<4096xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<4096xf32>) -> tensor<4096xf32>
  %sums = linalg.generic {indexing_maps = [#ij, #i], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<4096x1024xf32>) outs(%zs : tensor<4096xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %v, %acc : f32
    linalg.yield %t : f32
  } -> tensor<4096xf32>
  %em = tensor.empty() : tensor<1024xf32>
  %zm = linalg.fill ins(%zero : f32) outs(%em : tensor<1024xf32>) -> tensor<1024xf32>
  %products = linalg.generic {indexing_maps = [#ij, #i], iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<1024x1024xf32>) outs(%zm : tensor<1024xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %v, %acc : f32
    linalg.yield %t : f32
  } -> tensor<1024xf32>
  return %sums, %products : tensor<4096xf32>, tensor<1024xf32>
}
