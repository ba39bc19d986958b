// Warp-reduction shapes whose CUDA results check.py compares with the CPU target's (same
// random inputs): vector widths 8/4/2/scalar, tails, mixed vector + scalar inputs, fused
// consumers, a rank-0 reduction broadcast to its consumer, dynamic extents, integers, the
// llama argmax (max, then a select-bodied i64 reduction), an exp producer fused into a sum.
#mv = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>]
#rows = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>]

func.func @mv_f16_k1004(%w: tensor<300x1004xf16>, %x: tensor<1004xf32>) -> tensor<300xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<300xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<300xf32>) -> tensor<300xf32>
  %y = linalg.generic {indexing_maps = #mv, iterator_types = ["parallel", "reduction"]}
      ins(%w, %x : tensor<300x1004xf16>, tensor<1004xf32>) outs(%z : tensor<300xf32>) {
    ^bb0(%a: f16, %b: f32, %acc: f32):
      %af = arith.extf %a : f16 to f32
      %p = arith.mulf %af, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<300xf32>
  return %y : tensor<300xf32>
}

func.func @mv_f32_k770(%w: tensor<129x770xf32>, %x: tensor<770xf32>) -> tensor<129xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<129xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<129xf32>) -> tensor<129xf32>
  %y = linalg.matvec ins(%w, %x : tensor<129x770xf32>, tensor<770xf32>) outs(%z : tensor<129xf32>) -> tensor<129xf32>
  return %y : tensor<129xf32>
}

func.func @mv_f32_k773(%w: tensor<64x773xf32>, %x: tensor<773xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %y = linalg.matvec ins(%w, %x : tensor<64x773xf32>, tensor<773xf32>) outs(%z : tensor<64xf32>) -> tensor<64xf32>
  return %y : tensor<64xf32>
}

func.func @mv_f32_768(%w: tensor<768x768xf32>, %x: tensor<768xf32>) -> tensor<768xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<768xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
  %y = linalg.matvec ins(%w, %x : tensor<768x768xf32>, tensor<768xf32>) outs(%z : tensor<768xf32>) -> tensor<768xf32>
  return %y : tensor<768xf32>
}

// r + W x: the add is fused into the matvec's kernel as its consumer.
func.func @mv_residual(%w: tensor<768x2048xf16>, %x: tensor<2048xf32>, %r: tensor<768xf32>) -> tensor<768xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<768xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
  %y = linalg.generic {indexing_maps = #mv, iterator_types = ["parallel", "reduction"]}
      ins(%w, %x : tensor<768x2048xf16>, tensor<2048xf32>) outs(%z : tensor<768xf32>) {
    ^bb0(%a: f16, %b: f32, %acc: f32):
      %af = arith.extf %a : f16 to f32
      %p = arith.mulf %af, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<768xf32>
  %o = tensor.empty() : tensor<768xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%r, %y : tensor<768xf32>, tensor<768xf32>) outs(%o : tensor<768xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<768xf32>
  return %sum : tensor<768xf32>
}

// RMSNorm: a rank-0 sum of squares read whole by the scaling consumer.
func.func @rmsnorm(%x: tensor<768xf32>, %w: tensor<768xf16>) -> tensor<768xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<768xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %m = arith.mulf %a, %a : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<f32>
  %o = tensor.empty() : tensor<768xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %ss, %w : tensor<768xf32>, tensor<f32>, tensor<768xf16>) outs(%o : tensor<768xf32>) {
    ^bb0(%a: f32, %s: f32, %g: f16, %c: f32):
      %ms = arith.divf %s, %n : f32
      %r = arith.addf %ms, %eps : f32
      %q = math.rsqrt %r : f32
      %gf = arith.extf %g : f16 to f32
      %t = arith.mulf %a, %q : f32
      %u = arith.mulf %t, %gf : f32
      linalg.yield %u : f32
  } -> tensor<768xf32>
  return %y : tensor<768xf32>
}

func.func @dynmax(%x: tensor<?xf32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<?xf32>) outs(%z : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %y = arith.maximumf %a, %acc : f32
      linalg.yield %y : f32
  } -> tensor<f32>
  return %m : tensor<f32>
}

// Dynamic K: W's rows have a dynamic pitch (scalar loads), x is vector-loaded.
func.func @mv_dynamic_k(%w: tensor<100x?xf32>, %x: tensor<?xf32>) -> tensor<100xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<100xf32>) -> tensor<100xf32>
  %y = linalg.matvec ins(%w, %x : tensor<100x?xf32>, tensor<?xf32>) outs(%z : tensor<100xf32>) -> tensor<100xf32>
  return %y : tensor<100xf32>
}

func.func @isum(%x: tensor<40x1000xi32>) -> tensor<40xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<40xi32>
  %z = linalg.fill ins(%zero : i32) outs(%e : tensor<40xi32>) -> tensor<40xi32>
  %y = linalg.generic {indexing_maps = #rows, iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<40x1000xi32>) outs(%z : tensor<40xi32>) {
    ^bb0(%a: i32, %acc: i32):
      %s = arith.addi %acc, %a : i32
      linalg.yield %s : i32
  } -> tensor<40xi32>
  return %y : tensor<40xi32>
}

// sum_k exp(x[i, k]): the exp producer is fused into the reduction's kernel.
func.func @expsum(%x: tensor<16x512xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<16x512xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x512xf32>) outs(%ex : tensor<16x512xf32>) {
    ^bb0(%a: f32, %b: f32):
      %y = math.exp %a : f32
      linalg.yield %y : f32
  } -> tensor<16x512xf32>
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %y = linalg.generic {indexing_maps = #rows, iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<16x512xf32>) outs(%z : tensor<16xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %acc, %a : f32
      linalg.yield %s : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// The llama importer's greedy argmax: the maximum, then the first index holding it.
func.func @argmax(%l: tensor<32000xf32>) -> tensor<i64> {
  %lo = arith.constant -3.0e+38 : f32
  %n = arith.constant 32000 : i64
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%lo : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.generic {indexing_maps = [affine_map<(v) -> (v)>, affine_map<(v) -> ()>], iterator_types = ["reduction"]}
      ins(%l : tensor<32000xf32>) outs(%z : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.maximumf %acc, %a : f32
      linalg.yield %r : f32
  } -> tensor<f32>
  %ei = tensor.empty() : tensor<i64>
  %zi = linalg.fill ins(%n : i64) outs(%ei : tensor<i64>) -> tensor<i64>
  %i = linalg.generic {indexing_maps = [affine_map<(v) -> (v)>, affine_map<(v) -> ()>, affine_map<(v) -> ()>], iterator_types = ["reduction"]}
      ins(%l, %m : tensor<32000xf32>, tensor<f32>) outs(%zi : tensor<i64>) {
    ^bb0(%a: f32, %mx: f32, %acc: i64):
      %v = linalg.index 0 : index
      %vi = arith.index_cast %v : index to i64
      %eq = arith.cmpf oeq, %a, %mx : f32
      %mn = arith.minsi %acc, %vi : i64
      %r = arith.select %eq, %mn, %acc : i64
      linalg.yield %r : i64
  } -> tensor<i64>
  return %i : tensor<i64>
}

// Attention's softmax numerator over a dynamic number of positions: exp(s / 8 - max_j s / 8)
// per (head, position); the row max is fused into the elementwise root (dynamic extents:
// warps stride over the points).
func.func @softmax_num(%s: tensor<12x1x?xf32>) -> tensor<12x1x?xf32> {
  %lo = arith.constant -3.0e+38 : f32
  %eight = arith.constant 8.0 : f32
  %c2 = arith.constant 2 : index
  %n = tensor.dim %s, %c2 : tensor<12x1x?xf32>
  %e = tensor.empty() : tensor<12x1xf32>
  %z = linalg.fill ins(%lo : f32) outs(%e : tensor<12x1xf32>) -> tensor<12x1xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(h, o, j) -> (h, o, j)>, affine_map<(h, o, j) -> (h, o)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<12x1x?xf32>) outs(%z : tensor<12x1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %d = arith.divf %a, %eight : f32
      %r = arith.maximumf %acc, %d : f32
      linalg.yield %r : f32
  } -> tensor<12x1xf32>
  %eo = tensor.empty(%n) : tensor<12x1x?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(h, o, j) -> (h, o, j)>, affine_map<(h, o, j) -> (h, o)>, affine_map<(h, o, j) -> (h, o, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<12x1x?xf32>, tensor<12x1xf32>) outs(%eo : tensor<12x1x?xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %eight : f32
      %t = arith.subf %d, %b : f32
      %x = math.exp %t : f32
      linalg.yield %x : f32
  } -> tensor<12x1x?xf32>
  return %y : tensor<12x1x?xf32>
}

// Attention scores q . K[p] over a head dimension of 64 (2 elements per lane), K read from
// the cache with tensor.extract in the body (a gather the lanes read contiguously).
func.func @scores(%cache: tensor<256x768xf32>, %q: tensor<12x1x64xf32>) -> tensor<12x1x256xf32> {
  %zero = arith.constant 0.0 : f32
  %c64 = arith.constant 64 : index
  %e = tensor.empty() : tensor<12x1x256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<12x1x256xf32>) -> tensor<12x1x256xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(h, o, p, d) -> (h, o, d)>, affine_map<(h, o, p, d) -> (h, o, p)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q : tensor<12x1x64xf32>) outs(%z : tensor<12x1x256xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %h = linalg.index 0 : index
      %d = linalg.index 3 : index
      %p = linalg.index 2 : index
      %hb = arith.muli %h, %c64 : index
      %col = arith.addi %hb, %d : index
      %k = tensor.extract %cache[%p, %col] : tensor<256x768xf32>
      %m = arith.mulf %a, %k : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
  } -> tensor<12x1x256xf32>
  return %s : tensor<12x1x256xf32>
}

// The final RMSNorm then the classifier: the scaling generic is fused into the matvec's body
// (passes/codegen/CUDADistributeThreads.cpp, fuseProducersIntoReduction).
func.func @norm_matvec(%x: tensor<768xf32>, %g: tensor<768xf16>, %w: tensor<1000x768xf16>) -> tensor<1000xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<768xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %m = arith.mulf %a, %a : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<768xf32>
  %xn = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %ss, %g : tensor<768xf32>, tensor<f32>, tensor<768xf16>) outs(%e1 : tensor<768xf32>) {
    ^bb0(%a: f32, %s: f32, %gg: f16, %c: f32):
      %ms = arith.divf %s, %n : f32
      %r = arith.addf %ms, %eps : f32
      %q = math.sqrt %r : f32
      %inv = arith.divf %one, %q : f32
      %gf = arith.extf %gg : f16 to f32
      %t = arith.mulf %inv, %a : f32
      %u = arith.mulf %gf, %t : f32
      linalg.yield %u : f32
  } -> tensor<768xf32>
  %e2 = tensor.empty() : tensor<1000xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1000xf32>) -> tensor<1000xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%w, %xn : tensor<1000x768xf16>, tensor<768xf32>) outs(%z2 : tensor<1000xf32>) {
    ^bb0(%a: f16, %b: f32, %acc: f32):
      %af = arith.extf %a : f16 to f32
      %p = arith.mulf %af, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<1000xf32>
  return %y : tensor<1000xf32>
}
