// RUN: hexir-opt %s -split-input-file --hexir-group-row-chains=cuda=true | FileCheck %s

// With the `cuda` option (CUDA-only modules, compiler/Pipeline.cpp) only the chains the CUDA
// lowering takes are grouped (passes/codegen/CUDARowChains.h): static loops, at least 2 rows of
// at least 32 elements. An RMSNorm (sum of squares, scaling) at four shapes.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// 8 rows of 64: grouped.
// CHECK-LABEL: func.func @rows_8x64
// CHECK-COUNT-2: linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
func.func @rows_8x64(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %a = arith.addf %q, %s : f32
      linalg.yield %a : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss : tensor<8x64xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %m = arith.mulf %v, %rs : f32
      linalg.yield %m : f32
  } -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// Rows of 31 elements (shorter than a warp): not grouped.
// CHECK-LABEL: func.func @rows_8x31
// CHECK-NOT: hexir.dispatch_group
// CHECK: return
func.func @rows_8x31(%x: tensor<8x31xf32>) -> tensor<8x31xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<8xf32>
  %e = tensor.empty() : tensor<8x31xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x31xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %a = arith.addf %q, %s : f32
      linalg.yield %a : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss : tensor<8x31xf32>, tensor<8xf32>) outs(%e : tensor<8x31xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %m = arith.mulf %v, %rs : f32
      linalg.yield %m : f32
  } -> tensor<8x31xf32>
  return %y : tensor<8x31xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// One row (a decode step's norm, which hexir-group-small-projections takes): not grouped.
// CHECK-LABEL: func.func @rows_1x64
// CHECK-NOT: hexir.dispatch_group
// CHECK: return
func.func @rows_1x64(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<1xf32>
  %e = tensor.empty() : tensor<1x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<1xf32>) -> tensor<1xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1x64xf32>) outs(%z : tensor<1xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %a = arith.addf %q, %s : f32
      linalg.yield %a : f32
  } -> tensor<1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss : tensor<1x64xf32>, tensor<1xf32>) outs(%e : tensor<1x64xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %m = arith.mulf %v, %rs : f32
      linalg.yield %m : f32
  } -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// A run-time row count: not grouped on CUDA (the CPU groups it: group_row_chains.mlir).
// CHECK-LABEL: func.func @rows_dynamic
// CHECK-NOT: hexir.dispatch_group
// CHECK: return
func.func @rows_dynamic(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x64xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %a = arith.addf %q, %s : f32
      linalg.yield %a : f32
  } -> tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss : tensor<?x64xf32>, tensor<?xf32>) outs(%e : tensor<?x64xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %m = arith.mulf %v, %rs : f32
      linalg.yield %m : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
