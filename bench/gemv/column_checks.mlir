// Column-reduction ([K][N] GEMV) and several-warps-per-row shapes whose CUDA results run.sh
// compares with the CPU target's and with f64 references (make_inputs.py): prime and odd
// extents (vector widths 8, 4 and 1, partial last tiles), several rows (M = 3), a fused
// residual consumer, a dynamic reduced extent, integer column sums, 256-row k/v GEMVs.
#col = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>]

// x W, W [1031][257] f16: prime N (width 1) and K.
func.func @col_f16_prime(%x: tensor<1x1031xf16>, %w: tensor<1031x257xf16>) -> tensor<1x257xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x257xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x257xf32>) -> tensor<1x257xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x1031xf16>, tensor<1031x257xf16>) outs(%z : tensor<1x257xf32>) -> tensor<1x257xf32>
  return %y : tensor<1x257xf32>
}

// M = 3 rows, N = 516 (width 4, the last tile of 16 columns holds 4).
func.func @col_f32_rows3(%a: tensor<3x1000xf32>, %w: tensor<1000x516xf32>) -> tensor<3x516xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x516xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3x516xf32>) -> tensor<3x516xf32>
  %y = linalg.matmul ins(%a, %w : tensor<3x1000xf32>, tensor<1000x516xf32>) outs(%z : tensor<3x516xf32>) -> tensor<3x516xf32>
  return %y : tensor<3x516xf32>
}

// r + x W with W [2048][1000] f16 (width 8, last tile 8 of 32 columns); the add is fused.
func.func @col_residual(%x: tensor<1x2048xf16>, %w: tensor<2048x1000xf16>, %r: tensor<1x1000xf32>) -> tensor<1x1000xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1000xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1000xf32>) -> tensor<1x1000xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x2048xf16>, tensor<2048x1000xf16>) outs(%z : tensor<1x1000xf32>) -> tensor<1x1000xf32>
  %o = tensor.empty() : tensor<1x1000xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%r, %y : tensor<1x1000xf32>, tensor<1x1000xf32>) outs(%o : tensor<1x1000xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
  } -> tensor<1x1000xf32>
  return %s : tensor<1x1000xf32>
}

// A dynamic reduced extent (K = 1003 at run time), N = 300.
func.func @col_dynamic_k(%x: tensor<?xf32>, %w: tensor<?x300xf32>) -> tensor<300xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<300xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<300xf32>) -> tensor<300xf32>
  %y = linalg.generic {indexing_maps = #col, iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<?xf32>, tensor<?x300xf32>) outs(%z : tensor<300xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<300xf32>
  return %y : tensor<300xf32>
}

// Column sums of i32 (exact): 1000 x 77.
func.func @col_isum(%m: tensor<1000x77xi32>) -> tensor<77xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<77xi32>
  %z = linalg.fill ins(%zero : i32) outs(%e : tensor<77xi32>) -> tensor<77xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<1000x77xi32>) outs(%z : tensor<77xi32>) {
    ^bb0(%a: i32, %acc: i32):
      %s = arith.addi %acc, %a : i32
      linalg.yield %s : i32
  } -> tensor<77xi32>
  return %y : tensor<77xi32>
}

// A 256-row k/v GEMV, W [256][2048] f16 (eight warps per row).
func.func @rows_f16_256(%w: tensor<256x2048xf16>, %x: tensor<2048xf32>) -> tensor<256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%w, %x : tensor<256x2048xf16>, tensor<2048xf32>) outs(%z : tensor<256xf32>) {
    ^bb0(%a: f16, %b: f32, %acc: f32):
      %af = arith.extf %a : f16 to f32
      %p = arith.mulf %af, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<256xf32>
  return %y : tensor<256xf32>
}
