// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// Sibling projections (hexir-form-dispatch-regions, fuse-sibling-reductions): a GQA layer's
// q (96 rows), k (24) and v (24, written into row %pos of the cache in place) of one x. One
// warps-per-row count for all chains from their 144 rows of 64: 1 (a second warp needs a row
// of at least two warps of 16-byte steps, 512 f16), a warp a row in blocks of 2 warps; the
// kernel gives each its own range of blocks (q: threads [0, 3072), blocks 0..47; k: [3072, 3840), blocks
// 48..59; v: [3840, 4608), blocks 60..71), each under an if on the thread's global id, its
// block id made relative to the chain's first block; hexir.cuda.sibling_blocks records
// [first block, rows] a chain. Lowered: one butterfly per chain.
// CHECK-LABEL: hexir.executable @qkv
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 72, 1, 1>
// CHECK:         hexir.cuda.lanes = 32 : index, hexir.cuda.sibling_blocks = array<i64: 0, 96, 48, 24, 60, 24>, hexir.cuda.thread_count = -1 : index
// CHECK:         %[[BID:.+]] = gpu.block_id x
// CHECK:         %[[C3072:.+]] = arith.constant 3072 : index
// CHECK:         arith.cmpi ult, %{{.+}}, %[[C3072]]
// CHECK:         scf.if
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        tensor<1x64xf16>
// CHECK:         } else {
// CHECK:           arith.constant 3072 : index
// CHECK:           arith.constant 3840 : index
// CHECK:           scf.if
// CHECK:             %[[C48:.+]] = arith.constant 48 : index
// CHECK:             arith.subi %[[BID]], %[[C48]]
// CHECK:             linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           } else {
// CHECK:             arith.constant 4608 : index
// CHECK:             scf.if
// CHECK:               %[[C60:.+]] = arith.constant 60 : index
// CHECK:               arith.subi %[[BID]], %[[C60]]
// CHECK:               linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:               tensor.insert_slice
// LOWER-LABEL: hexir.executable @qkv
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER-NOT:     nvvm.shfl.sync
// LOWER:         llvm.func @qkv(
hexir.executable @qkv attributes {hexir.dispatch_group = "sibling_projections"} {
  builtin.module {
    func.func @qkv(%x: tensor<64xf32>, %wq: tensor<96x64xf16>, %wk: tensor<24x64xf16>, %wv: tensor<24x64xf16>, %vc: tensor<9x24xf32>, %q: tensor<96xf32>, %k: tensor<24xf32>, %vc_out: tensor<9x24xf32>, %pos: index) -> (tensor<96xf32>, tensor<24xf32>, tensor<9x24xf32>) {
      %zero = arith.constant 0.0 : f32
      %zq = linalg.fill ins(%zero : f32) outs(%q : tensor<96xf32>) -> tensor<96xf32>
      %rq = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %wq : tensor<64xf32>, tensor<96x64xf16>) outs(%zq : tensor<96xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<96xf32>
      %zk = linalg.fill ins(%zero : f32) outs(%k : tensor<24xf32>) -> tensor<24xf32>
      %rk = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %wk : tensor<64xf32>, tensor<24x64xf16>) outs(%zk : tensor<24xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<24xf32>
      %ev = tensor.empty() : tensor<24xf32>
      %zv = linalg.fill ins(%zero : f32) outs(%ev : tensor<24xf32>) -> tensor<24xf32>
      %rv = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %wv : tensor<64xf32>, tensor<24x64xf16>) outs(%zv : tensor<24xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<24xf32>
      %row = tensor.insert_slice %rv into %vc_out[%pos, 0] [1, 24] [1, 1] : tensor<24xf32> into tensor<9x24xf32>
      return %rq, %rk, %row : tensor<96xf32>, tensor<24xf32>, tensor<9x24xf32>
    }
  }
}

// -----

// Rows of 1024 f16: one warps-per-row count for all chains from their 144 rows
// (ChooseWarpsPerPoint: 4 warps, each lane of the 128 one 16-byte step), a block of 4 warps
// a row: q blocks 0..95, k 96..119, v 120..143 (the conditions on the global thread id are
// on whole blocks), hexir.cuda.sibling_blocks records each chain's first block and rows.
// Lowered: per chain a butterfly and the warps' sums through shared memory after a barrier;
// the weights are arguments of the public @main (read-only), so thread 0 of each block
// prefetches its own chain's row (2048 bytes at (block - first) 2048) before the wait.
// CHECK-LABEL: hexir.executable @qkv_wide
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 128, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 144, 1, 1>
// CHECK:         hexir.cuda.lanes = 128 : index, hexir.cuda.sibling_blocks = array<i64: 0, 96, 96, 24, 120, 24>
// CHECK:         arith.constant 12288 : index
// CHECK:         scf.if
// CHECK:         } else {
// CHECK:           arith.constant 12288 : index
// CHECK:           arith.constant 15360 : index
// CHECK:           scf.if
// CHECK:             arith.constant 96 : index
// CHECK:           } else {
// CHECK:             arith.constant 15360 : index
// CHECK:             arith.constant 18432 : index
// CHECK:             scf.if
// CHECK:               arith.constant 120 : index
// LOWER-LABEL: hexir.executable @qkv_wide
// LOWER-SAME:    hexir.cuda.read_only_bindings = array<i64: 0, 1, 2, 3>
// LOWER:         llvm.func internal @qkv_wide_impl(
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER:         nvvm.barrier
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER:         nvvm.barrier
// LOWER-COUNT-5: nvvm.shfl.sync  bfly
// LOWER:         nvvm.barrier
// LOWER-NOT:     nvvm.shfl.sync
// LOWER:         llvm.func @qkv_wide(
// LOWER:           nvvm.griddepcontrol launch_dependents
// LOWER:           %[[BID:.+]] = nvvm.read.ptx.sreg.ctaid.x : i32
// LOWER:           llvm.cond_br
// LOWER:           %[[Q0:.+]] = llvm.mlir.constant(0 : i32) : i32
// LOWER:           %[[QROW:.+]] = llvm.sub %[[BID]], %[[Q0]] : i32
// LOWER:           llvm.mlir.constant(96 : i32) : i32
// LOWER:           llvm.mlir.constant(2048 : i64) : i64
// LOWER:           nvvm.cp.async.bulk.prefetch
// LOWER:           %[[K0:.+]] = llvm.mlir.constant(96 : i32) : i32
// LOWER:           llvm.sub %[[BID]], %[[K0]] : i32
// LOWER:           llvm.mlir.constant(24 : i32) : i32
// LOWER:           nvvm.cp.async.bulk.prefetch
// LOWER:           %[[V0:.+]] = llvm.mlir.constant(120 : i32) : i32
// LOWER:           llvm.sub %[[BID]], %[[V0]] : i32
// LOWER:           llvm.mlir.constant(24 : i32) : i32
// LOWER:           nvvm.cp.async.bulk.prefetch
// LOWER:           llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
hexir.executable @qkv_wide attributes {hexir.dispatch_group = "sibling_projections"} {
  builtin.module {
    func.func @qkv_wide(%x: tensor<1024xf32>, %wq: tensor<96x1024xf16>, %wk: tensor<24x1024xf16>, %wv: tensor<24x1024xf16>, %q: tensor<96xf32>, %k: tensor<24xf32>, %v: tensor<24xf32>) -> (tensor<96xf32>, tensor<24xf32>, tensor<24xf32>) {
      %zero = arith.constant 0.0 : f32
      %zq = linalg.fill ins(%zero : f32) outs(%q : tensor<96xf32>) -> tensor<96xf32>
      %rq = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %wq : tensor<1024xf32>, tensor<96x1024xf16>) outs(%zq : tensor<96xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<96xf32>
      %zk = linalg.fill ins(%zero : f32) outs(%k : tensor<24xf32>) -> tensor<24xf32>
      %rk = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %wk : tensor<1024xf32>, tensor<24x1024xf16>) outs(%zk : tensor<24xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<24xf32>
      %zv = linalg.fill ins(%zero : f32) outs(%v : tensor<24xf32>) -> tensor<24xf32>
      %rv = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %wv : tensor<1024xf32>, tensor<24x1024xf16>) outs(%zv : tensor<24xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<24xf32>
      return %rq, %rk, %rv : tensor<96xf32>, tensor<24xf32>, tensor<24xf32>
    }
  }
}
func.func @main(%x: tensor<1024xf32>, %wq: tensor<96x1024xf16>, %wk: tensor<24x1024xf16>, %wv: tensor<24x1024xf16>) -> (tensor<96xf32>, tensor<24xf32>, tensor<24xf32>) {
  %q, %k, %v = hexir.dispatch @qkv_wide(%x, %wq, %wk, %wv) : (tensor<1024xf32>, tensor<96x1024xf16>, tensor<24x1024xf16>, tensor<24x1024xf16>) -> (tensor<96xf32>, tensor<24xf32>, tensor<24xf32>)
  return %q, %k, %v : tensor<96xf32>, tensor<24xf32>, tensor<24xf32>
}
