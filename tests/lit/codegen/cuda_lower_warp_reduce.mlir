// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s

// A dynamic-length max with one warp: lane = tid % 32 strides over the input from -inf
// (the identity of maximumf), then five xor shuffles (16, 8, 4, 2, 1) and lane 0 combines
// with the initial output value and stores it.
// CHECK-LABEL: hexir.executable @dynmax
// CHECK:         llvm.func internal @dynmax_impl
// CHECK-DAG:       %[[NINF:.+]] = llvm.mlir.constant(0xFF800000 : f32) : f32
// CHECK-DAG:       %[[C32:.+]] = llvm.mlir.constant(32 : index) : i64
// CHECK:           %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:           %[[TID64:.+]] = llvm.sext %[[TID]] : i32 to i64
// CHECK:           %[[IN:.+]] = llvm.icmp "ult" %{{.+}}, %{{.+}} : i32
// CHECK:           llvm.cond_br %[[IN]]
// CHECK:           %[[LANE:.+]] = llvm.urem %[[TID64]], %[[C32]] : i64
// CHECK:           llvm.br ^[[LOOP:bb[0-9]+]](%[[LANE]], %[[NINF]] : i64, f32)
// CHECK:         ^[[LOOP]](%[[K:.+]]: i64, %[[ACC:.+]]: f32):
// CHECK:           llvm.icmp "slt" %[[K]], %{{.+}} : i64
// CHECK:           llvm.load
// CHECK:           llvm.intr.maximum
// CHECK:           llvm.add %[[K]], %[[C32]]
// CHECK:           nvvm.shfl.sync  bfly %{{.+}}, %[[ACC]], {{.+}} : f32 -> f32
// CHECK:           llvm.intr.maximum
// CHECK:           nvvm.shfl.sync  bfly
// CHECK:           nvvm.shfl.sync  bfly
// CHECK:           nvvm.shfl.sync  bfly
// CHECK:           nvvm.shfl.sync  bfly
// CHECK-NOT:       nvvm.shfl.sync
// CHECK:           %[[FIRST:.+]] = llvm.icmp "eq" %[[LANE]], %{{.+}} : i64
// CHECK:           llvm.cond_br %[[FIRST]]
// CHECK:           %[[OLD:.+]] = llvm.load
// CHECK:           %[[R:.+]] = llvm.intr.maximum(%{{.+}}, %[[OLD]])
// CHECK:           llvm.store %[[R]]
// CHECK:         llvm.func @dynmax(
// CHECK-SAME:      nvvm.maxntid = array<i32: 32, 1, 1>
hexir.executable @dynmax {
  builtin.module {
    func.func @dynmax(%a: tensor<?xf32>, %o: tensor<f32>) -> tensor<f32> {
      %s = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>], iterator_types = ["reduction"]} ins(%a : tensor<?xf32>) outs(%o : tensor<f32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.maximumf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}
