// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=prefetch-max-bytes=139263 | FileCheck %s --check-prefix=NONE

// The quantized GEMV's weight streamed into L2 before the programmatic wait (issue #19): a
// q8_0 W of 64 rows x 2176 bytes (139264, under prefetch-max-bytes) that no dispatch of the
// program writes is prefetched whole, in equal 16-byte-multiple shares of the grid's blocks
// (its rows a block are not one range when the blocks take several passes): 64 blocks of
// 2176 bytes, block b from byte b 2176. x (the 2048 f32 activations) is not a quantized
// weight and is not prefetched.
// CHECK-LABEL: hexir.executable @q8
// CHECK-SAME:    hexir.cuda.read_only_bindings = array<i64: 0, 1>
// CHECK:         llvm.func @q8(%[[W:.+]]: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64})
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK:           llvm.mlir.constant(64 : i32) : i32
// CHECK:           llvm.mlir.constant(2176 : i64) : i64
// CHECK:           llvm.getelementptr %[[W]][%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:           nvvm.cp.async.bulk.prefetch %{{.+}}, %{{.+}} : <1>
// CHECK-NOT:       nvvm.cp.async.bulk.prefetch
// CHECK:           llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// One byte over the bound: nothing prefetched.
// NONE-LABEL:  llvm.func @q8(
// NONE-NEXT:     nvvm.griddepcontrol launch_dependents
// NONE-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
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
// The same kernel on a W that a dispatch computes: not read-only, not prefetched, and loaded
// coherently (no noalias on the entry: a prerequisite may still be writing it).
// CHECK-LABEL: hexir.executable @q8_computed
// CHECK-SAME:    hexir.cuda.read_only_bindings = array<i64: 1>
// CHECK:         llvm.func @q8_computed(%{{.+}}: !llvm.ptr {llvm.align = 16 : i64}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64})
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
hexir.executable @q8_computed {
  builtin.module {
    func.func @q8_computed(%w: tensor<64x2176xi8>, %x: tensor<2048xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
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
hexir.executable @fill {
  builtin.module {
    func.func @fill(%w: tensor<64x2176xi8>, %o: tensor<64x2176xi8>) -> tensor<64x2176xi8> {
      %one = arith.constant 1 : i8
      %r = linalg.fill ins(%one : i8) outs(%o : tensor<64x2176xi8>) -> tensor<64x2176xi8>
      return %r : tensor<64x2176xi8>
    }
  }
}
func.func @main(%w: tensor<64x2176xi8>, %x: tensor<2048xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %a = hexir.dispatch @q8(%w, %x) : (tensor<64x2176xi8>, tensor<2048xf32>) -> tensor<64xf32>
  %c = hexir.dispatch @fill(%w) : (tensor<64x2176xi8>) -> tensor<64x2176xi8>
  %b = hexir.dispatch @q8_computed(%c, %x) : (tensor<64x2176xi8>, tensor<2048xf32>) -> tensor<64xf32>
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}
