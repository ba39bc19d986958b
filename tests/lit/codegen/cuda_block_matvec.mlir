// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=quantized-gemv=false | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=quantized-gemv=false --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER
// The generic path for GGUF block matvecs (quantized-gemv=false, or a kernel the quantized
// GEMV of CUDAQuantizedGemv.h refuses: cuda_quantized_gemv.mlir).

// A q8_0 decode matvec as the llama importer writes it (64 rows, k = 2048: 64 blocks of
// 32 values, 34 bytes each: an f16 scale, then 32 int8 quants).
// Regrouped into one reduction over the 64 units of 32 values (CUDABlockMatvec.h): a warp
// per row (64 rows x 32 lanes in blocks of 2 warps), its extent from an unread [64] i8.
// DIST-LABEL: hexir.executable @q8
// DIST-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>, hexir.workgroup_count = array<i64: 32, 1, 1>
// DIST:         func.func @q8
// DIST-SAME:      hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 2048 : index
// DIST:         tensor.empty() : tensor<64xi8>
// DIST:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.+}} : tensor<64xi8>)
// DIST-NOT:     hexir.block_matvec
// Lowered: the lanes' partial sums meet in a 5-step butterfly.
// LOWER-LABEL:  hexir.executable @q8
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

// Blocks of 256 values (the K-quants' size): 8 blocks of 8 units each; the unit's block is
// u / 8 and its first value (u % 8) * 32.
// DIST-LABEL: hexir.executable @k256
// DIST:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 2048 : index
// DIST:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.+}} : tensor<64xi8>)
// DIST:           arith.divui %{{.+}}, %c8 : index
// DIST:           arith.remui %{{.+}}, %c8 : index
// LOWER-LABEL:  hexir.executable @k256
// LOWER-COUNT-5:  nvvm.shfl.sync  bfly
hexir.executable @k256 {
  builtin.module {
    func.func @k256(%w: tensor<64x2048xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [8, 256] : tensor<2048xf32> into tensor<8x256xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q6_k"} ins(%xb : tensor<8x256xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c256 = arith.constant 256 : index
        %base = arith.muli %b, %c256 : index
        %at = arith.addi %base, %j : index
        %q8 = tensor.extract %w[%n, %at] : tensor<64x2048xi8>
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

// Blocks of 16 values do not fill a unit: left as they are (one thread per row).
// DIST-LABEL: hexir.executable @b16
// DIST:         hexir.cuda.thread_count = 64 : index
// DIST:         iterator_types = ["parallel", "reduction", "reduction"]} {{.*}}hexir.block_matvec = "q8_0"
// LOWER-LABEL:  hexir.executable @b16
// LOWER-NOT:      nvvm.shfl.sync
hexir.executable @b16 {
  builtin.module {
    func.func @b16(%w: tensor<64x2048xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [128, 16] : tensor<2048xf32> into tensor<128x16xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<128x16xf32>) outs(%f : tensor<64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c16 = arith.constant 16 : index
        %base = arith.muli %b, %c16 : index
        %at = arith.addi %base, %j : index
        %q8 = tensor.extract %w[%n, %at] : tensor<64x2048xi8>
        %q = arith.sitofp %q8 : i8 to f32
        %p = arith.mulf %xv, %q : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// A prompt's M rows (m, n, b, j), M dynamic, as the llama importer writes a prefill
// projection (q8_0, 64 rows, k = 2048: 64 blocks of 34 bytes): regrouped into (m, n, u), a warp
// per (m, n), the units' x read at row m; blocks of warps stride over the M x 64 points.
// DIST-LABEL: hexir.executable @prompt
// DIST-SAME:    hexir.workgroup_count_dynamic
// DIST:         func.func @prompt
// DIST-SAME:      hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = -1 : index
// DIST:         tensor.empty() : tensor<64xi8>
// DIST:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}} : tensor<64xi8>)
// DIST:           tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : tensor<?x64x32xf32>
// DIST-NOT:     hexir.block_matvec
// LOWER-LABEL:  hexir.executable @prompt
// LOWER-COUNT-5:  nvvm.shfl.sync  bfly
// LOWER-NOT:      nvvm.shfl.sync
// LOWER:        llvm.func @prompt(
hexir.executable @prompt {
  builtin.module {
    func.func @prompt(%w: tensor<64x2176xi8>, %x: tensor<?x2048xf32>, %o: tensor<?x64xf32>) -> tensor<?x64xf32> {
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %m = tensor.dim %x, %c0 : tensor<?x2048xf32>
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<?x64xf32>) -> tensor<?x64xf32>
      %xb = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, 64, 32] : tensor<?x2048xf32> into tensor<?x64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(m, n, b, j) -> (m, b, j)>, affine_map<(m, n, b, j) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb : tensor<?x64x32xf32>) outs(%f : tensor<?x64xf32>) {
      ^bb0(%xv: f32, %acc: f32):
        %n = linalg.index 1 : index
        %b = linalg.index 2 : index
        %j = linalg.index 3 : index
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
      } -> tensor<?x64xf32>
      return %y : tensor<?x64xf32>
    }
  }
}
