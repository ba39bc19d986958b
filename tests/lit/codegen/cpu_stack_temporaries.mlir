// RUN: hexir-opt %s --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// A temporary of static shape (the convolution's tile before its fused epilogue, which
// reads it twice) is a stack buffer at the kernel's entry, not a malloc and free per call
// (codegen/CPULowerExecutables.cpp, PromoteSmallTemporariesToStack).
// CHECK-LABEL: hexir.executable @tile_temporary
// CHECK-NOT:     llvm.call @malloc
// CHECK:         llvm.func internal @tile_temporary_impl(
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK-NOT:       llvm.call @malloc
// CHECK-NOT:       llvm.call @free
// CHECK:         llvm.func @tile_temporary(
hexir.executable @tile_temporary attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @tile_temporary(%x: tensor<1x24x2x2xf32>, %wp: tensor<2x24x32xf32>, %bias: tensor<40xf32>, %o: tensor<1x40x2x2xf32>, %id: index) -> tensor<1x40x2x2xf32> {
      %e = tensor.empty() : tensor<40x24x1x1xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 + d2 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x24x32xf32>) outs(%e : tensor<40x24x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x24x1x1xf32>
      %t = tensor.empty() : tensor<1x40x2x2xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<40xf32>) outs(%t : tensor<1x40x2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<1x40x2x2xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x24x2x2xf32>, tensor<40x24x1x1xf32>) outs(%b : tensor<1x40x2x2xf32>) {
      ^bb0(%a: f32, %bb: f32, %acc: f32):
        %p = arith.mulf %a, %bb : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x40x2x2xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y, %y : tensor<1x40x2x2xf32>, tensor<1x40x2x2xf32>) outs(%o : tensor<1x40x2x2xf32>) {
      ^bb0(%v: f32, %v2: f32, %out: f32):
        %z = arith.mulf %v, %v2 : f32
        linalg.yield %z : f32
      } -> tensor<1x40x2x2xf32>
      return %r : tensor<1x40x2x2xf32>
    }
  }
}
