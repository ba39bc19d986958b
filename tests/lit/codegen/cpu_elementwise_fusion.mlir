// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// codegen::FuseElementwiseChains (passes/codegen/CPUElementwiseFusion.h) folds a single-use
// elementwise producer into its elementwise consumer when the consumer reads each of its
// elements once: sin(x) + y is one loop, with no temporary for sin(x).
// CHECK-LABEL: hexir.executable @same_shape
// CHECK-NOT:     @malloc
// CHECK:         llvm.intr.sin
// CHECK-NOT:     @malloc
hexir.executable @same_shape attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @same_shape(%a: tensor<8xf32>, %o: tensor<8xf32>, %id: index) -> tensor<8xf32> {
      %e = tensor.empty() : tensor<8xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.sin %x : f32
        linalg.yield %z : f32
      } -> tensor<8xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> (j)>], iterator_types = ["parallel"]} ins(%s : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%x: f32, %y: f32):
        %w = arith.addf %x, %y : f32
        linalg.yield %w : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}

// -----

// A consumer broadcasting the producer's row over 64 rows (a KV-cache row written over the
// whole cache) would recompute each sin 64 times fused: the producer stays a loop of its
// own, writing its 8 values to a temporary (on the stack) once.
// CHECK-LABEL: hexir.executable @broadcast
// CHECK:         llvm.alloca %{{.+}} x f32
// CHECK:         llvm.intr.sin
hexir.executable @broadcast attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @broadcast(%a: tensor<8xf32>, %o: tensor<64x8xf32>, %id: index) -> tensor<64x8xf32> {
      %e = tensor.empty() : tensor<8xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.sin %x : f32
        linalg.yield %z : f32
      } -> tensor<8xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(s, j) -> (j)>, affine_map<(s, j) -> (s, j)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<8xf32>) outs(%o : tensor<64x8xf32>) {
      ^bb0(%x: f32, %y: f32):
        %w = arith.addf %x, %y : f32
        linalg.yield %w : f32
      } -> tensor<64x8xf32>
      return %r : tensor<64x8xf32>
    }
  }
}
