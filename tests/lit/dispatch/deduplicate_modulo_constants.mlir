// RUN: hexir-opt %s --split-input-file --hexir-deduplicate-modulo-constants | FileCheck %s

// x*2+1 and x*3+1: one kernel taking both constants as trailing scalar arguments; each
// dispatch passes its own values.
#map = affine_map<(i) -> (i)>
// CHECK-LABEL: hexir.executable @a
// CHECK:       func.func @a(%{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %[[C0:[a-z0-9]+]]: f32, %[[C1:[a-z0-9]+]]: f32)
// CHECK-NOT:   arith.constant
// CHECK:       arith.mulf %{{.+}}, %[[C0]]
// CHECK:       arith.addf %{{.+}}, %[[C1]]
// CHECK-NOT:   hexir.executable @b
// CHECK-LABEL: func.func @main(
// CHECK-DAG:   %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG:   %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK:       %[[R0:.+]] = hexir.dispatch @a(%arg0, %[[TWO]], %[[ONE]]) : (tensor<8xf32>, f32, f32) -> tensor<8xf32>
// CHECK-DAG:   %[[THREE:.+]] = arith.constant 3.000000e+00 : f32
// CHECK-DAG:   %[[ONE2:.+]] = arith.constant 1.000000e+00 : f32
// CHECK:       hexir.dispatch @a(%[[R0]], %[[THREE]], %[[ONE2]]) : (tensor<8xf32>, f32, f32) -> tensor<8xf32>
hexir.executable @a {
  builtin.module {
    func.func @a(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %c2 = arith.constant 2.0 : f32
        %c1 = arith.constant 1.0 : f32
        %t = arith.mulf %v, %c2 : f32
        %u = arith.addf %t, %c1 : f32
        linalg.yield %u : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
hexir.executable @b {
  builtin.module {
    func.func @b(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %c3 = arith.constant 3.0 : f32
        %c1 = arith.constant 1.0 : f32
        %t = arith.mulf %v, %c3 : f32
        %u = arith.addf %t, %c1 : f32
        linalg.yield %u : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = hexir.dispatch @a(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = hexir.dispatch @b(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A kernel with no twin keeps its constants: no operand is made for nothing. Exact copies
// are left to hexir-deduplicate-executables.
#map = affine_map<(i) -> (i)>
// CHECK-LABEL: hexir.executable @lonely
// CHECK:       func.func @lonely(%{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>) -> tensor<8xf32>
// CHECK:       arith.constant 2.000000e+00 : f32
// CHECK-LABEL: hexir.executable @copy0
// CHECK:       arith.constant 5.000000e+00 : f32
// CHECK-LABEL: hexir.executable @copy1
// CHECK:       arith.constant 5.000000e+00 : f32
// CHECK-LABEL: func.func @main(
// CHECK:       hexir.dispatch @lonely(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:       hexir.dispatch @copy0(%{{.+}}) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:       hexir.dispatch @copy1(%{{.+}}) : (tensor<8xf32>) -> tensor<8xf32>
hexir.executable @lonely {
  builtin.module {
    func.func @lonely(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %c = arith.constant 2.0 : f32
        %t = arith.mulf %v, %c : f32
        linalg.yield %t : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
hexir.executable @copy0 {
  builtin.module {
    func.func @copy0(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %c = arith.constant 5.0 : f32
        %t = arith.addf %v, %c : f32
        linalg.yield %t : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
hexir.executable @copy1 {
  builtin.module {
    func.func @copy1(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %c = arith.constant 5.0 : f32
        %t = arith.addf %v, %c : f32
        linalg.yield %t : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = hexir.dispatch @lonely(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = hexir.dispatch @copy0(%0) : (tensor<8xf32>) -> tensor<8xf32>
  %2 = hexir.dispatch @copy1(%1) : (tensor<8xf32>) -> tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// Index constants, fill values and constants that become indices stay in the kernel: they
// may decide tiling or addressing. Only the payload's i32 and f32 values are hoisted.
#map = affine_map<(i) -> (i)>
// CHECK-LABEL: hexir.executable @p
// CHECK:       func.func @p(%{{[a-z0-9]+}}: tensor<8xi32>, %{{[a-z0-9]+}}: tensor<8xi32>, %[[K:[a-z0-9]+]]: i32)
// CHECK:       arith.constant 0 : i32
// CHECK:       linalg.fill
// CHECK:       arith.constant 3 : index
// CHECK:       arith.constant 1 : i64
// CHECK:       arith.addi %{{.+}}, %[[K]] : i32
// CHECK-NOT:   hexir.executable @q
// CHECK-LABEL: func.func @main(
// CHECK:       %[[C7:.+]] = arith.constant 7 : i32
// CHECK:       hexir.dispatch @p(%arg0, %[[C7]])
// CHECK:       %[[C9:.+]] = arith.constant 9 : i32
// CHECK:       hexir.dispatch @p(%{{.+}}, %[[C9]])
hexir.executable @p {
  builtin.module {
    func.func @p(%x: tensor<8xi32>, %o: tensor<8xi32>) -> tensor<8xi32> {
      %z = arith.constant 0 : i32
      %f = linalg.fill ins(%z : i32) outs(%o : tensor<8xi32>) -> tensor<8xi32>
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xi32>) outs(%f : tensor<8xi32>) {
      ^bb0(%v: i32, %out: i32):
        %three = arith.constant 3 : index
        %one = arith.constant 1 : i64
        %oi = arith.index_cast %one : i64 to index
        %i = arith.addi %three, %oi : index
        %e = tensor.extract %x[%i] : tensor<8xi32>
        %k = arith.constant 7 : i32
        %s = arith.addi %e, %k : i32
        %t = arith.addi %s, %v : i32
        linalg.yield %t : i32
      } -> tensor<8xi32>
      return %r : tensor<8xi32>
    }
  }
}
hexir.executable @q {
  builtin.module {
    func.func @q(%x: tensor<8xi32>, %o: tensor<8xi32>) -> tensor<8xi32> {
      %z = arith.constant 0 : i32
      %f = linalg.fill ins(%z : i32) outs(%o : tensor<8xi32>) -> tensor<8xi32>
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xi32>) outs(%f : tensor<8xi32>) {
      ^bb0(%v: i32, %out: i32):
        %three = arith.constant 3 : index
        %one = arith.constant 1 : i64
        %oi = arith.index_cast %one : i64 to index
        %i = arith.addi %three, %oi : index
        %e = tensor.extract %x[%i] : tensor<8xi32>
        %k = arith.constant 9 : i32
        %s = arith.addi %e, %k : i32
        %t = arith.addi %s, %v : i32
        linalg.yield %t : i32
      } -> tensor<8xi32>
      return %r : tensor<8xi32>
    }
  }
}
func.func @main(%arg0: tensor<8xi32>) -> tensor<8xi32> {
  %0 = hexir.dispatch @p(%arg0) : (tensor<8xi32>) -> tensor<8xi32>
  %1 = hexir.dispatch @q(%0) : (tensor<8xi32>) -> tensor<8xi32>
  return %1 : tensor<8xi32>
}
