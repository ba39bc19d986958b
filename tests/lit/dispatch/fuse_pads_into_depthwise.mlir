// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions=fuse-pads-into-depthwise=true | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions | FileCheck %s --check-prefix=OFF

// The ONNX importer's zero pad (x0 read at clamped coordinates, zero outside) read only as a
// depthwise convolution's input: with fuse-pads-into-depthwise (CPU-only modules) it is
// cloned into the convolution's region (one dispatch, whose kernel stages from x0:
// codegen/CPUConvolutionDepthwise.h); without it, the pad is a dispatch of its own. The batch
// of 1 is read at 0 (its index folded, as canonicalization leaves it).
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<1x17x7x7xf32>) {
// CHECK:           %[[X:.+]] = linalg.generic
// CHECK:             tensor.extract %{{.+}} : tensor<1x17x13x13xf32>
// CHECK:           %[[Y:.+]] = linalg.generic {{.*}} ins(%[[X]], %{{.+}} : tensor<1x17x15x15xf32>, tensor<17x1x3x3xf32>)
// CHECK:           hexir.yield %[[Y]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// OFF-LABEL: func.func @depthwise
// OFF:         hexir.dispatch_region -> (tensor<1x17x15x15xf32>)
// OFF:         hexir.dispatch_region -> (tensor<1x17x7x7xf32>)
// OFF:         return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @depthwise(%x0: tensor<1x17x13x13xf32>, %w: tensor<17x1x3x3xf32>) -> tensor<1x17x7x7xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %e0 = tensor.empty() : tensor<1x17x15x15xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e0 : tensor<1x17x15x15xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %a = arith.subi %i2, %c1 : index
    %a1 = arith.maxsi %a, %c0 : index
    %a2 = arith.minsi %a1, %c12 : index
    %a3 = arith.cmpi sge, %a, %c0 : index
    %a4 = arith.cmpi slt, %a, %c13 : index
    %a5 = arith.andi %a3, %a4 : i1
    %b = arith.subi %i3, %c1 : index
    %b1 = arith.maxsi %b, %c0 : index
    %b2 = arith.minsi %b1, %c12 : index
    %b3 = arith.cmpi sge, %b, %c0 : index
    %b4 = arith.cmpi slt, %b, %c13 : index
    %b5 = arith.andi %b3, %b4 : i1
    %in = arith.andi %a5, %b5 : i1
    %v = tensor.extract %x0[%c0, %i1, %a2, %b2] : tensor<1x17x13x13xf32>
    %r = arith.select %in, %v, %z : f32
    linalg.yield %r : f32
  } -> tensor<1x17x15x15xf32>
  %e = tensor.empty() : tensor<1x17x7x7xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x17x7x7xf32>) -> tensor<1x17x7x7xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x17x15x15xf32>, tensor<17x1x3x3xf32>) outs(%f : tensor<1x17x7x7xf32>) {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<1x17x7x7xf32>
  return %y : tensor<1x17x7x7xf32>
}

// -----

// A dense convolution reading the pad: the pad stays a dispatch of its own.
// CHECK-LABEL: func.func @dense
// CHECK:         hexir.dispatch_region -> (tensor<1x17x15x15xf32>)
// CHECK:         hexir.dispatch_region -> (tensor<1x5x7x7xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @dense(%x0: tensor<1x17x13x13xf32>, %w: tensor<5x17x3x3xf32>) -> tensor<1x5x7x7xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %e0 = tensor.empty() : tensor<1x17x15x15xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e0 : tensor<1x17x15x15xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %a = arith.subi %i2, %c1 : index
    %a1 = arith.maxsi %a, %c0 : index
    %a2 = arith.minsi %a1, %c12 : index
    %a3 = arith.cmpi sge, %a, %c0 : index
    %a4 = arith.cmpi slt, %a, %c13 : index
    %a5 = arith.andi %a3, %a4 : i1
    %b = arith.subi %i3, %c1 : index
    %b1 = arith.maxsi %b, %c0 : index
    %b2 = arith.minsi %b1, %c12 : index
    %b3 = arith.cmpi sge, %b, %c0 : index
    %b4 = arith.cmpi slt, %b, %c13 : index
    %b5 = arith.andi %b3, %b4 : i1
    %in = arith.andi %a5, %b5 : i1
    %v = tensor.extract %x0[%i0, %i1, %a2, %b2] : tensor<1x17x13x13xf32>
    %r = arith.select %in, %v, %z : f32
    linalg.yield %r : f32
  } -> tensor<1x17x15x15xf32>
  %e = tensor.empty() : tensor<1x5x7x7xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x5x7x7xf32>) -> tensor<1x5x7x7xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x17x15x15xf32>, tensor<5x17x3x3xf32>) outs(%f : tensor<1x5x7x7xf32>) {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<1x5x7x7xf32>
  return %y : tensor<1x5x7x7xf32>
}

// -----

// A dynamic export's pad (dynamic batch and plane: x0's extents and the padded ones run-time
// values) joins its depthwise convolution's dispatch too; codegen/CPUDynamicPad.h places its
// copy at the constant lows, which the kernel reads from x0.
// CHECK-LABEL: func.func @depthwise_dynamic
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<?x17x?x?xf32>{{.*}}) {
// CHECK:           %[[X:.+]] = linalg.generic
// CHECK:             tensor.extract %{{.+}} : tensor<?x17x?x?xf32>
// CHECK:           %[[Y:.+]] = linalg.generic {{.*}} ins(%[[X]], %{{.+}} : tensor<?x17x?x?xf32>, tensor<17x1x3x3xf32>)
// CHECK:           hexir.yield %[[Y]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// OFF-LABEL: func.func @depthwise_dynamic
// OFF:         hexir.dispatch_region -> (tensor<?x17x?x?xf32>
// OFF:         hexir.dispatch_region -> (tensor<?x17x?x?xf32>
// OFF:         return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @depthwise_dynamic(%x0: tensor<?x17x?x?xf32>, %w: tensor<17x1x3x3xf32>) -> tensor<?x17x?x?xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = tensor.dim %x0, %c0 : tensor<?x17x?x?xf32>
  %h = tensor.dim %x0, %c2 : tensor<?x17x?x?xf32>
  %wd = tensor.dim %x0, %c3 : tensor<?x17x?x?xf32>
  %h1 = arith.subi %h, %c1 : index
  %w1 = arith.subi %wd, %c1 : index
  %hp = arith.addi %h, %c2 : index
  %wp = arith.addi %wd, %c2 : index
  %e0 = tensor.empty(%n, %hp, %wp) : tensor<?x17x?x?xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e0 : tensor<?x17x?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %a = arith.subi %i2, %c1 : index
    %a1 = arith.maxsi %a, %c0 : index
    %a2 = arith.minsi %a1, %h1 : index
    %a3 = arith.cmpi sge, %a, %c0 : index
    %a4 = arith.cmpi slt, %a, %h : index
    %a5 = arith.andi %a3, %a4 : i1
    %b = arith.subi %i3, %c1 : index
    %b1 = arith.maxsi %b, %c0 : index
    %b2 = arith.minsi %b1, %w1 : index
    %b3 = arith.cmpi sge, %b, %c0 : index
    %b4 = arith.cmpi slt, %b, %wd : index
    %b5 = arith.andi %b3, %b4 : i1
    %in = arith.andi %a5, %b5 : i1
    %v = tensor.extract %x0[%i0, %i1, %a2, %b2] : tensor<?x17x?x?xf32>
    %r = arith.select %in, %v, %z : f32
    linalg.yield %r : f32
  } -> tensor<?x17x?x?xf32>
  %oh = arith.divui %h1, %c2 : index
  %oh1 = arith.addi %oh, %c1 : index
  %ow = arith.divui %w1, %c2 : index
  %ow1 = arith.addi %ow, %c1 : index
  %e = tensor.empty(%n, %oh1, %ow1) : tensor<?x17x?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x17x?x?xf32>) -> tensor<?x17x?x?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x17x?x?xf32>, tensor<17x1x3x3xf32>) outs(%f : tensor<?x17x?x?xf32>) {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<?x17x?x?xf32>
  return %y : tensor<?x17x?x?xf32>
}
