// RUN: hexir-opt %s -split-input-file --hexir-annotate-dispatch-costs --hexir-cpu-distribute-workgroups --hexir-cpu-lower-executables | FileCheck %s

// A convolution of run-time batch and plane (a dynamic export's, with its bias on an empty
// output sized by index arguments): its costs are formulas over the kernel's arguments (aIdJ =
// dim J of tensor argument I, aI = index argument I; the output plane's loops traced through
// the bias generic to the tensor.empty's sizes: 2 ops x 3 taps x 8 channels a batch and
// position; the bias copies), and the CPU entry rewrites them over the
// words of its parameter buffer, the binding after the 4 memrefs: %x's 3 run-time dims are
// words 0-2, %o's words 3-5, the index arguments words 6-8.
// CHECK-LABEL: hexir.executable @conv
// CHECK-SAME:    cost.conv.bytes_read.formula = "128 + 12*a0d0*a0d2*a0d3"
// CHECK-SAME:    cost.conv.bytes_read.words = "128 + 12*w0*w1*w2"
// CHECK-SAME:    cost.conv.bytes_written.formula = "32*a3d0*a3d2*a3d3"
// CHECK-SAME:    cost.conv.bytes_written.words = "32*w3*w4*w5"
// CHECK-SAME:    cost.conv.flops.formula = "48*a0d0*a5*a6"
// CHECK-SAME:    cost.conv.flops.words = "48*w0*w7*w8"
// CHECK-SAME:    cost.conv.params = "4"
#bias = affine_map<(n, c, h, w) -> (c)>
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#in = affine_map<(n, c, h, w, k, p, q) -> (n, k, h + p, w + q)>
#filter = affine_map<(n, c, h, w, k, p, q) -> (c, k, p, q)>
#out = affine_map<(n, c, h, w, k, p, q) -> (n, c, h, w)>
hexir.executable @conv {
  builtin.module {
    func.func @conv(%x: tensor<?x3x?x?xf32>, %f: tensor<8x3x1x1xf32>, %b: tensor<8xf32>, %o: tensor<?x8x?x?xf32>,
                    %n: index, %h: index, %w: index) -> tensor<?x8x?x?xf32> {
      %e = tensor.empty(%n, %h, %w) : tensor<?x8x?x?xf32>
      %bias = linalg.generic {indexing_maps = [#bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%b : tensor<8xf32>) outs(%e : tensor<?x8x?x?xf32>) {
      ^bb0(%v: f32, %u: f32):
        linalg.yield %v : f32
      } -> tensor<?x8x?x?xf32>
      %c = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
          ins(%x, %f : tensor<?x3x?x?xf32>, tensor<8x3x1x1xf32>) outs(%bias : tensor<?x8x?x?xf32>) {
      ^bb0(%v: f32, %k: f32, %acc: f32):
        %m = arith.mulf %v, %k : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<?x8x?x?xf32>
      %r = linalg.copy ins(%c : tensor<?x8x?x?xf32>) outs(%o : tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
      return %r : tensor<?x8x?x?xf32>
    }
  }
}

// -----

// A static kernel gets no words (its costs are numbers).
// CHECK-LABEL: hexir.executable @static
// CHECK-SAME:    cost.static.flops = "4"
// CHECK-NOT:     words
// CHECK-NOT:     cost.static.params
hexir.executable @static {
  builtin.module {
    func.func @static(%a: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%o : tensor<4xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = arith.mulf %x, %x : f32
        linalg.yield %z : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
