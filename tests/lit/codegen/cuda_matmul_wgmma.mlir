// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// On sm_90 (the default chip) f16/bf16 matmuls with aligned rows take the wgmma kernel
// (passes/codegen/CUDAMatmul.h, CUDAMatmulWgmma.cpp): 256 threads (2 warpgroups), 128-row
// tiles, 64-deep stages in dynamic shared memory, PTX for sm_90a; K split over a cluster of
// blocks where the output has few tiles.

// bf16 1024x512 . 512x2048 ([K][N]) + bias: 128x256 tiles give 8 x 8 = 64 < 132, 128x128
// 128: >= 132 fails too, so 128x64 (256 tiles, no split); stages of (128 + 64) x 64 bf16 =
// 24 KiB, 6 of them (+ 1 KiB alignment = 148480 bytes). Encoded: ..., tile 128x64, 2
// warpgroups (warps 2x4), 6 stages, aligned, wgmma, 1 split, not SIMT.
// DIST-LABEL: hexir.executable @wg_bias
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 256, 1, 1>
// DIST:         func.func @wg_bias
// DIST-SAME:      hexir.cuda.tensor_core_matmul = array<i64: 1, 1024, 2048, 512, 0, 0, 0, 1, 128, 64, 2, 4, 6, 1, 1, 1, 0, 0>
// The kernel: 4 stages in flight before the k loop (6 - 2); each k step waits for all but
// the 3 youngest copy groups, fences the copies into the async proxy, meets at a barrier,
// copies one stage ahead, then fences the accumulators and issues 4 wgmma m64n64k16 with
// B N-major (imm-trans-b 1), commits them and waits for all but the youngest group; after
// the loop every group is waited for before the epilogue adds the bias.
// LOWER-LABEL: hexir.executable @wg_bias
// LOWER-SAME:    hexir.cuda.chip = "sm_90a"
// LOWER-SAME:    hexir.cuda.shared_bytes = 148480 : i64
// LOWER:         gpu.module @wg_bias [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// LOWER:           llvm.mlir.global internal @__dynamic_shmem__{{[0-9]*}}() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// LOWER:         llvm.func internal @wg_bias_impl
// LOWER-COUNT-4:   nvvm.cp.async.commit.group
// LOWER:           nvvm.cp.async.wait.group 3
// LOWER-NEXT:      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// LOWER-NEXT:      nvvm.barrier0
// LOWER:           nvvm.cp.async.shared.global
// LOWER:           nvvm.cp.async.commit.group
// LOWER:           nvvm.wgmma.fence.aligned
// LOWER-COUNT-4:   wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// LOWER:           nvvm.wgmma.commit.group.sync.aligned
// LOWER-NEXT:      nvvm.wgmma.wait.group.sync.aligned 1
// LOWER:           nvvm.wgmma.wait.group.sync.aligned 0
// LOWER-NEXT:      nvvm.cp.async.wait.group 0
// LOWER-NEXT:      nvvm.barrier0
// LOWER:           llvm.fadd
// LOWER:         llvm.func @wg_bias(
// LOWER-SAME:      nvvm.maxntid = array<i32: 256, 1, 1>
// LOWER-NOT:       nvvm.minctasm
// LOWER-NOT:       nvvm.cluster_dim
hexir.executable @wg_bias {
  builtin.module {
    func.func @wg_bias(%a: tensor<1024x512xbf16>, %b: tensor<512x2048xbf16>, %bias: tensor<2048xf32>, %o: tensor<1024x2048xf32>) -> tensor<1024x2048xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<1024x2048xf32>
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
      %c = linalg.matmul ins(%a, %b : tensor<1024x512xbf16>, tensor<512x2048xbf16>) outs(%f : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : tensor<1024x2048xf32>, tensor<2048xf32>) outs(%o : tensor<1024x2048xf32>) {
      ^bb0(%x: f32, %y: f32, %z: f32):
        %s = arith.addf %x, %y : f32
        linalg.yield %s : f32
      } -> tensor<1024x2048xf32>
      return %r : tensor<1024x2048xf32>
    }
  }
}

// -----

// f16, 8192^3 shape ([N][K] B, the llama layout): 128x256 tiles (64 x 32 = 2048 >= 132),
// 4 stages of (128 + 256) x 64 f16 = 48 KiB (197632 bytes with the alignment); B K-major
// (imm-trans-b 0): wgmma m64n256k16, 128 accumulators a thread.
// DIST-LABEL: hexir.executable @wg_big
// DIST-SAME:    hexir.workgroup_count = array<i64: 2048, 1, 1>
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 8192, 8192, 8192, 1, 1, 0, 1, 128, 256, 2, 4, 4, 1, 1, 1, 0, 0>
// LOWER-LABEL: hexir.executable @wg_big
// LOWER-SAME:    hexir.cuda.shared_bytes = 197632 : i64
// LOWER:           nvvm.cp.async.wait.group 1
// LOWER-COUNT-4:   wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
hexir.executable @wg_big {
  builtin.module {
    func.func @wg_big(%a: tensor<8192x8192xf16>, %b: tensor<8192x8192xf16>, %o: tensor<8192x8192xf32>) -> tensor<8192x8192xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
      %c = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<8192x8192xf16>, tensor<8192x8192xf16>) outs(%f : tensor<8192x8192xf32>) {
      ^bb0(%x: f16, %y: f16, %acc: f32):
        %xf = arith.extf %x : f16 to f32
        %yf = arith.extf %y : f16 to f32
        %p = arith.mulf %xf, %yf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<8192x8192xf32>
      return %c : tensor<8192x8192xf32>
    }
  }
}

// -----

// Dynamic M takes 128x128 tiles; unaligned rows (K = 37) and small M stay on mma.sync.
// DIST-LABEL: hexir.executable @wg_dynamic
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, -1, 256, 128, 0, 0, 0, 1, 128, 128, 2, 4, 6, 1, 1, 1, 0, 0>
// DIST-LABEL: hexir.executable @sync_unaligned
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 200, 256, 37, 0, 0, 0, 1, 64, 64, 2, 2, 4, 0, 0, 1, 0, 0>
// DIST-LABEL: hexir.executable @sync_small
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 32, 256, 128, 0, 0, 0, 1, 64, 64, 2, 2, 4, 1, 0, 1, 0, 0>
// LOWER-LABEL: hexir.executable @wg_dynamic
// LOWER:           wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// LOWER-LABEL: hexir.executable @sync_unaligned
// LOWER-NOT:     hexir.cuda.chip
// LOWER:           nvvm.mma.sync
// LOWER-LABEL: hexir.executable @sync_small
// LOWER-NOT:     wgmma
hexir.executable @wg_dynamic {
  builtin.module {
    func.func @wg_dynamic(%a: tensor<?x128xbf16>, %b: tensor<128x256xbf16>, %o: tensor<?x256xf32>) -> tensor<?x256xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<?x256xf32>) -> tensor<?x256xf32>
      %c = linalg.matmul ins(%a, %b : tensor<?x128xbf16>, tensor<128x256xbf16>) outs(%f : tensor<?x256xf32>) -> tensor<?x256xf32>
      return %c : tensor<?x256xf32>
    }
  }
}
hexir.executable @sync_unaligned {
  builtin.module {
    func.func @sync_unaligned(%a: tensor<200x37xbf16>, %b: tensor<37x256xbf16>, %o: tensor<200x256xf32>) -> tensor<200x256xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<200x256xf32>) -> tensor<200x256xf32>
      %c = linalg.matmul ins(%a, %b : tensor<200x37xbf16>, tensor<37x256xbf16>) outs(%f : tensor<200x256xf32>) -> tensor<200x256xf32>
      return %c : tensor<200x256xf32>
    }
  }
}
hexir.executable @sync_small {
  builtin.module {
    func.func @sync_small(%a: tensor<32x128xbf16>, %b: tensor<128x256xbf16>, %o: tensor<32x256xf32>) -> tensor<32x256xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<32x256xf32>) -> tensor<32x256xf32>
      %c = linalg.matmul ins(%a, %b : tensor<32x128xbf16>, tensor<128x256xbf16>) outs(%f : tensor<32x256xf32>) -> tensor<32x256xf32>
      return %c : tensor<32x256xf32>
    }
  }
}

// -----

// Prefill: M = 128 against a 2048x2048 [K][N] weight, plus a bias. 128x64 tiles give 32
// blocks for 132 SMs: K (32 tiles of 64) is split over clusters of 4 blocks (32 x 4 = 128
// blocks, 8 k tiles each). Block r copies only its slice (copies at k >= the slice's end are
// zero-filled), stores its f32 partial tile to its shared memory, meets the cluster, sums
// its quarter of the tile over the 4 blocks' shared memory (`mapa`, rank order), adds the
// bias and stores; a second cluster barrier keeps its shared memory until all have read.
// DIST-LABEL: hexir.executable @wg_split
// DIST-SAME:    hexir.workgroup_count = array<i64: 128, 1, 1>
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 128, 2048, 2048, 0, 0, 0, 1, 128, 64, 2, 4, 6, 1, 1, 4, 0, 0>
// LOWER-LABEL: hexir.executable @wg_split
// LOWER:         llvm.func internal @wg_split_impl
// LOWER:           llvm.intr.umin
// LOWER:           wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// LOWER:           nvvm.wgmma.wait.group.sync.aligned 0
// LOWER:           llvm.store {{.*}} : vector<2xf32>, !llvm.ptr<3>
// LOWER:           nvvm.cluster.arrive
// LOWER-NEXT:      nvvm.cluster.wait
// LOWER-COUNT-4:   nvvm.mapa
// LOWER-COUNT-4:   llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// LOWER:           llvm.fadd
// LOWER:           nvvm.cluster.arrive
// LOWER-NEXT:      nvvm.cluster.wait
// LOWER:         llvm.func @wg_split(
// LOWER-SAME:      nvvm.cluster_dim = array<i32: 4, 1, 1>
hexir.executable @wg_split {
  builtin.module {
    func.func @wg_split(%a: tensor<128x2048xbf16>, %b: tensor<2048x2048xbf16>, %bias: tensor<2048xf32>, %o: tensor<128x2048xf32>) -> tensor<128x2048xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<128x2048xf32>
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x2048xf32>) -> tensor<128x2048xf32>
      %c = linalg.matmul ins(%a, %b : tensor<128x2048xbf16>, tensor<2048x2048xbf16>) outs(%f : tensor<128x2048xf32>) -> tensor<128x2048xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : tensor<128x2048xf32>, tensor<2048xf32>) outs(%o : tensor<128x2048xf32>) {
      ^bb0(%x: f32, %y: f32, %z: f32):
        %s = arith.addf %x, %y : f32
        linalg.yield %s : f32
      } -> tensor<128x2048xf32>
      return %r : tensor<128x2048xf32>
    }
  }
}
