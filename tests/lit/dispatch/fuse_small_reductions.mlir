// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-form-dispatch-regions | FileCheck %s --check-prefix=REGIONS
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions=max-extent=32 --hexir-form-dispatch-regions | FileCheck %s --check-prefix=LIMIT
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections --hexir-form-dispatch-regions | FileCheck %s --check-prefix=GROUP
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions=cuda-kernels=true | FileCheck %s --check-prefix=CUDAFUSE
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions=cuda-kernels=true 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections=max-work=8000 --hexir-form-dispatch-regions | FileCheck %s --check-prefix=BIG

// RMSNorm (sum of squares, then w * x / sqrt(ss / 64 + eps)) read by the q, k and v
// projections: each projection gets its own marked copy of both generics, and the originals
// go. Dispatch formation then puts each copy into its projection's region: three dispatches
// instead of five (sum, scaling, three projections).
// CHECK-LABEL: func.func @rmsnorm_qkv
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}}hexir.recompute_in_consumer
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}}hexir.recompute_in_consumer
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}}hexir.recompute_in_consumer
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}}hexir.recompute_in_consumer
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}}hexir.recompute_in_consumer
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}}hexir.recompute_in_consumer
// CHECK-NOT:     linalg.generic
// CHECK-COUNT-3: linalg.matvec
// CUDA kernels distribute matvecs after a whole sum: the same copies.
// CUDAFUSE-LABEL: func.func @rmsnorm_qkv
// CUDAFUSE-COUNT-6: hexir.recompute_in_consumer
// CUDAFUSE-NOT:     hexir.recompute_in_consumer
// CUDAFUSE-COUNT-3: linalg.matvec
// REGIONS-LABEL: func.func @rmsnorm_qkv
// REGIONS:         hexir.dispatch_region -> (tensor<64xf32>)
// REGIONS:           %[[SS:.+]] = linalg.generic {{.*}}iterator_types = ["reduction"]
// REGIONS:           %[[XN:.+]] = linalg.generic {{.*}}ins(%{{.+}}, %[[SS]], %{{.+}} :
// REGIONS:           %[[Q:.+]] = linalg.matvec ins(%{{.+}}, %[[XN]] :
// REGIONS:           hexir.yield %[[Q]]
// REGIONS:         hexir.dispatch_region -> (tensor<32xf32>)
// REGIONS-COUNT-2:   linalg.generic
// REGIONS:           linalg.matvec
// REGIONS:         hexir.dispatch_region -> (tensor<32xf32>)
// REGIONS-COUNT-2:   linalg.generic
// REGIONS:           linalg.matvec
// REGIONS-NOT:     hexir.dispatch_region
// REGIONS-NOT:     hexir.recompute_in_consumer
// REGIONS:         return
// Grouped (CPU): the three projections and the three copies are one region with three
// results (the copies are equal; the CPU lowering's CSE computes the norm once).
// GROUP-LABEL: func.func @rmsnorm_qkv
// GROUP:         hexir.dispatch_region -> (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>)
// GROUP-COUNT-3:   linalg.generic {{.*}}iterator_types = ["reduction"]
// GROUP-COUNT-3:   linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// GROUP:         } {hexir.dispatch_group = "small_layer"}
// GROUP-NOT:     hexir.dispatch_region
// GROUP:         return
// A group whose projections (one level: they could run side by side) do more work than
// max-work (4096 + 2 x 2048 > 8000) is not formed.
// BIG-LABEL:     func.func @rmsnorm_qkv
// BIG-NOT:       hexir.dispatch_group
// BIG-COUNT-3:   hexir.dispatch_region
// BIG-NOT:       hexir.dispatch_region
// BIG:           return
// Above the limit: the sum, the scaling and each projection are dispatches of their own.
// LIMIT-LABEL:   func.func @rmsnorm_qkv
// LIMIT-COUNT-5: hexir.dispatch_region
// LIMIT-NOT:     hexir.dispatch_region
// LIMIT:         return
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
func.func @rmsnorm_qkv(%x: tensor<64xf32>, %w: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>) -> (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<64xf32>
  %xn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<64xf32>, tensor<f32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 64.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %mean = arith.divf %sum, %n : f32
    %r = arith.addf %mean, %eps : f32
    %inv = math.rsqrt %r : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %eq = tensor.empty() : tensor<64xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<64xf32>) -> tensor<64xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<64x64xf32>, tensor<64xf32>) outs(%zq : tensor<64xf32>) -> tensor<64xf32>
  %ek = tensor.empty() : tensor<32xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<32xf32>) -> tensor<32xf32>
  %k = linalg.matvec ins(%wk, %xn : tensor<32x64xf32>, tensor<64xf32>) outs(%zk : tensor<32xf32>) -> tensor<32xf32>
  %v = linalg.matvec ins(%wv, %xn : tensor<32x64xf32>, tensor<64xf32>) outs(%zk : tensor<32xf32>) -> tensor<32xf32>
  return %q, %k, %v : tensor<64xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

// A dynamic extent: nothing is copied (the norm stays two dispatches).
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT:     hexir.recompute_in_consumer
// CHECK:         return
// REGIONS-LABEL: func.func @dynamic
// REGIONS-COUNT-3: hexir.dispatch_region
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
func.func @dynamic(%x: tensor<?xf32>, %wq: tensor<8x?xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<?xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty(%d) : tensor<?xf32>
  %xn = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel"]} ins(%x, %ss : tensor<?xf32>, tensor<f32>) outs(%e1 : tensor<?xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %y = arith.mulf %a, %sum : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %eq = tensor.empty() : tensor<8xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<8xf32>) -> tensor<8xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<8x?xf32>, tensor<?xf32>) outs(%zq : tensor<8xf32>) -> tensor<8xf32>
  return %q : tensor<8xf32>
}

// -----

// The scaled vector is also returned (a use that is no contraction): nothing is copied,
// since the scaling would stay a dispatch anyway.
// CHECK-LABEL: func.func @also_returned
// CHECK-NOT:     hexir.recompute_in_consumer
// CHECK:         return
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
func.func @also_returned(%x: tensor<16xf32>, %wq: tensor<16x16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<16xf32>
  %xn = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel"]} ins(%x, %ss : tensor<16xf32>, tensor<f32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %y = arith.mulf %a, %sum : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eq = tensor.empty() : tensor<16xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<16xf32>) -> tensor<16xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  return %q, %xn : tensor<16xf32>, tensor<16xf32>
}

// -----

// The cost model: a norm over 4 x 16 (64 + 64 to recompute) read by row sums of 16 (each
// point reduces only 16): recomputing would cost 8x the consumer's work, so nothing is copied.
// CHECK-LABEL: func.func @consumer_too_small
// CHECK-NOT:     hexir.recompute_in_consumer
// CHECK:         return
#id2 = affine_map<(i, j) -> (i, j)>
#all2 = affine_map<(i, j) -> ()>
#row = affine_map<(i, j) -> (i)>
func.func @consumer_too_small(%x: tensor<4x16xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id2, #all2], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<4x16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %xn = linalg.generic {indexing_maps = [#id2, #all2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %ss : tensor<4x16xf32>, tensor<f32>) outs(%e1 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %y = arith.mulf %a, %sum : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%xn : tensor<4x16xf32>) outs(%zr : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// CUDA (cuda-kernels=true): a norm whose sum keeps a dimension (one sum per row) is not
// recomputed per point by a CUDA kernel: every consumer is refused with a remark, nothing is
// copied (the CPU copies it: each point of the consumer reduces all 64 elements).
// CHECK-LABEL: func.func @row_norm
// CHECK:         hexir.recompute_in_consumer
// REMARK: remark: small norm not recomputed in this contraction for CUDA: the reduction keeps dimensions (CUDA recomputes only a whole, rank-0 reduction per point)
// CUDAFUSE-LABEL: func.func @row_norm
// CUDAFUSE-NOT:     hexir.recompute_in_consumer
// CUDAFUSE:         return
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#w3 = affine_map<(n, i, j) -> (n, i, j)>
#x3 = affine_map<(n, i, j) -> (i, j)>
#o3 = affine_map<(n, i, j) -> (n)>
func.func @row_norm(%x: tensor<4x16xf32>, %w: tensor<8x4x16xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x16xf32>) outs(%z0 : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %xn = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %ss : tensor<4x16xf32>, tensor<4xf32>) outs(%e1 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %y = arith.mulf %a, %sum : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %er = tensor.empty() : tensor<8xf32>
  %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#w3, #x3, #o3], iterator_types = ["parallel", "reduction", "reduction"]} ins(%w, %xn : tensor<8x4x16xf32>, tensor<4x16xf32>) outs(%zr : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// On CUDA one norm (a whole sum) read by a matvec and by a contraction with two reduction
// loops: the matvec gets its copy (a warp per row recomputes the sum), placed where the
// scaling was; the other consumer is refused with a remark and keeps reading the original
// sum and scaling.
// REMARK: remark: small norm not recomputed in this contraction for CUDA: the contraction has 2 reduction loops into 1 result(s) (CUDA distributes one reduction loop into one result)
// CUDAFUSE-LABEL: func.func @mixed_consumers
// CUDAFUSE:         %[[SS0:.+]] = linalg.generic {{.*}}iterator_types = ["reduction"]
// CUDAFUSE-NOT:       hexir.recompute_in_consumer
// CUDAFUSE:         %[[SS:.+]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}}hexir.recompute_in_consumer = 0
// CUDAFUSE:         %[[XN:.+]] = linalg.generic {{.*}}ins(%{{.+}}, %[[SS]] :{{.*}}hexir.recompute_in_consumer = 0
// CUDAFUSE:         %[[XN0:.+]] = linalg.generic {{.*}}ins(%{{.+}}, %[[SS0]] :
// CUDAFUSE-NOT:       hexir.recompute_in_consumer
// CUDAFUSE:         linalg.matvec ins(%{{.+}}, %[[XN]] :
// CUDAFUSE:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]{{.*}}ins(%{{.+}}, %[[XN0]] :
#i1 = affine_map<(d) -> (d)>
#a1 = affine_map<(d) -> ()>
#w3 = affine_map<(n, i, j) -> (n, i, j)>
#x3 = affine_map<(n, i, j) -> (i * 16 + j)>
#o3 = affine_map<(n, i, j) -> (n)>
func.func @mixed_consumers(%x: tensor<64xf32>, %wq: tensor<16x64xf32>, %w: tensor<8x4x16xf32>) -> (tensor<16xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#i1, #a1], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<64xf32>
  %xn = linalg.generic {indexing_maps = [#i1, #a1, #i1], iterator_types = ["parallel"]} ins(%x, %ss : tensor<64xf32>, tensor<f32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %y = arith.mulf %a, %sum : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %eq = tensor.empty() : tensor<16xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<16xf32>) -> tensor<16xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<16x64xf32>, tensor<64xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %er = tensor.empty() : tensor<8xf32>
  %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#w3, #x3, #o3], iterator_types = ["parallel", "reduction", "reduction"]} ins(%w, %xn : tensor<8x4x16xf32>, tensor<64xf32>) outs(%zr : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %q, %r : tensor<16xf32>, tensor<8xf32>
}
