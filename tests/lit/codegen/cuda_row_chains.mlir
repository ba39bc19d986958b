// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=LOWER
// RUN: hexir-opt %s -split-input-file --cuda-row-chain-vector=4 --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s --check-prefix=VEC

// A row softmax grouped by hexir-group-row-chains (passes/codegen/CUDARowChains.h): one block
// per row (6 blocks; 100 elements: 13 -> 32 threads), the exp fused into the sum and the divide
// (no 6x100 or 1x100 temporary is left), the row's coordinate the block id, the output written
// straight into the kernel's output argument.
// Before: four kernels (max, exp, sum, divide), the input and the exp temporary streamed five
// times through DRAM.
// CHECK-LABEL: hexir.executable @softmax
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 32, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 6, 1, 1>
// CHECK:         func.func @softmax(%[[X:.*]]: tensor<6x100xf32>, %[[OUT:.*]]: tensor<6x100xf32>) -> tensor<6x100xf32> attributes {hexir.cuda.block_levels, hexir.cuda.block_size = 32 : index, hexir.cuda.thread_count = -1 : index}
// CHECK:           %[[ROW:.*]] = gpu.block_id  x
// CHECK:           %[[XROW:.*]] = tensor.extract_slice %[[X]][%[[ROW]], 0] [1, 100] [1, 1]
// CHECK-NOT:       tensor.empty() : tensor<{{.*}}x100xf32>
// CHECK:           %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[XROW]] : tensor<1x100xf32>)
// CHECK:             arith.maximumf
// CHECK:           %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[XROW]], %[[MAX]] : tensor<1x100xf32>, tensor<1xf32>)
// CHECK:             math.exp
// CHECK:             arith.addf
// CHECK:           %[[OROW:.*]] = tensor.extract_slice %[[OUT]][%[[ROW]], 0] [1, 100] [1, 1]
// CHECK:           %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[XROW]], %[[MAX]], %[[SUM]] : {{.*}}) outs(%[[OROW]] : tensor<1x100xf32>)
// CHECK:             math.exp
// CHECK:             arith.divf
// CHECK:           tensor.insert_slice %[[Y]] into %[[OUT]][%[[ROW]], 0] [1, 100] [1, 1]
// The lowering: only the two row scalars and the two reductions' warp partials in shared
// memory; the max and the sum each a block reduction (butterfly, barrier), a barrier before
// each pass that reads the previous one's scalar.
// LOWER-LABEL: hexir.executable @softmax
// LOWER-NOT:     !llvm.array<100 x f32>
// LOWER-NOT:     !llvm.array<1 x array
// LOWER:         llvm.func internal @softmax_impl
// LOWER:           nvvm.read.ptx.sreg.ctaid.x
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER-COUNT-2:   nvvm.barrier0
// LOWER:           __nv_expf
// LOWER-COUNT-5:   nvvm.shfl.sync  bfly
// LOWER-COUNT-2:   nvvm.barrier0
// LOWER:           __nv_expf
// LOWER:           llvm.fdiv
// LOWER:           llvm.return
// With the hidden --cuda-row-chain-vector=4: each thread takes 4 consecutive elements a step
// (100 = 25 x 4): a step of 32 x 4 = 128 elements, starting at 4 tid.
// VEC-LABEL: hexir.executable @softmax
// VEC:         llvm.func internal @softmax_impl
// VEC-DAG:       llvm.mlir.constant(128 : index)
// VEC-DAG:       llvm.mlir.constant(4 : index)
// VEC:           llvm.return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
hexir.executable @softmax attributes {hexir.dispatch_group = "row_chain"} {
  builtin.module {
    func.func @softmax(%arg0: tensor<6x100xf32>, %arg1: tensor<6x100xf32>) -> tensor<6x100xf32> {
      %cst = arith.constant 0xFF800000 : f32
      %0 = tensor.empty() : tensor<6xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<6xf32>) -> tensor<6xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<6x100xf32>) outs(%1 : tensor<6xf32>) {
      ^bb0(%in: f32, %out: f32):
        %9 = arith.maximumf %in, %out : f32
        linalg.yield %9 : f32
      } -> tensor<6xf32>
      %3 = tensor.empty() : tensor<6x100xf32>
      %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<6x100xf32>, tensor<6xf32>) outs(%3 : tensor<6x100xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %9 = arith.subf %in, %in_1 : f32
        %10 = math.exp %9 : f32
        linalg.yield %10 : f32
      } -> tensor<6x100xf32>
      %cst_0 = arith.constant 0.000000e+00 : f32
      %5 = tensor.empty() : tensor<6xf32>
      %6 = linalg.fill ins(%cst_0 : f32) outs(%5 : tensor<6xf32>) -> tensor<6xf32>
      %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<6x100xf32>) outs(%6 : tensor<6xf32>) {
      ^bb0(%in: f32, %out: f32):
        %9 = arith.addf %in, %out : f32
        linalg.yield %9 : f32
      } -> tensor<6xf32>
      %8 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4, %7 : tensor<6x100xf32>, tensor<6xf32>) outs(%arg1 : tensor<6x100xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %9 = arith.divf %in, %in_1 : f32
        linalg.yield %9 : f32
      } -> tensor<6x100xf32>
      return %8 : tensor<6x100xf32>
    }
  }
}

// -----

// A layer norm over rows of three dims ([2, 3] rows of 4096: 512 threads): the mean's divide
// fused into the variance's body and the scaling; blocks delinearized over both row dims.
// CHECK-LABEL: hexir.executable @layernorm
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 512, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 6, 1, 1>
// CHECK:         %[[B:.*]] = gpu.block_id  x
// CHECK-DAG:     %[[J:.*]] = arith.remui %[[B]], %c3
// CHECK-DAG:     %[[I:.*]] = arith.divui %[[B]], %c3
// CHECK:         tensor.extract_slice %arg0[%[[I]], %[[J]], 0] [1, 1, 4096] [1, 1, 1]
// CHECK-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:         iterator_types = ["parallel", "parallel", "parallel"]
// CHECK:         tensor.insert_slice {{.*}} into %arg3[%[[I]], %[[J]], 0] [1, 1, 4096] [1, 1, 1]
#id = affine_map<(i, j, k) -> (i, j, k)>
#row = affine_map<(i, j, k) -> (i, j)>
#col = affine_map<(i, j, k) -> (k)>
#rows2 = affine_map<(i, j) -> (i, j)>
hexir.executable @layernorm attributes {hexir.dispatch_group = "row_chain"} {
  builtin.module {
    func.func @layernorm(%x: tensor<2x3x4096xf32>, %g: tensor<4096xf32>, %b: tensor<4096xf32>, %o: tensor<2x3x4096xf32>) -> tensor<2x3x4096xf32> {
      %zero = arith.constant 0.0 : f32
      %n = arith.constant 4096.0 : f32
      %eps = arith.constant 1.0e-5 : f32
      %er = tensor.empty() : tensor<2x3xf32>
      %z = linalg.fill ins(%zero : f32) outs(%er : tensor<2x3xf32>) -> tensor<2x3xf32>
      %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
          ins(%x : tensor<2x3x4096xf32>) outs(%z : tensor<2x3xf32>) {
        ^bb0(%v: f32, %s: f32):
          %r = arith.addf %v, %s : f32
          linalg.yield %r : f32
      } -> tensor<2x3xf32>
      %e1 = tensor.empty() : tensor<2x3xf32>
      %mean = linalg.generic {indexing_maps = [#rows2, #rows2], iterator_types = ["parallel", "parallel"]}
          ins(%sum : tensor<2x3xf32>) outs(%e1 : tensor<2x3xf32>) {
        ^bb0(%s: f32, %u: f32):
          %m = arith.divf %s, %n : f32
          linalg.yield %m : f32
      } -> tensor<2x3xf32>
      %var = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]}
          ins(%x, %mean : tensor<2x3x4096xf32>, tensor<2x3xf32>) outs(%z : tensor<2x3xf32>) {
        ^bb0(%v: f32, %m: f32, %a: f32):
          %d = arith.subf %v, %m : f32
          %q = arith.mulf %d, %d : f32
          %r = arith.addf %q, %a : f32
          linalg.yield %r : f32
      } -> tensor<2x3xf32>
      %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel", "parallel"]}
          ins(%x, %mean, %var, %g, %b : tensor<2x3x4096xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4096xf32>, tensor<4096xf32>) outs(%o : tensor<2x3x4096xf32>) {
        ^bb0(%v: f32, %m: f32, %w: f32, %gg: f32, %bb: f32, %u: f32):
          %vv = arith.divf %w, %n : f32
          %ve = arith.addf %vv, %eps : f32
          %rs = math.rsqrt %ve : f32
          %d = arith.subf %v, %m : f32
          %t = arith.mulf %d, %rs : f32
          %s = arith.mulf %t, %gg : f32
          %r = arith.addf %s, %bb : f32
          linalg.yield %r : f32
      } -> tensor<2x3x4096xf32>
      return %y : tensor<2x3x4096xf32>
    }
  }
}
