// RUN: hexir-opt %s --split-input-file --hexir-fold-uniform-operands | FileCheck %s
// RUN: hexir-opt %s --split-input-file --hexir-deduplicate-modulo-constants --hexir-fold-uniform-operands | FileCheck %s --check-prefix=BOTH

// %s is 2.0 at both sites: it becomes a kernel constant. %t differs (2.0, 3.0): it stays an
// operand. The unused host constant goes too.
#map = affine_map<(i) -> (i)>
// CHECK-LABEL: hexir.executable @a
// CHECK:       func.func @a(%{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %[[T:[a-z0-9]+]]: f32) -> tensor<8xf32>
// CHECK:       %[[S:.+]] = arith.constant 2.000000e+00 : f32
// CHECK:       arith.mulf %{{.+}}, %[[S]]
// CHECK:       arith.addf %{{.+}}, %[[T]]
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:  %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:  %[[THREE:.+]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:  %[[R:.+]] = hexir.dispatch @a(%arg0, %[[TWO]]) : (tensor<8xf32>, f32) -> tensor<8xf32>
// CHECK-NEXT:  hexir.dispatch @a(%[[R]], %[[THREE]]) : (tensor<8xf32>, f32) -> tensor<8xf32>
hexir.executable @a {
  builtin.module {
    func.func @a(%x: tensor<8xf32>, %o: tensor<8xf32>, %s: f32, %t: f32) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %m = arith.mulf %v, %s : f32
        %u = arith.addf %m, %t : f32
        linalg.yield %u : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  %s = arith.constant 2.0 : f32
  %0 = hexir.dispatch @a(%arg0, %s, %two) : (tensor<8xf32>, f32, f32) -> tensor<8xf32>
  %1 = hexir.dispatch @a(%0, %two, %three) : (tensor<8xf32>, f32, f32) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A scalar that is a function argument at one site is not a constant: nothing changes.
#map = affine_map<(i) -> (i)>
// CHECK-LABEL: hexir.executable @b
// CHECK:       func.func @b(%{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: f32) -> tensor<8xf32>
// CHECK-NOT:   arith.constant
// CHECK-LABEL: func.func @main(
// CHECK:       hexir.dispatch @b(%arg0, %arg1)
// CHECK:       hexir.dispatch @b(%{{.+}}, %{{.+}}) : (tensor<8xf32>, f32)
hexir.executable @b {
  builtin.module {
    func.func @b(%x: tensor<8xf32>, %o: tensor<8xf32>, %s: f32) -> tensor<8xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
      ^bb0(%v: f32, %out: f32):
        %m = arith.mulf %v, %s : f32
        linalg.yield %m : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
  }
}
func.func @main(%arg0: tensor<8xf32>, %arg1: f32) -> tensor<8xf32> {
  %c = arith.constant 4.0 : f32
  %0 = hexir.dispatch @b(%arg0, %arg1) : (tensor<8xf32>, f32) -> tensor<8xf32>
  %1 = hexir.dispatch @b(%0, %c) : (tensor<8xf32>, f32) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// With deduplication modulo constants first: x*2+1 and x*3+1 become one kernel x*%c+1,
// the shared 1.0 folded back, only the differing factor passed by each dispatch.
#map = affine_map<(i) -> (i)>
// BOTH-LABEL: hexir.executable @p
// BOTH:       func.func @p(%{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %[[F:[a-z0-9]+]]: f32) -> tensor<8xf32>
// BOTH:       %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// BOTH:       arith.mulf %{{.+}}, %[[F]]
// BOTH:       arith.addf %{{.+}}, %[[ONE]]
// BOTH-NOT:   hexir.executable @q
// BOTH-LABEL: func.func @main(
// BOTH-NEXT:  %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// BOTH-NEXT:  %[[R:.+]] = hexir.dispatch @p(%arg0, %[[TWO]]) : (tensor<8xf32>, f32) -> tensor<8xf32>
// BOTH-NEXT:  %[[THREE:.+]] = arith.constant 3.000000e+00 : f32
// BOTH-NEXT:  hexir.dispatch @p(%[[R]], %[[THREE]]) : (tensor<8xf32>, f32) -> tensor<8xf32>
hexir.executable @p {
  builtin.module {
    func.func @p(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
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
hexir.executable @q {
  builtin.module {
    func.func @q(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
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
  %0 = hexir.dispatch @p(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = hexir.dispatch @q(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
