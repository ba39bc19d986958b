// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=block-reductions=false | FileCheck %s

// Elementwise 1000x300 (300000 elements, inner dim % 4 == 0): each thread takes 4
// consecutive elements of a row (LLVM makes them one 16-byte access), 75000 threads in
// blocks of 256, grid ceil(75000/256) = 293. gid = bid * 256 + tid (i32); the output's
// contiguous dim (loop 1) is (gid % 75) * 4 so neighbouring threads touch neighbouring
// 16-byte chunks; loop 0 is gid / 75.
// CHECK-LABEL: hexir.executable @ew
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 293, 1, 1>
// CHECK:         func.func @ew(%{{.+}}: tensor<1000x300xf32>, %[[OUT:.+]]: tensor<1000x300xf32>)
// CHECK-SAME:      hexir.cuda.block_size = 256 : index, hexir.cuda.thread_count = 75000 : index
// CHECK-DAG:     %[[STEP4:.+]] = arith.constant 4 : index
// CHECK-DAG:     %[[C4:.+]] = arith.constant 4 : i32
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : i32
// CHECK-DAG:     %[[C75:.+]] = arith.constant 75 : i32
// CHECK:         %[[TID:.+]] = gpu.thread_id x
// CHECK:         %[[TID32:.+]] = arith.index_castui %[[TID]] : index to i32
// CHECK:         %[[BID:.+]] = gpu.block_id x
// CHECK:         %[[BID32:.+]] = arith.index_castui %[[BID]] : index to i32
// CHECK:         %[[BASE:.+]] = arith.muli %[[BID32]], %[[C256]] : i32
// CHECK:         %[[GID:.+]] = arith.addi %[[BASE]], %[[TID32]] : i32
// CHECK:         %[[Q32:.+]] = arith.remui %[[GID]], %[[C75]] : i32
// CHECK:         %[[J32:.+]] = arith.muli %[[Q32]], %[[C4]] : i32
// CHECK:         %[[J:.+]] = arith.index_castui %[[J32]] : i32 to index
// CHECK:         %[[I32:.+]] = arith.divui %[[GID]], %[[C75]] : i32
// CHECK:         %[[I:.+]] = arith.index_castui %[[I32]] : i32 to index
// CHECK:         %[[I1:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK:         scf.for %[[II:.+]] = %[[I]] to %[[I1]] step %{{.+}} iter_args(%{{.+}} = %[[OUT]])
// CHECK:           %[[J1:.+]] = arith.addi %[[J]], %[[STEP4]] : index
// CHECK:           scf.for %[[JJ:.+]] = %[[J]] to %[[J1]] step %[[STEP4]]
// CHECK:             tensor.extract_slice %{{.+}}[%[[II]], %[[JJ]]] [1, 4] [1, 1]
// CHECK:             linalg.generic
// CHECK:             math.exp
// CHECK:             tensor.insert_slice
hexir.executable @ew {
  builtin.module {
    func.func @ew(%a: tensor<1000x300xf32>, %o: tensor<1000x300xf32>) -> tensor<1000x300xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<1000x300xf32>) outs(%o : tensor<1000x300xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.exp %x : f32
        linalg.yield %z : f32
      } -> tensor<1000x300xf32>
      return %r : tensor<1000x300xf32>
    }
  }
}

// -----

// Matmul + bias + relu (one fused dispatch): one thread per output element (i, j), j
// fastest; the fill and the matmul are fused into the thread's point (k loop kept whole)
// on a point-sized temporary. 12 points: one block of 12.
// CHECK-LABEL: hexir.executable @mbr
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 12, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         %[[C12:.+]] = arith.constant 12 : i32
// CHECK:         arith.muli %{{.+}}, %[[C12]] : i32
// CHECK:         arith.remui %{{.+}}, %{{.+}} : i32
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             tensor.extract_slice %{{.+}}[%{{.+}}, 0] [1, 5] [1, 1] : tensor<3x5xf32> to tensor<1x5xf32>
// CHECK:             tensor.extract_slice %{{.+}}[0, %{{.+}}] [5, 1] [1, 1] : tensor<5x4xf32> to tensor<5x1xf32>
// CHECK:             tensor.empty() : tensor<1x1xf32>
// CHECK:             linalg.fill
// CHECK:             linalg.matmul {{.*}}tensor<1x5xf32>, tensor<5x1xf32>
// CHECK:             linalg.generic
// CHECK:             arith.maximumf
// CHECK:             tensor.insert_slice
hexir.executable @mbr {
  builtin.module {
    func.func @mbr(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>, %bias: tensor<4xf32>, %o: tensor<3x4xf32>) -> tensor<3x4xf32> {
      %z = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<3x4xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
      %m = linalg.matmul ins(%a, %b : tensor<3x5xf32>, tensor<5x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<3x4xf32>, tensor<4xf32>) outs(%o : tensor<3x4xf32>) {
      ^bb0(%x: f32, %y: f32, %u: f32):
        %s = arith.addf %x, %y : f32
        %t = arith.maximumf %s, %z : f32
        linalg.yield %t : f32
      } -> tensor<3x4xf32>
      return %r : tensor<3x4xf32>
    }
  }
}

// -----

// Column sums of 64x40: the reduction (loop 0) stays inside the thread; threads map to
// the parallel loop 1 (the output's only dim): 40 points, the fill fused per point.
// CHECK-LABEL: hexir.executable @colsum
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 40, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         scf.for
// CHECK-NOT:     scf.for
// CHECK:           tensor.extract_slice %{{.+}}[0, %{{.+}}] [64, 1] [1, 1] : tensor<64x40xf32> to tensor<64x1xf32>
// CHECK:           linalg.fill
// CHECK:           linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
hexir.executable @colsum {
  builtin.module {
    func.func @colsum(%a: tensor<64x40xf32>, %o: tensor<40xf32>) -> tensor<40xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<40xf32>) -> tensor<40xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>], iterator_types = ["reduction", "parallel"]} ins(%a : tensor<64x40xf32>) outs(%f : tensor<40xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.addf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<40xf32>
      return %s : tensor<40xf32>
    }
  }
}

// -----

// Transposing output map (j, i): the delinearization follows the output's dims, so the
// output's contiguous dim (loop 0 here) is the fastest: gid % 7 is loop 0.
// CHECK-LABEL: hexir.executable @tr
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         %[[C7:.+]] = arith.constant 7 : i32
// CHECK:         %[[GID:.+]] = arith.addi
// CHECK:         %[[R:.+]] = arith.remui %[[GID]], %[[C7]] : i32
// CHECK:         %[[D0:.+]] = arith.index_castui %[[R]] : i32 to index
// CHECK:         %[[Q:.+]] = arith.divui %[[GID]], %[[C7]] : i32
// CHECK:         %[[D1:.+]] = arith.index_castui %[[Q]] : i32 to index
// CHECK:         scf.for %{{.+}} = %[[D0]] to
// CHECK:           scf.for %{{.+}} = %[[D1]] to
hexir.executable @tr {
  builtin.module {
    func.func @tr(%a: tensor<7x9xf32>, %o: tensor<9x7xf32>) -> tensor<9x7xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<7x9xf32>) outs(%o : tensor<9x7xf32>) {
      ^bb0(%x: f32, %y: f32):
        linalg.yield %x : f32
      } -> tensor<9x7xf32>
      return %r : tensor<9x7xf32>
    }
  }
}

// -----

// A full reduction has no parallel loop: one thread runs the kernel unchanged.
// CHECK-LABEL: hexir.executable @full
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 1, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @full
// CHECK-SAME:      hexir.cuda.thread_count = 1 : index
// CHECK-NOT:     gpu.thread_id
// CHECK-NOT:     scf.for
// CHECK:         linalg.generic
hexir.executable @full {
  builtin.module {
    func.func @full(%a: tensor<16xf32>, %o: tensor<f32>) -> tensor<f32> {
      %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%a : tensor<16xf32>) outs(%o : tensor<f32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.addf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}

// -----

// Dynamic extents: P = dim0 * 4 points (dim0 is parameter word 0); the host launches
// max(1, ceil(P / 256)) blocks of 256 (at most 1056: past that, tiles of ceil(P / 1056)),
// and the threads stride over the points by the launched grid:
// for p = gid; p < P; p += gridDim.x * 256, with j = p % 4 and i = p / 4.
// CHECK-LABEL: hexir.executable @dyn
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 4 : i64, extent_words = array<i64: 0>, limit = 1056 : i64, tile = 256 : i64}
// CHECK:         func.func @dyn(%[[A:.+]]: tensor<?x4xf32>, %[[OUT:.+]]: tensor<?x4xf32>)
// CHECK-SAME:      hexir.cuda.thread_count = -1 : index
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:     %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG:     %[[DIM:.+]] = tensor.dim %[[A]], %{{.+}} : tensor<?x4xf32>
// CHECK:         %[[GID32:.+]] = arith.addi %{{.+}}, %{{.+}} : i32
// CHECK:         %[[GID:.+]] = arith.index_castui %[[GID32]] : i32 to index
// CHECK:         %[[P:.+]] = arith.muli %[[DIM]], %[[C4]] : index
// CHECK:         %[[GRID:.+]] = gpu.grid_dim x
// CHECK:         %[[STRIDE:.+]] = arith.muli %[[GRID]], %[[C256]] : index
// CHECK:         scf.for %[[I:.+]] = %[[GID]] to %[[P]] step %[[STRIDE]] iter_args(%{{.+}} = %[[OUT]])
// CHECK:           %[[J:.+]] = arith.remui %[[I]], %[[C4]] : index
// CHECK:           %[[R:.+]] = arith.divui %[[I]], %[[C4]] : index
// CHECK:           scf.for %{{.+}} = %[[R]] to
// CHECK:             scf.for %{{.+}} = %[[J]] to
// CHECK:               linalg.generic
hexir.executable @dyn {
  builtin.module {
    func.func @dyn(%a: tensor<?x4xf32>, %o: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x4xf32>) outs(%o : tensor<?x4xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.exp %x : f32
        linalg.yield %z : f32
      } -> tensor<?x4xf32>
      return %r : tensor<?x4xf32>
    }
  }
}

// -----

// 2^31 points would overflow the i32 thread arithmetic: the grid-stride form is used, with
// a static count (tiles of ceil(2^31 / 1056) points: 1056 blocks).
// CHECK-LABEL: hexir.executable @huge
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1056, 1, 1>
// CHECK:         hexir.cuda.thread_count = -1 : index
// CHECK:         %[[P:.+]] = arith.constant 2147483648 : index
// CHECK:         scf.for %{{.+}} = %{{.+}} to %[[P]] step
hexir.executable @huge {
  builtin.module {
    func.func @huge(%a: tensor<2147483648xi8>, %o: tensor<2147483648xi8>) -> tensor<2147483648xi8> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<2147483648xi8>) outs(%o : tensor<2147483648xi8>) {
      ^bb0(%x: i8, %y: i8):
        linalg.yield %x : i8
      } -> tensor<2147483648xi8>
      return %r : tensor<2147483648xi8>
    }
  }
}

// -----

// Sum of squares over rows of 64x1000 (reduced dim contiguous, extent >= 128): one warp
// per row: 64 points x 32 lanes = 2048 threads in blocks of 2 warps; the point is gid / 32.
// CHECK-LABEL: hexir.executable @rows
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 32, 1, 1>
// CHECK:         func.func @rows
// CHECK-SAME:      hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 2048 : index
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : i32
// CHECK-DAG:     %[[C64:.+]] = arith.constant 64 : i32
// CHECK:         %[[BASE:.+]] = arith.muli %{{.+}}, %[[C64]] : i32
// CHECK:         %[[GID:.+]] = arith.addi %[[BASE]], %{{.+}} : i32
// CHECK:         %[[ROW32:.+]] = arith.divui %[[GID]], %[[C32]] : i32
// CHECK:         %[[ROW:.+]] = arith.index_castui %[[ROW32]] : i32 to index
// CHECK:         scf.for %{{.+}} = %[[ROW]] to
// CHECK:           tensor.extract_slice %{{.+}} [1, 1000] [1, 1] : tensor<64x1000xf32> to tensor<1x1000xf32>
// CHECK:           linalg.fill
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
hexir.executable @rows {
  builtin.module {
    func.func @rows(%a: tensor<64x1000xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<64x1000xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %m = arith.mulf %x, %x : f32
        %y = arith.addf %m, %acc : f32
        linalg.yield %y : f32
      } -> tensor<64xf32>
      return %s : tensor<64xf32>
    }
  }
}

// -----

// A full max over a dynamic length: one point, one warp (block 32, grid 1), no tiling.
// CHECK-LABEL: hexir.executable @dynmax
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 32, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 32 : index
// CHECK-NOT:     scf.for
// CHECK:         linalg.generic
hexir.executable @dynmax {
  builtin.module {
    func.func @dynmax(%a: tensor<?xf32>, %o: tensor<f32>) -> tensor<f32> {
      %s = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>], iterator_types = ["reduction"]} ins(%a : tensor<?xf32>) outs(%o : tensor<f32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.maximumf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}

// -----

// A KV-cache row update in place (passes/dispatch/InPlaceUpdates.h): the kernel returns
// insert_slice(row into its output argument at a dynamic position). Its root is a copy of
// the row into that slot (codegen::KernelRoot), tiled one element per thread; the final
// write-back of the slot the threads wrote (codegen::IsSlotWriteBack) stays outside the
// thread loops and does not refuse the distribution: 256 threads, not one.
// CHECK-LABEL: hexir.executable @cache_row
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @cache_row(%[[ROW:.+]]: tensor<1x256xf32>, %{{.+}}: tensor<512x256xf32>, %[[OUT:.+]]: tensor<512x256xf32>, %[[POS:.+]]: index)
// CHECK-SAME:      hexir.cuda.block_size = 256 : index, hexir.cuda.thread_count = 256 : index
// CHECK:         %[[SLOT:.+]] = tensor.extract_slice %[[OUT]][%[[POS]], 0] [1, 256] [1, 1]
// CHECK:         %[[ROWS:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[SLOT]])
// CHECK:           scf.for
// CHECK:             tensor.extract_slice %[[ROW]][%{{.+}}, %{{.+}}] [1, 1] [1, 1]
// CHECK:             linalg.copy ins(%{{.+}} : tensor<1x1xf32>)
// CHECK:         tensor.insert_slice %[[ROWS]] into %[[OUT]][%[[POS]], 0] [1, 256] [1, 1]
hexir.executable @cache_row {
  builtin.module {
    func.func @cache_row(%row: tensor<1x256xf32>, %cache: tensor<512x256xf32>, %out: tensor<512x256xf32>, %pos: index) -> tensor<512x256xf32> {
      %r = tensor.insert_slice %row into %out[%pos, 0] [1, 256] [1, 1] {hexir.in_place} : tensor<1x256xf32> into tensor<512x256xf32>
      return %r : tensor<512x256xf32>
    }
  }
}

// -----

// The K row of an odd width (67) computed by an elementwise producer (a rotary-style
// rotation reading the pair element, rounded to an f16 cache) inside the update: the
// producer is fused per thread, so each of the 67 threads computes its own element.
// CHECK-LABEL: hexir.executable @rotated_cache_row
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 67, 1, 1>
// CHECK:         hexir.cuda.block_size = 67 : index, hexir.cuda.thread_count = 67 : index
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             math.cos
// CHECK:             arith.truncf
// CHECK:         tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [1, 67] [1, 1]
// CHECK-NEXT:    return
hexir.executable @rotated_cache_row {
  builtin.module {
    func.func @rotated_cache_row(%row: tensor<1x67xf32>, %cache: tensor<31x67xf16>, %out: tensor<31x67xf16>, %angle: f32, %pos: index) -> tensor<31x67xf16> {
      %e = tensor.empty() : tensor<1x67xf16>
      %k = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x67xf32>) outs(%e : tensor<1x67xf16>) {
      ^bb0(%x: f32, %o: f16):
        %i = linalg.index 0 : index
        %j = linalg.index 1 : index
        %c1 = arith.constant 1 : index
        %c66 = arith.constant 66 : index
        %p0 = arith.xori %j, %c1 : index
        %p = arith.minui %p0, %c66 : index
        %y = tensor.extract %row[%i, %p] : tensor<1x67xf32>
        %cs = math.cos %angle : f32
        %sn = math.sin %angle : f32
        %a = arith.mulf %x, %cs : f32
        %b = arith.mulf %y, %sn : f32
        %s = arith.subf %a, %b : f32
        %h = arith.truncf %s : f32 to f16
        linalg.yield %h : f16
      } -> tensor<1x67xf16>
      %r = tensor.insert_slice %k into %out[%pos, 0] [1, 67] [1, 1] {hexir.in_place} : tensor<1x67xf16> into tensor<31x67xf16>
      return %r : tensor<31x67xf16>
    }
  }
}
