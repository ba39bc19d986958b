// RUN: hexir-opt %s -split-input-file --hexir-group-small-projections="max-work=32768 max-norm-extent=16384" --hexir-form-dispatch-regions | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-group-small-projections="max-work=32768" --hexir-form-dispatch-regions | FileCheck %s --check-prefix=OFF
// RUN: hexir-opt %s -split-input-file --hexir-group-small-projections="max-work=32768 max-norm-extent=2046" --hexir-form-dispatch-regions | FileCheck %s --check-prefix=OFF

// hexir-group-small-projections' max-norm-extent (CUDA; passes/dispatch/fusion/README.md): a
// norm too wide for hexir-fuse-small-reductions' copies (TinyLlama's 2048; here 2047) is one
// `small_layer` region of its sum of squares and its scaling (f16 weight), read by two
// projections: 3 dispatches instead of 4 (CUDA runs the region as one block).
// CHECK-LABEL: func.func @wide_norm
// CHECK:         %[[N:.+]] = hexir.dispatch_region -> (tensor<2047xf32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK:           %[[XN:.+]] = linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK:           hexir.yield %[[XN]]
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return
// Before (max-norm-extent 0, the CPU's setting) or over the limit (2046): the sum and the
// scaling are dispatches of their own, nothing grouped.
// OFF-LABEL: func.func @wide_norm
// OFF-NOT:     hexir.dispatch_group
// OFF-COUNT-4: hexir.dispatch_region
// OFF-NOT:     hexir.dispatch_region
// OFF:         return
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
#rows = affine_map<(i, k) -> (i, k)>
#cols = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>
func.func @wide_norm(%x: tensor<2047xf32>, %g: tensor<2047xf16>, %wq: tensor<31x2047xf32>, %wk: tensor<7x2047xf32>) -> (tensor<31xf32>, tensor<7xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<2047xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<2047xf32>
  %xn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%x, %ss, %g : tensor<2047xf32>, tensor<f32>, tensor<2047xf16>) outs(%e1 : tensor<2047xf32>) {
  ^bb0(%a: f32, %sum: f32, %gw: f16, %o: f32):
    %gf = arith.extf %gw : f16 to f32
    %n = arith.constant 2047.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %gf, %xs : f32
    linalg.yield %y : f32
  } -> tensor<2047xf32>
  %eq = tensor.empty() : tensor<31xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<31xf32>) -> tensor<31xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<31x2047xf32>, tensor<2047xf32>) outs(%zq : tensor<31xf32>) -> tensor<31xf32>
  %ek = tensor.empty() : tensor<7xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<7xf32>) -> tensor<7xf32>
  %k = linalg.matvec ins(%wk, %xn : tensor<7x2047xf32>, tensor<2047xf32>) outs(%zk : tensor<7xf32>) -> tensor<7xf32>
  return %q, %k : tensor<31xf32>, tensor<7xf32>
}

// -----

// A sum per row (a batched norm: 4 rows of 512) is no one-point reduction: never grouped, a
// block would give each row's sum to one thread.
// CHECK-LABEL: func.func @batched_norm
// CHECK-NOT:     hexir.dispatch_group
// CHECK:         return
#rk = affine_map<(i, k) -> (i, k)>
#ri = affine_map<(i, k) -> (i)>
#p2 = affine_map<(i, k) -> (i, k)>
#p2r = affine_map<(i, k) -> (i)>
func.func @batched_norm(%x: tensor<4x512xf32>) -> tensor<4x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.generic {indexing_maps = [#rk, #ri], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x512xf32>) outs(%z0 : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x512xf32>
  %xn = linalg.generic {indexing_maps = [#p2, #p2r, #p2], iterator_types = ["parallel", "parallel"]} ins(%x, %ss : tensor<4x512xf32>, tensor<4xf32>) outs(%e1 : tensor<4x512xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %inv = math.rsqrt %sum : f32
    %y = arith.mulf %a, %inv : f32
    linalg.yield %y : f32
  } -> tensor<4x512xf32>
  return %xn : tensor<4x512xf32>
}

// -----

// A sum read by a contraction as well as by its scaling: the sum escapes to a non-elementwise
// user, nothing grouped.
// CHECK-LABEL: func.func @sum_read_twice
// CHECK-NOT:     hexir.dispatch_group
// CHECK:         return
#i = affine_map<(d) -> (d)>
#s = affine_map<(d) -> ()>
#r2 = affine_map<(i, k) -> (i, k)>
#c2 = affine_map<(i, k) -> ()>
#o2 = affine_map<(i, k) -> (i)>
func.func @sum_read_twice(%x: tensor<1000xf32>, %w: tensor<3x1000xf32>) -> (tensor<1000xf32>, tensor<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#i, #s], iterator_types = ["reduction"]} ins(%x : tensor<1000xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<1000xf32>
  %xn = linalg.generic {indexing_maps = [#i, #s, #i], iterator_types = ["parallel"]} ins(%x, %ss : tensor<1000xf32>, tensor<f32>) outs(%e1 : tensor<1000xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %inv = math.rsqrt %sum : f32
    %y = arith.mulf %a, %inv : f32
    linalg.yield %y : f32
  } -> tensor<1000xf32>
  %e2 = tensor.empty() : tensor<3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3xf32>) -> tensor<3xf32>
  %t = linalg.generic {indexing_maps = [#r2, #c2, #o2], iterator_types = ["parallel", "reduction"]} ins(%w, %ss : tensor<3x1000xf32>, tensor<f32>) outs(%z2 : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %xn, %t : tensor<1000xf32>, tensor<3xf32>
}
