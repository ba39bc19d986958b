// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s

// Dynamic dims come from the parameter buffer (the binding after the memrefs), one i64
// word each in argument order: a's dim 0 (word 0), then the output's dim 0 (word 1).
// Strides are products of the sizes. No bounds guard: the grid-stride loop bounds it.
// CHECK-LABEL: hexir.executable @dyn
// CHECK:         llvm.func internal @dyn_impl
// CHECK-NOT:       llvm.icmp "ult"
// CHECK:         llvm.func @dyn(%[[A:.+]]: !llvm.ptr {llvm.align = 16 : i64}, %[[O:.+]]: !llvm.ptr {llvm.align = 16 : i64}, %[[P:.+]]: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias})
// CHECK-SAME:      attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// CHECK:           %[[G0:.+]] = llvm.getelementptr %[[P]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:           %[[D0:.+]] = llvm.load %[[G0]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:           %[[S0:.+]] = llvm.mul %{{.+}}, %{{.+}} : i64
// CHECK:           %[[G1:.+]] = llvm.getelementptr %[[P]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:           %[[D1:.+]] = llvm.load %[[G1]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:           llvm.call @dyn_impl(%[[A]], %[[A]], %{{.+}}, %[[D0]], %{{.+}}, %{{.+}}, %{{.+}}, %[[O]], %[[O]], %{{.+}}, %[[D1]],
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
