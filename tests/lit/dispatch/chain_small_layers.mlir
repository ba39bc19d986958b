// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections=max-work=768 --hexir-form-dispatch-regions | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections="max-work=768 chain-groups=false group-heads=false" --hexir-form-dispatch-regions | FileCheck %s --check-prefix=OFF
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections=max-work=511 --hexir-form-dispatch-regions | FileCheck %s --check-prefix=LEVEL

// hexir-group-small-projections' chain-groups (passes/dispatch/fusion/README.md): a layer's
// FFN block (RMSNorm, w1/w3, SiLU * mul, w2, the residual) and the next layer's RMSNorm +
// q/k/v, which reads the residual, are two groups; joined they are one region (one kernel):
// the residual, q, k and v its results. Levels of the union: the FFN's (sums 2 x 16,
// scalings 2 x 16, w1 + w3 768, SiLU * mul 24, w2 384, the residual 16), then the norm's
// sums 3 x 16, scalings 3 x 16 and q/k/v 256 + 2 x 128 = 512, within max-work 768.
// CHECK-LABEL: func.func @ffn_then_qkv
// CHECK:         %[[R:.+]]:4 = hexir.dispatch_region -> (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-COUNT-6:   linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return
// chain-groups=false group-heads=false: the two groups are two regions.
// OFF-LABEL: func.func @ffn_then_qkv
// OFF:         hexir.dispatch_region -> (tensor<16xf32>)
// OFF:         } {hexir.dispatch_group = "small_layer"}
// OFF:         hexir.dispatch_region -> (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>)
// OFF:         } {hexir.dispatch_group = "small_layer"}
// OFF-NOT:     hexir.dispatch_region
// OFF:         return
// With max-work 511 the FFN's w1/w3 level (768) is refused and q/k/v's (512) too: no group.
// LEVEL-LABEL: func.func @ffn_then_qkv
// LEVEL-NOT:     hexir.dispatch_group
// LEVEL:         return
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
func.func @ffn_then_qkv(%x: tensor<16xf32>, %w: tensor<16xf32>, %w1: tensor<24x16xf32>, %w3: tensor<24x16xf32>, %w2: tensor<16x24xf32>, %wn: tensor<16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) {
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
  %xn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eh = tensor.empty() : tensor<24xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<24xf32>) -> tensor<24xf32>
  %h1 = linalg.matvec ins(%w1, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %h3 = linalg.matvec ins(%w3, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %es = tensor.empty() : tensor<24xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<24xf32>, tensor<24xf32>) outs(%es : tensor<24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %na = arith.negf %a : f32
    %ex = math.exp %na : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %silu = arith.divf %a, %den : f32
    %y = arith.mulf %silu, %b : f32
    linalg.yield %y : f32
  } -> tensor<24xf32>
  %ed = tensor.empty() : tensor<16xf32>
  %zd = linalg.fill ins(%zero : f32) outs(%ed : tensor<16xf32>) -> tensor<16xf32>
  %d = linalg.matvec ins(%w2, %h : tensor<16x24xf32>, tensor<24xf32>) outs(%zd : tensor<16xf32>) -> tensor<16xf32>
  %er = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %d : tensor<16xf32>, tensor<16xf32>) outs(%er : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<f32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %ss2 = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%r : tensor<16xf32>) outs(%z2 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e3 = tensor.empty() : tensor<16xf32>
  %rn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%r, %ss2, %wn : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e3 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eq = tensor.empty() : tensor<16xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<16xf32>) -> tensor<16xf32>
  %q = linalg.matvec ins(%wq, %rn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %ek = tensor.empty() : tensor<8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<8xf32>) -> tensor<8xf32>
  %k = linalg.matvec ins(%wk, %rn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %v = linalg.matvec ins(%wv, %rn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  return %r, %q, %k, %v : tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The residual read outside both groups between them (a scalar extracted and returned):
// the union would be placed after that read, so the groups stay two regions.
// CHECK-LABEL: func.func @read_between
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>)
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK:         tensor.extract
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:         } {hexir.dispatch_group = "small_layer"}
#id3 = affine_map<(d) -> (d)>
#all3 = affine_map<(d) -> ()>
func.func @read_between(%x: tensor<16xf32>, %w: tensor<16xf32>, %w1: tensor<24x16xf32>, %w3: tensor<24x16xf32>, %w2: tensor<16x24xf32>, %wn: tensor<16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>) -> (f32, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id3, #all3], iterator_types = ["reduction"]} ins(%x : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<16xf32>
  %xn = linalg.generic {indexing_maps = [#id3, #all3, #id3, #id3], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eh = tensor.empty() : tensor<24xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<24xf32>) -> tensor<24xf32>
  %h1 = linalg.matvec ins(%w1, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %h3 = linalg.matvec ins(%w3, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %es = tensor.empty() : tensor<24xf32>
  %h = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<24xf32>, tensor<24xf32>) outs(%es : tensor<24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %na = arith.negf %a : f32
    %ex = math.exp %na : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %silu = arith.divf %a, %den : f32
    %y = arith.mulf %silu, %b : f32
    linalg.yield %y : f32
  } -> tensor<24xf32>
  %ed = tensor.empty() : tensor<16xf32>
  %zd = linalg.fill ins(%zero : f32) outs(%ed : tensor<16xf32>) -> tensor<16xf32>
  %d = linalg.matvec ins(%w2, %h : tensor<16x24xf32>, tensor<24xf32>) outs(%zd : tensor<16xf32>) -> tensor<16xf32>
  %er = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel"]} ins(%x, %d : tensor<16xf32>, tensor<16xf32>) outs(%er : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %c0 = arith.constant 0 : index
  %first = tensor.extract %r[%c0] : tensor<16xf32>
  %e2 = tensor.empty() : tensor<f32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %ss2 = linalg.generic {indexing_maps = [#id3, #all3], iterator_types = ["reduction"]} ins(%r : tensor<16xf32>) outs(%z2 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e3 = tensor.empty() : tensor<16xf32>
  %rn = linalg.generic {indexing_maps = [#id3, #all3, #id3, #id3], iterator_types = ["parallel"]} ins(%r, %ss2, %wn : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e3 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eq = tensor.empty() : tensor<16xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<16xf32>) -> tensor<16xf32>
  %q = linalg.matvec ins(%wq, %rn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %ek = tensor.empty() : tensor<8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<8xf32>) -> tensor<8xf32>
  %k = linalg.matvec ins(%wk, %rn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %v = linalg.matvec ins(%wv, %rn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  return %first, %q, %k, %v : f32, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The head of a group: the attention's output projection wo and the residual add reading it
// (ops of no group whose results the FFN group reads) join the FFN's group ahead of its norm:
// one region. Levels: wo 256 and then the residual 16 ahead of the FFN's. Off: wo + the
// residual are a region of their own.
// CHECK-LABEL: func.func @wo_then_ffn
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>)
// CHECK-COUNT-4:   linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return
// OFF-LABEL: func.func @wo_then_ffn
// OFF:         hexir.dispatch_region
// OFF:         hexir.dispatch_region -> (tensor<16xf32>)
// OFF:         } {hexir.dispatch_group = "small_layer"}
// OFF-NOT:     hexir.dispatch_region
// OFF:         return
#id4 = affine_map<(d) -> (d)>
#all4 = affine_map<(d) -> ()>
func.func @wo_then_ffn(%x0: tensor<16xf32>, %att: tensor<16xf32>, %wo: tensor<16x16xf32>, %w: tensor<16xf32>, %w1: tensor<24x16xf32>, %w3: tensor<24x16xf32>, %w2: tensor<16x24xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %eo = tensor.empty() : tensor<16xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<16xf32>) -> tensor<16xf32>
  %proj = linalg.matvec ins(%wo, %att : tensor<16x16xf32>, tensor<16xf32>) outs(%zo : tensor<16xf32>) -> tensor<16xf32>
  %ex0 = tensor.empty() : tensor<16xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel"]} ins(%x0, %proj : tensor<16xf32>, tensor<16xf32>) outs(%ex0 : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id4, #all4], iterator_types = ["reduction"]} ins(%x : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<16xf32>
  %xn = linalg.generic {indexing_maps = [#id4, #all4, #id4, #id4], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eh = tensor.empty() : tensor<24xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<24xf32>) -> tensor<24xf32>
  %h1 = linalg.matvec ins(%w1, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %h3 = linalg.matvec ins(%w3, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %es = tensor.empty() : tensor<24xf32>
  %h = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<24xf32>, tensor<24xf32>) outs(%es : tensor<24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %na = arith.negf %a : f32
    %ex = math.exp %na : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %silu = arith.divf %a, %den : f32
    %y = arith.mulf %silu, %b : f32
    linalg.yield %y : f32
  } -> tensor<24xf32>
  %ed = tensor.empty() : tensor<16xf32>
  %zd = linalg.fill ins(%zero : f32) outs(%ed : tensor<16xf32>) -> tensor<16xf32>
  %d = linalg.matvec ins(%w2, %h : tensor<16x24xf32>, tensor<24xf32>) outs(%zd : tensor<16xf32>) -> tensor<16xf32>
  %er = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel"]} ins(%x, %d : tensor<16xf32>, tensor<16xf32>) outs(%er : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
