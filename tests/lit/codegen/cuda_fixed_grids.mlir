// RUN: hexir-opt %s --hexir-cuda-distribute-threads=grid-from-shape=false | FileCheck %s

// hexir-compile --cuda-fixed-grids: a dynamic extent keeps the fixed grid of 1056 blocks (no
// count computed per call, so a recorded graph never needs a node update); the threads still
// stride over the points by the launched grid.
// CHECK-LABEL: hexir.executable @dyn
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1056, 1, 1>
// CHECK-NOT:     workgroup_count_dynamic
// CHECK:         func.func @dyn
// CHECK:         gpu.grid_dim x
hexir.executable @dyn {
  builtin.module {
    func.func @dyn(%a: tensor<?x4xf32>, %o: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x4xf32>) outs(%o : tensor<?x4xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.exp %x : f32
        linalg.yield %z : f32
      } -> tensor<?x4xf32>
      return %r : tensor<?x4xf32>
    }
  }
}
