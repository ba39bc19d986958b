// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=block-reductions=false | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=block-reductions=false --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// Sibling reductions (w1 x and w3 x read by SiLU * mul: one region, fuse-sibling-reductions):
// tiling the consumer per point fuses both matvecs in with a row extent of 1, a warp per row
// (768 rows x 32 lanes in blocks of 2 warps). Lowered, the warp computes each dot in turn
// (lane-strided 16-byte loads, a butterfly of five xor shuffles each); lane 0 stores w1's dot
// in its temporary and applies the consumer after w3's.
// CHECK-LABEL: hexir.executable @ffn_gate
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 384, 1, 1>
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.thread_count = 24576 : index
// CHECK:         scf.for
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%{{.+}}, %{{.+}} : tensor<1x2048xf16>, tensor<2048xf32>) outs(%{{.+}} : tensor<1xf32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%{{.+}}, %{{.+}} : tensor<1x2048xf16>, tensor<2048xf32>) outs(%{{.+}} : tensor<1xf32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-SAME:        : tensor<1xf32>, tensor<1xf32>)
// CHECK:           tensor.insert_slice
// Both weights are arguments of the public @main: each block of 2 rows prefetches its 2 rows
// of w1 and of w3 (2 x 4096 bytes) into L2 before the programmatic wait.
// LOWER-LABEL: hexir.executable @ffn_gate
// LOWER-SAME:    hexir.cuda.read_only_bindings = array<i64: 0, 1, 2>
// LOWER:         llvm.func internal @ffn_gate_impl({{.*}}) attributes {always_inline}
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER:         llvm.store
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER:         llvm.store
// LOWER:         llvm.call @__nv_expf
// LOWER-NOT:     nvvm.shfl.sync
// LOWER:         llvm.func @ffn_gate(
// LOWER:           llvm.mlir.constant(384 : i32) : i32
// LOWER:           llvm.cond_br
// LOWER:           llvm.mlir.constant(8192 : i64) : i64
// LOWER:           nvvm.cp.async.bulk.prefetch %{{.+}}, %{{.+}} : <1>
// LOWER:           nvvm.cp.async.bulk.prefetch %{{.+}}, %{{.+}} : <1>
// LOWER-NEXT:      llvm.br
// LOWER:           llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
hexir.executable @ffn_gate {
  builtin.module {
    func.func @ffn_gate(%w1: tensor<768x2048xf16>, %w3: tensor<768x2048xf16>, %x: tensor<2048xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<768xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
      %h1 = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w1, %x : tensor<768x2048xf16>, tensor<2048xf32>) outs(%z : tensor<768xf32>) {
      ^bb0(%a: f16, %b: f32, %acc: f32):
        %af = arith.extf %a : f16 to f32
        %p = arith.mulf %af, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<768xf32>
      %e3 = tensor.empty() : tensor<768xf32>
      %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<768xf32>) -> tensor<768xf32>
      %h3 = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w3, %x : tensor<768x2048xf16>, tensor<2048xf32>) outs(%z3 : tensor<768xf32>) {
      ^bb0(%a: f16, %b: f32, %acc: f32):
        %af = arith.extf %a : f16 to f32
        %p = arith.mulf %af, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<768xf32>
      %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<768xf32>, tensor<768xf32>) outs(%o : tensor<768xf32>) {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %n = arith.negf %a : f32
        %ex = math.exp %n : f32
        %one = arith.constant 1.0 : f32
        %d = arith.addf %one, %ex : f32
        %sg = arith.divf %a, %d : f32
        %r = arith.mulf %sg, %b : f32
        linalg.yield %r : f32
      } -> tensor<768xf32>
      return %g : tensor<768xf32>
    }
  }
}
func.func @main(%w1: tensor<768x2048xf16>, %w3: tensor<768x2048xf16>, %x: tensor<2048xf32>) -> tensor<768xf32> {
  %g = hexir.dispatch @ffn_gate(%w1, %w3, %x) : (tensor<768x2048xf16>, tensor<768x2048xf16>, tensor<2048xf32>) -> tensor<768xf32>
  return %g : tensor<768xf32>
}
