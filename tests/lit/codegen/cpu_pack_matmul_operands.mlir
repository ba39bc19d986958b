// RUN: hexir-opt %s -split-input-file --hexir-cpu-pack-matmul-operands=cpu=x86-64-v3 | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cpu-pack-matmul-operands=cpu=x86-64-v3 --hexir-lift-constant-dispatches | FileCheck %s --check-prefix=LIFT

// A constant B (19 x 37) is packed even for a small matmul: on AVX2 (NR = 16) into
// ceil(37 / 16) = 3 panels of 19 x 16 by a dispatch of its own, which then has only constant
// operands and runs once at load (LIFT). The matmul's kernel reads the panels through the
// marked unpack generic: B[k][n] = Bp[n floordiv 16][k][n mod 16].
// CHECK-LABEL: hexir.executable @pack_rhs_19x37x16
// CHECK:         func.func @pack_rhs_19x37x16(%[[B:.+]]: tensor<19x37xf32>, %[[OUT:.+]]: tensor<3x19x16xf32>) -> tensor<3x19x16xf32>
// CHECK:           linalg.generic
// CHECK-SAME:        outs(%[[OUT]] : tensor<3x19x16xf32>) attrs = {hexir.pack_rhs}
// CHECK:             %[[C:.+]] = arith.addi
// CHECK:             %[[IN:.+]] = arith.cmpi ult, %[[C]]
// CHECK:             tensor.extract %[[B]]
// CHECK:           } -> tensor<3x19x16xf32>
// CHECK-LABEL: hexir.executable @mm
// CHECK:         func.func @mm(%[[A:.+]]: tensor<13x19xf32>, %[[BP:.+]]: tensor<3x19x16xf32>, %[[O:.+]]: tensor<13x37xf32>) -> tensor<13x37xf32>
// CHECK:           %[[U:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%[[BP]] : tensor<3x19x16xf32>) outs(%{{.+}} : tensor<19x37xf32>) attrs = {hexir.packed_rhs}
// CHECK:           linalg.matmul ins(%[[A]], %[[U]] : tensor<13x19xf32>, tensor<19x37xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:         %[[W:.+]] = arith.constant dense<1.000000e+00> : tensor<19x37xf32>
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_rhs_19x37x16(%[[W]]) : (tensor<19x37xf32>) -> tensor<3x19x16xf32>
// CHECK:         hexir.dispatch @mm(%arg0, %[[P]]) : (tensor<13x19xf32>, tensor<3x19x16xf32>) -> tensor<13x37xf32>
// LIFT-LABEL:  func.func @main(
// LIFT-NOT:      @pack_rhs
// LIFT:          %[[G:.+]] = hexir.global.load @main_lifted_0 : tensor<3x19x16xf32>
// LIFT:          hexir.dispatch @mm(%arg0, %[[G]])
// LIFT-LABEL:  func.func private @__hexir_lifted_init()
// LIFT:          hexir.dispatch @pack_rhs_19x37x16
// LIFT:          hexir.global.store
hexir.executable @mm {
  builtin.module {
    func.func @mm(%a: tensor<13x19xf32>, %b: tensor<19x37xf32>, %o: tensor<13x37xf32>) -> tensor<13x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}
func.func @main(%arg0: tensor<13x19xf32>) -> tensor<13x37xf32> {
  %w = arith.constant dense<1.0> : tensor<19x37xf32>
  %r = hexir.dispatch @mm(%arg0, %w) : (tensor<13x19xf32>, tensor<19x37xf32>) -> tensor<13x37xf32>
  return %r : tensor<13x37xf32>
}

// -----

// B an argument of a matmul too small to be split (13 x 37 x 19 multiply-adds): the kernel
// packs B itself, once; nothing changes.
// CHECK-LABEL: hexir.executable @small
// CHECK-NOT:     hexir.packed_rhs
// CHECK:         func.func @small(%{{.+}}: tensor<13x19xf32>, %{{.+}}: tensor<19x37xf32>,
// CHECK-LABEL: func.func @main(
// CHECK-NOT:     @pack_rhs
// CHECK:         hexir.dispatch @small(%arg0, %arg1)
hexir.executable @small {
  builtin.module {
    func.func @small(%a: tensor<13x19xf32>, %b: tensor<19x37xf32>, %o: tensor<13x37xf32>) -> tensor<13x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}
func.func @main(%arg0: tensor<13x19xf32>, %arg1: tensor<19x37xf32>) -> tensor<13x37xf32> {
  %r = hexir.dispatch @small(%arg0, %arg1) : (tensor<13x19xf32>, tensor<19x37xf32>) -> tensor<13x37xf32>
  return %r : tensor<13x37xf32>
}

// -----

// B an argument (256 x 160) of a matmul with dynamic M (counted as 64 rows: 2.6 x 2^20
// multiply-adds, so it is split over rows) called in a loop that
// does not change B: packed once, before the loop (not per iteration, nor per workgroup).
// CHECK-LABEL: func.func @loop(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x256xf32>, %[[W:[a-z0-9]+]]: tensor<256x160xf32>
// CHECK:         %[[P:.+]] = hexir.dispatch @pack_rhs_256x160x16(%[[W]]) : (tensor<256x160xf32>) -> tensor<10x256x16xf32>
// CHECK:         scf.for
// CHECK:           hexir.dispatch @dyn(%[[X]], %[[P]])
hexir.executable @dyn {
  builtin.module {
    func.func @dyn(%a: tensor<?x256xf32>, %b: tensor<256x160xf32>, %o: tensor<?x160xf32>) -> tensor<?x160xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<?x256xf32>, tensor<256x160xf32>) outs(%o : tensor<?x160xf32>) -> tensor<?x160xf32>
      return %m : tensor<?x160xf32>
    }
  }
}
func.func @loop(%x: tensor<?x256xf32>, %w: tensor<256x160xf32>, %n: index) -> tensor<?x160xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %x, %c0 : tensor<?x256xf32>
  %e = tensor.empty(%rows) : tensor<?x160xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %e) -> (tensor<?x160xf32>) {
    %y = hexir.dispatch @dyn(%x, %w) dims(%rows) : (tensor<?x256xf32>, tensor<256x160xf32>) -> tensor<?x160xf32>
    scf.yield %y : tensor<?x160xf32>
  }
  return %r : tensor<?x160xf32>
}
