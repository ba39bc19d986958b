// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections=max-work=768 --hexir-form-dispatch-regions | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections=max-work=767 --hexir-form-dispatch-regions | FileCheck %s --check-prefix=LEVEL
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections=max-work=768 --hexir-form-dispatch-regions --hexir-outline-dispatch-regions | FileCheck %s --check-prefix=TIED

// hexir-group-small-projections past the projections (passes/dispatch/fusion/README.md): a
// whole FFN block (RMSNorm, w1 and w3, SiLU(w1 x) * w3 x, w2, the residual add) is one
// region with one result. Levels: the sums 2 x 16, the scalings 2 x 16, w1 + w3 2 x 384 =
// 768, SiLU * mul 24, w2 384, the residual 16: max-work 768 admits it, 767 does not.
// CHECK-LABEL: func.func @ffn_block
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<16xf32>)
// CHECK-COUNT-2:   linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           %[[OUT:.+]] = linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK:           hexir.yield %[[OUT]]
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// The w1/w3 level (768) over max-work: nothing is grouped; each projection recomputes its
// norm in a dispatch of its own, SiLU * mul is fused into w2's, and so on.
// LEVEL-LABEL: func.func @ffn_block
// LEVEL-NOT:     hexir.dispatch_group
// LEVEL-COUNT-3: hexir.dispatch_region
// LEVEL-NOT:     hexir.dispatch_region
// LEVEL:         return
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
#rows = affine_map<(i, k) -> (i, k)>
#cols = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>
func.func @ffn_block(%x: tensor<16xf32>, %w: tensor<16xf32>, %w1: tensor<24x16xf32>, %w3: tensor<24x16xf32>, %w2: tensor<16x24xf32>) -> tensor<16xf32> {
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
  return %r : tensor<16xf32>
}

// -----

// q/k/v after one norm, k rotated (a stand-in: k * 2), and each KV-cache row written in
// place over the whole cache (a device loop's form: every row keeps its old value but row
// %pos) are one region: the caches are results of the group's kernel, tied to their
// operands. Levels: q/k/v 256 + 2 x 128 = 512, the rotation 8 + the V cache write 32 x 8 =
// 264, the K cache write 256.
// CHECK-LABEL: func.func @qkv_cache_rows
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>, tensor<32x8xf32>, tensor<32x8xf32>)
// CHECK-COUNT-3:   linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return
// TIED-LABEL: func.func @qkv_cache_rows(
// TIED:         hexir.dispatch @qkv_cache_rows_dispatch_0({{.*}}) {hexir.tied_operands = array<i64: -1, 5, 6>}
// TIED-NOT:     hexir.dispatch @
// TIED:         return
#id2 = affine_map<(d) -> (d)>
#all2 = affine_map<(d) -> ()>
#row = affine_map<(s, j) -> (j)>
#cache = affine_map<(s, j) -> (s, j)>
func.func @qkv_cache_rows(%x: tensor<16xf32>, %w: tensor<16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %kc0: tensor<32x8xf32>, %vc0: tensor<32x8xf32>, %pos: index) -> (tensor<16xf32>, tensor<32x8xf32>, tensor<32x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id2, #all2], iterator_types = ["reduction"]} ins(%x : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<16xf32>
  %xn = linalg.generic {indexing_maps = [#id2, #all2, #id2, #id2], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
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
  %q = linalg.matvec ins(%wq, %xn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %ek = tensor.empty() : tensor<8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<8xf32>) -> tensor<8xf32>
  %k = linalg.matvec ins(%wk, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %v = linalg.matvec ins(%wv, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %er = tensor.empty() : tensor<8xf32>
  %kr = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]} ins(%k : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %y = arith.mulf %a, %two : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %kc1 = linalg.generic {indexing_maps = [#row, #cache], iterator_types = ["parallel", "parallel"], hexir.in_place} ins(%kr : tensor<8xf32>) outs(%kc0 : tensor<32x8xf32>) {
  ^bb0(%a: f32, %old: f32):
    %s = linalg.index 0 : index
    %here = arith.cmpi eq, %s, %pos : index
    %y = arith.select %here, %a, %old : f32
    linalg.yield %y : f32
  } -> tensor<32x8xf32>
  %vc1 = linalg.generic {indexing_maps = [#row, #cache], iterator_types = ["parallel", "parallel"], hexir.in_place} ins(%v : tensor<8xf32>) outs(%vc0 : tensor<32x8xf32>) {
  ^bb0(%a: f32, %old: f32):
    %s = linalg.index 0 : index
    %here = arith.cmpi eq, %s, %pos : index
    %y = arith.select %here, %a, %old : f32
    linalg.yield %y : f32
  } -> tensor<32x8xf32>
  return %q, %kc1, %vc1 : tensor<16xf32>, tensor<32x8xf32>, tensor<32x8xf32>
}

// -----

// The same with caches of 128 rows: a cache row's level (8 + 128 x 8 = 1032) is over
// max-work 768, so the group stops before the rows: norm + q/k/v + rotation as before, each
// row written by a dispatch of its own.
// CHECK-LABEL: func.func @qkv_long_cache
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK:         hexir.dispatch_region -> (tensor<128x8xf32>)
// CHECK:         hexir.dispatch_region -> (tensor<128x8xf32>)
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return
#id3 = affine_map<(d) -> (d)>
#all3 = affine_map<(d) -> ()>
#row3 = affine_map<(s, j) -> (j)>
#cache3 = affine_map<(s, j) -> (s, j)>
func.func @qkv_long_cache(%x: tensor<16xf32>, %w: tensor<16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %kc0: tensor<128x8xf32>, %vc0: tensor<128x8xf32>, %pos: index) -> (tensor<16xf32>, tensor<128x8xf32>, tensor<128x8xf32>) {
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
  %eq = tensor.empty() : tensor<16xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<16xf32>) -> tensor<16xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %ek = tensor.empty() : tensor<8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<8xf32>) -> tensor<8xf32>
  %k = linalg.matvec ins(%wk, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %v = linalg.matvec ins(%wv, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %er = tensor.empty() : tensor<8xf32>
  %kr = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%k : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %y = arith.mulf %a, %two : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %kc1 = linalg.generic {indexing_maps = [#row3, #cache3], iterator_types = ["parallel", "parallel"], hexir.in_place} ins(%kr : tensor<8xf32>) outs(%kc0 : tensor<128x8xf32>) {
  ^bb0(%a: f32, %old: f32):
    %s = linalg.index 0 : index
    %here = arith.cmpi eq, %s, %pos : index
    %y = arith.select %here, %a, %old : f32
    linalg.yield %y : f32
  } -> tensor<128x8xf32>
  %vc1 = linalg.generic {indexing_maps = [#row3, #cache3], iterator_types = ["parallel", "parallel"], hexir.in_place} ins(%v : tensor<8xf32>) outs(%vc0 : tensor<128x8xf32>) {
  ^bb0(%a: f32, %old: f32):
    %s = linalg.index 0 : index
    %here = arith.cmpi eq, %s, %pos : index
    %y = arith.select %here, %a, %old : f32
    linalg.yield %y : f32
  } -> tensor<128x8xf32>
  return %q, %kc1, %vc1 : tensor<16xf32>, tensor<128x8xf32>, tensor<128x8xf32>
}

// -----

// The chunked host loop's form of the same rows (RowInsertSelects.h): each written by an
// in-place tensor.insert_slice of a unit expansion at a host position. Rewritten into the
// device loop's whole-cache select (marked in place), they join the group: one region, one
// dispatch (the caches are this function's own fills, so the inserts may update them in
// place; the fills, clonable, come into the region too; a loop-carried cache is a tied
// operand, as in @qkv_cache_rows).
// CHECK-LABEL: func.func @qkv_row_inserts
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>, tensor<32x8xf32>, tensor<32x8xf32>)
// CHECK-COUNT-2:   arith.select {{.*}} : f32
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-NOT:     hexir.dispatch_region
// CHECK-NOT:     tensor.insert_slice
// CHECK:         return
// TIED-LABEL: func.func @qkv_row_inserts(
// TIED:         hexir.dispatch @qkv_row_inserts_dispatch_0(
// TIED-NOT:     hexir.dispatch @
// TIED:         return
#id4 = affine_map<(d) -> (d)>
#all4 = affine_map<(d) -> ()>
func.func @qkv_row_inserts(%x: tensor<16xf32>, %w: tensor<16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %pos64: i64) -> (tensor<16xf32>, tensor<32x8xf32>, tensor<32x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<32x8xf32>
  %kc0 = linalg.fill ins(%zero : f32) outs(%ec : tensor<32x8xf32>) -> tensor<32x8xf32>
  %ev = tensor.empty() : tensor<32x8xf32>
  %vc0 = linalg.fill ins(%zero : f32) outs(%ev : tensor<32x8xf32>) -> tensor<32x8xf32>
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
  %eq = tensor.empty() : tensor<16xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<16xf32>) -> tensor<16xf32>
  %q = linalg.matvec ins(%wq, %xn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %ek = tensor.empty() : tensor<8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<8xf32>) -> tensor<8xf32>
  %k = linalg.matvec ins(%wk, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %v = linalg.matvec ins(%wv, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %pos = arith.index_cast %pos64 : i64 to index
  %kx = tensor.expand_shape %k [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %kc1 = tensor.insert_slice %kx into %kc0[%pos, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<32x8xf32>
  %vx = tensor.expand_shape %v [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %vc1 = tensor.insert_slice %vx into %vc0[%pos, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<32x8xf32>
  return %q, %kc1, %vc1 : tensor<16xf32>, tensor<32x8xf32>, tensor<32x8xf32>
}

// -----

// The same rows into caches of 128 rows: a select's level (128 x 8 = 1024) would be over the
// cost model, so the rows stay in-place insert_slices (each a dispatch of its own writing one
// row, its projection computed inside it) and q/k/v are grouped as before.
// CHECK-LABEL: func.func @qkv_row_inserts_long_cache
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK:         hexir.dispatch_region -> (tensor<128x8xf32>)
// CHECK-NEXT:      tensor.insert_slice {{.*}} {hexir.in_place}
// CHECK:         hexir.dispatch_region -> (tensor<128x8xf32>)
// CHECK-NEXT:      tensor.insert_slice {{.*}} {hexir.in_place}
// CHECK-NOT:     arith.select
// CHECK:         return
#id5 = affine_map<(d) -> (d)>
#all5 = affine_map<(d) -> ()>
func.func @qkv_row_inserts_long_cache(%x: tensor<16xf32>, %w: tensor<16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>, %pos64: i64) -> (tensor<16xf32>, tensor<128x8xf32>, tensor<128x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<128x8xf32>
  %kc0 = linalg.fill ins(%zero : f32) outs(%ec : tensor<128x8xf32>) -> tensor<128x8xf32>
  %ev = tensor.empty() : tensor<128x8xf32>
  %vc0 = linalg.fill ins(%zero : f32) outs(%ev : tensor<128x8xf32>) -> tensor<128x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id5, #all5], iterator_types = ["reduction"]} ins(%x : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<16xf32>
  %xn = linalg.generic {indexing_maps = [#id5, #all5, #id5, #id5], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
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
  %q = linalg.matvec ins(%wq, %xn : tensor<16x16xf32>, tensor<16xf32>) outs(%zq : tensor<16xf32>) -> tensor<16xf32>
  %ek = tensor.empty() : tensor<8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<8xf32>) -> tensor<8xf32>
  %k = linalg.matvec ins(%wk, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %v = linalg.matvec ins(%wv, %xn : tensor<8x16xf32>, tensor<16xf32>) outs(%zk : tensor<8xf32>) -> tensor<8xf32>
  %pos = arith.index_cast %pos64 : i64 to index
  %kx = tensor.expand_shape %k [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %kc1 = tensor.insert_slice %kx into %kc0[%pos, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<128x8xf32>
  %vx = tensor.expand_shape %v [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %vc1 = tensor.insert_slice %vx into %vc0[%pos, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<128x8xf32>
  return %q, %kc1, %vc1 : tensor<16xf32>, tensor<128x8xf32>, tensor<128x8xf32>
}
