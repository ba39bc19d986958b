// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups | FileCheck %s

// A matmul on a prepacked B (codegen/CPUMatmulMicroKernel.cpp) of 128 x 128 x 256 = 4 x 2^20
// multiply-adds: 4 workgroups (a power of two, each at least 2^20), of the splits 4 x 1,
// 2 x 2, 1 x 4 the one whose tile reads the least per step of k (64 + 64 against 32 + 128):
// workgroup id = row * 2 + column runs rows [row * 64, +64) and columns [column * 64, +64).
// The unpack stays outside the tile loops (the micro-kernel reads its input in place), the
// matmul reads a column slice of it.
// CHECK-LABEL: hexir.executable @grid
// CHECK-SAME:    hexir.workgroup_count = array<i64: 4, 1, 1>
// CHECK:         func.func @grid(%{{.+}}: tensor<128x256xf32>, %[[BP:.+]]: tensor<8x256x16xf32>, %{{.+}}: tensor<128x128xf32>, %[[ID:[a-z0-9]+]]: index)
// CHECK-DAG:     %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG:     %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG:     %[[C128:.+]] = arith.constant 128 : index
// CHECK:         %[[U:.+]] = linalg.generic {{.*}} ins(%[[BP]] : tensor<8x256x16xf32>)
// CHECK-SAME:      hexir.packed_rhs
// CHECK:         %[[ROW:.+]] = arith.divui %[[ID]], %[[C2]]
// CHECK:         %[[COL:.+]] = arith.remui %[[ID]], %[[C2]]
// CHECK:         %[[RLB:.+]] = arith.muli %[[ROW]], %[[C64]]
// CHECK:         %[[REND:.+]] = arith.addi %[[RLB]], %[[C64]]
// CHECK:         %[[RUB:.+]] = arith.minsi %[[REND]], %[[C128]]
// CHECK:         %[[CLB:.+]] = arith.muli %[[COL]], %[[C64]]
// CHECK:         scf.for %{{.+}} = %[[RLB]] to %[[RUB]] step %[[C64]]
// CHECK:           scf.for %[[J:.+]] = %[[CLB]] to %{{.+}} step %[[C64]]
// CHECK:             tensor.extract_slice %[[U]][0, %[[J]]] [256, 64] [1, 1]
// CHECK:             linalg.fill
// CHECK:             linalg.matmul
hexir.executable @grid {
  builtin.module {
    func.func @grid(%a: tensor<128x256xf32>, %bp: tensor<8x256x16xf32>, %o: tensor<128x128xf32>) -> tensor<128x128xf32> {
      %e = tensor.empty() : tensor<256x128xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(k, n) -> (n floordiv 16, k, n mod 16)>, affine_map<(k, n) -> (k, n)>], iterator_types = ["parallel", "parallel"]} ins(%bp : tensor<8x256x16xf32>) outs(%e : tensor<256x128xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%x: f32, %y: f32):
        linalg.yield %x : f32
      } -> tensor<256x128xf32>
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<128x128xf32>) -> tensor<128x128xf32>
      %m = linalg.matmul ins(%a, %b : tensor<128x256xf32>, tensor<256x128xf32>) outs(%f : tensor<128x128xf32>) -> tensor<128x128xf32>
      return %m : tensor<128x128xf32>
    }
  }
}

// -----

// Below 2 x 2^20 multiply-adds (64 x 64 x 256): one workgroup, nothing tiled.
// CHECK-LABEL: hexir.executable @one
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK-NOT:     scf.for
// CHECK:         linalg.matmul
hexir.executable @one {
  builtin.module {
    func.func @one(%a: tensor<64x256xf32>, %bp: tensor<4x256x16xf32>, %o: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %e = tensor.empty() : tensor<256x64xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(k, n) -> (n floordiv 16, k, n mod 16)>, affine_map<(k, n) -> (k, n)>], iterator_types = ["parallel", "parallel"]} ins(%bp : tensor<4x256x16xf32>) outs(%e : tensor<256x64xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%x: f32, %y: f32):
        linalg.yield %x : f32
      } -> tensor<256x64xf32>
      %m = linalg.matmul ins(%a, %b : tensor<64x256xf32>, tensor<256x64xf32>) outs(%o : tensor<64x64xf32>) -> tensor<64x64xf32>
      return %m : tensor<64x64xf32>
    }
  }
}
