// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// The importer's Conv + Relu (codegen/CPUConvolutionEpilogue.h): the bias broadcast into a
// temporary, the convolution accumulating into it, maximumf(v, 0) into out. The
// convolution's kernel writes out itself: each register tile starts at its filters' bias
// (a scalar load and broadcast per row: no load of out before the FMAs) and stores
// maximumf(acc, 0) once; no temporary (one stack buffer: the packed block of B), no passes
// of the bias (scalar copies) or the ReLU (LLVM's vectors of 8 then 5 lanes over 143).
// CHECK-LABEL: hexir.executable @bias_relu
// CHECK:         llvm.func internal @bias_relu_impl(
// CHECK-NOT:       llvm.intr.maximum
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK-NOT:       llvm.alloca
// CHECK-NOT:       llvm.intr.maximum
// CHECK-COUNT-6:   llvm.shufflevector %{{.+}}, %{{.+}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// CHECK-NOT:       llvm.load %{{.+}} : !llvm.ptr -> vector<8xf32>
// CHECK:         ^bb{{[0-9]+}}(%{{.+}}: i64, %{{.+}}: vector<8xf32>
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-COUNT-12:  llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (f32, f32)
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (vector<5xf32>, vector<5xf32>)
// CHECK:         llvm.func @bias_relu(
hexir.executable @bias_relu attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @bias_relu(%bias: tensor<7xf32>, %x: tensor<1x5x11x13xf32>, %w: tensor<7x5x1x1xf32>, %o: tensor<1x7x11x13xf32>, %id: index) -> tensor<1x7x11x13xf32> {
      %zero = arith.constant 0.000000e+00 : f32
      %e = tensor.empty() : tensor<1x7x11x13xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<7xf32>) outs(%e : tensor<1x7x11x13xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<1x7x11x13xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x5x11x13xf32>, tensor<7x5x1x1xf32>) outs(%b : tensor<1x7x11x13xf32>) {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x7x11x13xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x7x11x13xf32>) outs(%o : tensor<1x7x11x13xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.maximumf %in, %zero : f32
        linalg.yield %m : f32
      } -> tensor<1x7x11x13xf32>
      return %r : tensor<1x7x11x13xf32>
    }
  }
}

// -----

// The same on a filter packed at load (the output positions the GEMM's rows, its 20 filters
// the columns, panels of 16): each register tile starts at a vector of its filters' bias
// (masked loads in the second panel, past 20) and is stored ReLU'd, never read from out:
// tiles of 6 rows scattered (no gather first), tiles of 4 transposed by shuffles and stored
// as vectors of 4 positions (no load of them first).
// CHECK-LABEL: hexir.executable @prepacked_bias_relu
// CHECK:         llvm.func internal @prepacked_bias_relu_impl(
// CHECK-NOT:       llvm.alloca %{{.+}} x f32
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:           llvm.intr.masked.load %{{.+}} : (!llvm.ptr, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.fmuladd
// CHECK-COUNT-12:  llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.masked.scatter
// CHECK-COUNT-8:   llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.shufflevector %{{.+}}, %{{.+}} [0, 8, 1, 9, 2, 10, 3, 11] : vector<8xf32>
// CHECK-NOT:       llvm.load %{{.+}} -> vector<4xf32>
// CHECK:           llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (f32, f32)
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (vector<5xf32>, vector<5xf32>)
// CHECK:         llvm.func @prepacked_bias_relu(
hexir.executable @prepacked_bias_relu attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @prepacked_bias_relu(%bias: tensor<20xf32>, %x: tensor<1x3x10x10xf32>, %wp: tensor<2x27x16xf32>, %o: tensor<1x20x8x8xf32>, %id: index) -> tensor<1x20x8x8xf32> {
      %zero = arith.constant 0.000000e+00 : f32
      %e = tensor.empty() : tensor<20x3x3x3xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1 * 9 + d2 * 3 + d3, d0 mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x27x16xf32>) outs(%e : tensor<20x3x3x3xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<20x3x3x3xf32>
      %t = tensor.empty() : tensor<1x20x8x8xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<20xf32>) outs(%t : tensor<1x20x8x8xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<1x20x8x8xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>) outs(%b : tensor<1x20x8x8xf32>) {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x20x8x8xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x20x8x8xf32>) outs(%o : tensor<1x20x8x8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.maximumf %in, %zero : f32
        linalg.yield %m : f32
      } -> tensor<1x20x8x8xf32>
      return %r : tensor<1x20x8x8xf32>
    }
  }
}

// -----

// Not absorbed: the convolution's result is read by another op as well. The temporary
// stays (a second stack buffer beside the packed block) and the ReLU a pass of its own after the kernel (its plane one collapsed
// loop: 143 = 17 x 8 + 7 positions, LLVM's vectors of 8, then 5 and 2 lanes).
// CHECK-LABEL: hexir.executable @result_read_twice
// CHECK:         llvm.func internal @result_read_twice_impl(
// CHECK-COUNT-2:   llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK:           llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.maximum({{.*}}) : (vector<5xf32>, vector<5xf32>) -> vector<5xf32>
// CHECK:         llvm.func @result_read_twice(
hexir.executable @result_read_twice attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @result_read_twice(%bias: tensor<7xf32>, %x: tensor<1x5x11x13xf32>, %w: tensor<7x5x1x1xf32>, %o: tensor<1x7x11x13xf32>, %o2: tensor<1x7x11x13xf32>, %id: index) -> (tensor<1x7x11x13xf32>, tensor<1x7x11x13xf32>) {
      %zero = arith.constant 0.000000e+00 : f32
      %e = tensor.empty() : tensor<1x7x11x13xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<7xf32>) outs(%e : tensor<1x7x11x13xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<1x7x11x13xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x5x11x13xf32>, tensor<7x5x1x1xf32>) outs(%b : tensor<1x7x11x13xf32>) {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x7x11x13xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x7x11x13xf32>) outs(%o : tensor<1x7x11x13xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.maximumf %in, %zero : f32
        linalg.yield %m : f32
      } -> tensor<1x7x11x13xf32>
      %n = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x7x11x13xf32>) outs(%o2 : tensor<1x7x11x13xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.negf %in : f32
        linalg.yield %m : f32
      } -> tensor<1x7x11x13xf32>
      return %r, %n : tensor<1x7x11x13xf32>, tensor<1x7x11x13xf32>
    }
  }
}

// -----

// A workgroup's slice of the filters (hexir-cpu-distribute-workgroups): the bias is a
// subview at a run-time offset (unit stride), the ReLU writes the workgroup's slice of out
// (a view made after the convolution, moved before it). Absorbed all the same: the tile
// starts at the bias' scalars, no temporary beside the packed block.
// CHECK-LABEL: hexir.executable @sliced_bias
// CHECK:         llvm.func internal @sliced_bias_impl(
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK-NOT:       llvm.alloca
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-COUNT-12:  llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.maximum({{.*}}) : (f32, f32)
// CHECK:         llvm.func @sliced_bias(
hexir.executable @sliced_bias attributes {hexir.workgroup_count = array<i64: 4, 1, 1>} {
  builtin.module {
    func.func @sliced_bias(%bias: tensor<64xf32>, %x: tensor<1x16x15x15xf32>, %w: tensor<64x16x1x1xf32>, %o: tensor<1x64x15x15xf32>, %id: index) -> tensor<1x64x15x15xf32> {
      %zero = arith.constant 0.000000e+00 : f32
      %c64 = arith.constant 64 : index
      %c16 = arith.constant 16 : index
      %0 = arith.muli %id, %c16 : index
      %1 = arith.addi %0, %c16 : index
      %2 = arith.minsi %1, %c64 : index
      %3 = scf.for %f = %0 to %2 step %c16 iter_args(%acc = %o) -> (tensor<1x64x15x15xf32>) {
        %ws = tensor.extract_slice %w[%f, 0, 0, 0] [16, 16, 1, 1] [1, 1, 1, 1] : tensor<64x16x1x1xf32> to tensor<16x16x1x1xf32>
        %bs = tensor.extract_slice %bias[%f] [16] [1] : tensor<64xf32> to tensor<16xf32>
        %e = tensor.empty() : tensor<1x16x15x15xf32>
        %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bs : tensor<16xf32>) outs(%e : tensor<1x16x15x15xf32>) {
        ^bb0(%in: f32, %out: f32):
          linalg.yield %in : f32
        } -> tensor<1x16x15x15xf32>
        %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %ws : tensor<1x16x15x15xf32>, tensor<16x16x1x1xf32>) outs(%b : tensor<1x16x15x15xf32>) {
        ^bb0(%a: f32, %c: f32, %s: f32):
          %p = arith.mulf %a, %c : f32
          %q = arith.addf %s, %p : f32
          linalg.yield %q : f32
        } -> tensor<1x16x15x15xf32>
        %os = tensor.extract_slice %acc[0, %f, 0, 0] [1, 16, 15, 15] [1, 1, 1, 1] : tensor<1x64x15x15xf32> to tensor<1x16x15x15xf32>
        %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x16x15x15xf32>) outs(%os : tensor<1x16x15x15xf32>) {
        ^bb0(%in: f32, %out: f32):
          %m = arith.maximumf %in, %zero : f32
          linalg.yield %m : f32
        } -> tensor<1x16x15x15xf32>
        %ins = tensor.insert_slice %r into %acc[0, %f, 0, 0] [1, 16, 15, 15] [1, 1, 1, 1] : tensor<1x16x15x15xf32> into tensor<1x64x15x15xf32>
        scf.yield %ins : tensor<1x64x15x15xf32>
      }
      return %3 : tensor<1x64x15x15xf32>
    }
  }
}
