// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions=fuse-elementwise=false | FileCheck %s --check-prefix=NOFUSE
// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions=unfused-reduction-extent=128 | FileCheck %s --check-prefix=WARP

// The fill and its empty are cloned into the matmul's region; the bias+relu generic is
// fused into the same region.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<4x16xf32>) {
// CHECK:           arith.constant 0.0
// CHECK:           tensor.empty
// CHECK:           linalg.fill
// CHECK:           %[[M:.+]] = linalg.matmul
// CHECK:           %[[G:.+]] = linalg.generic {{.*}} ins(%[[M]]
// CHECK:           hexir.yield %[[G]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// NOFUSE-LABEL: func.func @matmul_bias_relu
// NOFUSE-COUNT-2: hexir.dispatch_region
#map = affine_map<(i, j) -> (i, j)>
#bcast = affine_map<(i, j) -> (j)>
func.func @matmul_bias_relu(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #bcast, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %c0 = arith.constant 0.0 : f32
    %t = arith.maximumf %s, %c0 : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Two named ops: one region each (named consumers are not fused).
// CHECK-LABEL: func.func @two_adds
// CHECK:         %[[A:.+]] = hexir.dispatch_region
// CHECK:           linalg.add
// CHECK:         %[[B:.+]] = hexir.dispatch_region
// CHECK:           linalg.add ins(%[[A]]
// CHECK:         return %[[B]]
func.func @two_adds(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.add ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %1 = linalg.add ins(%0, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// Roots inside structured control flow get their region where they are.
// CHECK-LABEL: func.func @in_loop
// CHECK:         scf.for
// CHECK:           hexir.dispatch_region -> (tensor<4xf32>)
// CHECK:             linalg.generic
// CHECK:           scf.yield
func.func @in_loop(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %d = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %w = arith.addf %v, %v : f32
      linalg.yield %w : f32
    } -> tensor<4xf32>
    scf.yield %d : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// Producer fusion: an elementwise generic used only by a linalg op is computed inside that
// op's dispatch (matmul of a scaled input = one region); with fusion off it is its own.
// CHECK-LABEL: func.func @producer
// CHECK:         hexir.dispatch_region -> (tensor<4x4xf32>)
// CHECK:           linalg.generic
// CHECK:           arith.mulf
// CHECK:           linalg.matmul
// CHECK:           hexir.yield
// CHECK-NOT:     hexir.dispatch_region
// NOFUSE-LABEL: func.func @producer
// NOFUSE-COUNT-2: hexir.dispatch_region
func.func @producer(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %s: f32) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %s : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%scaled, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// -----

// A consumer whose body uses a host scalar computed after the root (here from a
// tensor.extract) is not fused into the root's region: its own region follows the scalar.
// A scalar constant defined after the root is hoisted, so that consumer still fuses.
// CHECK-LABEL: func.func @consumer_uses_later_scalar
// CHECK:         %[[R:.+]] = hexir.dispatch_region
// CHECK:           linalg.matmul
// CHECK-NOT:       linalg.generic
// CHECK:           hexir.yield
// CHECK:         %[[V:.+]] = tensor.extract
// CHECK:         %[[W:.+]] = arith.mulf %[[V]], %[[V]]
// CHECK:         hexir.dispatch_region
// CHECK:           linalg.generic {{.*}} ins(%[[R]]
// CHECK:             arith.addf %{{.+}}, %[[W]]
// CHECK-LABEL: func.func @consumer_uses_later_constant
// CHECK:         arith.constant 2.0
// CHECK:         hexir.dispatch_region
// CHECK:           linalg.matmul
// CHECK:           linalg.generic
// CHECK-NOT:     hexir.dispatch_region
#map = affine_map<(i, j) -> (i, j)>
func.func @consumer_uses_later_scalar(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %s: tensor<1xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  %v = tensor.extract %s[%c0] : tensor<1xf32>
  %w = arith.mulf %v, %v : f32
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.addf %x, %w : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
func.func @consumer_uses_later_constant(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  %two = arith.constant 2.0 : f32
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.mulf %x, %two : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// Static 0 extents: the op never runs its body, so its result is its init. A K=0 matmul
// becomes its fill (one fill dispatch); an op over a 0x5 tensor becomes its empty.
// CHECK-LABEL: func.func @zero_reduction
// CHECK:         %[[R:.+]] = hexir.dispatch_region
// CHECK:           linalg.fill
// CHECK-NOT:       linalg.matmul
// CHECK:         return %[[R]]
// CHECK-LABEL: func.func @zero_rows
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<0x5xf32>
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[E]]
func.func @zero_reduction(%a: tensor<2x0xf32>, %b: tensor<0x4xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x0xf32>, tensor<0x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}
func.func @zero_rows(%a: tensor<0x4xf32>, %b: tensor<4x5xf32>) -> tensor<0x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<0x5xf32>) -> tensor<0x5xf32>
  %m = linalg.matmul ins(%a, %b : tensor<0x4xf32>, tensor<4x5xf32>) outs(%f : tensor<0x5xf32>) -> tensor<0x5xf32>
  return %m : tensor<0x5xf32>
}

// -----

// A fill read as an input is never cloned as a (dynamically sized) kernel temporary: a
// generic consumer reads its scalar instead (operand dropped); a named consumer reads the
// output of a fill dispatch of its own.
// CHECK-LABEL: func.func @fill_as_generic_input
// CHECK-SAME:      (%[[A:.+]]: tensor<?xf32>)
// CHECK:         %[[TWO:.+]] = arith.constant 2.0
// CHECK:         hexir.dispatch_region
// CHECK-NOT:       linalg.fill
// CHECK:           linalg.generic {{.*}} ins(%[[A]] : tensor<?xf32>)
// CHECK:             arith.mulf %{{.+}}, %[[TWO]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK-LABEL: func.func @fill_as_matmul_input
// CHECK:         %[[B:.+]] = hexir.dispatch_region
// CHECK:           linalg.fill
// CHECK:           hexir.yield
// CHECK:         hexir.dispatch_region
// CHECK:           linalg.fill
// CHECK:           linalg.matmul ins(%{{.+}}, %[[B]] :
#map = affine_map<(i) -> (i)>
func.func @fill_as_generic_input(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %two = arith.constant 2.0 : f32
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%two : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%a, %f : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.mulf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @fill_as_matmul_input(%a: tensor<?x?xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %k = tensor.dim %a, %c1 : tensor<?x?xf32>
  %two = arith.constant 2.0 : f32
  %z = arith.constant 0.0 : f32
  %eb = tensor.empty(%k) : tensor<?x4xf32>
  %b = linalg.fill ins(%two : f32) outs(%eb : tensor<?x4xf32>) -> tensor<?x4xf32>
  %e = tensor.empty(%m) : tensor<?x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// A reduction's broadcasting consumer (RMSNorm: every element scaled by the sum of squares)
// is not fused into the reduction's dispatch: kernels are tiled over the consumer's points,
// so each point would recompute the whole sum. Here the scaling becomes a producer of the
// matvec instead (elementwise, cheap to recompute), and the residual add, which reads the
// matvec's result once per element, is still fused.
// CHECK-LABEL: func.func @rms_scale_not_fused
// CHECK:         hexir.dispatch_region -> (tensor<f32>)
// CHECK:           iterator_types = ["reduction"]
// CHECK-NOT:       arith.divf
// CHECK:           hexir.yield
// CHECK:         hexir.dispatch_region -> (tensor<64xf32>)
// CHECK:           arith.divf
// CHECK:           linalg.matvec
// CHECK:           arith.addf
// CHECK:           hexir.yield
func.func @rms_scale_not_fused(%x: tensor<64xf32>, %w: tensor<64x64xf32>) -> tensor<64xf32> {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<64xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %ss : tensor<64xf32>, tensor<f32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  } -> tensor<64xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %mv = linalg.matvec ins(%w, %n : tensor<64x64xf32>, tensor<64xf32>) outs(%f1 : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%mv, %x : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// An elementwise producer read by every row of a 256-row matvec would be recomputed 256
// times: it stays a dispatch of its own. The residual add joins the matvec's region, except
// for targets that give reductions of >= 128 elements a warp per point (WARP).
// CHECK-LABEL: func.func @producer_recompute_bound
// CHECK:         hexir.dispatch_region -> (tensor<256xf32>)
// CHECK:           arith.mulf
// CHECK-NOT:       linalg.matvec
// CHECK:           hexir.yield
// CHECK:         hexir.dispatch_region -> (tensor<256xf32>)
// CHECK:           linalg.matvec
// CHECK:           arith.addf
// WARP-LABEL:  func.func @producer_recompute_bound
// WARP:          hexir.dispatch_region
// WARP:          hexir.dispatch_region
// WARP:            linalg.matvec
// WARP-NOT:        arith.addf
// WARP:            hexir.yield
// WARP:          hexir.dispatch_region
// WARP:            arith.addf
func.func @producer_recompute_bound(%x: tensor<256xf32>, %w: tensor<256x256xf32>) -> tensor<256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<256xf32>) outs(%e : tensor<256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %mv = linalg.matvec ins(%w, %s : tensor<256x256xf32>, tensor<256xf32>) outs(%f : tensor<256xf32>) -> tensor<256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%mv, %x : tensor<256xf32>, tensor<256xf32>) outs(%e : tensor<256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<256xf32>
  return %r : tensor<256xf32>
}

// -----

// Generics marked with one dispatch group instance form one region (a reduction and its
// broadcast consumer, normally two), placed at the last member, marked with the group's kind;
// two instances give two regions; the unmarked producer of the first stays a region of its own.
// CHECK-LABEL: func.func @dispatch_groups
// CHECK:         %[[SQ:.+]] = hexir.dispatch_region
// CHECK:           arith.mulf
// CHECK:         hexir.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NOT:       hexir.dispatch_group
// CHECK:           linalg.generic
// CHECK:           arith.addf
// CHECK:           linalg.generic
// CHECK:           arith.divf
// CHECK:           hexir.yield
// CHECK-NEXT:    } {hexir.dispatch_group = "pair"}
// CHECK:         hexir.dispatch_region -> (tensor<4x8xf32>) {
// CHECK:           arith.addf
// CHECK:           arith.divf
// CHECK:         } {hexir.dispatch_group = "pair"}
func.func @dispatch_groups(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %r = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%r : tensor<4xf32>) -> tensor<4xf32>
  %s0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"], hexir.dispatch_group = "pair.0"} ins(%sq : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %d0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"], hexir.dispatch_group = "pair.0"} ins(%sq, %s0 : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %s1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"], hexir.dispatch_group = "pair.1"} ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %d1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"], hexir.dispatch_group = "pair.1"} ins(%x, %s1 : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %d0, %d1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A transpose of a constant weight (an ONNX Gemm's transB, M = 1) is a dispatch of its own,
// so hexir-lift-constant-dispatches moves it to load; fused, it ran on every call. The same
// transpose of an argument, and a broadcast of a constant (a bias), are still fused.
// CHECK-LABEL: func.func @gemm_constant_transposed_weight
// CHECK:         %[[W:.+]] = arith.constant dense<{{.*}}> : tensor<3x2xf32>
// CHECK:         %[[T:.+]] = hexir.dispatch_region -> (tensor<2x3xf32>) {
// CHECK-NOT:       linalg.fill
// CHECK:           linalg.generic {{.*}} ins(%[[W]] : tensor<3x2xf32>)
// CHECK:           hexir.yield
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<1x3xf32>) {
// CHECK:           linalg.fill
// CHECK:           linalg.generic {{.*}} ins(%{{.+}}, %[[T]] : tensor<1x2xf32>, tensor<2x3xf32>)
// CHECK:         return %[[R]]
#t_in = affine_map<(i, j) -> (j, i)>
#t_out = affine_map<(i, j) -> (i, j)>
#g_a = affine_map<(m, n, k) -> (m, k)>
#g_b = affine_map<(m, n, k) -> (k, n)>
#g_c = affine_map<(m, n, k) -> (m, n)>
func.func @gemm_constant_transposed_weight(%x: tensor<1x2xf32>) -> tensor<1x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %t = linalg.generic {indexing_maps = [#t_in, #t_out], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<3x2xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3xf32>
  %z = arith.constant 0.0 : f32
  %ce = tensor.empty() : tensor<1x3xf32>
  %c = linalg.fill ins(%z : f32) outs(%ce : tensor<1x3xf32>) -> tensor<1x3xf32>
  %r = linalg.generic {indexing_maps = [#g_a, #g_b, #g_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %t : tensor<1x2xf32>, tensor<2x3xf32>) outs(%c : tensor<1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_argument_transposed_weight
// CHECK:         hexir.dispatch_region -> (tensor<1x3xf32>) {
// CHECK:           linalg.generic {{.*}} ins(%{{.+}} : tensor<3x2xf32>)
// CHECK:           linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x2xf32>, tensor<2x3xf32>)
// CHECK-NOT:     hexir.dispatch_region
#t_in = affine_map<(i, j) -> (j, i)>
#t_out = affine_map<(i, j) -> (i, j)>
#g_a = affine_map<(m, n, k) -> (m, k)>
#g_b = affine_map<(m, n, k) -> (k, n)>
#g_c = affine_map<(m, n, k) -> (m, n)>
func.func @gemm_argument_transposed_weight(%x: tensor<1x2xf32>, %w: tensor<3x2xf32>) -> tensor<1x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %t = linalg.generic {indexing_maps = [#t_in, #t_out], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<3x2xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3xf32>
  %z = arith.constant 0.0 : f32
  %ce = tensor.empty() : tensor<1x3xf32>
  %c = linalg.fill ins(%z : f32) outs(%ce : tensor<1x3xf32>) -> tensor<1x3xf32>
  %r = linalg.generic {indexing_maps = [#g_a, #g_b, #g_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %t : tensor<1x2xf32>, tensor<2x3xf32>) outs(%c : tensor<1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}

// -----

// CHECK-LABEL: func.func @constant_bias_broadcast
// CHECK:         hexir.dispatch_region -> (tensor<4x3xf32>) {
// CHECK:           linalg.generic {{.*}} ins(%{{.+}} : tensor<3xf32>)
// CHECK:           linalg.generic
// CHECK-NOT:     hexir.dispatch_region
#b_in = affine_map<(i, j) -> (j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @constant_bias_broadcast(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %bias = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %b = linalg.generic {indexing_maps = [#b_in, #id], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// SiLU after a convolution (the ONNX importer's Conv, Sigmoid, Mul): the convolution's
// result is read by the sigmoid and by the multiply; the sigmoid is the multiply's fusable
// producer, so both join the convolution's region, which yields the multiply.
// CHECK-LABEL: func.func @convolution_silu
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<1x5x3x3xf32>) {
// CHECK:           %[[C:.+]] = linalg.generic {{.*}}"reduction", "reduction", "reduction"]{{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x3x5x5xf32>, tensor<5x3x3x3xf32>)
// CHECK:           %[[S:.+]] = linalg.generic {{.*}} ins(%[[C]] : tensor<1x5x3x3xf32>)
// CHECK:             math.exp
// CHECK:           %[[M:.+]] = linalg.generic {{.*}} ins(%[[C]], %[[S]] :
// CHECK:             arith.mulf
// CHECK:           hexir.yield %[[M]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// NOFUSE-LABEL: func.func @convolution_silu
// NOFUSE-COUNT-3: hexir.dispatch_region
#x = affine_map<(n, f, h, w, c, i, j) -> (n, c, h + i, w + j)>
#w = affine_map<(n, f, h, w, c, i, j) -> (f, c, i, j)>
#o = affine_map<(n, f, h, w, c, i, j) -> (n, f, h, w)>
#e4 = affine_map<(a, b, c, d) -> (a, b, c, d)>
func.func @convolution_silu(%x: tensor<1x3x5x5xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<1x5x3x3xf32> {
  %e = tensor.empty() : tensor<1x5x3x3xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x5x3x3xf32>) -> tensor<1x5x3x3xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x5x5xf32>, tensor<5x3x3x3xf32>) outs(%f : tensor<1x5x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x5x3x3xf32>
  %sig = linalg.generic {indexing_maps = [#e4, #e4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x5x3x3xf32>) outs(%e : tensor<1x5x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %one, %x1 : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x5x3x3xf32>
  %y = linalg.generic {indexing_maps = [#e4, #e4, #e4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %sig : tensor<1x5x3x3xf32>, tensor<1x5x3x3xf32>) outs(%e : tensor<1x5x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x5x3x3xf32>
  return %y : tensor<1x5x3x3xf32>
}

// -----

// The same read pattern after a matmul (SwiGLU's gate) keeps the consumer apart: only
// convolutions take a consumer that their result's other readers feed.
// CHECK-LABEL: func.func @matmul_silu_not_fused
// CHECK:         hexir.dispatch_region
// CHECK:           linalg.matmul
// CHECK:         hexir.dispatch_region
// CHECK:           math.exp
// CHECK:           arith.mulf
#id2 = affine_map<(i, j) -> (i, j)>
func.func @matmul_silu_not_fused(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %sig = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %one, %x1 : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %sig : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %t = arith.mulf %x, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
