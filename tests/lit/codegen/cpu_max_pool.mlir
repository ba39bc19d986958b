// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// The importer's MaxPool (a 6-loop generic, maximumf, a window operand that only gives the
// extents) as vector loops over runs of 16 outputs of a row (codegen/CPUMaxPool.h): 8
// channels a step; its 3x3 windows at stride 2 overlap by a row, so down the column of runs
// each input row's maximum over its 3 taps (2 maxima) is computed once and held for the two
// output rows that read it: first the window of output row 0 (3 rows x 8 channels), then per
// output row each channel's maximum of its 3 held rows (the -inf fill of out just before it
// is gone: the first maximum with -inf folds away, no load of out) stored, then, unless it
// was the last row (the "ult" test), the next window's 2 new rows; each tap's inputs at stride 2 as two masked
// loads of the row and their even lanes, no gathers or scatters; the window's buffer is gone
// (no allocation).
// CHECK-LABEL: hexir.executable @pool_stride2
// CHECK:         llvm.func internal @pool_stride2_impl(
// CHECK-NOT:       llvm.alloca
// CHECK-NOT:       llvm.call @malloc
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       0xFF800000
// CHECK:           llvm.icmp "ult"
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       0xFF800000
// CHECK:         llvm.func @pool_stride2(
hexir.executable @pool_stride2 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @pool_stride2(%x: tensor<1x16x34x34xf32>, %o: tensor<1x16x16x16xf32>, %id: index) -> tensor<1x16x16x16xf32> {
      %w = tensor.empty() : tensor<3x3xf32>
      %ninf = arith.constant 0xFF800000 : f32
      %f = linalg.fill ins(%ninf : f32) outs(%o : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x16x34x34xf32>, tensor<3x3xf32>) outs(%f : tensor<1x16x16x16xf32>) {
      ^bb0(%in: f32, %in_0: f32, %out: f32):
        %m = arith.maximumf %out, %in : f32
        linalg.yield %m : f32
      } -> tensor<1x16x16x16xf32>
      return %y : tensor<1x16x16x16xf32>
    }
  }
}

// -----

// Stride 3 (and wider): each tap's inputs gathered, 6 outputs a row masked; 4 channels,
// one at a time.
// CHECK-LABEL: hexir.executable @pool_stride3
// CHECK:         llvm.func internal @pool_stride3_impl(
// CHECK-NOT:       llvm.intr.masked.load
// CHECK:           llvm.intr.masked.gather
// CHECK:           llvm.intr.maximum(%{{.+}}, %{{.+}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:           llvm.intr.masked.store
// CHECK:         llvm.func @pool_stride3(

hexir.executable @pool_stride3 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @pool_stride3(%x: tensor<1x4x9x20xf32>, %o: tensor<1x4x3x6xf32>, %id: index) -> tensor<1x4x3x6xf32> {
      %w = tensor.empty() : tensor<3x3xf32>
      %ninf = arith.constant 0xFF800000 : f32
      %f = linalg.fill ins(%ninf : f32) outs(%o : tensor<1x4x3x6xf32>) -> tensor<1x4x3x6xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 3 + d4, d3 * 3 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x9x20xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x3x6xf32>) {
      ^bb0(%in: f32, %in_0: f32, %out: f32):
        %m = arith.maximumf %in, %out : f32
        linalg.yield %m : f32
      } -> tensor<1x4x3x6xf32>
      return %y : tensor<1x4x3x6xf32>
    }
  }
}

// -----

// No fill before it: the accumulators are loaded from out. A 2x2 window at stride 1: the
// window of output row 0 (2 rows x 8 channels, 1 maximum each), then per output row and
// channel out loaded, its maximum with the 2 held rows stored. 12 channels: one step of 8,
// then 4 steps of one.
// CHECK-LABEL: hexir.executable @pool_accumulate
// CHECK:         llvm.func internal @pool_accumulate_impl(
// CHECK-COUNT-16:  llvm.intr.maximum(%{{.+}}, %{{.+}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.masked.store
// CHECK:           llvm.intr.masked.load
// CHECK-COUNT-2:   llvm.intr.maximum(%{{.+}}, %{{.+}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.maximum
// CHECK:           llvm.intr.masked.store
// CHECK:           llvm.icmp "ult"
// CHECK:         llvm.func @pool_accumulate(

hexir.executable @pool_accumulate attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @pool_accumulate(%x: tensor<1x12x5x5xf32>, %o: tensor<1x12x4x4xf32>, %id: index) -> tensor<1x12x4x4xf32> {
      %w = tensor.empty() : tensor<2x2xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x12x5x5xf32>, tensor<2x2xf32>) outs(%o : tensor<1x12x4x4xf32>) {
      ^bb0(%in: f32, %in_0: f32, %out: f32):
        %m = arith.maximumf %out, %in : f32
        linalg.yield %m : f32
      } -> tensor<1x12x4x4xf32>
      return %y : tensor<1x12x4x4xf32>
    }
  }
}
