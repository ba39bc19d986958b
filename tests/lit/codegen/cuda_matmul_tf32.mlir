// RUN: hexir-opt %s --hexir-cuda-distribute-threads=allow-tf32=true | FileCheck %s --check-prefix=DIST
// RUN: hexir-opt %s --hexir-cuda-distribute-threads=allow-tf32=true --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=EXACT

// f32 150x100 . 100x200 with TF32 allowed (hexir-compile --allow-tf32): the SIMT kernel's
// tile and launch (CUDAMatmul.h), encoded with TF32 on (the last word).
// DIST-LABEL: hexir.executable @f32_tf32
// DIST-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// DIST-SAME:    hexir.workgroup_count = array<i64: 4, 1, 1>
// DIST:           hexir.cuda.tensor_core_matmul = array<i64: 1, 150, 200, 100, 0, 0, 0, 1, 128, 128, 2, 4, 2, 1, 0, 1, 1, 1>
// The kernel: two stages of A^T and B with rows padded to 136 words (2 x 2 x 8 x 136 =
// 4352 words); each element rounded to TF32 (cvt.rna) before its shared store; per k tile
// each warp loads its fragments as 32-bit shared loads and issues 4 x 4 m16n8k8 tf32
// mma.sync; no f32 fma block.
// LOWER-LABEL: hexir.executable @f32_tf32
// LOWER:         llvm.mlir.global private @__hexir_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4352 x f32>
// LOWER:         llvm.func internal @f32_tf32_impl
// LOWER:           llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// LOWER:           nvvm.convert.float.to.tf32 {{.*}}rna
// LOWER:           nvvm.barrier0
// LOWER:           llvm.load {{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// LOWER-COUNT-16:  nvvm.mma.sync {{.*}}tf32
// LOWER-NOT:       llvm.intr.fma
// LOWER:           nvvm.barrier0
// LOWER:         llvm.func @f32_tf32(
// LOWER-SAME:      nvvm.minctasm = 2
// Without the option the same matmul keeps exact f32 products (the fma block, no mma).
// EXACT-LABEL: hexir.executable @f32_tf32
// EXACT-NOT:     nvvm.mma.sync
// EXACT-NOT:     nvvm.convert.float.to.tf32
// EXACT-COUNT-64: llvm.intr.fma
// EXACT-NOT:     nvvm.mma.sync
hexir.executable @f32_tf32 {
  builtin.module {
    func.func @f32_tf32(%a: tensor<150x100xf32>, %b: tensor<100x200xf32>, %o: tensor<150x200xf32>) -> tensor<150x200xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<150x200xf32>) -> tensor<150x200xf32>
      %c = linalg.matmul ins(%a, %b : tensor<150x100xf32>, tensor<100x200xf32>) outs(%f : tensor<150x200xf32>) -> tensor<150x200xf32>
      return %c : tensor<150x200xf32>
    }
  }
}
