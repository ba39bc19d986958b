// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// A dense 3x3 convolution in the importer's form becomes the implicit GEMM on the packed
// micro-kernel (codegen/CPUConvolutionKernel.h): the panel is gathered from the input (or
// loaded when consecutive), then 6 x 16 register tiles of 8-lane FMAs.
// CHECK-LABEL: hexir.executable @dense
// CHECK:         llvm.func internal @dense_impl(
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK:           llvm.intr.masked.gather
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
hexir.executable @dense attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dense(%x: tensor<1x5x11x13xf32>, %w: tensor<7x5x3x3xf32>, %o: tensor<1x7x9x11xf32>, %id: index) -> tensor<1x7x9x11xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x5x11x13xf32>, tensor<7x5x3x3xf32>) outs(%o : tensor<1x7x9x11xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x7x9x11xf32>
      return %y : tensor<1x7x9x11xf32>
    }
  }
}

// -----

// A depthwise convolution (one input channel per filter) on rows of 11 outputs runs on channel
// lanes (codegen/CPUConvolutionDepthwise.h): two stack buffers (the input window of a tile,
// the weight vectors), the 9 weight vectors gathered, then 4 outputs at a time sharing each
// weight: 36 FMAs and 4 scatters, and the odd outputs one at a time (9 FMAs, 1 scatter). The
// static choice is folded: no row loop nest (no masked loads).
// CHECK-LABEL: hexir.executable @depthwise
// CHECK:         llvm.func internal @depthwise_impl(
// CHECK-COUNT-2:   llvm.alloca
// CHECK-COUNT-9:   llvm.intr.masked.gather
// CHECK-COUNT-36:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-COUNT-4:   llvm.intr.masked.scatter
// CHECK-COUNT-9:   llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.scatter
// CHECK-NOT:       llvm.intr.masked.load
// CHECK:         llvm.func @depthwise(
hexir.executable @depthwise attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise(%x: tensor<1x6x11x13xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<1x6x9x11xf32>, %id: index) -> tensor<1x6x9x11xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x6x11x13xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<1x6x9x11xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x6x9x11xf32>
      return %y : tensor<1x6x9x11xf32>
    }
  }
}

// -----

// Rows of 18 outputs at stride 1 fill 8-lane vectors: the depthwise convolution runs along the
// output row, no stack buffer, the 9 taps unrolled (a masked load of the input and an FMA
// each), a masked store.
// CHECK-LABEL: hexir.executable @depthwise_rows
// CHECK:         llvm.func internal @depthwise_rows_impl(
// CHECK-NOT:       llvm.alloca
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.masked.load
// CHECK-COUNT-9:   llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.store
// CHECK:         llvm.func @depthwise_rows(
hexir.executable @depthwise_rows attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_rows(%x: tensor<1x6x5x20xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<1x6x3x18xf32>, %id: index) -> tensor<1x6x3x18xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x6x5x20xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<1x6x3x18xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x6x3x18xf32>
      return %y : tensor<1x6x3x18xf32>
    }
  }
}

// -----

// Two filters per input channel (a depthwise multiplier) keep the loop lowering.
// CHECK-LABEL: hexir.executable @multiplier
// CHECK-NOT:     llvm.intr.masked
// CHECK:         llvm.func @multiplier(
hexir.executable @multiplier attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @multiplier(%x: tensor<1x3x5x5xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<1x6x3x3xf32>, %id: index) -> tensor<1x6x3x3xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 floordiv 2 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x5x5xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<1x6x3x3xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x6x3x3xf32>
      return %y : tensor<1x6x3x3xf32>
    }
  }
}

// -----

// Dynamic batch and spatial dims (a dynamic ONNX export): the same implicit GEMM, on views of
// the planes rebuilt from the strided metadata; it runs when the rows are contiguous at run
// time (stride of dim 2 == size of dim 3), the loop lowering otherwise.
// CHECK-LABEL: hexir.executable @dense_dynamic
// CHECK:         llvm.func internal @dense_dynamic_impl(
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.cond_br
// CHECK:           llvm.intr.masked.gather
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.fmul {{.*}} : f32
hexir.executable @dense_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dense_dynamic(%x: tensor<?x5x?x?xf32>, %w: tensor<7x5x3x3xf32>, %o: tensor<?x7x?x?xf32>, %id: index) -> tensor<?x7x?x?xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x5x?x?xf32>, tensor<7x5x3x3xf32>) outs(%o : tensor<?x7x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x7x?x?xf32>
      return %y : tensor<?x7x?x?xf32>
    }
  }
}

// -----

// Stride 2 over a window of a larger plane (the last row and column are never read, so
// workgroup tiling slices them off): x is read through its row pitch, no contiguity needed.
// CHECK-LABEL: hexir.executable @dense_window
// CHECK:         llvm.func internal @dense_window_impl(
// CHECK-NOT:       llvm.fmul {{.*}} : f32
// CHECK:           llvm.intr.masked.gather
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.fmul {{.*}} : f32
// CHECK:         llvm.func @dense_window(
hexir.executable @dense_window attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dense_window(%x: tensor<1x5x12x12xf32>, %w: tensor<7x5x3x3xf32>, %o: tensor<1x7x5x5xf32>, %id: index) -> tensor<1x7x5x5xf32> {
      %xs = tensor.extract_slice %x[0, 0, 0, 0] [1, 5, 11, 11] [1, 1, 1, 1] : tensor<1x5x12x12xf32> to tensor<1x5x11x11xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%xs, %w : tensor<1x5x11x11xf32>, tensor<7x5x3x3xf32>) outs(%o : tensor<1x7x5x5xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x7x5x5xf32>
      return %y : tensor<1x7x5x5xf32>
    }
  }
}

// -----

// A dense convolution on a filter prepacked by hexir-cpu-pack-matmul-operands (read through
// the marked unpack) runs on the packed filter (codegen/CPUConvolutionPackedFilter.cpp): the
// K = 27 tap offsets into a stack table, then 6 x 16 register tiles (positions x filters) whose
// 8-lane B vectors are loaded from the panels in place, A broadcast from x, the output
// gathered and scattered across the filters' planes. The unpack and its buffer are gone.
// CHECK-LABEL: hexir.executable @prepacked
// CHECK:         llvm.func internal @prepacked_impl(
// CHECK-NOT:       llvm.call @malloc
// CHECK:           llvm.alloca %{{.+}} x i64 {alignment = 64 : i64}
// CHECK-NOT:       llvm.alloca %{{.+}} x f32
// CHECK:           llvm.intr.masked.gather
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.scatter
hexir.executable @prepacked attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @prepacked(%x: tensor<1x3x10x10xf32>, %wp: tensor<2x27x16xf32>, %o: tensor<1x20x8x8xf32>, %id: index) -> tensor<1x20x8x8xf32> {
      %e = tensor.empty() : tensor<20x3x3x3xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1 * 9 + d2 * 3 + d3, d0 mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x27x16xf32>) outs(%e : tensor<20x3x3x3xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<20x3x3x3xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>) outs(%o : tensor<1x20x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x20x8x8xf32>
      return %y : tensor<1x20x8x8xf32>
    }
  }
}
