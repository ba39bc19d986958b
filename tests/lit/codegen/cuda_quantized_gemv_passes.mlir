// RUN: hexir-opt %s --hexir-cuda-distribute-threads --cuda-quantized-gemv-x=f32 --cuda-quantized-gemv-passes=3 | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --cuda-quantized-gemv-x=f32 --hexir-cuda-lower-executables --cuda-quantized-gemv-passes=3 | FileCheck %s --check-prefix=LOWER

// The quantized GEMV (CUDAQuantizedGemv.h) with several row passes a block (the hidden flag
// --cuda-quantized-gemv-passes; the default is 1): q8_0, 600 rows, k = 2048, a row a warp,
// 8 warps a block, so 75 row blocks in 3 passes: 25 blocks, each staging x once for its
// 3 x 8 rows. x (2048 f32s, 512 16-byte pieces, 2 a thread) is loaded whole before any piece
// is stored. The first pass's first group (17 4-byte loads) is issued before x is staged; in
// the pass loop each lane issues its row's next group (17 loads, where there is one: never
// here, 32 groups for 32 lanes), else the next pass's first group (17 loads, where there is a
// next pass) before decoding the current one, then the row's 5-step butterfly.
// [rows, blocks, B, block bytes, G, A, lanes, warps, passes].
// DIST-LABEL: hexir.executable @q8_passes
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>, hexir.workgroup_count = array<i64: 25, 1, 1>
// DIST:         hexir.cuda.quantized_gemv = array<i64: 600, 64, 32, 34, 2, 4, 32, 8, 3, 0>
// LOWER-LABEL:  hexir.executable @q8_passes
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER-COUNT-2:  llvm.load {{.*}} -> vector<4xf32>
// LOWER-COUNT-2:  llvm.store {{.*}} : vector<4xf32>, !llvm.ptr<3>
// LOWER:          nvvm.barrier0
// LOWER:          llvm.cond_br
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER:          llvm.cond_br
// LOWER-COUNT-17: llvm.load {{.*}} -> vector<4xi8>
// LOWER-NOT:      llvm.load {{.*}} -> vector<4xi8>
// LOWER-COUNT-5:  nvvm.shfl.sync  bfly
// LOWER-NOT:      nvvm.shfl.sync
// LOWER:        llvm.func @q8_passes(
hexir.executable @q8_passes {
  builtin.module {
    func.func @q8_passes(%w: tensor<600x2176xi8>, %x: tensor<2048xf32>, %o: tensor<600xf32>) -> tensor<600xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<600xf32>) -> tensor<600xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<600xf32>) {
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
        %d0 = tensor.extract %w[%n, %base] : tensor<600x2176xi8>
        %d1 = tensor.extract %w[%n, %lo_at] : tensor<600x2176xi8>
        %lo = arith.extui %d0 : i8 to i16
        %hi0 = arith.extui %d1 : i8 to i16
        %c8 = arith.constant 8 : i16
        %hi = arith.shli %hi0, %c8 : i16
        %bits = arith.ori %lo, %hi : i16
        %dh = arith.bitcast %bits : i16 to f16
        %d = arith.extf %dh : f16 to f32
        %q8 = tensor.extract %w[%n, %q_at] : tensor<600x2176xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %wv = arith.mulf %d, %q : f32
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<600xf32>
      return %y : tensor<600xf32>
    }
  }
}
