// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=block-reductions=false | FileCheck %s

// A warp per point also when the root is an elementwise consumer of the kernel's only
// reduction: r + W x (the llama decode step's output projections). Tiling the add per
// point fuses the matvec in with a row extent of 1: 768 rows x 32 lanes in blocks of 2
// warps (384 blocks, so every SM gets work).
// CHECK-LABEL: hexir.executable @mv_residual
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 384, 1, 1>
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 24576 : index
// CHECK:         %[[ROW32:.+]] = arith.divui %{{.+}}, %{{.+}} : i32
// CHECK:         %[[ROW:.+]] = arith.index_castui %[[ROW32]] : i32 to index
// CHECK:         scf.for %{{.+}} = %[[ROW]] to
// CHECK:           tensor.extract_slice %{{.+}} [1, 2048] [1, 1] : tensor<768x2048xf16> to tensor<1x2048xf16>
// CHECK:           linalg.fill
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%{{.+}}, %{{.+}} : tensor<1x2048xf16>, tensor<2048xf32>) outs(%{{.+}} : tensor<1xf32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-SAME:        : tensor<1xf32>, tensor<1xf32>)
// CHECK:           tensor.insert_slice
hexir.executable @mv_residual {
  builtin.module {
    func.func @mv_residual(%w: tensor<768x2048xf16>, %x: tensor<2048xf32>, %r: tensor<768xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<768xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w, %x : tensor<768x2048xf16>, tensor<2048xf32>) outs(%z : tensor<768xf32>) {
      ^bb0(%a: f16, %b: f32, %acc: f32):
        %af = arith.extf %a : f16 to f32
        %p = arith.mulf %af, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<768xf32>
      %sum = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%r, %y : tensor<768xf32>, tensor<768xf32>) outs(%o : tensor<768xf32>) {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<768xf32>
      return %sum : tensor<768xf32>
    }
  }
}

// -----

// RMSNorm: the sum of squares is rank 0 and read whole by every point of the scaling, so
// it does not fuse into the point loop; it stays in front of it (into a fresh temporary)
// and every warp computes it, then scales its point. (Before: the whole kernel on one
// thread.)
// CHECK-LABEL: hexir.executable @rmsnorm
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 384, 1, 1>
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 24576 : index
// CHECK:         %[[EMPTY:.+]] = tensor.empty() : tensor<f32>
// CHECK:         %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EMPTY]] : tensor<f32>)
// CHECK:         %[[SS:.+]] = linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME:      ins(%{{.+}} : tensor<768xf32>) outs(%[[FILL]] : tensor<f32>)
// CHECK:         scf.for
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-SAME:        ins(%{{.+}}, %[[SS]], %{{.+}} : tensor<1xf32>, tensor<f32>, tensor<1xf16>)
hexir.executable @rmsnorm {
  builtin.module {
    func.func @rmsnorm(%x: tensor<768xf32>, %w: tensor<768xf16>, %o: tensor<768xf32>) -> tensor<768xf32> {
      %zero = arith.constant 0.0 : f32
      %n = arith.constant 768.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %ss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<768xf32>) outs(%z0 : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %m = arith.mulf %a, %a : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<f32>
      %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<768xf32>, tensor<f32>, tensor<768xf16>) outs(%o : tensor<768xf32>) {
      ^bb0(%a: f32, %s: f32, %g: f16, %c: f32):
        %ms = arith.divf %s, %n : f32
        %q = math.rsqrt %ms : f32
        %gf = arith.extf %g : f16 to f32
        %t = arith.mulf %a, %q : f32
        %u = arith.mulf %t, %gf : f32
        linalg.yield %u : f32
      } -> tensor<768xf32>
      return %y : tensor<768xf32>
    }
  }
}

// -----

// A rank-0 reduction whose consumer also reads a second reduction cannot use warps (the
// lowering handles one reduction per kernel): one thread, as before.
// CHECK-LABEL: hexir.executable @two_reductions
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 1, 1, 1>
// CHECK-NOT:     hexir.cuda.lanes
// CHECK:         hexir.cuda.thread_count = 1 : index
hexir.executable @two_reductions {
  builtin.module {
    func.func @two_reductions(%x: tensor<768xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
      %zero = arith.constant 0.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %s1 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<768xf32>) outs(%z0 : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %s = arith.addf %acc, %a : f32
        linalg.yield %s : f32
      } -> tensor<f32>
      %s2 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<768xf32>) outs(%z0 : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %s = arith.maximumf %acc, %a : f32
        linalg.yield %s : f32
      } -> tensor<f32>
      %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %s1, %s2 : tensor<768xf32>, tensor<f32>, tensor<f32>) outs(%o : tensor<768xf32>) {
      ^bb0(%a: f32, %b: f32, %c: f32, %d: f32):
        %t = arith.subf %a, %b : f32
        %u = arith.mulf %t, %c : f32
        linalg.yield %u : f32
      } -> tensor<768xf32>
      return %y : tensor<768xf32>
    }
  }
}

// -----

// The llama importer's argmax step: an i64 reduction whose body selects,
// select(x == max, min(acc, index), acc) = min(acc, select(x == max, index, INT64_MAX)):
// a warp reduction with combiner minsi (one warp: a single point).
// CHECK-LABEL: hexir.executable @argmax
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 32, 1, 1>
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 32 : index
hexir.executable @argmax {
  builtin.module {
    func.func @argmax(%l: tensor<32000xf32>, %m: tensor<f32>, %o: tensor<i64>) -> tensor<i64> {
      %n = arith.constant 32000 : i64
      %zi = linalg.fill ins(%n : i64) outs(%o : tensor<i64>) -> tensor<i64>
      %i = linalg.generic {indexing_maps = [affine_map<(v) -> (v)>, affine_map<(v) -> ()>, affine_map<(v) -> ()>], iterator_types = ["reduction"]} ins(%l, %m : tensor<32000xf32>, tensor<f32>) outs(%zi : tensor<i64>) {
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
  }
}

// -----

// A select whose condition reads the accumulator is not of that form: one thread.
// CHECK-LABEL: hexir.executable @select_on_acc
// CHECK-NOT:     hexir.cuda.lanes
// CHECK:         hexir.cuda.thread_count = 1 : index
hexir.executable @select_on_acc {
  builtin.module {
    func.func @select_on_acc(%l: tensor<32000xi64>, %o: tensor<i64>) -> tensor<i64> {
      %i = linalg.generic {indexing_maps = [affine_map<(v) -> (v)>, affine_map<(v) -> ()>], iterator_types = ["reduction"]} ins(%l : tensor<32000xi64>) outs(%o : tensor<i64>) {
      ^bb0(%a: i64, %acc: i64):
        %c = arith.cmpi slt, %acc, %a : i64
        %s = arith.addi %acc, %a : i64
        %r = arith.select %c, %s, %acc : i64
        linalg.yield %r : i64
      } -> tensor<i64>
      return %i : tensor<i64>
    }
  }
}

// -----

// Dynamic extents: attention's exp(s / 8 - rowmax) over 12 x 1 x ? points, the row max
// fused in. Blocks of 8 warps, one point each; the host launches ceil(12 * ? / 8) blocks
// (at most 1056), ? being parameter word 0; warps stride over the points: p = gid / 32,
// step gridDim.x * 8.
// CHECK-LABEL: hexir.executable @softmax_num
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 12 : i64, extent_words = array<i64: 0>, limit = 1056 : i64, tile = 8 : i64}
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = -1 : index
// CHECK-DAG:     %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : i32
// CHECK:         %[[WARP:.+]] = arith.divui %{{.+}}, %[[C32]] : i32
// CHECK:         %[[P0:.+]] = arith.index_castui %[[WARP]] : i32 to index
// CHECK:         %[[GRID:.+]] = gpu.grid_dim x
// CHECK:         %[[STRIDE:.+]] = arith.muli %[[GRID]], %[[C8]] : index
// CHECK:         scf.for %{{.+}} = %[[P0]] to %{{.+}} step %[[STRIDE]]
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:        ins(%{{.+}} : tensor<1x1x?xf32>) outs(%{{.+}} : tensor<1x1xf32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
hexir.executable @softmax_num {
  builtin.module {
    func.func @softmax_num(%s: tensor<12x1x?xf32>, %o: tensor<12x1x?xf32>) -> tensor<12x1x?xf32> {
      %lo = arith.constant -3.0e+38 : f32
      %eight = arith.constant 8.0 : f32
      %e = tensor.empty() : tensor<12x1xf32>
      %z = linalg.fill ins(%lo : f32) outs(%e : tensor<12x1xf32>) -> tensor<12x1xf32>
      %m = linalg.generic {indexing_maps = [affine_map<(h, o, j) -> (h, o, j)>, affine_map<(h, o, j) -> (h, o)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<12x1x?xf32>) outs(%z : tensor<12x1xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %d = arith.divf %a, %eight : f32
        %r = arith.maximumf %acc, %d : f32
        linalg.yield %r : f32
      } -> tensor<12x1xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(h, o, j) -> (h, o, j)>, affine_map<(h, o, j) -> (h, o)>, affine_map<(h, o, j) -> (h, o, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<12x1x?xf32>, tensor<12x1xf32>) outs(%o : tensor<12x1x?xf32>) {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %d = arith.divf %a, %eight : f32
        %t = arith.subf %d, %b : f32
        %x = math.exp %t : f32
        linalg.yield %x : f32
      } -> tensor<12x1x?xf32>
      return %y : tensor<12x1x?xf32>
    }
  }
}

// -----

// The threshold: a reduced extent of 64 (a head dimension, stories260K's dim) gets a warp
// per point, 63 stays in one thread per point.
// CHECK-LABEL: hexir.executable @k64
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 512 : index
// CHECK-LABEL: hexir.executable @k63
// CHECK-NOT:     hexir.cuda.lanes
// CHECK:         hexir.cuda.thread_count = 16 : index
hexir.executable @k64 {
  builtin.module {
    func.func @k64(%a: tensor<16x64xf32>, %o: tensor<16xf32>) -> tensor<16xf32> {
      %s = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<16x64xf32>) outs(%o : tensor<16xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.addf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<16xf32>
      return %s : tensor<16xf32>
    }
  }
}
hexir.executable @k63 {
  builtin.module {
    func.func @k63(%a: tensor<16x63xf32>, %o: tensor<16xf32>) -> tensor<16xf32> {
      %s = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<16x63xf32>) outs(%o : tensor<16xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.addf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<16xf32>
      return %s : tensor<16xf32>
    }
  }
}

// -----

// The classifier after the final RMSNorm: the scaling generic's only user is the matvec,
// so it is fused into the matvec's body (one generic, inputs W row, x, the rank-0 sum of
// squares, the norm weight): each lane scales only the x elements it reads. (Tiled per
// point instead, every lane would compute all of x into a stack temporary.)
// CHECK-LABEL: hexir.executable @classifier
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 1024000 : index
// CHECK-NOT:     linalg.generic
// CHECK:         scf.for
// CHECK-NOT:       tensor.empty
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x768xf16>, tensor<768xf32>, tensor<f32>, tensor<768xf16>)
// CHECK:             math.sqrt
// CHECK:             arith.addf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:        linalg.yield
// CHECK-NOT:     linalg.generic
hexir.executable @classifier {
  builtin.module {
    func.func @classifier(%x: tensor<768xf32>, %ss: tensor<f32>, %g: tensor<768xf16>, %w: tensor<32000x768xf16>, %o: tensor<32000xf32>) -> tensor<32000xf32> {
      %zero = arith.constant 0.0 : f32
      %n = arith.constant 768.0 : f32
      %e = tensor.empty() : tensor<768xf32>
      %xn = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>, affine_map<(k) -> (k)>, affine_map<(k) -> (k)>], iterator_types = ["parallel"]} ins(%x, %ss, %g : tensor<768xf32>, tensor<f32>, tensor<768xf16>) outs(%e : tensor<768xf32>) {
      ^bb0(%a: f32, %s: f32, %gg: f16, %c: f32):
        %m = arith.divf %s, %n : f32
        %r = math.sqrt %m : f32
        %gf = arith.extf %gg : f16 to f32
        %t = arith.divf %a, %r : f32
        %u = arith.mulf %gf, %t : f32
        linalg.yield %u : f32
      } -> tensor<768xf32>
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<32000xf32>) -> tensor<32000xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w, %xn : tensor<32000x768xf16>, tensor<768xf32>) outs(%z : tensor<32000xf32>) {
      ^bb0(%a: f16, %b: f32, %acc: f32):
        %af = arith.extf %a : f16 to f32
        %p = arith.mulf %af, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<32000xf32>
      return %y : tensor<32000xf32>
    }
  }
}

// -----

// Fusing this producer would read Wt along k with a stride (k is its outer dimension), so
// the fused op would not be a warp reduction: the producer is not fused (it is tiled per
// point as before) and the warp reduction stays.
// CHECK-LABEL: hexir.executable @transposed_producer
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 4096 : index
// CHECK:         scf.for
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-SAME:        ins(%{{.+}} : tensor<256x1xf32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%{{.+}}, %{{.+}} : tensor<1x256xf32>, tensor<256xf32>)
hexir.executable @transposed_producer {
  builtin.module {
    func.func @transposed_producer(%wt: tensor<256x128xf32>, %x: tensor<256xf32>, %o: tensor<128xf32>) -> tensor<128xf32> {
      %zero = arith.constant 0.0 : f32
      %two = arith.constant 2.0 : f32
      %e = tensor.empty() : tensor<128x256xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k, i)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]} ins(%wt : tensor<256x128xf32>) outs(%e : tensor<128x256xf32>) {
      ^bb0(%a: f32, %c: f32):
        %m = arith.mulf %a, %two : f32
        linalg.yield %m : f32
      } -> tensor<128x256xf32>
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<128xf32>) -> tensor<128xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w, %x : tensor<128x256xf32>, tensor<256xf32>) outs(%z : tensor<128xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<128xf32>
      return %y : tensor<128xf32>
    }
  }
}
