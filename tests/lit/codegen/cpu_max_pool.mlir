// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// The importer's MaxPool (a 6-loop generic, maximumf, a window operand that only gives the
// extents) as vector loops over runs of 16 outputs of a row (codegen/CPUConvolutionKernel.cpp,
// max pools): the accumulator loaded once, each tap's inputs at stride 2 as two masked loads
// of the row and their even lanes, no gathers; the window's buffer is gone (no allocation).
// CHECK-LABEL: hexir.executable @pool_stride2
// CHECK:         llvm.func internal @pool_stride2_impl(
// CHECK-NOT:       llvm.alloca
// CHECK-NOT:       llvm.call @malloc
// CHECK:           llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.shufflevector %{{.+}}, %{{.+}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<16xf32>
// CHECK:           llvm.intr.maximum(%{{.+}}, %{{.+}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
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

// Stride 3 (and wider): each tap's inputs gathered, 6 outputs a row masked.
// CHECK-LABEL: hexir.executable @pool_stride3
// CHECK:         llvm.func internal @pool_stride3_impl(
// CHECK:           llvm.intr.masked.load
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
