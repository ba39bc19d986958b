// RUN: hexir-opt %s --hexir-cuda-distribute-threads | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// stories260K's prompt attention as hexir-import writes it (--kv-cache=f16) and
// hexir-compile outlines it (hexir.dispatch_group = "prompt_attention": q [M][4][2][8], the
// f16 caches [512][4][8], M dynamic). Distribution recognizes it: q arg 0, K arg 1, V arg 2,
// the result buffer arg 3, no length (-1); one block per KV head, head tile and row tile: head
// tiles of the whole group of 2, row tiles of 8 (16 query slots), windows of 64 positions;
// the grid follows M: ceil(4 M / 8) blocks (extent word 0, factor 4 = KV heads x head tiles,
// tile 8 = rows a block), the blocks striding over the 4 ceil(M / 8) tiles.
// DIST-LABEL: hexir.executable @prefill_layer_dispatch_9
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 4 : i64, extent_words = array<i64: 0>, limit = 16777216 : i64, tile = 8 : i64}
// DIST:         func.func @prefill_layer_dispatch_9
// DIST-SAME:      hexir.cuda.decode_attention = array<i64: 4, 2, 8, 512, 0, 1, 2, 3, -1, 1, 256, 2, 64, 0, 1, 8>
// The kernel: one shared array (q, o [16][8], scores [16][64], m, l, factor [16]: 1328 words;
// the window's K rows [64][9] and V rows [64][8]: 1088), M from q's dim, the work items
// strided by the grid (nctaid), q loaded, the window's f16 rows in 16-byte loads, the causal
// scores (a thread per 4 slots and a position: each K element loaded once for the 4, q rows
// read 4 words at a time from shared memory), a warp's max and sum per query slot, P V (a
// thread per slot and d: head size 8 leaves too few (4 slots, d) items for 256 threads; p
// read 4 positions at a time), no cluster (one block per tile).
// LOWER-LABEL: hexir.executable @prefill_layer_dispatch_9
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<2416 x f32>
// LOWER:         llvm.func internal @prefill_layer_dispatch_9_impl
// LOWER:           nvvm.read.ptx.sreg.nctaid.x
// LOWER:           nvvm.barrier0
// LOWER:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// LOWER:           nvvm.barrier0
// LOWER-COUNT-4:   llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// LOWER-NOT:       -> vector<4xf32>
// LOWER:           nvvm.barrier0
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER:           llvm.intr.maximum
// LOWER:           nvvm.barrier0
// LOWER:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// LOWER-NOT:       -> vector<4xf32>
// LOWER:           nvvm.barrier0
// LOWER-NOT:       nvvm.cluster
// LOWER:         llvm.func @prefill_layer_dispatch_9(
// LOWER-SAME:      nvvm.maxntid = array<i32: 256, 1, 1>
#map6 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#map7 = affine_map<(d0, d1, d2, d3, d4) -> (d3, d1, d4)>
#map8 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map10 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map11 = affine_map<(d0, d1, d2, d3, d4) -> (d4, d1, d3)>
  hexir.executable @prefill_layer_dispatch_9 attributes {hexir.dispatch_group = "prompt_attention"} {
    builtin.module {
      func.func @prefill_layer_dispatch_9(%arg0: tensor<?x4x2x8xf32>, %arg1: tensor<512x4x8xf16>, %arg2: tensor<512x4x8xf16>, %arg3: tensor<?x4x2x8xf32>, %arg4: index) -> tensor<?x4x2x8xf32> {
        %cst = arith.constant 0.000000e+00 : f32
        %0 = tensor.empty(%arg4) : tensor<?x4x2x512xf32>
        %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4x2x512xf32>) -> tensor<?x4x2x512xf32>
        %2 = linalg.generic {indexing_maps = [#map6, #map7, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<?x4x2x8xf32>, tensor<512x4x8xf16>) outs(%1 : tensor<?x4x2x512xf32>) {
        ^bb0(%in: f32, %in_3: f16, %out: f32):
          %15 = arith.extf %in_3 : f16 to f32
          %16 = arith.mulf %in, %15 : f32
          %17 = arith.addf %out, %16 : f32
          linalg.yield %17 : f32
        } -> tensor<?x4x2x512xf32>
        %cst_0 = arith.constant -3.000000e+38 : f32
        %3 = tensor.empty(%arg4) : tensor<?x4x2xf32>
        %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<?x4x2xf32>) -> tensor<?x4x2xf32>
        %5 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%2 : tensor<?x4x2x512xf32>) outs(%4 : tensor<?x4x2xf32>) {
        ^bb0(%in: f32, %out: f32):
          %15 = linalg.index 0 : index
          %16 = linalg.index 3 : index
          %17 = arith.cmpi ule, %16, %15 : index
          %cst_3 = arith.constant 2.82842708 : f32
          %18 = arith.divf %in, %cst_3 : f32
          %19 = arith.maximumf %out, %18 : f32
          %20 = arith.select %17, %19, %out : f32
          linalg.yield %20 : f32
        } -> tensor<?x4x2xf32>
        %6 = tensor.empty(%arg4) : tensor<?x4x2x512xf32>
        %7 = linalg.generic {indexing_maps = [#map9, #map10, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<?x4x2x512xf32>, tensor<?x4x2xf32>) outs(%6 : tensor<?x4x2x512xf32>) {
        ^bb0(%in: f32, %in_3: f32, %out: f32):
          %15 = linalg.index 0 : index
          %16 = linalg.index 3 : index
          %17 = arith.cmpi ule, %16, %15 : index
          %cst_4 = arith.constant 2.82842708 : f32
          %18 = arith.divf %in, %cst_4 : f32
          %19 = arith.subf %18, %in_3 : f32
          %20 = math.exp %19 : f32
          %cst_5 = arith.constant 0.000000e+00 : f32
          %21 = arith.select %17, %20, %cst_5 : f32
          linalg.yield %21 : f32
        } -> tensor<?x4x2x512xf32>
        %cst_1 = arith.constant 0.000000e+00 : f32
        %8 = tensor.empty(%arg4) : tensor<?x4x2xf32>
        %9 = linalg.fill ins(%cst_1 : f32) outs(%8 : tensor<?x4x2xf32>) -> tensor<?x4x2xf32>
        %10 = linalg.generic {indexing_maps = [#map9, #map10], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%7 : tensor<?x4x2x512xf32>) outs(%9 : tensor<?x4x2xf32>) {
        ^bb0(%in: f32, %out: f32):
          %15 = arith.addf %out, %in : f32
          linalg.yield %15 : f32
        } -> tensor<?x4x2xf32>
        %11 = tensor.empty(%arg4) : tensor<?x4x2x512xf32>
        %12 = linalg.generic {indexing_maps = [#map9, #map10, #map9], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<?x4x2x512xf32>, tensor<?x4x2xf32>) outs(%11 : tensor<?x4x2x512xf32>) {
        ^bb0(%in: f32, %in_3: f32, %out: f32):
          %15 = arith.divf %in, %in_3 : f32
          linalg.yield %15 : f32
        } -> tensor<?x4x2x512xf32>
        %cst_2 = arith.constant 0.000000e+00 : f32
        %13 = linalg.fill ins(%cst_2 : f32) outs(%arg3 : tensor<?x4x2x8xf32>) -> tensor<?x4x2x8xf32>
        %14 = linalg.generic {indexing_maps = [#map6, #map11, #map8], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%12, %arg2 : tensor<?x4x2x512xf32>, tensor<512x4x8xf16>) outs(%13 : tensor<?x4x2x8xf32>) {
        ^bb0(%in: f32, %in_3: f16, %out: f32):
          %15 = arith.extf %in_3 : f16 to f32
          %16 = arith.mulf %in, %15 : f32
          %17 = arith.addf %out, %16 : f32
          linalg.yield %17 : f32
        } -> tensor<?x4x2x8xf32>
        return %14 : tensor<?x4x2x8xf32>
      }
    }
  }
