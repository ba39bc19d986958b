// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=weight-staging=shared | FileCheck %s
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=weight-staging=shared --hexir-cuda-serialize-executables=format=ptx | FileCheck %s --check-prefix=PTX
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=weight-staging=l1 | FileCheck %s --check-prefix=L1
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=weight-staging=none | FileCheck %s --check-prefix=NONE
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables="chip=sm_80 weight-staging=shared" | FileCheck %s --check-prefix=NONE
// RUN: not hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=weight-staging=smem 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hexir-compile %s --target=cuda --cuda-weight-staging=smem -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=REFUSED
// A one-block kernel's weights fetched while its prerequisite kernels run (issue #18;
// passes/codegen/CUDAStagedWeights.h). The small-layer FFN of cuda_block_levels.mlir (dim 64,
// hidden 43), dispatched on @main's arguments: no dispatch writes x, g, w1, w3 or w2, and the
// kernel reads each whole, so with weight-staging=shared (the default) every thread
// copies its share of them into dynamic shared memory with 16-byte cp.async before
// griddepcontrol.wait, then waits for the copies and a barrier, and the kernel reads the
// copies. Offsets: x [0, 256), g [256, 512), w1 at 512 and w3 at 12208 as 43 rows of 256
// bytes 272 apart (16 units a row is even: one more spreads 8 rows over 8 bank groups), w2
// (64 rows of 172 bytes, unpadded) at 23904: 34912 bytes of dynamic shared memory.
// CHECK-LABEL: hexir.executable @ffn
// CHECK-SAME:    hexir.cuda.read_only_bindings = array<i64: 0, 1, 2, 3, 4>
// CHECK-SAME:    hexir.cuda.shared_bytes = 34912
// CHECK:         llvm.mlir.global external @__dynamic_shmem__0(){{.*}}addr_space = 3{{.*}}!llvm.array<0 x i8>
// CHECK:         llvm.func @ffn(%[[X:.+]]: !llvm.ptr {{{.*}}}, %[[G:.+]]: !llvm.ptr {{{.*}}}, %[[W1:.+]]: !llvm.ptr {{{.*}}}, %[[W3:.+]]: !llvm.ptr {{{.*}}}, %[[W2:.+]]: !llvm.ptr {{{.*}}}, %{{.+}}: !llvm.ptr {{{.*}}})
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      %[[BASE:.+]] = llvm.mlir.addressof @__dynamic_shmem__0 : !llvm.ptr<3>
// CHECK:           llvm.getelementptr %[[X]]
// CHECK:           nvvm.cp.async.shared.global %{{.+}}, %{{.+}}, 16, cache = cg
// CHECK:           llvm.getelementptr %[[G]]
// CHECK:           nvvm.cp.async.shared.global
// w1: unit i of 688 (43 rows x 16) to 512 + (i / 16) 272 + (i % 16) 16.
// CHECK:           llvm.mlir.constant(688 : i64)
// CHECK:           llvm.udiv
// CHECK:           llvm.urem
// CHECK:           llvm.mlir.constant(272 : i64)
// CHECK:           llvm.mlir.constant(512 : i64)
// CHECK:           llvm.getelementptr %[[W1]]
// CHECK:           nvvm.cp.async.shared.global
// CHECK:           llvm.mlir.constant(12208 : i64)
// CHECK:           llvm.getelementptr %[[W3]]
// CHECK:           nvvm.cp.async.shared.global
// CHECK:           llvm.mlir.constant(23904 : i64)
// CHECK:           llvm.getelementptr %[[W2]]
// CHECK:           nvvm.cp.async.shared.global
// CHECK:           nvvm.cp.async.commit.group
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// CHECK-NEXT:      nvvm.cp.async.wait.group 0
// CHECK-NEXT:      nvvm.barrier0
// CHECK:           llvm.call @ffn_impl
// @row reads one row of its table (a slice: not staged) and @ffn's result (written by a
// dispatch: not read-only): nothing staged, no dynamic shared memory, the entry waits first.
// CHECK-LABEL: hexir.executable @row
// CHECK-NOT:     hexir.cuda.shared_bytes
// CHECK:         llvm.func @row(
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// Serialized: the copies before the wait read only read-only bindings, so the entry still
// counts as waiting first (programmatic edges into it stay allowed); the dynamic shared memory
// is the launch's (`.extern`, after the static arrays: an internal symbol would be demoted to
// a 1-byte static variable that the copies overrun).
// PTX-LABEL: hexir.executable @ffn
// PTX-SAME:    cuda.programmatic_wait.ffn = "1"
// PTX-SAME:    cuda.shared_bytes.ffn = "34912"
// PTX-SAME:    .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX-SAME:    cp.async.cg.shared.global
// PTX-SAME:    griddepcontrol.wait;
// PTX-SAME:    cp.async.wait_group
// l1: each thread prefetches its share of the five weights' 128-byte lines into L1 before
// the wait; no shared memory.
// L1-LABEL: hexir.executable @ffn
// L1-NOT:     hexir.cuda.shared_bytes
// L1:         llvm.func @ffn(
// L1-COUNT-5: nvvm.prefetch level = L1
// L1:         llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// L1-NOT:     nvvm.barrier0
// L1:         llvm.call @ffn_impl
// none (the default), and sm_80 (no programmatic launch: nothing to overlap): no copies.
// NONE-NOT:  cp.async
// NONE-NOT:  shared_bytes
// NONE-NOT:  nvvm.prefetch
// BAD: weight-staging 'smem' is not one of none, shared, l1
// REFUSED: hexir-compile: error: invalid_argument: --cuda-weight-staging: 'smem' is not one of none, shared, l1

#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
#rows = affine_map<(i, k) -> (i, k)>
#cols = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>
hexir.executable @ffn attributes {hexir.dispatch_group = "small_layer"} {
  builtin.module {
    func.func @ffn(%x: tensor<64xf32>, %g: tensor<64xf32>, %w1: tensor<43x64xf32>, %w3: tensor<43x64xf32>, %w2: tensor<64x43xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%z0 : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %m = arith.mulf %a, %a : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<f32>
      %e1 = tensor.empty() : tensor<64xf32>
      %xn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%x, %ss, %g : tensor<64xf32>, tensor<f32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
      ^bb0(%a: f32, %sum: f32, %gw: f32, %unused: f32):
        %n = arith.constant 64.0 : f32
        %mean = arith.divf %sum, %n : f32
        %inv = math.rsqrt %mean : f32
        %xs = arith.mulf %a, %inv : f32
        %y = arith.mulf %gw, %xs : f32
        linalg.yield %y : f32
      } -> tensor<64xf32>
      %eh = tensor.empty() : tensor<43xf32>
      %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<43xf32>) -> tensor<43xf32>
      %h1 = linalg.generic {indexing_maps = [#rows, #cols, #out], iterator_types = ["parallel", "reduction"]} ins(%w1, %xn : tensor<43x64xf32>, tensor<64xf32>) outs(%zh : tensor<43xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<43xf32>
      %eh3 = tensor.empty() : tensor<43xf32>
      %zh3 = linalg.fill ins(%zero : f32) outs(%eh3 : tensor<43xf32>) -> tensor<43xf32>
      %h3 = linalg.generic {indexing_maps = [#rows, #cols, #out], iterator_types = ["parallel", "reduction"]} ins(%w3, %xn : tensor<43x64xf32>, tensor<64xf32>) outs(%zh3 : tensor<43xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<43xf32>
      %es = tensor.empty() : tensor<43xf32>
      %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<43xf32>, tensor<43xf32>) outs(%es : tensor<43xf32>) {
      ^bb0(%a: f32, %b: f32, %unused: f32):
        %na = arith.negf %a : f32
        %ex = math.exp %na : f32
        %one = arith.constant 1.0 : f32
        %den = arith.addf %one, %ex : f32
        %silu = arith.divf %a, %den : f32
        %y = arith.mulf %silu, %b : f32
        linalg.yield %y : f32
      } -> tensor<43xf32>
      %ed = tensor.empty() : tensor<64xf32>
      %zd = linalg.fill ins(%zero : f32) outs(%ed : tensor<64xf32>) -> tensor<64xf32>
      %d = linalg.generic {indexing_maps = [#rows, #cols, #out], iterator_types = ["parallel", "reduction"]} ins(%w2, %h : tensor<64x43xf32>, tensor<43xf32>) outs(%zd : tensor<64xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %d : tensor<64xf32>, tensor<64xf32>) outs(%o : tensor<64xf32>) {
      ^bb0(%a: f32, %b: f32, %unused: f32):
        %y = arith.addf %a, %b : f32
        linalg.yield %y : f32
      } -> tensor<64xf32>
      return %r : tensor<64xf32>
    }
  }
}

hexir.executable @row attributes {hexir.dispatch_group = "small_layer"} {
  builtin.module {
    func.func @row(%t: tensor<16x64xf32>, %g: tensor<64xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %x = tensor.extract_slice %t[3, 0] [1, 64] [1, 1] : tensor<16x64xf32> to tensor<64xf32>
      %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %g : tensor<64xf32>, tensor<64xf32>) outs(%o : tensor<64xf32>) {
      ^bb0(%a: f32, %b: f32, %unused: f32):
        %y = arith.mulf %a, %b : f32
        linalg.yield %y : f32
      } -> tensor<64xf32>
      return %r : tensor<64xf32>
    }
  }
}
func.func @main(%x: tensor<64xf32>, %g: tensor<64xf32>, %w1: tensor<43x64xf32>, %w3: tensor<43x64xf32>, %w2: tensor<64x43xf32>, %t: tensor<16x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %y = hexir.dispatch @ffn(%x, %g, %w1, %w3, %w2) : (tensor<64xf32>, tensor<64xf32>, tensor<43x64xf32>, tensor<43x64xf32>, tensor<64x43xf32>) -> tensor<64xf32>
  %z = hexir.dispatch @row(%t, %y) : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %y, %z : tensor<64xf32>, tensor<64xf32>
}
