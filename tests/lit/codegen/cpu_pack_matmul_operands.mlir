// RUN: hexir-opt %s -split-input-file --hexir-cpu-pack-matmul-operands=cpu=x86-64-v3 | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cpu-pack-matmul-operands=cpu=x86-64-v3 --hexir-lift-constant-dispatches | FileCheck %s --check-prefix=LIFT

// A constant B (19 x 37) is packed even for a small matmul: on AVX2 (NR = 16) into
// ceil(37 / 16) = 3 panels of 19 x 16 by a dispatch of its own, which then has only constant
// operands and runs once at load (LIFT). The matmul's kernel reads the panels through the
// marked unpack generic: B[k][n] = Bp[n floordiv 16][k][n mod 16].
// CHECK-LABEL: hexir.executable @pack_rhs_19x37x16
// CHECK:         func.func @pack_rhs_19x37x16(%[[B:.+]]: tensor<19x37xf32>, %[[OUT:.+]]: tensor<3x19x16xf32>) -> tensor<3x19x16xf32>
// CHECK:           linalg.generic
// CHECK-SAME:        outs(%[[OUT]] : tensor<3x19x16xf32>) attrs = {hexir.pack_rhs}
// CHECK:             %[[C:.+]] = arith.addi
// CHECK:             %[[IN:.+]] = arith.cmpi ult, %[[C]]
// CHECK:             tensor.extract %[[B]]
// CHECK:           } -> tensor<3x19x16xf32>
// CHECK-LABEL: hexir.executable @mm
// CHECK:         func.func @mm(%[[A:.+]]: tensor<13x19xf32>, %[[BP:.+]]: tensor<3x19x16xf32>, %[[O:.+]]: tensor<13x37xf32>) -> tensor<13x37xf32>
// CHECK:           %[[U:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%[[BP]] : tensor<3x19x16xf32>) outs(%{{.+}} : tensor<19x37xf32>) attrs = {hexir.packed_rhs}
// CHECK:           linalg.matmul ins(%[[A]], %[[U]] : tensor<13x19xf32>, tensor<19x37xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:         %[[W:.+]] = arith.constant dense<1.000000e+00> : tensor<19x37xf32>
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_rhs_19x37x16(%[[W]]) : (tensor<19x37xf32>) -> tensor<3x19x16xf32>
// CHECK:         hexir.dispatch @mm(%arg0, %[[P]]) : (tensor<13x19xf32>, tensor<3x19x16xf32>) -> tensor<13x37xf32>
// LIFT-LABEL:  func.func @main(
// LIFT-NOT:      @pack_rhs
// LIFT:          %[[G:.+]] = hexir.global.load @main_lifted_0 : tensor<3x19x16xf32>
// LIFT:          hexir.dispatch @mm(%arg0, %[[G]])
// LIFT-LABEL:  func.func private @__hexir_lifted_init()
// LIFT:          hexir.dispatch @pack_rhs_19x37x16
// LIFT:          hexir.global.store
hexir.executable @mm {
  builtin.module {
    func.func @mm(%a: tensor<13x19xf32>, %b: tensor<19x37xf32>, %o: tensor<13x37xf32>) -> tensor<13x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}
func.func @main(%arg0: tensor<13x19xf32>) -> tensor<13x37xf32> {
  %w = arith.constant dense<1.0> : tensor<19x37xf32>
  %r = hexir.dispatch @mm(%arg0, %w) : (tensor<13x19xf32>, tensor<19x37xf32>) -> tensor<13x37xf32>
  return %r : tensor<13x37xf32>
}

// -----

// B an argument of a matmul too small to be split (13 x 37 x 19 multiply-adds): the kernel
// packs B itself, once; nothing changes.
// CHECK-LABEL: hexir.executable @small
// CHECK-NOT:     hexir.packed_rhs
// CHECK:         func.func @small(%{{.+}}: tensor<13x19xf32>, %{{.+}}: tensor<19x37xf32>,
// CHECK-LABEL: func.func @main(
// CHECK-NOT:     @pack_rhs
// CHECK:         hexir.dispatch @small(%arg0, %arg1)
hexir.executable @small {
  builtin.module {
    func.func @small(%a: tensor<13x19xf32>, %b: tensor<19x37xf32>, %o: tensor<13x37xf32>) -> tensor<13x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}
func.func @main(%arg0: tensor<13x19xf32>, %arg1: tensor<19x37xf32>) -> tensor<13x37xf32> {
  %r = hexir.dispatch @small(%arg0, %arg1) : (tensor<13x19xf32>, tensor<19x37xf32>) -> tensor<13x37xf32>
  return %r : tensor<13x37xf32>
}

// -----

// B an argument (256 x 160) of a matmul with dynamic M (counted as 64 rows: 2.6 x 2^20
// multiply-adds, so it is split over rows) called in a loop that
// does not change B: packed once, before the loop (not per iteration, nor per workgroup).
// CHECK-LABEL: func.func @loop(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x256xf32>, %[[W:[a-z0-9]+]]: tensor<256x160xf32>
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_rhs_256x160x16(%[[W]]) : (tensor<256x160xf32>) -> tensor<10x256x16xf32>
// CHECK:         scf.for
// CHECK:           hexir.dispatch @dyn(%[[X]], %[[P]])
hexir.executable @dyn {
  builtin.module {
    func.func @dyn(%a: tensor<?x256xf32>, %b: tensor<256x160xf32>, %o: tensor<?x160xf32>) -> tensor<?x160xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x160xf32>) outs(%o : tensor<?x160xf32>) -> tensor<?x160xf32>
      return %m : tensor<?x160xf32>
    }
  }
}
func.func @loop(%x: tensor<?x256xf32>, %w: tensor<256x160xf32>, %n: index) -> tensor<?x160xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %x, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%rows) : tensor<?x160xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %e) -> (tensor<?x160xf32>) {
    %y = hexir.dispatch @dyn(%x, %w) dims(%rows) : (tensor<?x256xf32>, tensor<256x160xf32>) -> tensor<?x160xf32>
    scf.yield %y : tensor<?x160xf32>
  }
  return %r : tensor<?x160xf32>
}

// -----

// A dense convolution (the ONNX importer's form) with a constant filter w[20][24][3][3]: w is
// B[k][f] of its GEMM (K = 24 * 3 * 3 = 216), packed once at load into ceil(20 / 16) = 2
// panels of 216 x 16 by `pack_filter_20x24x3x3_16` (zero past filter 20); the kernel reads it
// through the marked unpack w[f][c][i][j] = Bp[f floordiv 16][c * 9 + i * 3 + j][f mod 16].
// CHECK-DAG:   #[[UNPACK:.+]] = affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1 * 9 + d2 * 3 + d3, d0 mod 16)>
// CHECK-LABEL: hexir.executable @pack_filter_20x24x3x3_16
// CHECK:         func.func @pack_filter_20x24x3x3_16(%[[W:.+]]: tensor<20x24x3x3xf32>, %[[OUT:.+]]: tensor<2x216x16xf32>) -> tensor<2x216x16xf32>
// CHECK:           linalg.generic
// CHECK-SAME:        outs(%[[OUT]] : tensor<2x216x16xf32>)
// CHECK:             %[[F:.+]] = arith.addi
// CHECK:             %[[IN:.+]] = arith.cmpi ult, %[[F]], %c20
// CHECK:             %[[V:.+]] = tensor.extract %[[W]]
// CHECK:             arith.select %[[IN]], %[[V]]
// CHECK-LABEL: hexir.executable @conv
// CHECK:         func.func @conv(%[[X:.+]]: tensor<1x24x10x10xf32>, %[[WP:.+]]: tensor<2x216x16xf32>,
// CHECK:           %[[U:.+]] = linalg.generic {indexing_maps = [#[[UNPACK]], #{{.+}}], {{.*}} ins(%[[WP]] : tensor<2x216x16xf32>) outs(%{{.+}} : tensor<20x24x3x3xf32>) attrs = {hexir.packed_rhs}
// CHECK:           linalg.generic {{.*}} ins(%[[X]], %[[U]] : tensor<1x24x10x10xf32>, tensor<20x24x3x3xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_filter_20x24x3x3_16(%{{.+}}) : (tensor<20x24x3x3xf32>) -> tensor<2x216x16xf32>
// CHECK:         hexir.dispatch @conv(%arg0, %[[P]])
// LIFT-LABEL:  func.func @main(%arg0: tensor<1x24x10x10xf32>) -> tensor<1x20x8x8xf32>
// LIFT-NOT:      @pack_filter
// LIFT:          %[[G:.+]] = hexir.global.load @main_lifted_0 : tensor<2x216x16xf32>
// LIFT:          hexir.dispatch @conv(%arg0, %[[G]])
// LIFT-LABEL:  func.func private @__hexir_lifted_init()
// LIFT:          hexir.dispatch @pack_filter_20x24x3x3_16
#conv_x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#conv_w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @conv {
  builtin.module {
    func.func @conv(%x: tensor<1x24x10x10xf32>, %w: tensor<20x24x3x3xf32>, %o: tensor<1x20x8x8xf32>) -> tensor<1x20x8x8xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x24x10x10xf32>, tensor<20x24x3x3xf32>) outs(%o : tensor<1x20x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x20x8x8xf32>
      return %y : tensor<1x20x8x8xf32>
    }
  }
}
func.func @main(%arg0: tensor<1x24x10x10xf32>) -> tensor<1x20x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<20x24x3x3xf32>
  %r = hexir.dispatch @conv(%arg0, %w) : (tensor<1x24x10x10xf32>, tensor<20x24x3x3xf32>) -> tensor<1x20x8x8xf32>
  return %r : tensor<1x20x8x8xf32>
}

// -----

// The same convolution with a filter that is an argument: nothing changes (a pack per call
// would cost what the kernel's own packing costs).
// CHECK-LABEL: hexir.executable @conv_arg
// CHECK-NOT:     hexir.packed_rhs
// CHECK-LABEL: func.func @main(
// CHECK-NOT:     @pack_filter
// CHECK:         hexir.dispatch @conv_arg(%arg0, %arg1)
#conv_x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#conv_w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @conv_arg {
  builtin.module {
    func.func @conv_arg(%x: tensor<1x3x10x10xf32>, %w: tensor<20x3x3x3xf32>, %o: tensor<1x20x8x8xf32>) -> tensor<1x20x8x8xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>) outs(%o : tensor<1x20x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x20x8x8xf32>
      return %y : tensor<1x20x8x8xf32>
    }
  }
}
func.func @main(%arg0: tensor<1x3x10x10xf32>, %arg1: tensor<20x3x3x3xf32>) -> tensor<1x20x8x8xf32> {
  %r = hexir.dispatch @conv_arg(%arg0, %arg1) : (tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>) -> tensor<1x20x8x8xf32>
  return %r : tensor<1x20x8x8xf32>
}

// -----

// A constant filter of 27 taps (3 channels, 3 x 3: a stem) stays as it was: below 192 taps
// and 16 channels the input-packing kernel is as fast or faster.
// CHECK-LABEL: hexir.executable @conv_small
// CHECK-NOT:     hexir.packed_rhs
// CHECK-LABEL: func.func @main(
// CHECK-NOT:     @pack_filter
// CHECK:         hexir.dispatch @conv_small(%arg0, %{{.+}}) : (tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>)
#conv_x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#conv_w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @conv_small {
  builtin.module {
    func.func @conv_small(%x: tensor<1x3x10x10xf32>, %w: tensor<20x3x3x3xf32>, %o: tensor<1x20x8x8xf32>) -> tensor<1x20x8x8xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>) outs(%o : tensor<1x20x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x20x8x8xf32>
      return %y : tensor<1x20x8x8xf32>
    }
  }
}
func.func @main(%arg0: tensor<1x3x10x10xf32>) -> tensor<1x20x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<20x3x3x3xf32>
  %r = hexir.dispatch @conv_small(%arg0, %w) : (tensor<1x3x10x10xf32>, tensor<20x3x3x3xf32>) -> tensor<1x20x8x8xf32>
  return %r : tensor<1x20x8x8xf32>
}

// -----

// A 3x3 window over 16 channels (144 taps, SqueezeNet's expand3x3) is packed although below
// 192 taps: the input-packing kernel would gather its panels tap by tap. A 1x1 over 144
// channels (as many taps) on the same plane stays as it was.
// CHECK-LABEL: hexir.executable @pack_filter_24x16x3x3_16
// CHECK:         func.func @pack_filter_24x16x3x3_16(%{{.+}}: tensor<24x16x3x3xf32>, %{{.+}}: tensor<2x144x16xf32>)
// CHECK-LABEL: hexir.executable @expand3x3
// CHECK:         attrs = {hexir.packed_rhs}
// CHECK-LABEL: hexir.executable @pointwise144
// CHECK-NOT:     hexir.packed_rhs
// CHECK-LABEL: func.func @main(
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_filter_24x16x3x3_16(%{{.+}}) : (tensor<24x16x3x3xf32>) -> tensor<2x144x16xf32>
// CHECK:         hexir.dispatch @expand3x3(%arg0, %[[P]])
// CHECK-NOT:     @pack_filter
// CHECK:         hexir.dispatch @pointwise144(%arg1, %{{.+}}) : (tensor<1x144x8x8xf32>, tensor<24x144x1x1xf32>)
#conv_x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#conv_w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @expand3x3 {
  builtin.module {
    func.func @expand3x3(%x: tensor<1x16x10x10xf32>, %w: tensor<24x16x3x3xf32>, %o: tensor<1x24x8x8xf32>) -> tensor<1x24x8x8xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x16x10x10xf32>, tensor<24x16x3x3xf32>) outs(%o : tensor<1x24x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x24x8x8xf32>
      return %y : tensor<1x24x8x8xf32>
    }
  }
}
hexir.executable @pointwise144 {
  builtin.module {
    func.func @pointwise144(%x: tensor<1x144x8x8xf32>, %w: tensor<24x144x1x1xf32>, %o: tensor<1x24x8x8xf32>) -> tensor<1x24x8x8xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x144x8x8xf32>, tensor<24x144x1x1xf32>) outs(%o : tensor<1x24x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x24x8x8xf32>
      return %y : tensor<1x24x8x8xf32>
    }
  }
}
func.func @main(%arg0: tensor<1x16x10x10xf32>, %arg1: tensor<1x144x8x8xf32>) -> (tensor<1x24x8x8xf32>, tensor<1x24x8x8xf32>) {
  %w = arith.constant dense<0.5> : tensor<24x16x3x3xf32>
  %r = hexir.dispatch @expand3x3(%arg0, %w) : (tensor<1x16x10x10xf32>, tensor<24x16x3x3xf32>) -> tensor<1x24x8x8xf32>
  %w1 = arith.constant dense<0.25> : tensor<24x144x1x1xf32>
  %s = hexir.dispatch @pointwise144(%arg1, %w1) : (tensor<1x144x8x8xf32>, tensor<24x144x1x1xf32>) -> tensor<1x24x8x8xf32>
  return %r, %s : tensor<1x24x8x8xf32>, tensor<1x24x8x8xf32>
}

// -----

// A squeeze-excitation FC: a 1x1 convolution of 12 taps on a 1 x 1 output plane. On planes
// of at most 4 positions filters of any taps are packed (the input-packing kernel would fill
// one of its NR columns): ceil(40 / 16) = 3 panels of 12 x 16.
// CHECK-LABEL: hexir.executable @pack_filter_40x12x1x1_16
// CHECK:         func.func @pack_filter_40x12x1x1_16(%{{.+}}: tensor<40x12x1x1xf32>, %{{.+}}: tensor<3x12x16xf32>)
// CHECK-LABEL: hexir.executable @squeeze_fc
// CHECK:         attrs = {hexir.packed_rhs}
// CHECK-LABEL: func.func @main(
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_filter_40x12x1x1_16(%{{.+}}) : (tensor<40x12x1x1xf32>) -> tensor<3x12x16xf32>
// CHECK:         hexir.dispatch @squeeze_fc(%arg0, %[[P]])
#conv_x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#conv_w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @squeeze_fc {
  builtin.module {
    func.func @squeeze_fc(%x: tensor<1x12x1x1xf32>, %w: tensor<40x12x1x1xf32>, %o: tensor<1x40x1x1xf32>) -> tensor<1x40x1x1xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x12x1x1xf32>, tensor<40x12x1x1xf32>) outs(%o : tensor<1x40x1x1xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x40x1x1xf32>
      return %y : tensor<1x40x1x1xf32>
    }
  }
}
func.func @main(%arg0: tensor<1x12x1x1xf32>) -> tensor<1x40x1x1xf32> {
  %w = arith.constant dense<0.5> : tensor<40x12x1x1xf32>
  %r = hexir.dispatch @squeeze_fc(%arg0, %w) : (tensor<1x12x1x1xf32>, tensor<40x12x1x1xf32>) -> tensor<1x40x1x1xf32>
  return %r : tensor<1x40x1x1xf32>
}

// -----

// The same FC over a plane of run-time extents (a dynamic export's squeeze-excitation): the
// filter is packed besides, not instead: the kernel keeps %w and gets the panels as a new
// capture after it (before the output), read through an unpack that takes both, and the
// dispatch passes the pack's result there; CPUConvolutionKernel.cpp chooses at run time.
// CHECK-LABEL: hexir.executable @squeeze_fc_dynamic
// CHECK:         func.func @squeeze_fc_dynamic(%[[X:.+]]: tensor<?x12x?x?xf32>, %[[W:.+]]: tensor<40x12x1x1xf32>, %[[P:.+]]: tensor<3x12x16xf32>, %[[O:.+]]: tensor<?x40x?x?xf32>, %{{.+}}: index)
// CHECK:           %[[U:.+]] = linalg.generic {{.+}} ins(%[[P]], %[[W]] : tensor<3x12x16xf32>, tensor<40x12x1x1xf32>)
// CHECK-SAME:        attrs = {hexir.packed_rhs}
// CHECK:           linalg.generic {{.+}} ins(%[[X]], %[[U]] : tensor<?x12x?x?xf32>, tensor<40x12x1x1xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:         %[[PACKED:.+]] = hexir.dispatch @pack_filter_40x12x1x1_16(%[[F:.+]]) : (tensor<40x12x1x1xf32>) -> tensor<3x12x16xf32>
// CHECK:         hexir.dispatch @squeeze_fc_dynamic(%arg0, %[[F]], %[[PACKED]], %{{.+}}) dims
// LIFT-LABEL:  func.func @squeeze_fc_dynamic(
// LIFT:          func.func @main(
// LIFT:            %[[LIFTED:.+]] = hexir.global.load @main_lifted_0 : tensor<3x12x16xf32>
// LIFT:            hexir.dispatch @squeeze_fc_dynamic(%arg0, %{{.+}}, %[[LIFTED]], %{{.+}}) dims
// LIFT:          func.func private @__hexir_lifted_init()
// LIFT:            hexir.dispatch @pack_filter_40x12x1x1_16(
#conv_x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#conv_w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#conv_o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
hexir.executable @squeeze_fc_dynamic {
  builtin.module {
    func.func @squeeze_fc_dynamic(%x: tensor<?x12x?x?xf32>, %w: tensor<40x12x1x1xf32>, %o: tensor<?x40x?x?xf32>, %n: index) -> tensor<?x40x?x?xf32> {
      %y = linalg.generic {indexing_maps = [#conv_x, #conv_w, #conv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x12x?x?xf32>, tensor<40x12x1x1xf32>) outs(%o : tensor<?x40x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x40x?x?xf32>
      return %y : tensor<?x40x?x?xf32>
    }
  }
}
func.func @main(%arg0: tensor<?x12x?x?xf32>) -> tensor<?x40x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = tensor.dim %arg0, %c0 : tensor<?x12x?x?xf32>
  %h = tensor.dim %arg0, %c2 : tensor<?x12x?x?xf32>
  %v = tensor.dim %arg0, %c3 : tensor<?x12x?x?xf32>
  %w = arith.constant dense<0.5> : tensor<40x12x1x1xf32>
  %r = hexir.dispatch @squeeze_fc_dynamic(%arg0, %w, %n) dims(%n, %h, %v) : (tensor<?x12x?x?xf32>, tensor<40x12x1x1xf32>, index) -> tensor<?x40x?x?xf32>
  return %r : tensor<?x40x?x?xf32>
}
