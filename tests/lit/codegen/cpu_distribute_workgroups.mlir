// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups="max-workgroups=3 min-work-per-workgroup=1" | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups="max-workgroups=3 min-work-per-workgroup=240" | FileCheck %s --check-prefix=MINWORK

// 10 rows over at most 3 workgroups: tiles of 4 rows, 3 workgroups; the fill is fused
// into the tile loop, which runs [id * 4, min(10, id * 4 + 4)). With at least 240 of the
// matmul's 10*6*8 = 480 iterations per workgroup (MINWORK): 2 workgroups of 5 rows.
// MINWORK-LABEL: hexir.executable @k
// MINWORK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// MINWORK:         arith.constant 5 : index
// CHECK-LABEL: hexir.executable @k
// CHECK-SAME:    hexir.workgroup_count = array<i64: 3, 1, 1>
// CHECK:         func.func @k(%{{.+}}: tensor<10x8xf32>, %{{.+}}: tensor<8x6xf32>, %[[OUT:[a-z0-9]+]]: tensor<10x6xf32>, %[[ID:[a-z0-9]+]]: index)
// CHECK-DAG:     %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG:     %[[C10:.+]] = arith.constant 10 : index
// CHECK:         %[[LB:.+]] = arith.muli %[[ID]], %[[C4]]
// CHECK:         %[[END:.+]] = arith.addi %[[LB]], %[[C4]]
// CHECK:         %[[UB:.+]] = arith.minsi %[[END]], %[[C10]]
// CHECK:         scf.for %{{.+}} = %[[LB]] to %[[UB]] step %[[C4]] iter_args(%{{.+}} = %[[OUT]])
// CHECK:           linalg.fill
// CHECK:           linalg.matmul
// CHECK:           tensor.insert_slice
hexir.executable @k {
  builtin.module {
    func.func @k(%a: tensor<10x8xf32>, %b: tensor<8x6xf32>, %o: tensor<10x6xf32>) -> tensor<10x6xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<10x6xf32>) -> tensor<10x6xf32>
      %m = linalg.matmul ins(%a, %b : tensor<10x8xf32>, tensor<8x6xf32>) outs(%f : tensor<10x6xf32>) -> tensor<10x6xf32>
      return %m : tensor<10x6xf32>
    }
  }
}

// -----

// A reduction as the outermost loop: one workgroup, no tiling, but the id argument exists.
// CHECK-LABEL: hexir.executable @r
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @r(%{{.+}}: tensor<16xf32>, %{{.+}}: tensor<f32>, %{{.+}}: index)
// CHECK-NOT:     scf.for
// CHECK:         linalg.generic
hexir.executable @r {
  builtin.module {
    func.func @r(%a: tensor<16xf32>, %o: tensor<f32>) -> tensor<f32> {
      %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%a : tensor<16xf32>) outs(%o : tensor<f32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.addf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}

// -----

// A dynamic extent: a fixed grid of max-workgroups (3) that bounds itself: the tile is
// max(1, ceil(n / 3)) computed in the kernel, and each workgroup runs
// [id * tile, min(n, id * tile + tile)), empty past the end.
// CHECK-LABEL: hexir.executable @dyn
// CHECK-SAME:    hexir.workgroup_count = array<i64: 3, 1, 1>
// CHECK:         func.func @dyn(%[[A:[a-z0-9]+]]: tensor<?xf32>, %[[OUT:[a-z0-9]+]]: tensor<?xf32>, %[[ID:[a-z0-9]+]]: index)
// CHECK:         %[[N:.+]] = tensor.dim
// CHECK:         %[[CEIL:.+]] = arith.ceildivsi %[[N]], %{{.+}}
// CHECK:         %[[TILE:.+]] = arith.maxsi %[[CEIL]], %{{.+}}
// CHECK:         %[[LB:.+]] = arith.muli %[[ID]], %[[TILE]]
// CHECK:         %[[END:.+]] = arith.addi %[[LB]], %[[TILE]]
// CHECK:         %[[UB:.+]] = arith.minsi %[[END]], %[[N]]
// CHECK:         scf.for %{{.+}} = %[[LB]] to %[[UB]] step %[[TILE]]
hexir.executable @dyn {
  builtin.module {
    func.func @dyn(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = arith.negf %x : f32
        linalg.yield %z : f32
      } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}
