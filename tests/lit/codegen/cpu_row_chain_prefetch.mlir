// RUN: hexir-opt %s --hexir-cpu-lower-executables="cpu=x86-64-v3" | FileCheck %s

// codegen::PrefetchNextRowBlocks (passes/codegen/CPURowChainPrefetch.h) on a row softmax of
// 8 x 4096 (blocks of one row): the exp pass, the first all-parallel op reading x, runs in
// runs of 256 floats, each after sixteen prefetches (read, locality 2, data) of the same run one
// block further, the row clamped to x's last (min with 7) and the column to the row's last
// (min with 4095); the max pass before it is not tiled.
// CHECK-LABEL: hexir.executable @softmax
// CHECK:         llvm.func internal @softmax_impl(
// CHECK-COUNT-16: "llvm.intr.prefetch"(%{{.*}}) <{cache = 1 : i32, hint = 2 : i32, rw = 0 : i32}>
// CHECK-NOT:     llvm.intr.prefetch
// CHECK:         llvm.func @softmax(
hexir.executable @softmax attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @softmax(%x: tensor<8x4096xf32>, %o: tensor<8x4096xf32>, %id: index) -> tensor<8x4096xf32> {
      %ninf = arith.constant 0xFF800000 : f32
      %zero = arith.constant 0.0 : f32
      %er = tensor.empty() : tensor<8xf32>
      %e = tensor.empty() : tensor<8x4096xf32>
      %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
      %max = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x4096xf32>) outs(%mi : tensor<8xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.maximumf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<8xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<8x4096xf32>, tensor<8xf32>) outs(%e : tensor<8x4096xf32>) {
      ^bb0(%v: f32, %a: f32, %u: f32):
        %d = arith.subf %v, %a : f32
        %p = math.exp %d : f32
        linalg.yield %p : f32
      } -> tensor<8x4096xf32>
      %si = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
      %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<8x4096xf32>) outs(%si : tensor<8xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.addf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<8xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %sum : tensor<8x4096xf32>, tensor<8xf32>) outs(%o : tensor<8x4096xf32>) {
      ^bb0(%v: f32, %s: f32, %u: f32):
        %q = arith.divf %v, %s : f32
        linalg.yield %q : f32
      } -> tensor<8x4096xf32>
      return %y : tensor<8x4096xf32>
    }
  }
}
