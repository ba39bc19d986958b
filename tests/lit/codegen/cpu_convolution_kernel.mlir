// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// A dense 3x3 convolution in the importer's form becomes the implicit GEMM on the packed
// micro-kernel (codegen/CPUConvolutionKernel.h): the offsets of its 5 x 3 x 3 taps into a
// stack table once, then each panel loaded from the input (its k loop reading the tap's
// offset from the table): whole vectors when its columns are consecutive, else, rows of 11
// being at least one vector of 8, each vector as the masked loads of its lanes in two output
// rows merged by a select (never gathered); then 6 x 16 register tiles of 8-lane FMAs.
// CHECK-LABEL: hexir.executable @dense
// CHECK:         llvm.func internal @dense_impl(
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.alloca %{{.+}} x i64 {alignment = 64 : i64}
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK:           llvm.store %{{.+}}, %{{.+}} : i64, !llvm.ptr
// CHECK:           llvm.load %{{.+}} : !llvm.ptr -> i64
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.select %{{.+}}, %{{.+}}, %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK-NOT:       llvm.intr.masked.gather
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

// A depthwise convolution (one input channel per filter) runs on staged planes
// (codegen/CPUConvolutionDepthwise.h): two stack buffers (the staged phase planes, the extended
// positions); per channel the input rows copied into the staged plane (masked loads, whole
// vector stores), then the 9 x 11 outputs as 9 rows of pitch 11 + 2
// = 117 extended positions: 3 steps of 4 vectors (the 9 taps as broadcast weights: 36 FMAs
// a step, emitted once) and the last 21 one vector at a time (9 FMAs), then each row's 11 outputs added
// to out (masked). No gather or scatter.
// CHECK-LABEL: hexir.executable @depthwise
// CHECK:         llvm.func internal @depthwise_impl(
// CHECK-COUNT-2:   llvm.alloca
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.masked.load
// CHECK-NOT:       llvm.intr.masked.store
// CHECK-COUNT-36:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-COUNT-9:   llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.intr.masked.store
// CHECK-NOT:       llvm.intr.masked.{{gather|scatter}}
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

// The importer's zero pad joined the depthwise convolution's dispatch
// (fuse-pads-into-depthwise): the pad becomes a fill and a copy into a buffer of the padded
// shape (codegen/CPUConstantPad.h) that the kernel does not allocate, fill or copy: it stages
// its planes from the unpadded x (codegen/CPUConvolutionDepthwise.h), the top row and left
// column zero. No malloc, no copy loop, the same two stack buffers.
// CHECK-LABEL: hexir.executable @depthwise_padded
// CHECK-NOT:     @malloc
// CHECK:         llvm.func internal @depthwise_padded_impl(
// CHECK-COUNT-2:   llvm.alloca
// CHECK-NOT:       @malloc
// CHECK:           llvm.intr.masked.load
// CHECK-NOT:       @malloc
// CHECK:         llvm.func @depthwise_padded(
hexir.executable @depthwise_padded attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_padded(%x0: tensor<1x6x9x11xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<1x6x9x11xf32>, %id: index) -> tensor<1x6x9x11xf32> {
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c9 = arith.constant 9 : index
      %c10 = arith.constant 10 : index
      %c11 = arith.constant 11 : index
      %e = tensor.empty() : tensor<1x6x11x13xf32>
      %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<1x6x11x13xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %r = arith.subi %i2, %c1 : index
        %r1 = arith.maxsi %r, %c0 : index
        %r2 = arith.minsi %r1, %c8 : index
        %r3 = arith.cmpi sge, %r, %c0 : index
        %r4 = arith.cmpi slt, %r, %c9 : index
        %r5 = arith.andi %r3, %r4 : i1
        %q = arith.subi %i3, %c1 : index
        %q1 = arith.maxsi %q, %c0 : index
        %q2 = arith.minsi %q1, %c10 : index
        %q3 = arith.cmpi sge, %q, %c0 : index
        %q4 = arith.cmpi slt, %q, %c11 : index
        %q5 = arith.andi %q3, %q4 : i1
        %in = arith.andi %r5, %q5 : i1
        %v = tensor.extract %x0[%i0, %i1, %r2, %q2] : tensor<1x6x9x11xf32>
        %s = arith.select %in, %v, %z : f32
        linalg.yield %s : f32
      } -> tensor<1x6x11x13xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x6x11x13xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<1x6x9x11xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %pp = arith.mulf %a, %b : f32
        %qq = arith.addf %acc, %pp : f32
        linalg.yield %qq : f32
      } -> tensor<1x6x9x11xf32>
      return %y : tensor<1x6x9x11xf32>
    }
  }
}

// -----

// The same pad in a dynamic export: x0's extents are run-time values (%h, %w), the padded
// buffer's too. The pad becomes a fill and a copy into a window at its constant lows
// (codegen/CPUDynamicPad.h), which the kernel again replaces by staging from x0: no malloc
// of the padded buffer. Each tile first tests whether every tap reaches x0 (4 compares):
// then the unguarded FMAs; else each of the 9 taps under its own branch.
// CHECK-LABEL: hexir.executable @depthwise_padded_dynamic
// CHECK-NOT:     @malloc
// CHECK:         llvm.func internal @depthwise_padded_dynamic_impl(
// CHECK-COUNT-2:   llvm.alloca
// CHECK-NOT:       @malloc
// CHECK:           llvm.intr.masked.load
// CHECK-NOT:       @malloc
// CHECK:         llvm.func @depthwise_padded_dynamic(
hexir.executable @depthwise_padded_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_padded_dynamic(%x0: tensor<?x6x?x?xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<?x6x?x?xf32>, %h: index, %wd: index, %id: index) -> tensor<?x6x?x?xf32> {
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %n = tensor.dim %x0, %c0 : tensor<?x6x?x?xf32>
      %hp = arith.addi %h, %c2 : index
      %wp = arith.addi %wd, %c2 : index
      %e = tensor.empty(%n, %hp, %wp) : tensor<?x6x?x?xf32>
      %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<?x6x?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %r = arith.subi %i2, %c1 : index
        %h1 = arith.subi %h, %c1 : index
        %r1 = arith.maxsi %r, %c0 : index
        %r2 = arith.minsi %r1, %h1 : index
        %r3 = arith.cmpi sge, %r, %c0 : index
        %r4 = arith.cmpi slt, %r, %h : index
        %r5 = arith.andi %r3, %r4 : i1
        %q = arith.subi %i3, %c1 : index
        %w1 = arith.subi %wd, %c1 : index
        %q1 = arith.maxsi %q, %c0 : index
        %q2 = arith.minsi %q1, %w1 : index
        %q3 = arith.cmpi sge, %q, %c0 : index
        %q4 = arith.cmpi slt, %q, %wd : index
        %q5 = arith.andi %q3, %q4 : i1
        %in = arith.andi %r5, %q5 : i1
        %v = tensor.extract %x0[%i0, %i1, %r2, %q2] : tensor<?x6x?x?xf32>
        %s = arith.select %in, %v, %z : f32
        linalg.yield %s : f32
      } -> tensor<?x6x?x?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x6x?x?xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<?x6x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %pp = arith.mulf %a, %b : f32
        %qq = arith.addf %acc, %pp : f32
        linalg.yield %qq : f32
      } -> tensor<?x6x?x?xf32>
      return %y : tensor<?x6x?x?xf32>
    }
  }
}

// -----

// As a dynamic export's dispatch reaches the kernel: the padded extents are index arguments
// (%hp, %wp), and workgroup distribution has left tensor.dim ops of the padded value (reads
// of its extents, not of its elements). The pad is still placed at its constant lows and
// fused into the kernel: no malloc of the padded buffer (it was, before the dims were
// ignored: ShuffleNet's dynamic 3x3s over 16 x 16 at stride 2 took 9.7 us against 2.1 static).
// Previously: x0's extents run-time values (%h, %w), the padded buffer's too. The pad becomes a fill and a copy into a window at its constant lows
// (codegen/CPUDynamicPad.h), which the kernel again replaces by staging from x0: no malloc
// of the padded buffer. Each tile first tests whether every tap reaches x0 (4 compares):
// then the unguarded FMAs; else each of the 9 taps under its own branch.
// CHECK-LABEL: hexir.executable @depthwise_padded_dims
// CHECK-NOT:     @malloc
// CHECK:         llvm.func internal @depthwise_padded_dims_impl(
// CHECK-COUNT-2:   llvm.alloca
// CHECK-NOT:       @malloc
// CHECK:           llvm.intr.masked.load
// CHECK-NOT:       @malloc
// CHECK:         llvm.func @depthwise_padded_dims(
hexir.executable @depthwise_padded_dims attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_padded_dims(%x0: tensor<?x6x?x?xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<?x6x?x?xf32>, %h: index, %wd: index, %hp: index, %wp: index, %id: index) -> tensor<?x6x?x?xf32> {
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %n = tensor.dim %x0, %c0 : tensor<?x6x?x?xf32>
      %e = tensor.empty(%n, %hp, %wp) : tensor<?x6x?x?xf32>
      %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<?x6x?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %r = arith.subi %i2, %c1 : index
        %h1 = arith.subi %h, %c1 : index
        %r1 = arith.maxsi %r, %c0 : index
        %r2 = arith.minsi %r1, %h1 : index
        %r3 = arith.cmpi sge, %r, %c0 : index
        %r4 = arith.cmpi slt, %r, %h : index
        %r5 = arith.andi %r3, %r4 : i1
        %q = arith.subi %i3, %c1 : index
        %w1 = arith.subi %wd, %c1 : index
        %q1 = arith.maxsi %q, %c0 : index
        %q2 = arith.minsi %q1, %w1 : index
        %q3 = arith.cmpi sge, %q, %c0 : index
        %q4 = arith.cmpi slt, %q, %wd : index
        %q5 = arith.andi %q3, %q4 : i1
        %in = arith.andi %r5, %q5 : i1
        %v = tensor.extract %x0[%i0, %i1, %r2, %q2] : tensor<?x6x?x?xf32>
        %s = arith.select %in, %v, %z : f32
        linalg.yield %s : f32
      } -> tensor<?x6x?x?xf32>
      %dn = tensor.dim %x, %c0 : tensor<?x6x?x?xf32>
      %dh = tensor.dim %x, %c2 : tensor<?x6x?x?xf32>
      %c3 = arith.constant 3 : index
      %dw = tensor.dim %x, %c3 : tensor<?x6x?x?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x6x?x?xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<?x6x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %pp = arith.mulf %a, %b : f32
        %qq = arith.addf %acc, %pp : f32
        linalg.yield %qq : f32
      } -> tensor<?x6x?x?xf32>
      return %y : tensor<?x6x?x?xf32>
    }
  }
}

// -----

// A dynamic export's 5x5 depthwise convolution padded by 2 (MobileNetV3's and EfficientNet-B0's
// last stages at run time): before the staged kernel, run-time tests of the plane's extents
// choose a channel-lane kernel specialised on one square plane of 1 to 4 outputs (h = o at
// stride 1; at most 36 inputs), the channel strides read from the views: the 1 x 1 plane
// runs the center tap only (1 FMA), the 2 x 2 one 16 FMAs (4 taps an output), each
// variant's outputs gathered and scattered once; the staged kernel (masked row loads)
// takes every other plane.
// CHECK-LABEL: hexir.executable @depthwise_plane_size_variants
// CHECK:         llvm.func internal @depthwise_plane_size_variants_impl(
// CHECK-COUNT-2:   llvm.alloca
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.intr.masked.gather
// CHECK:           llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.scatter
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK:           llvm.icmp "eq"
// CHECK-COUNT-16:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK-COUNT-4:   llvm.intr.masked.scatter
// CHECK:           llvm.intr.masked.load
// CHECK:         llvm.func @depthwise_plane_size_variants(
hexir.executable @depthwise_plane_size_variants attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_plane_size_variants(%x0: tensor<?x6x?x?xf32>, %w: tensor<6x1x5x5xf32>, %o: tensor<?x6x?x?xf32>, %h: index, %wd: index, %id: index) -> tensor<?x6x?x?xf32> {
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %n = tensor.dim %x0, %c0 : tensor<?x6x?x?xf32>
      %c4 = arith.constant 4 : index
      %hp = arith.addi %h, %c4 : index
      %wp = arith.addi %wd, %c4 : index
      %e = tensor.empty(%n, %hp, %wp) : tensor<?x6x?x?xf32>
      %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<?x6x?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %r = arith.subi %i2, %c2 : index
        %h1 = arith.subi %h, %c1 : index
        %r1 = arith.maxsi %r, %c0 : index
        %r2 = arith.minsi %r1, %h1 : index
        %r3 = arith.cmpi sge, %r, %c0 : index
        %r4 = arith.cmpi slt, %r, %h : index
        %r5 = arith.andi %r3, %r4 : i1
        %q = arith.subi %i3, %c2 : index
        %w1 = arith.subi %wd, %c1 : index
        %q1 = arith.maxsi %q, %c0 : index
        %q2 = arith.minsi %q1, %w1 : index
        %q3 = arith.cmpi sge, %q, %c0 : index
        %q4 = arith.cmpi slt, %q, %wd : index
        %q5 = arith.andi %q3, %q4 : i1
        %in = arith.andi %r5, %q5 : i1
        %v = tensor.extract %x0[%i0, %i1, %r2, %q2] : tensor<?x6x?x?xf32>
        %s = arith.select %in, %v, %z : f32
        linalg.yield %s : f32
      } -> tensor<?x6x?x?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x6x?x?xf32>, tensor<6x1x5x5xf32>) outs(%o : tensor<?x6x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %pp = arith.mulf %a, %b : f32
        %qq = arith.addf %acc, %pp : f32
        linalg.yield %qq : f32
      } -> tensor<?x6x?x?xf32>
      return %y : tensor<?x6x?x?xf32>
    }
  }
}

// -----

// The importer's zero pad of 2 around a 2 x 2 plane under a 5x5 window (the last stages of
// MobileNetV3 and EfficientNet-B0): a small static plane, so the channels are the lanes
// (codegen/CPUConvolutionDepthwise.h): of the 25 taps only the 9 of rows and columns 1..3
// reach x at some output, each output reads 4 of them (16 FMAs, no loop over taps); the 9
// taps' weights and the 4 input positions gathered once per block of 8 channels, the 4
// outputs gathered and scattered once; the next blocks' weights and inputs prefetched.
// CHECK-LABEL: hexir.executable @depthwise_small_plane
// CHECK:         llvm.func internal @depthwise_small_plane_impl(
// CHECK:           llvm.intr.prefetch
// CHECK-COUNT-16:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK-COUNT-4:   llvm.intr.masked.scatter
// CHECK-NOT:       llvm.intr.masked.scatter
// CHECK:         llvm.func @depthwise_small_plane(
hexir.executable @depthwise_small_plane attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_small_plane(%x0: tensor<1x6x2x2xf32>, %w: tensor<6x1x5x5xf32>, %o: tensor<1x6x2x2xf32>, %id: index) -> tensor<1x6x2x2xf32> {
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %e = tensor.empty() : tensor<1x6x6x6xf32>
      %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<1x6x6x6xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %r = arith.subi %i2, %c2 : index
        %r1 = arith.maxsi %r, %c0 : index
        %r2 = arith.minsi %r1, %c1 : index
        %r3 = arith.cmpi sge, %r, %c0 : index
        %r4 = arith.cmpi slt, %r, %c2 : index
        %r5 = arith.andi %r3, %r4 : i1
        %q = arith.subi %i3, %c2 : index
        %q1 = arith.maxsi %q, %c0 : index
        %q2 = arith.minsi %q1, %c1 : index
        %q3 = arith.cmpi sge, %q, %c0 : index
        %q4 = arith.cmpi slt, %q, %c2 : index
        %q5 = arith.andi %q3, %q4 : i1
        %in = arith.andi %r5, %q5 : i1
        %v = tensor.extract %x0[%i0, %i1, %r2, %q2] : tensor<1x6x2x2xf32>
        %s = arith.select %in, %v, %z : f32
        linalg.yield %s : f32
      } -> tensor<1x6x6x6xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x6x6x6xf32>, tensor<6x1x5x5xf32>) outs(%o : tensor<1x6x2x2xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %pp = arith.mulf %a, %b : f32
        %qq = arith.addf %acc, %pp : f32
        linalg.yield %qq : f32
      } -> tensor<1x6x2x2xf32>
      return %y : tensor<1x6x2x2xf32>
    }
  }
}

// -----

// The same over 8 workgroups of 30 channels (hexir-cpu-distribute-workgroups' form: the pad
// tiled, its channel an affine.apply of the tile offset, its batch index folded to 0): the
// tiled pad becomes a fill and a copy (codegen/CPUDynamicPad.h) and the kernel again reads the
// unpadded tile of x (channels in the lanes: gathers from it), no malloc and no stack buffer.
// CHECK-LABEL: hexir.executable @depthwise_padded_tiled
// CHECK-NOT:     @malloc
// CHECK:         llvm.func internal @depthwise_padded_tiled_impl(
// CHECK-NOT:       llvm.alloca
// CHECK-NOT:       @malloc
// CHECK:           llvm.intr.masked.gather
// CHECK-NOT:       @malloc
// CHECK:         llvm.func @depthwise_padded_tiled(
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0)[s0] -> (d0 + s0)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 + d6)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @depthwise_padded_tiled attributes {hexir.workgroup_count = array<i64: 8, 1, 1>} {
  builtin.module {
    func.func @depthwise_padded_tiled(%arg0: tensor<1x240x4x4xf32>, %arg1: tensor<240x1x5x5xf32>, %arg2: tensor<1x240x4x4xf32>, %arg3: index) -> tensor<1x240x4x4xf32> {
      %c240 = arith.constant 240 : index
      %c30 = arith.constant 30 : index
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %cst = arith.constant 0.000000e+00 : f32
      %0 = arith.muli %arg3, %c30 : index
      %1 = arith.addi %0, %c30 : index
      %2 = arith.minsi %1, %c240 : index
      %3 = scf.for %arg4 = %0 to %2 step %c30 iter_args(%arg5 = %arg2) -> (tensor<1x240x4x4xf32>) {
        %4 = tensor.empty() : tensor<1x30x8x8xf32>
        %5 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%4 : tensor<1x30x8x8xf32>) {
        ^bb0(%out: f32):
          %8 = linalg.index 1 : index
          %9 = affine.apply #map1(%arg4)[%8]
          %10 = linalg.index 2 : index
          %11 = linalg.index 3 : index
          %12 = arith.subi %10, %c2 : index
          %13 = arith.maxsi %12, %c0 : index
          %14 = arith.minsi %13, %c3 : index
          %15 = arith.cmpi sge, %12, %c0 : index
          %16 = arith.cmpi slt, %12, %c4 : index
          %17 = arith.andi %15, %16 : i1
          %18 = arith.subi %11, %c2 : index
          %19 = arith.maxsi %18, %c0 : index
          %20 = arith.minsi %19, %c3 : index
          %21 = arith.cmpi sge, %18, %c0 : index
          %22 = arith.cmpi slt, %18, %c4 : index
          %23 = arith.andi %21, %22 : i1
          %24 = arith.andi %17, %23 : i1
          %extracted = tensor.extract %arg0[%c0, %9, %14, %20] : tensor<1x240x4x4xf32>
          %25 = arith.select %24, %extracted, %cst : f32
          linalg.yield %25 : f32
        } -> tensor<1x30x8x8xf32>
        %extracted_slice = tensor.extract_slice %arg1[%arg4, 0, 0, 0] [30, 1, 5, 5] [1, 1, 1, 1] : tensor<240x1x5x5xf32> to tensor<30x1x5x5xf32>
        %extracted_slice_0 = tensor.extract_slice %arg5[0, %arg4, 0, 0] [1, 30, 4, 4] [1, 1, 1, 1] : tensor<1x240x4x4xf32> to tensor<1x30x4x4xf32>
        %6 = linalg.fill ins(%cst : f32) outs(%extracted_slice_0 : tensor<1x30x4x4xf32>) -> tensor<1x30x4x4xf32>
        %7 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%5, %extracted_slice : tensor<1x30x8x8xf32>, tensor<30x1x5x5xf32>) outs(%6 : tensor<1x30x4x4xf32>) {
        ^bb0(%in: f32, %in_1: f32, %out: f32):
          %8 = arith.mulf %in, %in_1 : f32
          %9 = arith.addf %out, %8 : f32
          linalg.yield %9 : f32
        } -> tensor<1x30x4x4xf32>
        %inserted_slice = tensor.insert_slice %7 into %arg5[0, %arg4, 0, 0] [1, 30, 4, 4] [1, 1, 1, 1] : tensor<1x30x4x4xf32> into tensor<1x240x4x4xf32>
        scf.yield %inserted_slice : tensor<1x240x4x4xf32>
      }
      return %3 : tensor<1x240x4x4xf32>
    }
  }
}

// -----

// Stride 2 along H and W (a 5x5 window over 13 x 13: 5 x 5 outputs): each input row is
// deinterleaved into its even and odd columns (two shuffles of two masked loads) for the four
// phase planes; 5 rows of pitch 5 + 2 = 35 extended positions: one step of 4 vectors (25 taps: 100
// FMAs) and one vector (25).
// CHECK-LABEL: hexir.executable @depthwise_strided
// CHECK:         llvm.func internal @depthwise_strided_impl(
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.shufflevector %{{.+}}, %{{.+}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<8xf32>
// CHECK:           llvm.shufflevector %{{.+}}, %{{.+}} [1, 3, 5, 7, 9, 11, 13, 15] : vector<8xf32>
// CHECK-COUNT-100: llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-COUNT-25:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.store
// CHECK-NOT:       llvm.intr.masked.{{gather|scatter}}
// CHECK:         llvm.func @depthwise_strided(
hexir.executable @depthwise_strided attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @depthwise_strided(%x: tensor<1x6x13x13xf32>, %w: tensor<6x1x5x5xf32>, %o: tensor<1x6x5x5xf32>, %id: index) -> tensor<1x6x5x5xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x6x13x13xf32>, tensor<6x1x5x5xf32>) outs(%o : tensor<1x6x5x5xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x6x5x5xf32>
      return %y : tensor<1x6x5x5xf32>
    }
  }
}

// -----

// A grouped convolution (chan = (f floordiv Fg) * Cg + c: 2 groups of 8 filters over 8
// channels) runs the dense kernel per group on views of the group's channels and filters.
// Its 4 x 4 plane takes NR = 4 (GroupedTiles: the largest NR dividing OW), so each panel is
// one output row, loaded, not gathered: per group the 8 x 16 GEMM as a 6-row and a 2-row
// register tile of 4-lane FMAs.
// CHECK-LABEL: hexir.executable @grouped
// CHECK:         llvm.func internal @grouped_impl(
// CHECK:           llvm.intr.masked.load {{.*}} -> vector<4xf32>
// CHECK-COUNT-6:   llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-COUNT-2:   llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NOT:       llvm.fmul
// CHECK:         llvm.func @grouped(
hexir.executable @grouped attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @grouped(%x: tensor<1x16x6x6xf32>, %w: tensor<16x8x3x3xf32>, %o: tensor<1x16x4x4xf32>, %id: index) -> tensor<1x16x4x4xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 8) * 8 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x16x6x6xf32>, tensor<16x8x3x3xf32>) outs(%o : tensor<1x16x4x4xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x16x4x4xf32>
      return %y : tensor<1x16x4x4xf32>
    }
  }
}

// -----

// Two filters per input channel (a depthwise multiplier) is a grouped convolution of one
// channel per group; over a static 2 x 2 plane its GEMMs run on tiles of one 4-lane vector
// (GroupedTiles), not 16 columns for 4.
// CHECK-LABEL: hexir.executable @multiplier
// CHECK:         llvm.func internal @multiplier_impl(
// CHECK:           llvm.intr.masked.gather {{.*}} -> vector<4xf32>
// CHECK-COUNT-2:   llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NOT:       llvm.fmul
// CHECK:         llvm.func @multiplier(
hexir.executable @multiplier attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @multiplier(%x: tensor<1x3x4x4xf32>, %w: tensor<6x1x3x3xf32>, %o: tensor<1x6x2x2xf32>, %id: index) -> tensor<1x6x2x2xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 floordiv 2 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x4x4xf32>, tensor<6x1x3x3xf32>) outs(%o : tensor<1x6x2x2xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x6x2x2xf32>
      return %y : tensor<1x6x2x2xf32>
    }
  }
}

// -----

// A grouped convolution over a run-time batch and plane (a dynamic export) at stride 2: out's
// plane is tested at run time for 2 x 2 (4-lane tiles, 6 + 2 rows) and 4 x 4 (NR 4), then
// OW for 8 and 4 as the largest NR dividing it (one vector, half a vector), the dynamic plane
// on the default tiles (2 vectors) otherwise; a panel inside one output row is the even
// elements of two loads, one other gathered; the loop lowering where out's rows are not
// contiguous.
// CHECK-LABEL: hexir.executable @grouped_dynamic
// CHECK:         llvm.func internal @grouped_dynamic_impl(
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.shufflevector {{.*}} [0, 2, 4, 6] : vector<4xf32>
// CHECK:           llvm.intr.masked.gather {{.*}} -> vector<4xf32>
// CHECK-COUNT-8:   llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK:           llvm.shufflevector {{.*}} [0, 2, 4, 6] : vector<4xf32>
// CHECK-COUNT-8:   llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK:           llvm.shufflevector {{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<8xf32>
// CHECK-COUNT-8:   llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.shufflevector {{.*}} [0, 2, 4, 6] : vector<4xf32>
// CHECK-COUNT-8:   llvm.intr.fmuladd({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK:           llvm.shufflevector {{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<8xf32>
// CHECK-COUNT-16:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.fmul {{.*}} : f32
// CHECK:         llvm.func @grouped_dynamic(
hexir.executable @grouped_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @grouped_dynamic(%x: tensor<?x16x?x?xf32>, %w: tensor<16x8x3x3xf32>, %o: tensor<?x16x?x?xf32>, %id: index) -> tensor<?x16x?x?xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 8) * 8 + d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x16x?x?xf32>, tensor<16x8x3x3xf32>) outs(%o : tensor<?x16x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x16x?x?xf32>
      return %y : tensor<?x16x?x?xf32>
    }
  }
}

// -----

// Dynamic batch and spatial dims (a dynamic ONNX export): the same implicit GEMM, on views of
// the planes rebuilt from the strided metadata; it runs when the rows are contiguous at run
// time (stride of dim 2 == size of dim 3), the loop lowering otherwise. A panel whose columns
// inside N are consecutive in x is loaded (a partial one masked), otherwise gathered.
// CHECK-LABEL: hexir.executable @dense_dynamic
// CHECK:         llvm.func internal @dense_dynamic_impl(
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.cond_br
// CHECK:           llvm.intr.masked.load
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

// A 1x1 convolution over planes of run-time extents: where the rows are contiguous, run-time
// tests of x's and out's planes (2 x 2, 3 x 3, 4 x 4, then 7 x 7) choose the implicit GEMM on
// views of that static plane (N = 4, 9, 16 or 49 known; the first three's panels loaded whole
// or masked, never gathered; 7 x 7's panels of 8 cross its rows of 7, each tested for one
// run as on a dynamic plane), the GEMM on the dynamic plane otherwise (its partial panels
// maybe gathered); the loop lowering when the rows are not contiguous.
// CHECK-LABEL: hexir.executable @pointwise_dynamic
// CHECK:         llvm.func internal @pointwise_dynamic_impl(
// CHECK-COUNT-5:   llvm.icmp "eq"
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.fmuladd
// CHECK-COUNT-4:   llvm.icmp "eq"
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.fmuladd
// CHECK-COUNT-4:   llvm.icmp "eq"
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.intr.fmuladd
// CHECK-COUNT-4:   llvm.icmp "eq"
// CHECK:           llvm.intr.fmuladd
// CHECK:           llvm.intr.masked.gather
// CHECK:           llvm.fmul {{.*}} : f32
// CHECK:         llvm.func @pointwise_dynamic(
hexir.executable @pointwise_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @pointwise_dynamic(%x: tensor<?x5x?x?xf32>, %w: tensor<7x5x1x1xf32>, %o: tensor<?x7x?x?xf32>, %id: index) -> tensor<?x7x?x?xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x5x?x?xf32>, tensor<7x5x1x1xf32>) outs(%o : tensor<?x7x?x?xf32>) {
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
// gathered, added to and scattered across the filters' planes after the k loop (tiles of 6
// rows are not transposed in registers). The unpack and its buffer are gone.
// CHECK-LABEL: hexir.executable @prepacked
// CHECK:         llvm.func internal @prepacked_impl(
// CHECK-NOT:       llvm.call @malloc
// CHECK:           llvm.alloca %{{.+}} x i64 {alignment = 64 : i64}
// CHECK-NOT:       llvm.alloca %{{.+}} x f32
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.gather
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

// -----

// The same convolution over a run-time batch and plane (a dynamic export): out's plane is
// tested at run time for 2 x 2 and 4 x 4 (kPackedFilterPlaneOutputs), where the GEMM's rows
// are a constant; the 2 x 2 plane's 4 positions are one register tile, whose panels are
// streamed (prefetched) as in a static export; the dynamic plane after.
// CHECK-LABEL: hexir.executable @prepacked_dynamic
// CHECK:         llvm.func internal @prepacked_dynamic_impl(
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.intr.prefetch
// CHECK:           llvm.intr.masked.scatter
// CHECK:           llvm.icmp "eq"
// CHECK-NOT:       llvm.intr.prefetch
// CHECK:         llvm.func @prepacked_dynamic(
hexir.executable @prepacked_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @prepacked_dynamic(%x: tensor<?x3x?x?xf32>, %wp: tensor<2x27x16xf32>, %o: tensor<?x20x?x?xf32>, %id: index) -> tensor<?x20x?x?xf32> {
      %e = tensor.empty() : tensor<20x3x3x3xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1 * 9 + d2 * 3 + d3, d0 mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x27x16xf32>) outs(%e : tensor<20x3x3x3xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<20x3x3x3xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x3x?x?xf32>, tensor<20x3x3x3xf32>) outs(%o : tensor<?x20x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x20x?x?xf32>
      return %y : tensor<?x20x?x?xf32>
    }
  }
}

// -----

// A filter packed besides its original (hexir-cpu-pack-matmul-operands' dual unpack: a
// shallow filter over a run-time plane): a run-time test of the plane's positions (at most
// kTinyPlanePositions = 4) chooses the packed kernel (its tiles transposed by shuffles), else
// the input-packing kernel on the original filter; the unpack's buffer is never allocated.
// CHECK-LABEL: hexir.executable @dual_filter
// CHECK:         llvm.func internal @dual_filter_impl(
// CHECK-NOT:       llvm.call @malloc
// CHECK:           %[[POSITIONS:.+]] = llvm.mul %{{.+}}, %{{.+}} : i64
// CHECK:           %[[TINY:.+]] = llvm.icmp "ule" %[[POSITIONS]], %{{.+}} : i64
// CHECK:           llvm.cond_br %[[TINY]]
// CHECK:           llvm.shufflevector %{{.+}}, %{{.+}} [0, 8, 1, 9, 2, 10, 3, 11] : vector<8xf32>
// CHECK-NOT:       llvm.call @malloc
// CHECK:         llvm.func @dual_filter(
hexir.executable @dual_filter attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dual_filter(%x: tensor<?x12x?x?xf32>, %w: tensor<40x12x1x1xf32>, %wp: tensor<3x12x16xf32>, %o: tensor<?x40x?x?xf32>, %id: index) -> tensor<?x40x?x?xf32> {
      %e = tensor.empty() : tensor<40x12x1x1xf32>
      %u = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1, d0 mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp, %w : tensor<3x12x16xf32>, tensor<40x12x1x1xf32>) outs(%e : tensor<40x12x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %orig: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x12x1x1xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %u : tensor<?x12x?x?xf32>, tensor<40x12x1x1xf32>) outs(%o : tensor<?x40x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x40x?x?xf32>
      return %y : tensor<?x40x?x?xf32>
    }
  }
}
