// RUN: hexir-opt %s --hexir-cuda-distribute-threads | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// The llama decode attention as one executable (hexir.dispatch_group = "decode_attention":
// q [2][3][7], K/V caches [61][14], n dynamic). Distribution recognizes it: K is arg 0, q
// arg 1, V arg 2, the result buffer arg 3, n arg 4; cache 61 keeps >= 16 rows per split for
// 2 splits (not 4: 61 < 64), so clusters of 2 blocks per KV head: 4 blocks of 256 threads;
// one head tile of 3, one window of 31 rows (the whole split). The cache (3416 bytes) splits
// into no 16-byte multiples per block: no L2 prefetch before the wait.
// DIST-LABEL: hexir.executable @main_dispatch_0
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 4, 1, 1>
// DIST:         func.func @main_dispatch_0
// DIST-SAME:      hexir.cuda.decode_attention = array<i64: 2, 3, 7, 61, 1, 0, 2, 3, 4, 2, 256, 3, 31, 0>
// The kernel: one shared array (q 21 + o 21 + scores 3 x 31 + m, l, factor 3 each = 144 words,
// then the window's K rows 31 x 8 and V rows 31 x 7 = 609 words), scalar K and V loads (head
// size 7), butterflies for the max and the sum, then the cluster
// barrier, each block's m, l and o read from both blocks of the cluster (mapa), and the
// barrier that keeps shared memory alive until the reads are done.
// LOWER-LABEL: hexir.executable @main_dispatch_0
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<609 x f32>
// LOWER:         llvm.func internal @main_dispatch_0_impl
// LOWER:           nvvm.barrier0
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER:           llvm.intr.maximum
// LOWER:           nvvm.shfl.sync  bfly
// LOWER:           nvvm.cluster.arrive
// LOWER-NEXT:      nvvm.cluster.wait
// LOWER-COUNT-2:   nvvm.mapa %{{.+}}, %{{.+}} : !llvm.ptr<3> -> !llvm.ptr<7>
// LOWER:           llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr<7> -> f32
// LOWER:           nvvm.cluster.arrive
// LOWER-NEXT:      nvvm.cluster.wait
// LOWER:         llvm.func @main_dispatch_0(
// LOWER-SAME:      nvvm.cluster_dim = array<i32: 2, 1, 1>
// LOWER-SAME:      nvvm.maxntid = array<i32: 256, 1, 1>
// LOWER-NEXT:      nvvm.griddepcontrol  launch_dependents
// LOWER-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1)>
hexir.executable @main_dispatch_0 attributes {hexir.dispatch_group = "decode_attention"} {
  builtin.module {
    func.func @main_dispatch_0(%arg0: tensor<61x14xf32>, %arg1: tensor<2x3x7xf32>, %arg2: tensor<61x14xf32>, %arg3: tensor<2x3x7xf32>, %arg4: index) -> tensor<2x3x7xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty(%arg4) : tensor<2x3x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x3x?xf32>) -> tensor<2x3x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg1 : tensor<2x3x7xf32>) outs(%1 : tensor<2x3x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 7 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x14xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x3x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x3xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x3xf32>) -> tensor<2x3xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x3x?xf32>) outs(%4 : tensor<2x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 2.64575124 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x3xf32>
      %6 = tensor.empty(%arg4) : tensor<2x3x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x3x?xf32>, tensor<2x3xf32>) outs(%6 : tensor<2x3x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 2.64575124 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x3x?xf32>
      %8 = tensor.empty() : tensor<2x3xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x3xf32>) -> tensor<2x3xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x3x?xf32>) outs(%9 : tensor<2x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x3xf32>
      %11 = tensor.empty(%arg4) : tensor<2x3x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x3x?xf32>, tensor<2x3xf32>) outs(%11 : tensor<2x3x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x3x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x3x?xf32>) outs(%13 : tensor<2x3x7xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 7 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x14xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x3x7xf32>
      return %14 : tensor<2x3x7xf32>
    }
  }
}

// 40 query heads per KV head, a 1920-row cache: three head tiles of 14 (the last holding 12
// heads), 8 splits of 240 rows scored in windows of 64 (14 x (2 x 64 + 64 + 3) + 64 x (2 x 64
// + 1) = 10986 shared words, within 48 KiB): 1 x 3 x 8 = 24 blocks in clusters of 8. Head
// size 64 of f32: each thread's 4 K and 4 V items of a window are 16-byte loads, all issued
// before the first is stored. Each 480 KiB cache splits into 24 shares of 20480 bytes, which
// thread 0 of each block L2-prefetches between launch_dependents and the wait.
// DIST-LABEL: hexir.executable @main_dispatch_1
// DIST-SAME:    hexir.workgroup_count = array<i64: 24, 1, 1>
// DIST:         hexir.cuda.decode_attention = array<i64: 1, 40, 64, 1920, 1, 0, 2, 3, 4, 8, 256, 14, 64, 0>
// LOWER-LABEL: hexir.executable @main_dispatch_1
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<10986 x f32>
// LOWER-COUNT-8:   llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// LOWER:           llvm.extractelement
// LOWER-COUNT-8:   nvvm.mapa
// LOWER:         llvm.func @main_dispatch_1(
// LOWER-SAME:      nvvm.cluster_dim = array<i32: 8, 1, 1>
// LOWER-NEXT:      nvvm.griddepcontrol  launch_dependents
// LOWER:           llvm.mlir.constant(24 : i32)
// LOWER:           nvvm.cp.async.bulk.prefetch %{{.+}}, %{{.+}} : <1>
// LOWER:           nvvm.cp.async.bulk.prefetch %{{.+}}, %{{.+}} : <1>
// LOWER:           llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
hexir.executable @main_dispatch_1 attributes {hexir.dispatch_group = "decode_attention"} {
  builtin.module {
    func.func @main_dispatch_1(%arg0: tensor<1920x64xf32>, %arg1: tensor<1x40x64xf32>, %arg2: tensor<1920x64xf32>, %arg3: tensor<1x40x64xf32>, %arg4: index) -> tensor<1x40x64xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty(%arg4) : tensor<1x40x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x40x?xf32>) -> tensor<1x40x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg1 : tensor<1x40x64xf32>) outs(%1 : tensor<1x40x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 64 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<1920x64xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<1x40x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<1x40xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<1x40xf32>) -> tensor<1x40xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<1x40x?xf32>) outs(%4 : tensor<1x40xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 8.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<1x40xf32>
      %6 = tensor.empty(%arg4) : tensor<1x40x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<1x40x?xf32>, tensor<1x40xf32>) outs(%6 : tensor<1x40x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 8.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<1x40x?xf32>
      %8 = tensor.empty() : tensor<1x40xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x40xf32>) -> tensor<1x40xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<1x40x?xf32>) outs(%9 : tensor<1x40xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<1x40xf32>
      %11 = tensor.empty(%arg4) : tensor<1x40x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<1x40x?xf32>, tensor<1x40xf32>) outs(%11 : tensor<1x40x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<1x40x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<1x40x64xf32>) -> tensor<1x40x64xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<1x40x?xf32>) outs(%13 : tensor<1x40x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 64 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<1920x64xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<1x40x64xf32>
      return %14 : tensor<1x40x64xf32>
    }
  }
}

// q from a prologue (the importer's rotary embedding: an elementwise generic over q reading
// q's partner element and the position, arg 5): recognized (q = arg 1, n = arg 4, the last
// word 1: a prologue), then computed as the kernel loads q: the partner's load, the cosine
// of the position, no temporary for q.
// DIST-LABEL: hexir.executable @main_dispatch_2
// DIST:         hexir.cuda.decode_attention = array<i64: 2, 3, 7, 61, 1, 0, 2, 3, 4, 2, 256, 3, 31, 1>
// LOWER-LABEL: hexir.executable @main_dispatch_2
// LOWER:         llvm.func internal @main_dispatch_2_impl
// LOWER-NOT:       llvm.alloca
// LOWER:           llvm.call @__nv_cosf
// LOWER:           nvvm.barrier0
// LOWER:           nvvm.cluster.arrive
hexir.executable @main_dispatch_2 attributes {hexir.dispatch_group = "decode_attention"} {
  builtin.module {
    func.func @main_dispatch_2(%arg0: tensor<61x14xf32>, %arg1: tensor<2x3x7xf32>, %arg2: tensor<61x14xf32>, %arg3: tensor<2x3x7xf32>, %arg4: index, %arg5: i64) -> tensor<2x3x7xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %q = tensor.empty() : tensor<2x3x7xf32>
      %qr = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x3x7xf32>) outs(%q : tensor<2x3x7xf32>) {
      ^bb0(%in: f32, %out: f32):
        %a = linalg.index 0 : index
        %g = linalg.index 1 : index
        %d = linalg.index 2 : index
        %c1 = arith.constant 1 : index
        %pd = arith.xori %d, %c1 : index
        %c6 = arith.constant 6 : index
        %pc = arith.minui %pd, %c6 : index
        %y = tensor.extract %arg1[%a, %g, %pc] : tensor<2x3x7xf32>
        %pf = arith.sitofp %arg5 : i64 to f32
        %cs = math.cos %pf : f32
        %t = arith.mulf %y, %cs : f32
        %r = arith.addf %in, %t : f32
        linalg.yield %r : f32
      } -> tensor<2x3x7xf32>
      %0 = tensor.empty(%arg4) : tensor<2x3x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x3x?xf32>) -> tensor<2x3x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qr : tensor<2x3x7xf32>) outs(%1 : tensor<2x3x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 7 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x14xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x3x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x3xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x3xf32>) -> tensor<2x3xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x3x?xf32>) outs(%4 : tensor<2x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 2.64575124 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x3xf32>
      %6 = tensor.empty(%arg4) : tensor<2x3x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x3x?xf32>, tensor<2x3xf32>) outs(%6 : tensor<2x3x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 2.64575124 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x3x?xf32>
      %8 = tensor.empty() : tensor<2x3xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x3xf32>) -> tensor<2x3xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x3x?xf32>) outs(%9 : tensor<2x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x3xf32>
      %11 = tensor.empty(%arg4) : tensor<2x3x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x3x?xf32>, tensor<2x3xf32>) outs(%11 : tensor<2x3x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x3x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x3x?xf32>) outs(%13 : tensor<2x3x7xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 7 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x14xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x3x7xf32>
      return %14 : tensor<2x3x7xf32>
    }
  }
}
