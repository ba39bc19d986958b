// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --cuda-quantized-gemv-x=f32 | FileCheck %s --check-prefix=F32
// RUN: not hexir-opt %s --cuda-quantized-gemv-x=f16 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --cuda-quantized-gemv-x option: Cannot find option named 'f16'!

// The quantized GEMV with 8-bit x (CUDAQuantizedGemvInt8.h), the default where the format
// has an int8 dot: each block quantizes x into shared memory (per 32 values: the maximum
// and the sum over 4 lanes by two xor shuffles each, 8 bytes and a (d, s) pair stored), then each group's weight words are dotted with it by dp4a (8 a 32-value
// sub-block), no conversion of a weight to f32. The last word of the launch shape is 1;
// --cuda-quantized-gemv-x=f32 keeps the f32 path (cuda_quantized_gemv.mlir checks it).

// The decode step's V projection (q4_0, 256 x 2048) written into its KV cache row: groups of
// 2 blocks (36 bytes, 9 4-byte loads issued before x is staged), 32 lanes a row, 4 warps a
// block. 128 threads quantize 2048 values in 2 steps of 8 values (both steps' x loads issued
// first; the scale a multiplication, its inverse the one division, each value one fma);
// a lane's group reads 64 bytes of q and 2 (d, s) pairs from shared memory (5 16-byte
// loads) for 16 dp4a (the nibbles unsigned, x signed).
// DIST-LABEL: hexir.executable @v_row
// DIST:         hexir.cuda.quantized_gemv = array<i64: 256, 64, 32, 18, 2, 4, 32, 4, 1, 1>
// F32-LABEL:  hexir.executable @v_row
// F32:          hexir.cuda.quantized_gemv = array<i64: 256, 64, 32, 18, 2, 4, 32, 4, 1, 0>
// LOWER-LABEL:  hexir.executable @v_row
// LOWER-COUNT-9:  llvm.load {{.*}} -> vector<4xi8>
// LOWER-COUNT-4:  llvm.load {{.*}} -> vector<4xf32>
// LOWER-COUNT-2:  nvvm.shfl.sync  bfly
// LOWER:          llvm.fmul
// LOWER:          llvm.fdiv
// LOWER-COUNT-8:  llvm.call @__nv_fmaf
// LOWER-COUNT-2:  nvvm.shfl.sync  bfly
// LOWER-COUNT-2:  llvm.store {{.*}} : vector<2xi32>, !llvm.ptr<3>
// LOWER:          nvvm.barrier0
// LOWER-COUNT-5:  llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
// LOWER-COUNT-16: nvvm.dot.accumulate.4way {{.*}} <unsigned>, {{.*}} <signed>
// LOWER-NOT:      llvm.sitofp
// LOWER-NOT:      nvvm.dot.accumulate.4way
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

// Sibling q8_0 block matvecs (w1 and w3 of one x) read by SiLU(w1) * w3: x's group read once
// from shared memory for both rows, 16 dp4a each (signed weights: q8_0's bytes).
// DIST-LABEL: hexir.executable @q8_sib
// DIST:         hexir.cuda.quantized_gemv = array<i64: 300, 24, 32, 34, 2, 4, 16, 4, 1, 1>
// LOWER-LABEL:  hexir.executable @q8_sib
// LOWER:          nvvm.barrier0
// LOWER-COUNT-5:  llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
// LOWER-NOT:      llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
// LOWER-COUNT-32: nvvm.dot.accumulate.4way {{.*}} <signed>, {{.*}} <signed>
// LOWER-NOT:      nvvm.dot.accumulate.4way
// LOWER:          llvm.call @__nv_expf
// LOWER:        llvm.func @q8_sib(
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

// -----

// A q4_k super-block (144 bytes, 9 16-byte loads) a group: 8 sub-blocks of 32 values, each
// with its 6-bit scale and min (d sc, -dmin m), 64 dp4a; x's group is 256 bytes of q and 8
// (d, s) pairs (16 + 4 16-byte loads). The kernel reads only the format's layout (the body's
// decode is not cloned on this path: the format name says it).
// DIST-LABEL: hexir.executable @q4k
// DIST:         hexir.cuda.quantized_gemv = array<i64: 6, 2, 256, 144, 1, 16, 2, 8, 1, 1>
// LOWER-LABEL:  hexir.executable @q4k
// LOWER-COUNT-9:  llvm.load {{.*}} -> vector<16xi8>
// LOWER:          nvvm.barrier0
// LOWER-COUNT-20: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xi32>
// LOWER-COUNT-64: nvvm.dot.accumulate.4way {{.*}} <unsigned>, {{.*}} <signed>
// LOWER-NOT:      nvvm.dot.accumulate.4way
// LOWER:        llvm.func @q4k(
hexir.executable @q4k {
  builtin.module {
    func.func @q4k(%xb: tensor<2x256xf32>, %w: tensor<6x288xi8>, %o: tensor<6xf32>) -> tensor<6xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<6xf32>) -> tensor<6xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_k"}
          ins(%xb : tensor<2x256xf32>) outs(%f : tensor<6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c144 = arith.constant 144 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c144 : index
        %jhalf = arith.divui %j, %c2 : index
        %at = arith.addi %base, %jhalf : index
        %byte = tensor.extract %w[%n, %at] : tensor<6x288xi8>
        %u = arith.extui %byte : i8 to i32
        %qf = arith.sitofp %u : i32 to f32
        %p = arith.mulf %a, %qf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<6xf32>
      return %y : tensor<6xf32>
    }
  }
}

// -----

// A matvec named q4_0 whose blocks are not q4_0's (32 values in 34 bytes, q8_0's layout): the
// name alone does not take the 8-bit path (its word decoders would read the wrong bytes); the
// f32 decode of the body keeps it (last shape word 0, no dp4a).
// DIST-LABEL: hexir.executable @named_q4_0
// DIST:         hexir.cuda.quantized_gemv = array<i64: 64, 64, 32, 34, 2, 4, 32, 1, 1, 0>
// LOWER-LABEL:  hexir.executable @named_q4_0
// LOWER-NOT:      nvvm.dot.accumulate.4way
// LOWER:        llvm.func @named_q4_0(
hexir.executable @named_q4_0 {
  builtin.module {
    func.func @named_q4_0(%w: tensor<64x2176xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %xb = tensor.expand_shape %x [[0, 1]] output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<64xf32>) {
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

