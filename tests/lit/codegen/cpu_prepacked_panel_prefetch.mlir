// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// A GEMM on prepacked panels of one register tile of rows (here a 1x1 convolution over a
// 2 x 2 plane on a prepacked filter: 4 positions, so each panel is read once) streams its
// panels from memory: each k step prefetches the panel's row 8 KiB further (64 rows of
// 32 f32 on AVX-512: one prefetch per cache line, two a row) after loading row k
// (codegen/CPUMatmulMicroKernel.cpp, prefetchPanelAhead).
// CHECK-LABEL: hexir.executable @small_plane
// CHECK:         llvm.func internal @small_plane_impl(
// CHECK:           ^bb{{[0-9]+}}(%[[K:.+]]: i64, %{{.+}}: vector<16xf32>,
// CHECK:           llvm.load %{{.+}} -> vector<16xf32>
// CHECK:           llvm.load %{{.+}} -> vector<16xf32>
// CHECK:           llvm.add %[[K]], %{{.+}} : i64
// CHECK-COUNT-2:   "llvm.intr.prefetch"(%{{.+}}) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}>
// CHECK-NOT:       "llvm.intr.prefetch"
// CHECK:           llvm.intr.fmuladd
// CHECK:         llvm.func @small_plane(
hexir.executable @small_plane attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @small_plane(%x: tensor<1x24x2x2xf32>, %wp: tensor<2x24x32xf32>, %o: tensor<1x40x2x2xf32>, %id: index) -> tensor<1x40x2x2xf32> {
      %e = tensor.empty() : tensor<40x24x1x1xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 + d2 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x24x32xf32>) outs(%e : tensor<40x24x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x24x1x1xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x24x2x2xf32>, tensor<40x24x1x1xf32>) outs(%o : tensor<1x40x2x2xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x40x2x2xf32>
      return %y : tensor<1x40x2x2xf32>
    }
  }
}

// -----

// Over a 4 x 4 plane (16 positions: two register tiles of 8 read each panel) the second
// tile finds the panel in cache: no prefetches.
// CHECK-LABEL: hexir.executable @two_tiles
// CHECK-NOT:     llvm.intr.prefetch
// CHECK:         llvm.intr.fmuladd
// CHECK-NOT:     llvm.intr.prefetch
// CHECK:         llvm.func @two_tiles(
hexir.executable @two_tiles attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @two_tiles(%x: tensor<1x24x4x4xf32>, %wp: tensor<2x24x32xf32>, %o: tensor<1x40x4x4xf32>, %id: index) -> tensor<1x40x4x4xf32> {
      %e = tensor.empty() : tensor<40x24x1x1xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 + d2 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x24x32xf32>) outs(%e : tensor<40x24x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x24x1x1xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x24x4x4xf32>, tensor<40x24x1x1xf32>) outs(%o : tensor<1x40x4x4xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x40x4x4xf32>
      return %y : tensor<1x40x4x4xf32>
    }
  }
}
