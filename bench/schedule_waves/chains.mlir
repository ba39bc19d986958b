// 8 independent chains of 4 small GEMVs (1x256 @ 256x256, one dispatch each) sharing one weight:
// one command buffer of 32 dispatches; --schedule=waves records 3 barriers (the chains' k-th
// steps share a wave), --schedule=serial 31. Run by bench/schedule_waves/run.sh.
func.func @main(%x0: tensor<1x256xf32>, %x1: tensor<1x256xf32>, %x2: tensor<1x256xf32>, %x3: tensor<1x256xf32>, %x4: tensor<1x256xf32>, %x5: tensor<1x256xf32>, %x6: tensor<1x256xf32>, %x7: tensor<1x256xf32>, %w: tensor<256x256xf32>) -> (tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c0_1 = linalg.matmul ins(%x0, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c0_2 = linalg.matmul ins(%c0_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c0_3 = linalg.matmul ins(%c0_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c0_4 = linalg.matmul ins(%c0_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c1_1 = linalg.matmul ins(%x1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c1_2 = linalg.matmul ins(%c1_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c1_3 = linalg.matmul ins(%c1_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c1_4 = linalg.matmul ins(%c1_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c2_1 = linalg.matmul ins(%x2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c2_2 = linalg.matmul ins(%c2_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c2_3 = linalg.matmul ins(%c2_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c2_4 = linalg.matmul ins(%c2_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c3_1 = linalg.matmul ins(%x3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c3_2 = linalg.matmul ins(%c3_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c3_3 = linalg.matmul ins(%c3_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c3_4 = linalg.matmul ins(%c3_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c4_1 = linalg.matmul ins(%x4, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c4_2 = linalg.matmul ins(%c4_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c4_3 = linalg.matmul ins(%c4_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c4_4 = linalg.matmul ins(%c4_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c5_1 = linalg.matmul ins(%x5, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c5_2 = linalg.matmul ins(%c5_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c5_3 = linalg.matmul ins(%c5_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c5_4 = linalg.matmul ins(%c5_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c6_1 = linalg.matmul ins(%x6, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c6_2 = linalg.matmul ins(%c6_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c6_3 = linalg.matmul ins(%c6_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c6_4 = linalg.matmul ins(%c6_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c7_1 = linalg.matmul ins(%x7, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c7_2 = linalg.matmul ins(%c7_1, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c7_3 = linalg.matmul ins(%c7_2, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  %c7_4 = linalg.matmul ins(%c7_3, %w : tensor<1x256xf32>, tensor<256x256xf32>) outs(%z : tensor<1x256xf32>) -> tensor<1x256xf32>
  return %c0_4, %c1_4, %c2_4, %c3_4, %c4_4, %c5_4, %c6_4, %c7_4 : tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>
}
