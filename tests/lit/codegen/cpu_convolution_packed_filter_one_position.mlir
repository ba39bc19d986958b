// RUN: hexir-opt %s --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// A squeeze-excitation FC on a prepacked filter (12 taps, 40 filters: panels of 32 on
// AVX-512, the second partial) over an output plane of one position: out's filters are
// consecutive (filter stride 1), so a register tile's vectors of filters are loaded before
// its k loop and stored after it as plain (masked past filter 40) vectors, no gather or
// scatter (codegen/CPUConvolutionPackedFilter.cpp).
// CHECK-LABEL: hexir.executable @one_position
// CHECK:         llvm.func internal @one_position_impl(
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK:           llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.store
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK:         llvm.func @one_position(
hexir.executable @one_position attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @one_position(%x: tensor<1x12x1x1xf32>, %wp: tensor<2x12x32xf32>, %o: tensor<1x40x1x1xf32>, %id: index) -> tensor<1x40x1x1xf32> {
      %e = tensor.empty() : tensor<40x12x1x1xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 + d2 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x12x32xf32>) outs(%e : tensor<40x12x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x12x1x1xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x12x1x1xf32>, tensor<40x12x1x1xf32>) outs(%o : tensor<1x40x1x1xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x40x1x1xf32>
      return %y : tensor<1x40x1x1xf32>
    }
  }
}
