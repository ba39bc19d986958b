// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --cuda-quantized-gemv-x=f32 | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --cuda-quantized-gemv-x=f32 --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// The quantized GEMV (CUDAQuantizedGemv.h) on q8_0 decode matvecs as the llama importer
// writes them (34-byte blocks: an f16 scale, then 32 int8 quants).

// 64 rows, k = 2048 (64 blocks): groups of 2 blocks (68 bytes, 17 4-byte loads; 64 values:
// the decode is written out per value, and the code of 8-block groups made every kernel as
// slow as its straight-line code), 32 groups a row, so 32 lanes a row and a row a warp; x
// staged in shared memory; 4 warps a block would make 16 blocks (8 warps 8), under a quarter
// of the 132 SMs, so 2 and 1 are tried too: a warp a block (64 blocks, the most spread).
// [rows, blocks, B, block bytes, G, A, lanes, warps, passes].
// DIST-LABEL: hexir.executable @q8
// DIST-SAME:    hexir.cuda.block_size = array<i64: 32, 1, 1>, hexir.workgroup_count = array<i64: 64, 1, 1>
// DIST:         func.func @q8
// DIST-SAME:      hexir.cuda.block_size = 32 : index, hexir.cuda.quantized_gemv = array<i64: 64, 64, 32, 34, 2, 4, 32, 1, 1, 0>, hexir.cuda.thread_count = -1 : index
// DIST:         hexir.block_matvec = "q8_0"
// Lowered: 17 4-byte loads a group (issued before x is staged), no byte load, a 5-step
// butterfly over the row's 32 lanes.
// LOWER-LABEL:  hexir.executable @q8
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER-NOT:      llvm.load {{.*}} -> i8
// LOWER:          nvvm.barrier0
// LOWER-NOT:      llvm.load {{.*}} -> vector<4xi8>
// LOWER-COUNT-5:  nvvm.shfl.sync  bfly
// LOWER-NOT:      nvvm.shfl.sync
// LOWER:        llvm.func @q8(
hexir.executable @q8 {
  builtin.module {
    func.func @q8(%w: tensor<64x2176xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<64x2176xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<64x2176xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<64x2176xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// TinyLlama's w1 shape (5632 rows, k = 2048) in q8_0, a row a warp: 8 warps a block would
// make 704 blocks (5.33 an SM against 6 on the busiest), 4 warps make 1408 (10.67 / 11): 4
// warps, x staged. The lane's group's 17 loads are issued before x is copied and the
// barrier.
// DIST-LABEL: hexir.executable @q8_w1
// DIST-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>, hexir.workgroup_count = array<i64: 1408, 1, 1>
// DIST:         hexir.cuda.quantized_gemv = array<i64: 5632, 64, 32, 34, 2, 4, 32, 4, 1, 0>
// LOWER-LABEL:  hexir.executable @q8_w1
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER:          nvvm.barrier0
// LOWER-NOT:      llvm.load {{.*}} -> vector<4xi8>
// LOWER:        llvm.func @q8_w1(
hexir.executable @q8_w1 {
  builtin.module {
    func.func @q8_w1(%w: tensor<5632x2176xi8>, %x: tensor<2048xf32>, %o: tensor<5632xf32>) -> tensor<5632xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<5632xf32>) -> tensor<5632xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<5632xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<5632x2176xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<5632x2176xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<5632x2176xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<5632xf32>
      return %y : tensor<5632xf32>
    }
  }
}

// -----

// k = 12800 (400 blocks: 200 groups of 2 a row, 32 lanes, so each lane takes 6 or 7
// groups): software-pipelined, the first group's 17 loads before the loop, the next group's
// 17 inside it (under a branch: where there is a next group) before the current group is
// decoded. x (54 KB with its padding) is read from global memory, warps halved to 1 (64
// blocks).
// DIST-LABEL: hexir.executable @q8_long
// DIST:         hexir.cuda.quantized_gemv = array<i64: 64, 400, 32, 34, 2, 4, 32, 1, 1, 0>
// LOWER-LABEL:  hexir.executable @q8_long
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER:          llvm.cond_br
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER-NOT:      llvm.load {{.*}} -> vector<4xi8>
// LOWER:          llvm.call @__nv_fmaf
// LOWER:        llvm.func @q8_long(
hexir.executable @q8_long {
  builtin.module {
    func.func @q8_long(%w: tensor<64x13600xi8>, %x: tensor<12800xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [400, 32] : tensor<12800xf32> into tensor<400x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<400x32xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<64x13600xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<64x13600xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<64x13600xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// 300 rows, k = 768 (12 groups of 2 blocks a row: 16 lanes, 2 rows a warp; 38 blocks of 4
// warps, the last one's rows past 300 load row 299 and store nothing) with the residual add
// fused: lane 0 of each row adds r[n] and stores.
// DIST-LABEL: hexir.executable @q8_res
// DIST-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>, hexir.workgroup_count = array<i64: 38, 1, 1>
// DIST:         hexir.cuda.quantized_gemv = array<i64: 300, 24, 32, 34, 2, 4, 16, 4, 1, 0>
// LOWER-LABEL:  hexir.executable @q8_res
// LOWER-COUNT-4:  nvvm.shfl.sync  bfly
// LOWER-NOT:      nvvm.shfl.sync
// LOWER:          llvm.fadd
// LOWER:          llvm.store
hexir.executable @q8_res {
  builtin.module {
    func.func @q8_res(%w: tensor<300x816xi8>, %x: tensor<768xf32>, %r: tensor<300xf32>, %o: tensor<300xf32>) -> tensor<300xf32> {
      %zero = arith.constant 0.0 : f32
      %t = tensor.empty() : tensor<300xf32>
      %f = linalg.fill ins(%zero : f32) outs(%t : tensor<300xf32>) -> tensor<300xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [24, 32] : tensor<768xf32> into tensor<24x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<24x32xf32>) outs(%f : tensor<300xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<300x816xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<300x816xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<300x816xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<300xf32>
      %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%y, %r : tensor<300xf32>, tensor<300xf32>) outs(%o : tensor<300xf32>) {
      ^bb0(%a: f32, %c: f32, %u: f32):
        %s2 = arith.addf %a, %c : f32
        linalg.yield %s2 : f32
      } -> tensor<300xf32>
      return %z : tensor<300xf32>
    }
  }
}

// -----

// k = 96 (3 blocks): one block a group, 102-byte rows: 2-byte loads (17 a group); 4 lanes a
// row (3 groups), 5 rows in one warp.
// DIST-LABEL: hexir.executable @q8_k3
// DIST-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// DIST:         hexir.cuda.quantized_gemv = array<i64: 5, 3, 32, 34, 1, 2, 4, 8, 1, 0>
// LOWER-LABEL:  hexir.executable @q8_k3
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<2xi8>
// LOWER-COUNT-2:  nvvm.shfl.sync  bfly
hexir.executable @q8_k3 {
  builtin.module {
    func.func @q8_k3(%w: tensor<5x102xi8>, %x: tensor<96xf32>, %o: tensor<5xf32>) -> tensor<5xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<5xf32>) -> tensor<5xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [3, 32] : tensor<96xf32> into tensor<3x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<3x32xf32>) outs(%f : tensor<5xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<5x102xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<5x102xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<5x102xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<5xf32>
      return %y : tensor<5xf32>
    }
  }
}

// -----

// x computed inside the kernel by an elementwise generic (as the final RMSNorm's scaling
// fused into the classifier): each block computes it once into shared memory, then a
// barrier, then the rows read x from there (however few blocks: staged x is what computes
// it; 64 rows: a warp a block, as @q8). The lane's first group's loads are issued before x
// is computed.
// DIST-LABEL: hexir.executable @computed_x
// DIST:         hexir.cuda.quantized_gemv = array<i64: 64, 64, 32, 34, 2, 4, 32, 1, 1, 0>
// LOWER-LABEL:  hexir.executable @computed_x
// LOWER:          llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER:          nvvm.barrier0
hexir.executable @computed_x {
  builtin.module {
    func.func @computed_x(%w: tensor<64x2176xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xe = tensor.empty() : tensor<2048xf32>
      %x2 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<2048xf32>) outs(%xe : tensor<2048xf32>) {
      ^bb0(%a: f32, %u: f32):
        %d = arith.addf %a, %a : f32
        linalg.yield %d : f32
      } -> tensor<2048xf32>
      %xb = tensor.expand_shape %x2 [[0, 1]] output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<64x2176xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<64x2176xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<64x2176xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// An RMSNorm recomputed inside the kernel (hexir-fuse-small-reductions'
// max-block-matvec-extent): the sum of squares over x, then the scaling read through the
// staged x. Each block sums x first (EmitBlockSum, CUDABlockSum.h: the thread's 8 steps'
// loads, then an xor butterfly in each warp, the warps' sums through shared memory and a
// barrier), then stages the scaled x (a second barrier), so the kernel is as @computed_x
// with one more barrier and butterfly.
// DIST-LABEL: hexir.executable @normed_x
// DIST:         hexir.cuda.quantized_gemv = array<i64: 64, 64, 32, 34, 2, 4, 32, 1, 1, 0>
// LOWER-LABEL:  hexir.executable @normed_x
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER-COUNT-5:  nvvm.shfl.sync  bfly
// LOWER:          nvvm.barrier0
// LOWER:          llvm.call @__nv_sqrtf
// LOWER:          nvvm.barrier0
// LOWER-NOT:      nvvm.barrier0
// LOWER:        llvm.func @normed_x(
hexir.executable @normed_x {
  builtin.module {
    func.func @normed_x(%w: tensor<64x2176xi8>, %x: tensor<2048xf32>, %g: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %se = tensor.empty() : tensor<f32>
      %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<f32>) -> tensor<f32>
      %ss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<2048xf32>) outs(%sf : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %q = arith.mulf %a, %a : f32
        %r = arith.addf %acc, %q : f32
        linalg.yield %r : f32
      } -> tensor<f32>
      %xe = tensor.empty() : tensor<2048xf32>
      %x2 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %ss, %g : tensor<2048xf32>, tensor<f32>, tensor<2048xf32>) outs(%xe : tensor<2048xf32>) {
      ^bb0(%a: f32, %t: f32, %gv: f32, %u: f32):
        %k = arith.constant 2048.0 : f32
        %m = arith.divf %t, %k : f32
        %eps = arith.constant 1.0e-05 : f32
        %v = arith.addf %m, %eps : f32
        %sq = math.sqrt %v : f32
        %p = arith.divf %a, %sq : f32
        %r = arith.mulf %gv, %p : f32
        linalg.yield %r : f32
      } -> tensor<2048xf32>
      %xb = tensor.expand_shape %x2 [[0, 1]] output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w[%n, %base] : tensor<64x2176xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<64x2176xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<64x2176xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// 210-byte blocks (q6_k's size) are 2-byte aligned: 105 loads a group, past the limit of 72:
// refused, the generic warp kernel over 32-value units instead (CUDABlockMatvec.h).
// DIST-LABEL: hexir.executable @q6k
// DIST-NOT:     hexir.cuda.quantized_gemv
// DIST:         hexir.cuda.lanes = 32 : index
hexir.executable @q6k {
  builtin.module {
    func.func @q6k(%w: tensor<64x1680xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [8, 256] : tensor<2048xf32> into tensor<8x256xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q6_k"} ins(%xb : tensor<8x256xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c210 = arith.constant 210 : index
        %c128 = arith.constant 128 : index
        %base = arith.muli %b, %c210 : index
        %jj = arith.remui %j, %c128 : index
        %at = arith.addi %base, %jj : index
        %q8 = tensor.extract %w[%n, %at] : tensor<64x1680xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %p = arith.mulf %xv, %q : f32
        %s = arith.addf %p, %acc : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// The decode step's V projection (q4_0, 256 x 2048) written into its KV cache row %pos, as
// the importer fuses it: the quantized GEMV takes it (the row write is its store). Groups of
// 2 blocks (36 bytes, 9 4-byte loads, issued before x is staged), 32 lanes a row, 4 warps a
// block (64 blocks). The decode is cheap: each value's nibble becomes an f32 in place in its
// 32-bit word of the load (the 4-byte vector bitcast to one i32, the nibble masked where it
// lies and or'ed with 2^23's exponent bits, 0x4B000000 = 1258291200, a bitcast, one
// subtraction of 2^23 + 8 x 2^P; the upper half-word shifted right by 16 first): no sitofp,
// no nibble extraction (the bytes extracted are the f16 scales'); the block's scale is
// decoded once and applied to the block's fma chains (one per nibble position P, each taken
// out by its exact 2^-P in one fma: libdevice's __nv_fmaf, fma.rn.f32 in the PTX).
// DIST-LABEL: hexir.executable @v_row
// DIST:         hexir.cuda.quantized_gemv = array<i64: 256, 64, 32, 18, 2, 4, 32, 4, 1, 0>
// LOWER-LABEL:  hexir.executable @v_row
// LOWER-COUNT-9:  llvm.load {{.*}} -> vector<4xi8>
// LOWER:          nvvm.barrier0
// LOWER-NOT:      llvm.load {{.*}} -> vector<4xi8>
// LOWER:          llvm.bitcast {{.*}} : vector<4xi8> to vector<1xi32>
// LOWER:          llvm.and
// LOWER-NEXT:     llvm.or
// LOWER-NEXT:     llvm.bitcast {{.*}} : i32 to f32
// LOWER-NOT:      llvm.sitofp
// LOWER:          llvm.lshr
// LOWER-NOT:      llvm.sitofp
// LOWER-COUNT-31: llvm.call @__nv_fmaf
// LOWER-NOT:      llvm.sitofp
// LOWER-COUNT-5:  nvvm.shfl.sync  bfly
// LOWER:          llvm.store
// LOWER:        llvm.func @v_row(
hexir.executable @v_row {
  builtin.module {
    func.func @v_row(%arg0: tensor<256x1152xi8>, %arg1: tensor<64x32xf32>, %arg3: tensor<512x256xf32>, %arg4: index) -> tensor<512x256xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty() : tensor<256xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<256xf32>) -> tensor<256xf32>
      %2 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_0"} ins(%arg1 : tensor<64x32xf32>) outs(%1 : tensor<256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %3 = linalg.index 0 : index
        %4 = linalg.index 1 : index
        %5 = linalg.index 2 : index
        %c18 = arith.constant 18 : index
        %6 = arith.muli %4, %c18 : index
        %c15 = arith.constant 15 : index
        %7 = arith.andi %5, %c15 : index
        %c4 = arith.constant 4 : index
        %8 = arith.shrui %5, %c4 : index
        %c2 = arith.constant 2 : index
        %9 = arith.addi %6, %c2 : index
        %10 = arith.addi %9, %7 : index
        %extracted = tensor.extract %arg0[%3, %10] : tensor<256x1152xi8>
        %11 = arith.extui %extracted : i8 to i32
        %12 = arith.muli %8, %c4 : index
        %13 = arith.index_cast %12 : index to i32
        %14 = arith.shrui %11, %13 : i32
        %c15_i32 = arith.constant 15 : i32
        %15 = arith.andi %14, %c15_i32 : i32
        %c8_i32 = arith.constant 8 : i32
        %16 = arith.subi %15, %c8_i32 : i32
        %17 = arith.sitofp %16 : i32 to f32
        %c1 = arith.constant 1 : index
        %extracted_1 = tensor.extract %arg0[%3, %6] : tensor<256x1152xi8>
        %19 = arith.extui %extracted_1 : i8 to i32
        %20 = arith.addi %6, %c1 : index
        %extracted_2 = tensor.extract %arg0[%3, %20] : tensor<256x1152xi8>
        %21 = arith.extui %extracted_2 : i8 to i32
        %22 = arith.shli %21, %c8_i32 : i32
        %23 = arith.ori %19, %22 : i32
        %24 = arith.trunci %23 : i32 to i16
        %25 = arith.bitcast %24 : i16 to f16
        %26 = arith.extf %25 : f16 to f32
        %27 = arith.mulf %26, %17 : f32
        %28 = arith.mulf %in, %27 : f32
        %29 = arith.addf %out, %28 : f32
        linalg.yield %29 : f32
      } -> tensor<256xf32>
      %inserted_slice = tensor.insert_slice %2 into %arg3[%arg4, 0] [1, 256] [1, 1] {hexir.in_place} : tensor<256xf32> into tensor<512x256xf32>
      return %inserted_slice : tensor<512x256xf32>
    }
  }
}

// -----

// Sibling block matvecs (hexir-form-dispatch-regions' fuse-sibling-reductions: w1 and w3 of
// one x, both filled by one fill after CSE) read by SiLU(w1) * w3: one kernel, each lane
// computing both rows' sums (two butterflies of 4 steps), then the epilogue of the two.
// DIST-LABEL: hexir.executable @q8_sib
// DIST-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>, hexir.workgroup_count = array<i64: 38, 1, 1>
// DIST:         hexir.cuda.quantized_gemv = array<i64: 300, 24, 32, 34, 2, 4, 16, 4, 1, 0>
// LOWER-LABEL:  hexir.executable @q8_sib
// LOWER-COUNT-8:  nvvm.shfl.sync  bfly
// LOWER-NOT:      nvvm.shfl.sync
// LOWER:          llvm.call @__nv_expf
// LOWER:          llvm.store
hexir.executable @q8_sib {
  builtin.module {
    func.func @q8_sib(%w1: tensor<300x816xi8>, %x: tensor<768xf32>, %w3: tensor<300x816xi8>, %o: tensor<300xf32>) -> tensor<300xf32> {
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %t = tensor.empty() : tensor<300xf32>
      %f = linalg.fill ins(%zero : f32) outs(%t : tensor<300xf32>) -> tensor<300xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [24, 32] : tensor<768xf32> into tensor<24x32xf32>
      %h1 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<24x32xf32>) outs(%f : tensor<300xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w1[%n, %base] : tensor<300x816xi8>
        %d1 = tensor.extract %w1[%n, %lo_at] : tensor<300x816xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w1[%n, %q_at] : tensor<300x816xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<300xf32>
      %h3 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<24x32xf32>) outs(%f : tensor<300xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %lo_at = arith.addi %base, %c1 : index
        %q_at0 = arith.addi %base, %c2 : index
        %q_at = arith.addi %q_at0, %j : index
        %d0 = tensor.extract %w3[%n, %base] : tensor<300x816xi8>
        %d1 = tensor.extract %w3[%n, %lo_at] : tensor<300x816xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w3[%n, %q_at] : tensor<300x816xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<300xf32>
      %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<300xf32>, tensor<300xf32>) outs(%o : tensor<300xf32>) {
      ^bb0(%a: f32, %c: f32, %u: f32):
        %na = arith.negf %a : f32
        %e = math.exp %na : f32
        %den = arith.addf %e, %one : f32
        %sg = arith.divf %one, %den : f32
        %silu = arith.mulf %a, %sg : f32
        %g = arith.mulf %silu, %c : f32
        linalg.yield %g : f32
      } -> tensor<300xf32>
      return %z : tensor<300xf32>
    }
  }
}
