// RUN: hexir-opt %s -split-input-file --hexir-group-row-chains | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-group-row-chains --hexir-form-dispatch-regions | FileCheck %s --check-prefix=REGIONS

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// A row softmax (max, exp, sum, divide): the four generics are one group, so dispatch
// formation makes one region of them (one kernel instead of four).
// CHECK-LABEL: func.func @softmax
// CHECK-COUNT-4: linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// REGIONS-LABEL: func.func @softmax
// REGIONS:         hexir.dispatch_region
// REGIONS-COUNT-4:   linalg.generic
// REGIONS-NOT:     hexir.dispatch_region
// REGIONS:         return
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%mi : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %v, %a : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<?x?xf32>) outs(%si : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %v, %a : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

// A residual sum feeding an RMSNorm is also returned: it stays out of the group, which is
// the sum of squares and the scaling.
// CHECK-LABEL: func.func @residual_rmsnorm
// CHECK:         linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%{{[^)]*}}) {{{$}}
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
func.func @residual_rmsnorm(%x: tensor<8x64xf32>, %r: tensor<8x64xf32>, %g: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %er = tensor.empty() : tensor<8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %t = arith.addf %q, %s : f32
      linalg.yield %t : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %ss, %g : tensor<8x64xf32>, tensor<8xf32>, tensor<64xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%v: f32, %s: f32, %w: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %t = arith.mulf %v, %rs : f32
      %u = arith.mulf %t, %w : f32
      linalg.yield %u : f32
  } -> tensor<8x64xf32>
  return %h, %y : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// Not chains: a reduction whose result is returned (nothing reads it along the rows), and a
// sum over the columns (its result is read as (j): another axis than the rows).
// CHECK-LABEL: func.func @not_chains
// CHECK-NOT:     hexir.dispatch_group
func.func @not_chains(%x: tensor<8x64xf32>) -> (tensor<8xf32>, tensor<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<8xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%v: f32, %a: f32):
      %t = arith.addf %v, %a : f32
      linalg.yield %t : f32
  } -> tensor<8xf32>
  %ec = tensor.empty() : tensor<64xf32>
  %zc = linalg.fill ins(%zero : f32) outs(%ec : tensor<64xf32>) -> tensor<64xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(j, i) -> (i, j)>, affine_map<(j, i) -> (j)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x64xf32>) outs(%zc : tensor<64xf32>) {
    ^bb0(%v: f32, %a: f32):
      %t = arith.addf %v, %a : f32
      linalg.yield %t : f32
  } -> tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#id, affine_map<(i, j) -> (j)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %c : tensor<8x64xf32>, tensor<64xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %t = arith.divf %v, %a : f32
      linalg.yield %t : f32
  } -> tensor<8x64xf32>
  return %s, %y : tensor<8xf32>, tensor<8x64xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#kept3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// A dynamic export's Softmax over [?][?][?]: each reduction expanded to [?][?][1] (one
// expand appending the unit dim), whose dims the importer's shape checks read. The dims
// become the expands' output sizes, the expands die, and the four generics are one group
// (as in the static form below); the checks read %n and %t.
// CHECK-LABEL: func.func @dynamic_softmax
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         return %{{.*}}, %arg2, %arg1, %arg2
// CHECK-NOT:     tensor.expand_shape
func.func @dynamic_softmax(%x: tensor<?x?x?xf32>, %n: index, %t: index) -> (tensor<?x?x?xf32>, index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %er = tensor.empty(%n, %t) : tensor<?x?xf32>
  %e = tensor.empty(%n, %t, %l) : tensor<?x?x?xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?x?xf32>) -> tensor<?x?xf32>
  %max = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<?x?x?xf32>) outs(%mi : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %mk = tensor.expand_shape %max [[0], [1, 2]] output_shape [%n, %t, 1] : tensor<?x?xf32> into tensor<?x?x1xf32>
  %md = tensor.dim %mk, %c1 : tensor<?x?x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #kept3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mk : tensor<?x?x?xf32>, tensor<?x?x1xf32>) outs(%e : tensor<?x?x?xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<?x?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?x?xf32>) -> tensor<?x?xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<?x?x?xf32>) outs(%si : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %sk = tensor.expand_shape %sum [[0], [1, 2]] output_shape [%n, %t, 1] : tensor<?x?xf32> into tensor<?x?x1xf32>
  %sd0 = tensor.dim %sk, %c0 : tensor<?x?x1xf32>
  %sd1 = tensor.dim %sk, %c1 : tensor<?x?x1xf32>
  %y = linalg.generic {indexing_maps = [#id3, #kept3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sk : tensor<?x?x?xf32>, tensor<?x?x1xf32>) outs(%e : tensor<?x?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<?x?x?xf32>
  return %y, %md, %sd0, %sd1 : tensor<?x?x?xf32>, index, index, index
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#kept3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// The ONNX importer's Softmax over the last axis of [2][5][37]: each reduction is reshaped to
// keep the axis as 1 (collapse to [10], expand to [2][5][1]) and read at (d0, d1, 0). The
// reads go to the reductions directly, the reshapes die, and the four generics are one group.
// CHECK-LABEL: func.func @onnx_softmax
// CHECK-NOT:     tensor.expand_shape
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[ROWS:[a-z0-9]+]], #{{.*}}]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[ROWS]], #{{.*}}]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK-NOT:     tensor.expand_shape
// REGIONS-LABEL: func.func @onnx_softmax
// REGIONS:         hexir.dispatch_region
// REGIONS-COUNT-4:   linalg.generic
// REGIONS-NOT:     hexir.dispatch_region
// REGIONS:         return
func.func @onnx_softmax(%x: tensor<2x5x37xf32>) -> tensor<2x5x37xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<2x5xf32>
  %e = tensor.empty() : tensor<2x5x37xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x5xf32>) -> tensor<2x5xf32>
  %max = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x5x37xf32>) outs(%mi : tensor<2x5xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %mf = tensor.collapse_shape %max [[0, 1]] : tensor<2x5xf32> into tensor<10xf32>
  %mk = tensor.expand_shape %mf [[0, 1, 2]] output_shape [2, 5, 1] : tensor<10xf32> into tensor<2x5x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #kept3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mk : tensor<2x5x37xf32>, tensor<2x5x1xf32>) outs(%e : tensor<2x5x37xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<2x5x37xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<2x5xf32>) -> tensor<2x5xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x5x37xf32>) outs(%si : tensor<2x5xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %sf = tensor.collapse_shape %sum [[0, 1]] : tensor<2x5xf32> into tensor<10xf32>
  %sk = tensor.expand_shape %sf [[0, 1, 2]] output_shape [2, 5, 1] : tensor<10xf32> into tensor<2x5x1xf32>
  %y = linalg.generic {indexing_maps = [#id3, #kept3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sk : tensor<2x5x37xf32>, tensor<2x5x1xf32>) outs(%e : tensor<2x5x37xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<2x5x37xf32>
  return %y : tensor<2x5x37xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#kept = affine_map<(i, j) -> (i, 0)>
#col = affine_map<(i, j) -> (j)>
#id1 = affine_map<(i) -> (i)>

// The ONNX importer's LayerNormalization over dynamic rows of 37: the means are divided in
// generics over the rows (one loop), kept as [?][1] by copies (its dynamic reshape), and
// 1 / sqrt(var + eps) runs over [?][1]. The copies become expand_shapes, the [?][1] generic
// one over the rows, the reads direct, and the generics over the rows are fused into their
// readers (the centring, the scaling): five generics, one group, one region.
// CHECK-LABEL: func.func @onnx_layernorm
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:           arith.divf
// CHECK:           arith.subf
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:           math.sqrt
// CHECK-NOT:     linalg.generic
// CHECK:         return
// REGIONS-LABEL: func.func @onnx_layernorm
// REGIONS:         hexir.dispatch_region
// REGIONS-COUNT-5:   linalg.generic
// REGIONS-NOT:     hexir.dispatch_region
// REGIONS:         return
func.func @onnx_layernorm(%x: tensor<?x37xf32>, %g: tensor<37xf32>) -> tensor<?x37xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x37xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %ek = tensor.empty(%n) : tensor<?x1xf32>
  %e = tensor.empty(%n) : tensor<?x37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x37xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %mean = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sum : tensor<?xf32>) outs(%er : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %c = arith.constant 37.0 : f32
      %r = arith.divf %v, %c : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %mk = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mean : tensor<?xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %d = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mk : tensor<?x37xf32>, tensor<?x1xf32>) outs(%e : tensor<?x37xf32>) {
    ^bb0(%v: f32, %m: f32, %o: f32):
      %r = arith.subf %v, %m : f32
      linalg.yield %r : f32
  } -> tensor<?x37xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<?x37xf32>) outs(%e : tensor<?x37xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.mulf %v, %v : f32
      linalg.yield %r : f32
  } -> tensor<?x37xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<?x37xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %var = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%ss : tensor<?xf32>) outs(%er : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %c = arith.constant 37.0 : f32
      %r = arith.divf %v, %c : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %vk = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%var : tensor<?xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %inv = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%vk : tensor<?x1xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      %eps = arith.constant 1.0e-5 : f32
      %a = arith.addf %v, %eps : f32
      %s = math.sqrt %a : f32
      %one = arith.constant 1.0 : f32
      %r = arith.divf %one, %s : f32
      linalg.yield %r : f32
  } -> tensor<?x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #kept, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d, %inv, %g : tensor<?x37xf32>, tensor<?x1xf32>, tensor<37xf32>) outs(%e : tensor<?x37xf32>) {
    ^bb0(%v: f32, %i: f32, %w: f32, %o: f32):
      %t = arith.mulf %v, %i : f32
      %r = arith.mulf %t, %w : f32
      linalg.yield %r : f32
  } -> tensor<?x37xf32>
  return %y : tensor<?x37xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// Two norms joined by a residual sum (a post-norm transformer): the first norm's output is
// returned and starts the second chain, so the linked set is split there, two groups.
// CHECK-LABEL: func.func @norm_residual_norm
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.0"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.1"
// CHECK:         linalg.generic {{.*}}"reduction"]{{.*}}hexir.dispatch_group = "row_chain.1"
// CHECK:         linalg.generic {{.*}}hexir.dispatch_group = "row_chain.1"
func.func @norm_residual_norm(%x: tensor<8x64xf32>, %r: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %t = arith.addf %q, %s : f32
      linalg.yield %t : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %ss : tensor<8x64xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %t = arith.mulf %v, %rs : f32
      linalg.yield %t : f32
  } -> tensor<8x64xf32>
  %h2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %r : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %ss2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h2 : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %t = arith.addf %q, %s : f32
      linalg.yield %t : f32
  } -> tensor<8xf32>
  %y2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h2, %ss2 : tensor<8x64xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %rs = math.rsqrt %s : f32
      %t = arith.mulf %v, %rs : f32
      linalg.yield %t : f32
  } -> tensor<8x64xf32>
  return %y, %y2 : tensor<8x64xf32>, tensor<8x64xf32>
}
