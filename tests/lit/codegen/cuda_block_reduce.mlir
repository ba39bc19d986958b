// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// A [K][N] GEMV with prime N = 257 (f16: no width divides 257, one column per thread) and
// K = 1031: a column-tile kernel. 4 threads across a tile would give ceil(257 / 4) = 65
// blocks, fewer than 2 an SM, so 2 threads across a tile of 2 columns with 16 loads in
// flight each, times 64 slices of k (128 threads, 16 rows each), ceil(257 / 2) = 129
// blocks (the last tile holds one column).
// DIST-LABEL: hexir.executable @col_prime
// DIST-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 129, 1, 1>
// DIST:         func.func @col_prime
// DIST-SAME:      hexir.cuda.column_tiling = array<i64: 1, 2, 64, 16>
// DIST-SAME:      hexir.cuda.thread_count = 16512 : index
// The partials of a warp's 16 slices meet by xor shuffles 2, 4, 8, 16; 4 warps x 2 columns
// of f32 in shared memory; a barrier; thread c < (columns here) adds column c's 4.
// LOWER-LABEL: hexir.executable @col_prime
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x f32>
// LOWER:         llvm.func internal @col_prime_impl
// LOWER-COUNT-16:  llvm.load %{{.+}} : !llvm.ptr -> f16
// LOWER:           nvvm.shfl.sync  bfly %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : f32 -> f32
// LOWER:           nvvm.shfl.sync  bfly
// LOWER:           nvvm.shfl.sync  bfly
// LOWER:           nvvm.shfl.sync  bfly
// LOWER-NOT:       nvvm.shfl.sync
// LOWER:           llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// LOWER:           nvvm.barrier0
// LOWER-COUNT-4:   llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// LOWER-NOT:       llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// LOWER:         llvm.func @col_prime(
// LOWER-SAME:      nvvm.maxntid = array<i32: 128, 1, 1>
hexir.executable @col_prime {
  builtin.module {
    func.func @col_prime(%x: tensor<1x1031xf16>, %w: tensor<1031x257xf16>, %o: tensor<1x257xf32>) -> tensor<1x257xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<1x257xf32>) -> tensor<1x257xf32>
      %y = linalg.matmul ins(%x, %w : tensor<1x1031xf16>, tensor<1031x257xf16>) outs(%z : tensor<1x257xf32>) -> tensor<1x257xf32>
      return %y : tensor<1x257xf32>
    }
  }
}

// -----

// r + x W with W [2048][1000] f16: 8 columns per thread (16-byte loads; 1000 % 8 = 0), one
// thread across each 8-column tile so that 125 blocks run (16 loads in flight: fewer than 2
// blocks an SM at 4 threads across), 128 slices of k: every thread issues its 16 vector
// loads of W (2048 / 128 rows) before the first add. The residual add reads the finished
// tile after a barrier, column c on thread c.
// DIST-LABEL: hexir.executable @col_residual
// DIST-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 125, 1, 1>
// DIST:           hexir.cuda.column_tiling = array<i64: 8, 1, 128, 16>
// LOWER-LABEL: hexir.executable @col_residual
// LOWER:         llvm.func internal @col_residual_impl
// LOWER-COUNT-16:  llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// LOWER:           llvm.fpext
// LOWER-COUNT-40:  nvvm.shfl.sync  bfly
// LOWER-NOT:       nvvm.shfl.sync
// LOWER:           nvvm.barrier0
// LOWER:           nvvm.barrier0
// LOWER:           llvm.fadd
// LOWER:         llvm.func @col_residual(
hexir.executable @col_residual {
  builtin.module {
    func.func @col_residual(%x: tensor<1x2048xf16>, %w: tensor<2048x1000xf16>, %r: tensor<1x1000xf32>, %out: tensor<1x1000xf32>) -> tensor<1x1000xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<1x1000xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1000xf32>) -> tensor<1x1000xf32>
      %y = linalg.matmul ins(%x, %w : tensor<1x2048xf16>, tensor<2048x1000xf16>) outs(%z : tensor<1x1000xf32>) -> tensor<1x1000xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
          ins(%r, %y : tensor<1x1000xf32>, tensor<1x1000xf32>) outs(%out : tensor<1x1000xf32>) {
        ^bb0(%a: f32, %b: f32, %c: f32):
          %t = arith.addf %a, %b : f32
          linalg.yield %t : f32
      } -> tensor<1x1000xf32>
      return %s : tensor<1x1000xf32>
    }
  }
}

// -----

// A 256-row GEMV, W [256][2048] f16 (an LLM's k/v projection): 256 warps would leave most
// SMs idle, so 8 warps per row, one row per block of 256 threads, 256 blocks.
// DIST-LABEL: hexir.executable @rows256
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 256, 1, 1>
// DIST:           hexir.cuda.lanes = 256 : index, hexir.cuda.thread_count = 65536 : index
// The lanes stride k by 256 x 8 elements; after the warp's butterfly each warp's lane 0
// stores its sum, a barrier, and thread 0 adds the 8 sums into the output.
// LOWER-LABEL: hexir.executable @rows256
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<8 x f32>
// LOWER:           llvm.urem %{{.+}}, %{{.+}} : i64
// LOWER:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER-NOT:       nvvm.shfl.sync
// LOWER:           llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<3>
// LOWER:           nvvm.barrier0
// LOWER-COUNT-8:   llvm.load %{{.+}} : !llvm.ptr<3> -> f32
hexir.executable @rows256 {
  builtin.module {
    func.func @rows256(%w: tensor<256x2048xf16>, %x: tensor<2048xf32>, %o: tensor<256xf32>) -> tensor<256xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<256xf32>) -> tensor<256xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
          ins(%w, %x : tensor<256x2048xf16>, tensor<2048xf32>) outs(%z : tensor<256xf32>) {
        ^bb0(%a: f16, %b: f32, %acc: f32):
          %af = arith.extf %a : f16 to f32
          %p = arith.mulf %af, %b : f32
          %s = arith.addf %acc, %p : f32
          linalg.yield %s : f32
      } -> tensor<256xf32>
      return %y : tensor<256xf32>
    }
  }
}

// -----

// One sum over 4096 floats (RMSNorm's): 16 warps on the single output, one block.
// DIST-LABEL: hexir.executable @sum4096
// DIST-SAME:    hexir.cuda.block_size = array<i64: 512, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// DIST:           hexir.cuda.lanes = 512 : index, hexir.cuda.thread_count = 512 : index
hexir.executable @sum4096 {
  builtin.module {
    func.func @sum4096(%x: tensor<4096xf32>, %o: tensor<f32>) -> tensor<f32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<f32>) -> tensor<f32>
      %s = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<4096xf32>) outs(%z : tensor<f32>) {
      ^bb0(%v: f32, %acc: f32):
        %q = arith.mulf %v, %v : f32
        %r = arith.addf %q, %acc : f32
        linalg.yield %r : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}

// -----

// A short [K][N] GEMV, f32 W [260][132] (the M = 1 executable of a dynamic-M matmul): 4
// columns a thread, one thread across each tile so that 33 blocks run, 32 slices (K = 260
// is too short for more at 16 loads a thread): a tile of one warp. Its threads still meet
// in shared memory by block-local id, so a block holds one tile (32 threads), never two.
// DIST-LABEL: hexir.executable @col_one_warp
// DIST-SAME:    hexir.cuda.block_size = array<i64: 32, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 33, 1, 1>
// DIST:           hexir.cuda.column_tiling = array<i64: 4, 1, 32, 16>
// DIST-SAME:      hexir.cuda.thread_count = 1056 : index
// LOWER-LABEL: hexir.executable @col_one_warp
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x f32>
// LOWER:         llvm.func @col_one_warp(
// LOWER-SAME:      nvvm.maxntid = array<i32: 32, 1, 1>
hexir.executable @col_one_warp {
  builtin.module {
    func.func @col_one_warp(%x: tensor<1x260xf32>, %w: tensor<260x132xf32>, %o: tensor<1x132xf32>) -> tensor<1x132xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<1x132xf32>) -> tensor<1x132xf32>
      %y = linalg.matmul ins(%x, %w : tensor<1x260xf32>, tensor<260x132xf32>) outs(%z : tensor<1x132xf32>) -> tensor<1x132xf32>
      return %y : tensor<1x132xf32>
    }
  }
}

// -----

// block-reductions=false keeps the 1 x 4 strip kernel for this [K][N] GEMV.
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=block-reductions=false | FileCheck %s --check-prefix=OFF
// OFF-LABEL: hexir.executable @col_off
// OFF-NOT:     column_tiling
// OFF:         hexir.cuda.block_size = 256 : index, hexir.cuda.thread_count = 1024 : index
hexir.executable @col_off {
  builtin.module {
    func.func @col_off(%x: tensor<1x4096xf16>, %w: tensor<4096x4096xf16>, %o: tensor<1x4096xf32>) -> tensor<1x4096xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<1x4096xf32>) -> tensor<1x4096xf32>
      %y = linalg.matmul ins(%x, %w : tensor<1x4096xf16>, tensor<4096x4096xf16>) outs(%z : tensor<1x4096xf32>) -> tensor<1x4096xf32>
      return %y : tensor<1x4096xf32>
    }
  }
}
