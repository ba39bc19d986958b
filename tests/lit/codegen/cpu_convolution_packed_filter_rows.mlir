// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// On AVX-512 (MR = 14 for matmuls) a convolution on a prepacked filter takes register tiles
// of at most 8 rows (codegen/CPUConvolutionKernel.h, kPackedFilterMaxTileRows): each row's
// x address is a general register, and 14 of them spilled the accumulators. With a dynamic
// plane (a dynamic ONNX export) the positions run as whole tiles of 8 x 32 (8 rows x 2
// vectors of 16 lanes: 16 FMAs a k step), then the rows left as tiles of 4, 2 and 1 (8, 4
// and 2 FMAs); the accumulators start at zero and each tile is added to the output after its
// k loop: where its positions are consecutive in out (a run-time test), transposed in
// registers, each filter's rows one vector of 8, 4 or 2 lanes (masked in the partial panel),
// else gathered and scattered (a tile of one row always). Before it, the static-plane
// variants (kPackedFilterPlaneOutputs): 2 x 2 (4 rows: one tile, 8 FMAs, its panels
// prefetched, its positions consecutive at compile time: no scatter) and 4 x 4 (16 rows: two
// whole tiles of 8).
// CHECK-LABEL: hexir.executable @prepacked_dynamic
// CHECK:         llvm.func internal @prepacked_dynamic_impl(
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.intr.prefetch
// CHECK-COUNT-8:   llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.store {{.*}} : vector<4xf32>, vector<4xi1> into !llvm.ptr
// CHECK:           llvm.icmp "eq"
// CHECK-COUNT-16:  llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.store {{.*}} : vector<8xf32>, vector<8xi1> into !llvm.ptr
// CHECK-COUNT-16:  llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.store {{.*}} : vector<8xf32>, vector<8xi1> into !llvm.ptr
// CHECK-COUNT-8:   llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.store {{.*}} : vector<4xf32>, vector<4xi1> into !llvm.ptr
// CHECK-COUNT-4:   llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.store {{.*}} : vector<2xf32>, vector<2xi1> into !llvm.ptr
// CHECK-COUNT-2:   llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.gather
// CHECK:           llvm.intr.masked.scatter
// CHECK:         llvm.func @prepacked_dynamic(
hexir.executable @prepacked_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @prepacked_dynamic(%x: tensor<?x16x?x?xf32>, %wp: tensor<2x144x32xf32>, %o: tensor<?x40x?x?xf32>, %id: index) -> tensor<?x40x?x?xf32> {
      %e = tensor.empty() : tensor<40x16x3x3xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 * 9 + d2 * 3 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x144x32xf32>) outs(%e : tensor<40x16x3x3xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x16x3x3xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x16x?x?xf32>, tensor<40x16x3x3xf32>) outs(%o : tensor<?x40x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x40x?x?xf32>
      return %y : tensor<?x40x?x?xf32>
    }
  }
}

// -----

// The importer's Conv + bias + Relu on a prepacked filter over a run-time plane (a dynamic
// export's, codegen/CPUConvolutionEpilogue.h): the packed-filter kernel stores out at any
// strides, so it absorbs the epilogue without a run-time test of out's rows. Each register
// tile starts at its filters' bias and is stored ReLU'd: no temporary (malloc'd for a
// run-time plane), no gather of it before the store, no ReLU pass after the kernel.
// CHECK-LABEL: hexir.executable @prepacked_dynamic_bias_relu
// CHECK:         llvm.func internal @prepacked_dynamic_bias_relu_impl(
// CHECK-NOT:       llvm.call @malloc
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (f32, f32)
// CHECK:           llvm.intr.maximum({{.*}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (f32, f32)
// CHECK:         llvm.func @prepacked_dynamic_bias_relu(
hexir.executable @prepacked_dynamic_bias_relu attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @prepacked_dynamic_bias_relu(%bias: tensor<40xf32>, %x: tensor<?x16x?x?xf32>, %wp: tensor<2x144x32xf32>, %o: tensor<?x40x?x?xf32>, %id: index) -> tensor<?x40x?x?xf32> {
      %zero = arith.constant 0.000000e+00 : f32
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %n = tensor.dim %o, %c0 : tensor<?x40x?x?xf32>
      %oh = tensor.dim %o, %c2 : tensor<?x40x?x?xf32>
      %ow = tensor.dim %o, %c3 : tensor<?x40x?x?xf32>
      %e = tensor.empty() : tensor<40x16x3x3xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 * 9 + d2 * 3 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x144x32xf32>) outs(%e : tensor<40x16x3x3xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x16x3x3xf32>
      %t = tensor.empty(%n, %oh, %ow) : tensor<?x40x?x?xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<40xf32>) outs(%t : tensor<?x40x?x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<?x40x?x?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x16x?x?xf32>, tensor<40x16x3x3xf32>) outs(%b : tensor<?x40x?x?xf32>) {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x40x?x?xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<?x40x?x?xf32>) outs(%o : tensor<?x40x?x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.maximumf %in, %zero : f32
        linalg.yield %m : f32
      } -> tensor<?x40x?x?xf32>
      return %r : tensor<?x40x?x?xf32>
    }
  }
}
