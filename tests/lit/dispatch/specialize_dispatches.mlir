// RUN: hexir-opt %s --split-input-file --verify-diagnostics --hexir-specialize-dispatches | FileCheck %s

// A matmul with dynamic M: M = 1 gets a static executable behind a host switch; the scalar
// operand and the result dim that are M become the constant and a static dim.
// CHECK-LABEL: hexir.executable @mm {
// CHECK:       func.func @mm(%{{[a-z0-9]+}}: tensor<?x8xf32>,
// CHECK-LABEL: hexir.executable @mm_a0d0eq1 {
// CHECK:       func.func @mm_a0d0eq1(%{{[a-z0-9]+}}: tensor<1x8xf32>, %{{[a-z0-9]+}}: tensor<8x16xf32>, %{{[a-z0-9]+}}: tensor<1x16xf32>, %{{[a-z0-9]+}}: index) -> tensor<1x16xf32>
// CHECK:       linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<1x8xf32>, tensor<8x16xf32>) outs(%{{.+}} : tensor<1x16xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:       %[[M:.+]] = tensor.dim %arg0, %c0
// CHECK:       %[[M2:.+]] = tensor.dim %arg0, %{{.+}}
// CHECK:       %[[HOT:.+]] = arith.cmpi eq, %[[M2]], %[[ONE:.+]] : index
// CHECK:       %[[R:.+]] = scf.if %[[HOT]] -> (tensor<?x16xf32>) {
// CHECK:         %[[XS:.+]] = tensor.cast %arg0 : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK:         %[[C1:.+]] = arith.constant 1 : index
// CHECK:         %[[S:.+]] = hexir.dispatch @mm_a0d0eq1(%[[XS]], %arg1, %[[C1]]) : (tensor<1x8xf32>, tensor<8x16xf32>, index) -> tensor<1x16xf32>
// CHECK:         %[[SD:.+]] = tensor.cast %[[S]] : tensor<1x16xf32> to tensor<?x16xf32>
// CHECK:         scf.yield %[[SD]]
// CHECK:       } else {
// CHECK:         %[[G:.+]] = hexir.dispatch @mm(%arg0, %arg1, %[[M]]) dims(%[[M]])
// CHECK:         scf.yield %[[G]]
// CHECK:       return %[[R]]
hexir.executable @mm {
  builtin.module {
    func.func @mm(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %o: tensor<?x16xf32>, %m: index) -> tensor<?x16xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<?x16xf32>) -> tensor<?x16xf32>
      %r = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
      return %r : tensor<?x16xf32>
    }
  }
}
func.func @main(%arg0: tensor<?x8xf32>, %arg1: tensor<8x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x8xf32>
  %r = hexir.dispatch @mm(%arg0, %arg1, %m) dims(%m) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// -----

// An annotated argument dim wins over the matmul default: dim 1 = 4 of an elementwise
// kernel's input; two dispatches of it share one specialized executable.
#map = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: hexir.executable @neg_a0d1eq4 {
// CHECK:       func.func @neg_a0d1eq4(%{{[a-z0-9]+}}: tensor<?x4xf32>, %{{[a-z0-9]+}}: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NOT:   hexir.executable
// CHECK-LABEL: func.func @main(
// CHECK:       scf.if
// CHECK:       hexir.dispatch @neg_a0d1eq4(%{{.+}}) dims
// CHECK:       scf.if
// CHECK:       hexir.dispatch @neg_a0d1eq4(%{{.+}}) dims
hexir.executable @neg {
  builtin.module {
    func.func @neg(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>) -> tensor<?x?xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x?xf32>) outs(%o : tensor<?x?xf32>) {
      ^bb0(%v: f32, %out: f32):
        %n = arith.negf %v : f32
        linalg.yield %n : f32
      } -> tensor<?x?xf32>
      return %r : tensor<?x?xf32>
    }
  }
}
func.func @main(%arg0: tensor<?x?xf32> {hexir.specialize = array<i64: 1, 4>}) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x?xf32>
  %n = tensor.dim %arg0, %c1 : tensor<?x?xf32>
  %r = hexir.dispatch @neg(%arg0) dims(%m, %n) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = hexir.dispatch @neg(%arg0) dims(%m, %n) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r, %s : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Static M, or a dispatch without matmul or annotation: nothing to specialize.
// CHECK-LABEL: func.func @main(
// CHECK-NOT:   scf.if
// CHECK:       hexir.dispatch @mm4
hexir.executable @mm4 {
  builtin.module {
    func.func @mm4(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %o: tensor<4x16xf32>) -> tensor<4x16xf32> {
      %r = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
      return %r : tensor<4x16xf32>
    }
  }
}
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %r = hexir.dispatch @mm4(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

hexir.executable @id {
  builtin.module {
    func.func @id(%x: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %r = linalg.copy ins(%x : tensor<?xf32>) outs(%o : tensor<?xf32>) -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}
// expected-error @+1 {{hexir.specialize of argument 0: dim 1 = 1 is not a dynamic dimension of 'tensor<?xf32>' with a positive value}}
func.func @main(%arg0: tensor<?xf32> {hexir.specialize = array<i64: 1, 1>}) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %arg0, %c0 : tensor<?xf32>
  %r = hexir.dispatch @id(%arg0) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

hexir.executable @id0 {
  builtin.module {
    func.func @id0(%x: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %r = linalg.copy ins(%x : tensor<?xf32>) outs(%o : tensor<?xf32>) -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}
// expected-error @+1 {{hexir.specialize of argument 0: dim 0 = 0 is not a dynamic dimension of 'tensor<?xf32>' with a positive value}}
func.func @main(%arg0: tensor<?xf32> {hexir.specialize = array<i64: 0, 0>}) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %arg0, %c0 : tensor<?xf32>
  %r = hexir.dispatch @id0(%arg0) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

hexir.executable @id0 {
  builtin.module {
    func.func @id0(%x: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %r = linalg.copy ins(%x : tensor<?xf32>) outs(%o : tensor<?xf32>) -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}
// expected-error @+1 {{hexir.specialize of argument 0 must list (dim, value) pairs, got 3 numbers}}
func.func @main(%arg0: tensor<?xf32> {hexir.specialize = array<i64: 0, 1, 2>}) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %arg0, %c0 : tensor<?xf32>
  %r = hexir.dispatch @id0(%arg0) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A matmul-shaped generic (the llama importer's projection: B as [N][K], f16 weights widened in
// the body) gets the M = 1 clone too. The residual's rows are the rows of an earlier dispatch
// whose dims operand is the input's rows: known equal to M, so static in the clone without a
// second test in the switch.
// CHECK-LABEL: hexir.executable @proj_a0d0eq1_a2d0eq1 {
// CHECK:       func.func @proj_a0d0eq1_a2d0eq1(%{{[a-z0-9]+}}: tensor<1x8xf32>, %{{[a-z0-9]+}}: tensor<16x8xf16>, %{{[a-z0-9]+}}: tensor<1x16xf32>, %{{[a-z0-9]+}}: tensor<1x16xf32>, %{{[a-z0-9]+}}: index) -> tensor<1x16xf32>
// CHECK:       tensor.empty() : tensor<1x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:       %[[H:.+]] = hexir.dispatch @neg(
// CHECK:       arith.cmpi eq
// CHECK-NOT:   arith.cmpi
// CHECK:       scf.if
// CHECK:       %[[HS:.+]] = tensor.cast %[[H]] : tensor<?x16xf32> to tensor<1x16xf32>
// CHECK:       hexir.dispatch @proj_a0d0eq1_a2d0eq1(%{{.+}}, %arg1, %[[HS]], %{{.+}})
// CHECK:       } else {
// CHECK:       hexir.dispatch @proj(%arg0, %arg1, %[[H]],
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
hexir.executable @neg {
  builtin.module {
    func.func @neg(%x: tensor<?x16xf32>, %o: tensor<?x16xf32>) -> tensor<?x16xf32> {
      %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x16xf32>) outs(%o : tensor<?x16xf32>) {
      ^bb0(%v: f32, %out: f32):
        %n = arith.negf %v : f32
        linalg.yield %n : f32
      } -> tensor<?x16xf32>
      return %r : tensor<?x16xf32>
    }
  }
}
hexir.executable @proj {
  builtin.module {
    func.func @proj(%x: tensor<?x8xf32>, %w: tensor<16x8xf16>, %res: tensor<?x16xf32>, %o: tensor<?x16xf32>, %m: index) -> tensor<?x16xf32> {
      %z = arith.constant 0.0 : f32
      %e = tensor.empty(%m) : tensor<?x16xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
      %c = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x8xf32>, tensor<16x8xf16>) outs(%f : tensor<?x16xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<?x16xf32>
      %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %res : tensor<?x16xf32>, tensor<?x16xf32>) outs(%o : tensor<?x16xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<?x16xf32>
      return %r : tensor<?x16xf32>
    }
  }
}
func.func @main(%arg0: tensor<?x8xf32>, %arg1: tensor<16x8xf16>, %arg2: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x8xf32>
  %h = hexir.dispatch @neg(%arg2) dims(%m) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %r = hexir.dispatch @proj(%arg0, %arg1, %h, %m) dims(%m) : (tensor<?x8xf32>, tensor<16x8xf16>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// -----

// A residual from another function argument: nothing on the host says its rows are M, but
// the kernel adds it elementwise to the matmul's M rows (KernelExtents.h), so it is static
// in the clone as well, again without a test of its own.
// CHECK-LABEL: hexir.executable @proj2_a0d0eq1_a2d0eq1 {
// CHECK:       func.func @proj2_a0d0eq1_a2d0eq1(%{{[a-z0-9]+}}: tensor<1x8xf32>, %{{[a-z0-9]+}}: tensor<16x8xf16>, %{{[a-z0-9]+}}: tensor<1x16xf32>, %{{[a-z0-9]+}}: tensor<1x16xf32>, %{{[a-z0-9]+}}: index) -> tensor<1x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:       arith.cmpi eq
// CHECK-NOT:   arith.cmpi
// CHECK:       scf.if
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
hexir.executable @proj2 {
  builtin.module {
    func.func @proj2(%x: tensor<?x8xf32>, %w: tensor<16x8xf16>, %res: tensor<?x16xf32>, %o: tensor<?x16xf32>, %m: index) -> tensor<?x16xf32> {
      %z = arith.constant 0.0 : f32
      %e = tensor.empty(%m) : tensor<?x16xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
      %c = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x8xf32>, tensor<16x8xf16>) outs(%f : tensor<?x16xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<?x16xf32>
      %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %res : tensor<?x16xf32>, tensor<?x16xf32>) outs(%o : tensor<?x16xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<?x16xf32>
      return %r : tensor<?x16xf32>
    }
  }
}
func.func @main(%arg0: tensor<?x8xf32>, %arg1: tensor<16x8xf16>, %arg2: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x8xf32>
  %r = hexir.dispatch @proj2(%arg0, %arg1, %arg2, %m) dims(%m) : (tensor<?x8xf32>, tensor<16x8xf16>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// -----

// An operand the kernel does not tie to M (its own loop, its own result) stays dynamic in the
// clone, and so does that result.
// CHECK-LABEL: hexir.executable @two_a0d0eq1 {
// CHECK:       func.func @two_a0d0eq1(%{{[a-z0-9]+}}: tensor<1x8xf32>, %{{[a-z0-9]+}}: tensor<8x16xf32>, %{{[a-z0-9]+}}: tensor<?xf32>, %{{[a-z0-9]+}}: tensor<1x16xf32>, %{{[a-z0-9]+}}: tensor<?xf32>) -> (tensor<1x16xf32>, tensor<?xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:       hexir.dispatch @two_a0d0eq1(%{{.+}}, %arg1, %arg2) dims(%{{.+}}) : (tensor<1x8xf32>, tensor<8x16xf32>, tensor<?xf32>) -> (tensor<1x16xf32>, tensor<?xf32>)
#id1 = affine_map<(i) -> (i)>
hexir.executable @two {
  builtin.module {
    func.func @two(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %v: tensor<?xf32>, %o: tensor<?x16xf32>, %ov: tensor<?xf32>) -> (tensor<?x16xf32>, tensor<?xf32>) {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<?x16xf32>) -> tensor<?x16xf32>
      %r = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
      %n = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%v : tensor<?xf32>) outs(%ov : tensor<?xf32>) {
      ^bb0(%a: f32, %out: f32):
        %m = arith.negf %a : f32
        linalg.yield %m : f32
      } -> tensor<?xf32>
      return %r, %n : tensor<?x16xf32>, tensor<?xf32>
    }
  }
}
func.func @main(%arg0: tensor<?x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<?xf32>) -> (tensor<?x16xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x8xf32>
  %n = tensor.dim %arg2, %c0 : tensor<?xf32>
  %r, %s = hexir.dispatch @two(%arg0, %arg1, %arg2) dims(%m, %n) : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<?xf32>) -> (tensor<?x16xf32>, tensor<?xf32>)
  return %r, %s : tensor<?x16xf32>, tensor<?xf32>
}
