// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=chip=sm_80 | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=chip=sm_80 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=chip=sm_80 --hexir-cuda-lower-executables=chip=sm_80 | FileCheck %s --check-prefix=LOWER

// f16/bf16 matmuls with f32 accumulation become the tensor-core kernel (passes/codegen/CUDAMatmul.h);
// below sm_90 (here sm_80) the mma.sync kernel (the wgmma kernel: cuda_matmul_wgmma.mlir); f32
// matmuls the SIMT kernel of the same file.

// bf16 256x512 . 512x384 + bias, relu, rounded to bf16. 128x128 tiles would be 6, 128x64
// 12 (< 120): 64x64 tiles (4 warps of 32x32), 24 blocks of 128 threads, 4 stages of
// (64 + 64) x 32 bf16 (32 KiB). Encoded: batch 1, M 256, N 384, K 512, B [K][N], bf16, A
// arg 0, B arg 1, tile 64x64, warps 2x2, 4 stages, aligned rows, mma.sync.
// DIST-LABEL: hexir.executable @mm_bias
// DIST-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 24, 1, 1>
// DIST:         func.func @mm_bias
// DIST-SAME:      hexir.cuda.tensor_core_matmul = array<i64: 1, 256, 384, 512, 0, 0, 0, 1, 64, 64, 2, 2, 4, 1, 0, 1, 0, 0>
// DIST-SAME:      hexir.cuda.thread_count = -1
// DIST:           linalg.matmul
// The kernel: cp.async 16-byte chunks (source size 0 past the edges), 3 stages in flight
// before the k loop, which waits for all but the 2 youngest groups, then per 16-deep step
// 2 ldmatrix.x4 of A (row) and 2 of B ([K][N]: transposed), 8 bf16 m16n8k16 mma.sync;
// after the loop every copy is drained, then the epilogue adds the bias, takes the relu,
// rounds to bf16 and stores, bounds-checked.
// LOWER-LABEL: hexir.executable @mm_bias
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16384 x bf16>
// LOWER:         llvm.func internal @mm_bias_impl
// LOWER:           nvvm.read.ptx.sreg.nctaid.x
// LOWER:           nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache =  cg, %{{.+}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// LOWER-COUNT-3:   nvvm.cp.async.commit.group
// LOWER:           nvvm.cp.async.wait.group 2
// LOWER-NEXT:      nvvm.barrier0
// LOWER:           nvvm.cp.async.shared.global
// LOWER:           nvvm.cp.async.commit.group
// LOWER-COUNT-2:   nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32
// LOWER-COUNT-2:   nvvm.ldmatrix %{{.+}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
// LOWER-COUNT-8:   nvvm.mma.sync A[{{.+}}]  B[{{.+}}]  C[{{.+}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// LOWER:           nvvm.ldmatrix
// LOWER-COUNT-8:   nvvm.mma.sync
// LOWER:           nvvm.cp.async.wait.group 0
// LOWER-NEXT:      nvvm.barrier0
// LOWER:           llvm.fadd
// LOWER:           llvm.intr.maximum
// LOWER:           llvm.fptrunc %{{.+}} : f32 to bf16
// LOWER:           llvm.store %{{.+}}, %{{.+}} : bf16, !llvm.ptr
// LOWER:         llvm.func @mm_bias(
// LOWER-SAME:      nvvm.maxntid = array<i32: 128, 1, 1>
// LOWER-NOT:       nvvm.minctasm
// sm_80 has no griddepcontrol: the entry starts with no programmatic launch control.
// LOWER-NOT:       nvvm.griddepcontrol
// LOWER:           llvm.return
hexir.executable @mm_bias {
  builtin.module {
    func.func @mm_bias(%a: tensor<256x512xbf16>, %b: tensor<512x384xbf16>, %bias: tensor<384xf32>, %o: tensor<256x384xbf16>) -> tensor<256x384xbf16> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<256x384xf32>
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x384xf32>) -> tensor<256x384xf32>
      %c = linalg.matmul ins(%a, %b : tensor<256x512xbf16>, tensor<512x384xbf16>) outs(%f : tensor<256x384xf32>) -> tensor<256x384xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : tensor<256x384xf32>, tensor<384xf32>) outs(%o : tensor<256x384xbf16>) {
      ^bb0(%x: f32, %y: f32, %z: bf16):
        %s = arith.addf %x, %y : f32
        %m = arith.maximumf %s, %zero : f32
        %t = arith.truncf %m : f32 to bf16
        linalg.yield %t : bf16
      } -> tensor<256x384xbf16>
      return %r : tensor<256x384xbf16>
    }
  }
}

// -----

// f16, dynamic M, B stored [N][K] (a matmul-shaped generic): 128x128 tiles (8 warps of
// 64x32), 3 stages (48 KiB); the host launches ceil(2 M / 128) blocks (2 column tiles,
// M from parameter word 0), which stride over the tiles. B is read by ldmatrix without
// transposition; f16 fragments are pairs of halves.
// DIST-LABEL: hexir.executable @mm_dyn
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 2 : i64, extent_words = array<i64: 0>, limit = 16777216 : i64, tile = 128 : i64}
// DIST:         func.func @mm_dyn
// DIST-SAME:      hexir.cuda.tensor_core_matmul = array<i64: 1, -1, 200, 96, 1, 1, 0, 1, 128, 128, 2, 4, 3, 1, 0, 1, 0, 0>
// LOWER-LABEL: hexir.executable @mm_dyn
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<24576 x f16>
// LOWER:           nvvm.cp.async.wait.group 1
// LOWER-NOT:       layout = #nvvm.mma_layout<col>
// LOWER:           nvvm.mma.sync {{.+}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// The 8-warp tile asks for 2 blocks per SM (128 registers a thread).
// LOWER:         llvm.func @mm_dyn(
// LOWER-SAME:      nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32
hexir.executable @mm_dyn {
  builtin.module {
    func.func @mm_dyn(%a: tensor<?x96xf16>, %b: tensor<200x96xf16>, %o: tensor<?x200xf32>) -> tensor<?x200xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<?x200xf32>) -> tensor<?x200xf32>
      %c = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<?x96xf16>, tensor<200x96xf16>) outs(%f : tensor<?x200xf32>) {
      ^bb0(%x: f16, %y: f16, %acc: f32):
        %xf = arith.extf %x : f16 to f32
        %yf = arith.extf %y : f16 to f32
        %p = arith.mulf %xf, %yf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<?x200xf32>
      return %c : tensor<?x200xf32>
    }
  }
}

// -----

// K = 37: rows of A are not 16-byte aligned, so stages are filled by bounds-checked loads
// and shared stores (no cp.async); the mma steps are unchanged.
// DIST-LABEL: hexir.executable @mm_odd
// DIST-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 67, 41, 37, 0, 0, 0, 1, 64, 64, 2, 2, 4, 0, 0, 1, 0, 0>
// LOWER-LABEL: hexir.executable @mm_odd
// LOWER-NOT:       nvvm.cp.async.shared.global
// LOWER:           llvm.store %{{.+}}, %{{.+}} : bf16, !llvm.ptr<3>
// LOWER:           nvvm.mma.sync
// LOWER:         llvm.func @mm_odd(
hexir.executable @mm_odd {
  builtin.module {
    func.func @mm_odd(%a: tensor<67x37xbf16>, %b: tensor<37x41xbf16>, %o: tensor<67x41xf32>) -> tensor<67x41xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<67x41xf32>) -> tensor<67x41xf32>
      %c = linalg.matmul ins(%a, %b : tensor<67x37xbf16>, tensor<37x41xbf16>) outs(%f : tensor<67x41xf32>) -> tensor<67x41xf32>
      return %c : tensor<67x41xf32>
    }
  }
}

// -----

// Not for the tensor cores: M = 8 (the GEMV kernels' case) and a bf16 accumulator (with a
// remark saying why; the only remark of the file).
// REMARK-NOT:  remark
// REMARK:      cuda_matmul.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: matmul kept off the tensor cores: the accumulator is not f32
// REMARK-NOT:  remark
// DIST-LABEL: hexir.executable @gemv_rows
// DIST-NOT:     tensor_core_matmul
// DIST-LABEL: hexir.executable @bf16_accumulator
// DIST-NOT:     tensor_core_matmul
// LOWER-LABEL: hexir.executable @gemv_rows
// LOWER-NOT:     nvvm.mma.sync
hexir.executable @gemv_rows {
  builtin.module {
    func.func @gemv_rows(%a: tensor<8x64xbf16>, %b: tensor<64x64xbf16>, %o: tensor<8x64xf32>) -> tensor<8x64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<8x64xf32>) -> tensor<8x64xf32>
      %c = linalg.matmul ins(%a, %b : tensor<8x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
      return %c : tensor<8x64xf32>
    }
  }
}
hexir.executable @bf16_accumulator {
  builtin.module {
    func.func @bf16_accumulator(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %o: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
      %zero = arith.constant 0.0 : bf16
      %f = linalg.fill ins(%zero : bf16) outs(%o : tensor<64x64xbf16>) -> tensor<64x64xbf16>
      %c = linalg.matmul ins(%a, %b : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<64x64xbf16>) -> tensor<64x64xbf16>
      return %c : tensor<64x64xbf16>
    }
  }
}

// -----

// f32 operands take the SIMT kernel (CUDAMatmulSimt.cpp) on any chip: 150x100 . 100x200 +
// bias, 128x128 tiles (2 x 2 = 4 blocks of 256 threads), aligned rows (K, N multiples of 4).
// Encoded: ..., tile 128x128, warps 2x4, 2 stages, aligned, not wgmma, 1 split, SIMT, no TF32.
// DIST-LABEL: hexir.executable @f32_bias
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 4, 1, 1>
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 150, 200, 100, 0, 0, 0, 1, 128, 128, 2, 4, 2, 1, 0, 1, 1, 0>
// The kernel: two stages of A^T and B (8 x 128 f32 each) in static shared memory; one
// 16-byte global load of A and of B per thread and k tile, A stored transposed (4 scalar
// stores), B as one 16-byte store; the k loop loads the next tile, multiplies the stage in
// hand (per k: four 16-byte shared loads, 64 fma), stores the next stage and meets a
// barrier; then the bias is added and the result stored, bounds-checked.
// LOWER-LABEL: hexir.executable @f32_bias
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4096 x f32>
// LOWER:         llvm.func internal @f32_bias_impl
// LOWER:           llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// LOWER:           llvm.store {{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
// LOWER:           nvvm.barrier0
// LOWER:           llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// LOWER-COUNT-64:  llvm.intr.fma
// LOWER:           nvvm.barrier0
// LOWER:           llvm.fadd
// LOWER:         llvm.func @f32_bias(
// LOWER-SAME:      nvvm.minctasm = 2
hexir.executable @f32_bias {
  builtin.module {
    func.func @f32_bias(%a: tensor<150x100xf32>, %b: tensor<100x200xf32>, %bias: tensor<200xf32>, %o: tensor<150x200xf32>) -> tensor<150x200xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<150x200xf32>
      %f = linalg.fill ins(%zero : f32) outs(%e : tensor<150x200xf32>) -> tensor<150x200xf32>
      %c = linalg.matmul ins(%a, %b : tensor<150x100xf32>, tensor<100x200xf32>) outs(%f : tensor<150x200xf32>) -> tensor<150x200xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : tensor<150x200xf32>, tensor<200xf32>) outs(%o : tensor<150x200xf32>) {
      ^bb0(%x: f32, %y: f32, %z: f32):
        %s = arith.addf %x, %y : f32
        linalg.yield %s : f32
      } -> tensor<150x200xf32>
      return %r : tensor<150x200xf32>
    }
  }
}
