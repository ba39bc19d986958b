// M = 1 matrix-vector products y = W x, W row-major [out][in] in f32 (f32 accumulate),
// at the LLM decode shapes of issue 7 (dim 768, hidden 2048, vocab 32000) and Llama-7B's.
// Each as linalg.matvec (the llama importer's f32 form).
func.func @main(%x768: tensor<768xf32>, %x2048: tensor<2048xf32>, %x4096: tensor<4096xf32>, %w768_768: tensor<768x768xf32>, %w2048_768: tensor<2048x768xf32>, %w768_2048: tensor<768x2048xf32>, %w32000_768: tensor<32000x768xf32>, %w4096_4096: tensor<4096x4096xf32>, %w14336_4096: tensor<14336x4096xf32>) -> (tensor<768xf32>, tensor<2048xf32>, tensor<768xf32>, tensor<32000xf32>, tensor<4096xf32>, tensor<14336xf32>) {
  %zero = arith.constant 0.0 : f32
  %e768_768 = tensor.empty() : tensor<768xf32>
  %z768_768 = linalg.fill ins(%zero : f32) outs(%e768_768 : tensor<768xf32>) -> tensor<768xf32>
  %y768_768 = linalg.matvec ins(%w768_768, %x768 : tensor<768x768xf32>, tensor<768xf32>) outs(%z768_768 : tensor<768xf32>) -> tensor<768xf32>
  %e2048_768 = tensor.empty() : tensor<2048xf32>
  %z2048_768 = linalg.fill ins(%zero : f32) outs(%e2048_768 : tensor<2048xf32>) -> tensor<2048xf32>
  %y2048_768 = linalg.matvec ins(%w2048_768, %x768 : tensor<2048x768xf32>, tensor<768xf32>) outs(%z2048_768 : tensor<2048xf32>) -> tensor<2048xf32>
  %e768_2048 = tensor.empty() : tensor<768xf32>
  %z768_2048 = linalg.fill ins(%zero : f32) outs(%e768_2048 : tensor<768xf32>) -> tensor<768xf32>
  %y768_2048 = linalg.matvec ins(%w768_2048, %x2048 : tensor<768x2048xf32>, tensor<2048xf32>) outs(%z768_2048 : tensor<768xf32>) -> tensor<768xf32>
  %e32000_768 = tensor.empty() : tensor<32000xf32>
  %z32000_768 = linalg.fill ins(%zero : f32) outs(%e32000_768 : tensor<32000xf32>) -> tensor<32000xf32>
  %y32000_768 = linalg.matvec ins(%w32000_768, %x768 : tensor<32000x768xf32>, tensor<768xf32>) outs(%z32000_768 : tensor<32000xf32>) -> tensor<32000xf32>
  %e4096_4096 = tensor.empty() : tensor<4096xf32>
  %z4096_4096 = linalg.fill ins(%zero : f32) outs(%e4096_4096 : tensor<4096xf32>) -> tensor<4096xf32>
  %y4096_4096 = linalg.matvec ins(%w4096_4096, %x4096 : tensor<4096x4096xf32>, tensor<4096xf32>) outs(%z4096_4096 : tensor<4096xf32>) -> tensor<4096xf32>
  %e14336_4096 = tensor.empty() : tensor<14336xf32>
  %z14336_4096 = linalg.fill ins(%zero : f32) outs(%e14336_4096 : tensor<14336xf32>) -> tensor<14336xf32>
  %y14336_4096 = linalg.matvec ins(%w14336_4096, %x4096 : tensor<14336x4096xf32>, tensor<4096xf32>) outs(%z14336_4096 : tensor<14336xf32>) -> tensor<14336xf32>
  return %y768_768, %y2048_768, %y768_2048, %y32000_768, %y4096_4096, %y14336_4096 : tensor<768xf32>, tensor<2048xf32>, tensor<768xf32>, tensor<32000xf32>, tensor<4096xf32>, tensor<14336xf32>
}
