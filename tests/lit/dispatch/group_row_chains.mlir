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
