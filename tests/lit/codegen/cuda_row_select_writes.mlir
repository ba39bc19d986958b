// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s

// A KV-cache row written at a device-side position through a whole-cache select
// (hexir-prepare-device-loops' form) inside a `small_layer` group (one CUDA block,
// passes/codegen/CUDABlockLevels.cpp): the write is narrowed to the row it writes
// (passes/codegen/RowSelectWrites.h). Awkward sizes: a 29 x 37 cache, a 37-row V projection
// of depth 19. Before: the block's threads walked all 29 * 37 = 1073 cache elements (a
// strided loop up to 1073), reading and rewriting every one; now the row's 37 points only,
// at min(pos, 28) (an out-of-range position writes nothing: its compare fails).
// CHECK-LABEL: hexir.executable @row_write
// CHECK:         llvm.func internal @row_write_impl
// CHECK-NOT:       llvm.mlir.constant(1073 : index)
// CHECK:           llvm.intr.umin({{.*}}) : (i64, i64) -> i64
// CHECK-NOT:       llvm.mlir.constant(1073 : index)
// CHECK:           llvm.return
#id = affine_map<(i) -> (i)>
#rows = affine_map<(i, k) -> (i, k)>
#cols = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>
#row = affine_map<(r, j) -> (j)>
#cache = affine_map<(r, j) -> (r, j)>
hexir.executable @row_write attributes {hexir.dispatch_group = "small_layer"} {
  builtin.module {
    func.func @row_write(%x: tensor<19xf32>, %w: tensor<37x19xf32>, %pos: tensor<1xi64>, %cin: tensor<29x37xf32>, %x2: tensor<19xf32>, %cout: tensor<29x37xf32>) -> (tensor<19xf32>, tensor<29x37xf32>) {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<37xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
      %v = linalg.generic {indexing_maps = [#rows, #cols, #out], iterator_types = ["parallel", "reduction"]} ins(%w, %x : tensor<37x19xf32>, tensor<19xf32>) outs(%z : tensor<37xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<37xf32>
      %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<19xf32>) outs(%x2 : tensor<19xf32>) {
      ^bb0(%a: f32, %unused: f32):
        %d = arith.addf %a, %a : f32
        linalg.yield %d : f32
      } -> tensor<19xf32>
      %c = linalg.generic {indexing_maps = [#row, #cache], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<37xf32>) outs(%cout : tensor<29x37xf32>) {
      ^bb0(%in: f32, %old: f32):
        %r = linalg.index 0 : index
        %ri = arith.index_cast %r : index to i64
        %c0 = arith.constant 0 : index
        %p = tensor.extract %pos[%c0] : tensor<1xi64>
        %hit = arith.cmpi eq, %ri, %p : i64
        %new = arith.select %hit, %in, %old : f32
        linalg.yield %new : f32
      } -> tensor<29x37xf32>
      return %y, %c : tensor<19xf32>, tensor<29x37xf32>
    }
  }
}
