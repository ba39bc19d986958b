// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64 | FileCheck %s --check-prefix=SSE
// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=skylake-avx512 | FileCheck %s --check-prefix=AVX512
// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=znver4 | FileCheck %s --check-prefix=VNNI

// A q8_0 block matvec with K static dots 8-bit activations (codegen/CPUMatvecInt8Dot.h): x
// quantized once, before the rows (absolute max, x * 127 / amax rounded to nearest even,
// the scale rounded to f16), then per block and row the 32 weight bytes in one load, dotted
// in int32 lanes: on AVX2 (x86-64-v3) ggml's |w| * sign(q, w) byte products summed in pairs
// and the pairs in pairs (vpsignb twice, vpmaddubsw, vpmaddwd with ones), the intrinsics'
// stand-in declarations gone; on SSE products of the bytes widened to i32, even + odd lanes
// twice. No per-element byte reads. One row at a time, prefetched 8192 bytes ahead.
// CHECK-LABEL: hexir.executable @q8
// CHECK-NOT:     hexir_llvm_x86
// CHECK:         llvm.func internal @q8_impl(
// CHECK:           llvm.mlir.constant(8192 : index)
// CHECK:           llvm.alloca {{.*}} x i8
// CHECK:           llvm.intr.vector.reduce.fmax
// CHECK:           llvm.intr.roundeven({{.*}}) : (vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.fptrunc {{.*}} : f32 to f16
// CHECK:           "llvm.intr.prefetch"
// CHECK-NOT:       "llvm.intr.prefetch"
// CHECK:           [[W:%[0-9]+]] = llvm.load {{.*}} -> vector<32xi8>
// CHECK-NEXT:      [[ABS:%[0-9]+]] = llvm.call_intrinsic "llvm.x86.avx2.psign.b"([[W]], [[W]])
// CHECK-NEXT:      [[SIGNED:%[0-9]+]] = llvm.call_intrinsic "llvm.x86.avx2.psign.b"({{%[0-9]+}}, [[W]])
// CHECK-NEXT:      [[PAIRS:%[0-9]+]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"([[ABS]], [[SIGNED]]) : {{.*}} -> vector<16xi16>
// CHECK-NEXT:      llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"([[PAIRS]], {{%[0-9]+}}) : {{.*}} -> vector<8xi32>
// CHECK:           llvm.sitofp {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NOT:       llvm.load {{.*}} -> i8
// CHECK:           llvm.intr.vector.reduce.fadd
// CHECK-NOT:     hexir_llvm_x86
// On AVX-512 (znver4) the two blocks are one step of 64 bytes: |w| (vpabsb), q negated where
// w < 0, vpmaddubsw and vpmaddwd on 512-bit vectors, 16 lanes of f32.
// AVX512-LABEL: hexir.executable @q8
// AVX512-NOT:     llvm.x86.avx2
// AVX512:         llvm.intr.abs{{.*}}vector<64xi8>
// AVX512:         llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"({{.*}}) : {{.*}} -> vector<32xi16>
// AVX512:         llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"({{.*}}) : {{.*}} -> vector<16xi32>
// AVX512:         llvm.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
// AVX512-NOT:     llvm.x86.avx2
// With AVX512_VNNI (znver4) the byte products, their sums and the i32 lanes are one vpdpbusd.
// VNNI-LABEL: hexir.executable @q8
// VNNI-NOT:     llvm.x86.avx512.pmadd
// VNNI:         llvm.intr.abs{{.*}}vector<64xi8>
// VNNI:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// VNNI:         llvm.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
// VNNI-NOT:     llvm.x86.avx512.pmadd
// SSE-LABEL:   hexir.executable @q8
// SSE-NOT:       llvm.call_intrinsic
// SSE:           llvm.load {{.*}} -> vector<32xi8>
// SSE:           llvm.sext {{.*}} : vector<32xi8> to vector<32xi32>
// SSE:           llvm.mul {{.*}} : vector<32xi32>
// SSE:           llvm.shufflevector {{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<32xi32>
// SSE:           llvm.add {{.*}} : vector<16xi32>
// SSE:           llvm.shufflevector {{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xi32>
// SSE:           llvm.sitofp {{.*}} : vector<8xi32> to vector<8xf32>
// SSE-NOT:       llvm.call_intrinsic
hexir.executable @q8 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @q8(%xb: tensor<2x32xf32>, %w: tensor<6x68xi8>, %o: tensor<6xf32>, %id: index) -> tensor<6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"}
          ins(%xb : tensor<2x32xf32>) outs(%o : tensor<6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %at = arith.addi %base, %c2 : index
        %at2 = arith.addi %at, %j : index
        %q = tensor.extract %w[%n, %at2] : tensor<6x68xi8>
        %lo = tensor.extract %w[%n, %base] : tensor<6x68xi8>
        %c1 = arith.constant 1 : index
        %hiat = arith.addi %base, %c1 : index
        %hi = tensor.extract %w[%n, %hiat] : tensor<6x68xi8>
        %lo32 = arith.extui %lo : i8 to i32
        %hi32 = arith.extui %hi : i8 to i32
        %c8 = arith.constant 8 : i32
        %hish = arith.shli %hi32, %c8 : i32
        %bits32 = arith.ori %lo32, %hish : i32
        %bits = arith.trunci %bits32 : i32 to i16
        %h = arith.bitcast %bits : i16 to f16
        %d = arith.extf %h : f16 to f32
        %qi = arith.extsi %q : i8 to i32
        %qf = arith.sitofp %qi : i32 to f32
        %wv = arith.mulf %d, %qf : f32
        %p = arith.mulf %a, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<6xf32>
      return %y : tensor<6xf32>
    }
  }
}

// -----

// q4_0 pairs of blocks (36 bytes) on AVX-512: one masked 64-byte load per row and pair, the
// two blocks' 16 bytes picked twice by one byte shuffle, the upper copy shifted by 4 as
// 16-bit lanes and masked to nibbles; both f16 scales picked from the same load as halves
// (lanes in the nibbles' 16-value chunk order) and widened at once; the nibbles' offset 8
// taken off through the dot of 8 with x, once for all rows (with VNNI, the accumulator the
// rows' vpdpbusd start from). No scalar weight reads.
// AVX512-LABEL: hexir.executable @q4
// AVX512:         llvm.intr.masked.load {{.*}} -> vector<64xi8>
// AVX512:         llvm.lshr {{.*}} : vector<32xi16>
// AVX512:         llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"
// AVX512:         llvm.shufflevector {{.*}} [0, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0, 0, 9, 9, 9, 9] : vector<32xf16>
// AVX512:         llvm.fpext {{.*}} : vector<16xf16> to vector<16xf32>
// AVX512-NOT:     llvm.load {{.*}} -> i8
// VNNI-LABEL:   hexir.executable @q4
// VNNI:           llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// VNNI:           llvm.intr.masked.load {{.*}} -> vector<64xi8>
// VNNI:           llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// VNNI-NOT:       llvm.x86.avx512.pmadd
// VNNI-NOT:       llvm.load {{.*}} -> i8
hexir.executable @q4 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @q4(%xb: tensor<2x32xf32>, %w: tensor<6x36xi8>, %o: tensor<6xf32>, %id: index) -> tensor<6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_0"}
          ins(%xb : tensor<2x32xf32>) outs(%o : tensor<6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c18 = arith.constant 18 : index
        %c16 = arith.constant 16 : index
        %c2 = arith.constant 2 : index
        %c1 = arith.constant 1 : index
        %base = arith.muli %b, %c18 : index
        %jlow = arith.remui %j, %c16 : index
        %qat0 = arith.addi %base, %c2 : index
        %qat = arith.addi %qat0, %jlow : index
        %byte = tensor.extract %w[%n, %qat] : tensor<6x36xi8>
        %lo = tensor.extract %w[%n, %base] : tensor<6x36xi8>
        %hiat = arith.addi %base, %c1 : index
        %hi = tensor.extract %w[%n, %hiat] : tensor<6x36xi8>
        %lo32 = arith.extui %lo : i8 to i32
        %hi32 = arith.extui %hi : i8 to i32
        %c8 = arith.constant 8 : i32
        %hish = arith.shli %hi32, %c8 : i32
        %bits32 = arith.ori %lo32, %hish : i32
        %bits = arith.trunci %bits32 : i32 to i16
        %h = arith.bitcast %bits : i16 to f16
        %d = arith.extf %h : f16 to f32
        %u = arith.extui %byte : i8 to i32
        %c15 = arith.constant 15 : i32
        %c4 = arith.constant 4 : i32
        %low = arith.andi %u, %c15 : i32
        %high = arith.shrui %u, %c4 : i32
        %upper = arith.cmpi uge, %j, %c16 : index
        %nib = arith.select %upper, %high, %low : i32
        %qi = arith.subi %nib, %c8 : i32
        %qf = arith.sitofp %qi : i32 to f32
        %wv = arith.mulf %d, %qf : f32
        %p = arith.mulf %a, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<6xf32>
      return %y : tensor<6xf32>
    }
  }
}

// -----

// Six q4_0 blocks on AVX-512: one step of four blocks, then a pair. The four: two pairs'
// integer lanes (as above), then adjacent lanes of both summed into one vector (even and
// odd lanes of the two, one add), the four f16 scales picked from the two loads' halves in
// those lanes and widened at once: one conversion, one multiply by x's scales and one FMA
// for four blocks. Then the pair's own scale shuffle.
// VNNI-LABEL:   hexir.executable @q4quad
// VNNI:           llvm.intr.masked.load {{.*}} -> vector<64xi8>
// VNNI:           llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// VNNI:           llvm.intr.masked.load {{.*}} -> vector<64xi8>
// VNNI:           llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// VNNI-DAG:       llvm.shufflevector {{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<16xi32>
// VNNI-DAG:       llvm.shufflevector {{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<16xi32>
// VNNI:           llvm.add {{.*}} : vector<16xi32>
// VNNI:           llvm.shufflevector {{.*}} [0, 0, 9, 9, 0, 0, 9, 9, 32, 32, 41, 41, 32, 32, 41, 41] : vector<32xf16>
// VNNI:           llvm.fpext {{.*}} : vector<16xf16> to vector<16xf32>
// VNNI:           llvm.intr.fmuladd
// VNNI:           llvm.shufflevector {{.*}} [0, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0, 0, 9, 9, 9, 9] : vector<32xf16>
// VNNI-NOT:       llvm.load {{.*}} -> i8
hexir.executable @q4quad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @q4quad(%xb: tensor<6x32xf32>, %w: tensor<6x108xi8>, %o: tensor<6xf32>, %id: index) -> tensor<6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_0"}
          ins(%xb : tensor<6x32xf32>) outs(%o : tensor<6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c18 = arith.constant 18 : index
        %c16 = arith.constant 16 : index
        %c2 = arith.constant 2 : index
        %c1 = arith.constant 1 : index
        %base = arith.muli %b, %c18 : index
        %jlow = arith.remui %j, %c16 : index
        %qat0 = arith.addi %base, %c2 : index
        %qat = arith.addi %qat0, %jlow : index
        %byte = tensor.extract %w[%n, %qat] : tensor<6x108xi8>
        %lo = tensor.extract %w[%n, %base] : tensor<6x108xi8>
        %hiat = arith.addi %base, %c1 : index
        %hi = tensor.extract %w[%n, %hiat] : tensor<6x108xi8>
        %lo32 = arith.extui %lo : i8 to i32
        %hi32 = arith.extui %hi : i8 to i32
        %c8 = arith.constant 8 : i32
        %hish = arith.shli %hi32, %c8 : i32
        %bits32 = arith.ori %lo32, %hish : i32
        %bits = arith.trunci %bits32 : i32 to i16
        %h = arith.bitcast %bits : i16 to f16
        %d = arith.extf %h : f16 to f32
        %u = arith.extui %byte : i8 to i32
        %c15 = arith.constant 15 : i32
        %c4 = arith.constant 4 : i32
        %low = arith.andi %u, %c15 : i32
        %high = arith.shrui %u, %c4 : i32
        %upper = arith.cmpi uge, %j, %c16 : index
        %nib = arith.select %upper, %high, %low : i32
        %qi = arith.subi %nib, %c8 : i32
        %qf = arith.sitofp %qi : i32 to f32
        %wv = arith.mulf %d, %qf : f32
        %p = arith.mulf %a, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<6xf32>
      return %y : tensor<6xf32>
    }
  }
}

// -----

// A prompt's q4_0 block matmul (loops (m, n, b, j), M dynamic, marked like the decode
// step's): a loop over the M rows, each row of x quantized and dotted as the one-row kernel
// does (vpdpbusd on pairs from one masked load), no scalar weight reads.
// VNNI-LABEL:   hexir.executable @q4_rows
// VNNI:           llvm.intr.roundeven({{.*}}) : (vector<8xf32>) -> vector<8xf32>
// VNNI:           llvm.intr.masked.load {{.*}} -> vector<64xi8>
// VNNI:           llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// VNNI-NOT:       llvm.load {{.*}} -> i8
hexir.executable @q4_rows attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @q4_rows(%xb: tensor<?x2x32xf32>, %w: tensor<6x36xi8>, %o: tensor<?x6xf32>, %id: index) -> tensor<?x6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(m, n, b, j) -> (m, b, j)>, affine_map<(m, n, b, j) -> (m, n)>],
                           iterator_types = ["parallel", "parallel", "reduction", "reduction"], hexir.block_matvec = "q4_0"}
          ins(%xb : tensor<?x2x32xf32>) outs(%o : tensor<?x6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 1 : index
        %b = linalg.index 2 : index
        %j = linalg.index 3 : index
        %c18 = arith.constant 18 : index
        %c16 = arith.constant 16 : index
        %c2 = arith.constant 2 : index
        %c1 = arith.constant 1 : index
        %base = arith.muli %b, %c18 : index
        %jlow = arith.remui %j, %c16 : index
        %qat0 = arith.addi %base, %c2 : index
        %qat = arith.addi %qat0, %jlow : index
        %byte = tensor.extract %w[%n, %qat] : tensor<6x36xi8>
        %lo = tensor.extract %w[%n, %base] : tensor<6x36xi8>
        %hiat = arith.addi %base, %c1 : index
        %hi = tensor.extract %w[%n, %hiat] : tensor<6x36xi8>
        %lo32 = arith.extui %lo : i8 to i32
        %hi32 = arith.extui %hi : i8 to i32
        %c8 = arith.constant 8 : i32
        %hish = arith.shli %hi32, %c8 : i32
        %bits32 = arith.ori %lo32, %hish : i32
        %bits = arith.trunci %bits32 : i32 to i16
        %h = arith.bitcast %bits : i16 to f16
        %d = arith.extf %h : f16 to f32
        %u = arith.extui %byte : i8 to i32
        %c15 = arith.constant 15 : i32
        %c4 = arith.constant 4 : i32
        %low = arith.andi %u, %c15 : i32
        %high = arith.shrui %u, %c4 : i32
        %upper = arith.cmpi uge, %j, %c16 : index
        %nib = arith.select %upper, %high, %low : i32
        %qi = arith.subi %nib, %c8 : i32
        %qf = arith.sitofp %qi : i32 to f32
        %wv = arith.mulf %d, %qf : f32
        %p = arith.mulf %a, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<?x6xf32>
      return %y : tensor<?x6xf32>
    }
  }
}

// -----

// A q4_k block matvec (super-blocks of 256) on AVX-512 dots q8_K activations: x quantized per
// 256 values in 16-lane vectors (scale 1 / (127 / amax), kept f32; no f16 rounding), then
// per row and super-block four 64-value chunks, each one vpmaddubsw of the weights' unsigned
// integers with x's bytes and the pairs scaled by the 16-value groups' integer scales: with
// VNNI (znver4) one vpdpwssd each, without (skylake-avx512) vpmaddwd; two super-blocks
// unrolled: 8 chunks, no loop over blocks, no software prefetch (the hardware's follows the
// one row). AVX2 (x86-64-v3) keeps the f32 dots.
// CHECK-LABEL:  hexir.executable @q4k
// CHECK-NOT:      llvm.x86.avx512
// CHECK:          llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// AVX512-LABEL: hexir.executable @q4k
// AVX512:         llvm.intr.roundeven({{.*}}) : (vector<16xf32>) -> vector<16xf32>
// AVX512-NOT:     llvm.fptrunc
// AVX512:         llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"
// AVX512-NEXT:    llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"
// AVX512-NOT:     vpdpwssd
// VNNI-LABEL:   hexir.executable @q4k
// VNNI:           llvm.intr.roundeven({{.*}}) : (vector<16xf32>) -> vector<16xf32>
// VNNI-NOT:       "llvm.intr.prefetch"
// VNNI-COUNT-8:   llvm.call_intrinsic "llvm.x86.avx512.vpdpwssd.512"
// VNNI-NOT:       llvm.call_intrinsic "llvm.x86.avx512.vpdpwssd.512"
// VNNI-NOT:       llvm.load {{.*}} -> i8
// VNNI:           llvm.intr.vector.reduce.fadd
hexir.executable @q4k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @q4k(%xb: tensor<2x256xf32>, %w: tensor<6x288xi8>, %o: tensor<6xf32>, %id: index) -> tensor<6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_k"}
          ins(%xb : tensor<2x256xf32>) outs(%o : tensor<6xf32>) {
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
