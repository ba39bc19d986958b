// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER

// A `small_layer` group (hexir-group-small-projections, passes/dispatch/fusion/README.md) on
// CUDA: one block of 256 threads, level after level (passes/codegen/CUDABlockLevels.cpp).
// Before: a kernel with several ops after reductions ran on one thread (or recomputed the
// whole chain per output point). The FFN block of a tiny llama at awkward sizes (dim 64,
// hidden 43): RMSNorm's sum (64, one point: split over the block, an xor butterfly per warp,
// the 8 warps' partials through shared memory), its scaling, w1 and w3 (43 rows each, one
// level: w3 starts at thread 43), SiLU * mul, w2 (64 rows of 43), the residual add.
// CHECK-LABEL: hexir.executable @ffn
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @ffn({{.*}}) -> tensor<64xf32> attributes {hexir.cuda.block_levels, hexir.cuda.block_size = 256 : index, hexir.cuda.thread_count = -1 : index}
// The lowering: temporaries in shared memory (address space 3), the sum's partials, a barrier
// between dependent levels and none between w1 and w3.
// LOWER-LABEL: hexir.executable @ffn
// LOWER-DAG:     llvm.mlir.global private @__hexir_level{{.*}}addr_space = 3{{.*}} : f32
// LOWER-DAG:     llvm.mlir.global private @__hexir_level{{.*}}addr_space = 3{{.*}}!llvm.array<64 x f32>
// LOWER-DAG:     llvm.mlir.global private @__hexir_level{{.*}}addr_space = 3{{.*}}!llvm.array<43 x f32>
// LOWER-DAG:     llvm.mlir.global private @__hexir_shared{{.*}}addr_space = 3{{.*}}!llvm.array<8 x f32>
// LOWER:         llvm.func internal @ffn_impl
// LOWER:           nvvm.read.ptx.sreg.tid.x
// The sum: each thread's strided partial, the butterfly, the warp leaders' stores, a barrier,
// thread 0's total (the zero fill folded in: no barrier before the sum).
// LOWER-NOT:       nvvm.barrier
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER:           nvvm.barrier0
// Then: barrier, the scaling; barrier, w1 and w3 in one level (their zero fills folded into
// them: each row's lane 0 stores its 0 + total; 43 rows of 64 on 256 threads: 4 lanes a row,
// CUDABlockLevels.cpp LanesPerPoint, two butterfly steps each); barrier, SiLU * mul;
// barrier, w2 (43 elements a row, which no lane count divides: a thread a row); barrier, the
// residual add. Six barriers in all.
// LOWER:           nvvm.barrier0
// LOWER:           nvvm.barrier0
// LOWER-COUNT-4:   nvvm.shfl.sync  bfly
// LOWER-COUNT-3:   nvvm.barrier0
// LOWER-NOT:       nvvm.barrier
// LOWER:           llvm.return
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

// -----

// A norm pair (hexir-group-small-projections' max-norm-extent): TinyLlama's RMSNorm, here 2047
// wide with an f16 weight, as one block: the block-wide sum (each thread's strided partial,
// one butterfly, the warps' partials through shared memory), a barrier, the scaling strided
// over the threads. Two kernels before (the sum, then the scaling). Wider than 4 steps of 256
// threads, so 1024 threads, 2 elements each (CUDABlockLevels.h, BlockLevelsThreads); the
// 768-wide pair after it keeps 256.
// CHECK-LABEL: hexir.executable @norm_pair
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 1024, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @norm_pair({{.*}}) -> tensor<2047xf32> attributes {hexir.cuda.block_levels, hexir.cuda.block_size = 1024 : index
// LOWER-LABEL: hexir.executable @norm_pair
// LOWER:         llvm.mlir.global private @__hexir_shared{{.*}}addr_space = 3{{.*}}!llvm.array<32 x f32>
// LOWER:         llvm.func internal @norm_pair_impl
// LOWER-NOT:       nvvm.barrier
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER-COUNT-2:   nvvm.barrier0
// LOWER-NOT:       nvvm.barrier
// LOWER:           llvm.load {{.*}} -> f16
// LOWER-NOT:       nvvm.barrier
// LOWER:           llvm.return
#nid = affine_map<(d) -> (d)>
#nall = affine_map<(d) -> ()>
hexir.executable @norm_pair attributes {hexir.dispatch_group = "small_layer"} {
  builtin.module {
    func.func @norm_pair(%x: tensor<2047xf32>, %g: tensor<2047xf16>, %o: tensor<2047xf32>) -> tensor<2047xf32> {
      %zero = arith.constant 0.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %ss = linalg.generic {indexing_maps = [#nid, #nall], iterator_types = ["reduction"]} ins(%x : tensor<2047xf32>) outs(%z0 : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %m = arith.mulf %a, %a : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<f32>
      %xn = linalg.generic {indexing_maps = [#nid, #nall, #nid, #nid], iterator_types = ["parallel"]} ins(%x, %ss, %g : tensor<2047xf32>, tensor<f32>, tensor<2047xf16>) outs(%o : tensor<2047xf32>) {
      ^bb0(%a: f32, %sum: f32, %gw: f16, %unused: f32):
        %gf = arith.extf %gw : f16 to f32
        %n = arith.constant 2047.0 : f32
        %mean = arith.divf %sum, %n : f32
        %inv = math.rsqrt %mean : f32
        %xs = arith.mulf %a, %inv : f32
        %y = arith.mulf %gf, %xs : f32
        linalg.yield %y : f32
      } -> tensor<2047xf32>
      return %xn : tensor<2047xf32>
    }
  }
}

// -----

// CHECK-LABEL: hexir.executable @norm_pair_768
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// LOWER-LABEL: hexir.executable @norm_pair_768
// LOWER:         llvm.mlir.global private @__hexir_shared{{.*}}addr_space = 3{{.*}}!llvm.array<8 x f32>
#mid = affine_map<(d) -> (d)>
#mall = affine_map<(d) -> ()>
hexir.executable @norm_pair_768 attributes {hexir.dispatch_group = "small_layer"} {
  builtin.module {
    func.func @norm_pair_768(%x: tensor<768xf32>, %g: tensor<768xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
      %zero = arith.constant 0.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %ss = linalg.generic {indexing_maps = [#mid, #mall], iterator_types = ["reduction"]} ins(%x : tensor<768xf32>) outs(%z0 : tensor<f32>) {
      ^bb0(%a: f32, %acc: f32):
        %m = arith.mulf %a, %a : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<f32>
      %xn = linalg.generic {indexing_maps = [#mid, #mall, #mid, #mid], iterator_types = ["parallel"]} ins(%x, %ss, %g : tensor<768xf32>, tensor<f32>, tensor<768xf32>) outs(%o : tensor<768xf32>) {
      ^bb0(%a: f32, %sum: f32, %gw: f32, %unused: f32):
        %inv = math.rsqrt %sum : f32
        %xs = arith.mulf %a, %inv : f32
        %y = arith.mulf %gw, %xs : f32
        linalg.yield %y : f32
      } -> tensor<768xf32>
      return %xn : tensor<768xf32>
    }
  }
}

// -----

// The end of a decode step as one block (group-tails): the argmax, the ids row written at
// the position the state holds, the state updated, the stop flag computed from the new
// state. The ids row and the flag read the state through loads in their bodies (tensor
// extracts): a barrier orders the ids row's read of the position before the state's update,
// and another the update before the flag's read (without them thread 0 would read the
// position or the count while threads 1-4 rewrite them).
// LOWER-LABEL: hexir.executable @decode_tail
// LOWER:         llvm.func internal @decode_tail_impl
// LOWER:           llvm.getelementptr inbounds|nuw %[[STATE:arg[0-9]+]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// LOWER:           llvm.store
// LOWER:           nvvm.barrier0
// LOWER:           llvm.getelementptr inbounds|nuw %[[STATE]][
// LOWER:           llvm.store
// LOWER:           nvvm.barrier0
// LOWER:           llvm.load %[[STATE]] : !llvm.ptr -> i64
// LOWER:           llvm.return
#tid = affine_map<(d) -> (d)>
#tall = affine_map<(d) -> ()>
#ts0 = affine_map<() -> ()>
hexir.executable @decode_tail attributes {hexir.dispatch_group = "small_layer"} {
  builtin.module {
    func.func @decode_tail(%logits: tensor<64xf32>, %ids: tensor<8xi64>, %state: tensor<4xi64>, %flag: tensor<1xi32>) -> (tensor<8xi64>, tensor<4xi64>, tensor<1xi32>) {
      %min = arith.constant -9223372036854775808 : i64
      %em = tensor.empty() : tensor<i64>
      %zm = linalg.fill ins(%min : i64) outs(%em : tensor<i64>) -> tensor<i64>
      %best = linalg.generic {indexing_maps = [#tid, #tall], iterator_types = ["reduction"]} ins(%logits : tensor<64xf32>) outs(%zm : tensor<i64>) {
      ^bb0(%in: f32, %out: i64):
        %i = linalg.index 0 : index
        %bits = arith.bitcast %in : f32 to i32
        %b64 = arith.extsi %bits : i32 to i64
        %c32 = arith.constant 32 : i64
        %hi = arith.shli %b64, %c32 : i64
        %i64 = arith.index_cast %i : index to i64
        %mask = arith.constant 4294967295 : i64
        %lo = arith.subi %mask, %i64 : i64
        %p = arith.ori %hi, %lo : i64
        %mx = arith.maxsi %out, %p : i64
        linalg.yield %mx : i64
      } -> tensor<i64>
      %ei = tensor.empty() : tensor<i64>
      %id = linalg.generic {indexing_maps = [#ts0, #ts0], iterator_types = []} ins(%best : tensor<i64>) outs(%ei : tensor<i64>) {
      ^bb0(%in: i64, %out: i64):
        %mask = arith.constant 4294967295 : i64
        %lo = arith.andi %in, %mask : i64
        %t = arith.subi %mask, %lo : i64
        linalg.yield %t : i64
      } -> tensor<i64>
      %ids2 = linalg.generic {indexing_maps = [#tall, #tid], iterator_types = ["parallel"]} ins(%id : tensor<i64>) outs(%ids : tensor<8xi64>) {
      ^bb0(%in: i64, %out: i64):
        %i = linalg.index 0 : index
        %i64 = arith.index_cast %i : index to i64
        %c1 = arith.constant 1 : index
        %pos = tensor.extract %state[%c1] : tensor<4xi64>
        %here = arith.cmpi eq, %i64, %pos : i64
        %v = arith.select %here, %in, %out : i64
        linalg.yield %v : i64
      } -> tensor<8xi64>
      %state2 = linalg.generic {indexing_maps = [#tall, #tid], iterator_types = ["parallel"]} ins(%id : tensor<i64>) outs(%state : tensor<4xi64>) {
      ^bb0(%in: i64, %out: i64):
        %i = linalg.index 0 : index
        %one = arith.constant 1 : i64
        %next = arith.addi %out, %one : i64
        %c2 = arith.constant 2 : index
        %is_id = arith.cmpi eq, %i, %c2 : index
        %v = arith.select %is_id, %in, %next : i64
        linalg.yield %v : i64
      } -> tensor<4xi64>
      %flag2 = linalg.generic {indexing_maps = [#tid], iterator_types = ["parallel"]} outs(%flag : tensor<1xi32>) {
      ^bb0(%out: i32):
        %c0 = arith.constant 0 : index
        %n = tensor.extract %state2[%c0] : tensor<4xi64>
        %limit = arith.constant 8 : i64
        %go = arith.cmpi slt, %n, %limit : i64
        %v = arith.extui %go : i1 to i32
        linalg.yield %v : i32
      } -> tensor<1xi32>
      return %ids2, %state2, %flag2 : tensor<8xi64>, tensor<4xi64>, tensor<1xi32>
    }
  }
}
