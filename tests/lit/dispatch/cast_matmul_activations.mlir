// RUN: hexir-opt %s --split-input-file --hexir-cast-matmul-activations | FileCheck %s
// RUN: hexir-opt %s --split-input-file --hexir-cast-matmul-activations --hexir-form-dispatch-regions | FileCheck %s --check-prefix=REGIONS
// RUN: not hexir-compile %s --target=cuda --cuda-matmul-activations=f16 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --cuda-matmul-activations option: Cannot find option named 'f16'!

// A prefill's projections: f32 activations [?][64] by f16 weights [N][K] (transposed B). q and
// k read one normed value: one cast, shared; each generic now widens both operands.
#a = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x64xf32>
// CHECK:       %[[N:.+]] = linalg.generic {{.*}} ins(%[[X]], %{{.*}}) outs(
// CHECK:       %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x64xf16>
// CHECK:       %[[X16:.+]] = linalg.generic {{.*}} ins(%[[N]] : tensor<?x64xf32>) outs(%[[E]] : tensor<?x64xf16>) attrs = {hexir.operand_cast}
// CHECK:         arith.truncf %{{.+}} : f32 to f16
// CHECK:       linalg.generic {{.*}} ins(%[[X16]], %{{.+}} : tensor<?x64xf16>, tensor<32x64xf16>)
// CHECK-NEXT:  ^bb0(%[[A:.+]]: f16, %[[B:.+]]: f16, %[[O:.+]]: f32):
// CHECK-NEXT:    %[[AW:.+]] = arith.extf %[[A]] : f16 to f32
// CHECK-NEXT:    %[[BW:.+]] = arith.extf %[[B]] : f16 to f32
// CHECK-NEXT:    arith.mulf %[[AW]], %[[BW]] : f32
// CHECK:       linalg.generic {{.*}} ins(%[[X16]], %{{.+}} : tensor<?x64xf16>, tensor<16x64xf16>)
// CHECK-NOT:   hexir.operand_cast
// REGIONS-LABEL: func.func @prefill(
// The cast is materialized (its own dispatch here), never recomputed in a projection's: the
// projections read it from memory.
// REGIONS:       %[[CAST:.+]] = hexir.dispatch_region -> (tensor<?x64xf16>)
// REGIONS:         arith.truncf
// REGIONS:       hexir.dispatch_region -> (tensor<?x32xf32>)
// REGIONS-NOT:     arith.truncf
// REGIONS:         linalg.generic {{.*}} ins(%[[CAST]], %{{.+}} : tensor<?x64xf16>, tensor<32x64xf16>)
// REGIONS:       hexir.dispatch_region -> (tensor<?x16xf32>)
// REGIONS-NOT:     arith.truncf
// REGIONS:         linalg.generic {{.*}} ins(%[[CAST]], %{{.+}} : tensor<?x64xf16>, tensor<16x64xf16>)
func.func @prefill(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %wq: tensor<32x64xf16>, %wk: tensor<16x64xf16>) -> (tensor<?x32xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %normed = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (k)>, affine_map<(m, k) -> (m, k)>], iterator_types = ["parallel", "parallel"]} ins(%x, %g : tensor<?x64xf32>, tensor<64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %p = arith.mulf %v, %w : f32
    linalg.yield %p : f32
  } -> tensor<?x64xf32>
  %eq = tensor.empty(%m) : tensor<?x32xf32>
  %fq = linalg.fill ins(%zero : f32) outs(%eq : tensor<?x32xf32>) -> tensor<?x32xf32>
  %q = linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%normed, %wq : tensor<?x64xf32>, tensor<32x64xf16>) outs(%fq : tensor<?x32xf32>) {
  ^bb0(%in: f32, %w: f16, %acc: f32):
    %ww = arith.extf %w : f16 to f32
    %p = arith.mulf %in, %ww : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  %ek = tensor.empty(%m) : tensor<?x16xf32>
  %fk = linalg.fill ins(%zero : f32) outs(%ek : tensor<?x16xf32>) -> tensor<?x16xf32>
  %k = linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%normed, %wk : tensor<?x64xf32>, tensor<16x64xf16>) outs(%fk : tensor<?x16xf32>) {
  ^bb0(%in: f32, %w: f16, %acc: f32):
    %ww = arith.extf %w : f16 to f32
    %p = arith.mulf %in, %ww : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  return %q, %k : tensor<?x32xf32>, tensor<?x16xf32>
}

// -----

// A named matmul of bf16 weights ([K][N]) with a static M of 64: generalized, cast to bf16.
// CHECK-LABEL: func.func @named(
// CHECK:       %[[A16:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<64x32xf32>) outs(%{{.+}} : tensor<64x32xbf16>) attrs = {hexir.operand_cast}
// CHECK:       linalg.generic {{.*}} ins(%[[A16]], %arg1 : tensor<64x32xbf16>, tensor<32x48xbf16>)
// CHECK-NOT:   linalg.matmul
func.func @named(%a: tensor<64x32xf32>, %b: tensor<32x48xbf16>) -> tensor<64x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xbf16>) outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}

// -----

// Left alone: M of 16 or fewer rows (the GEMV kernels' case, decode keeps f32 x), f32
// weights (the SIMT kernel), an unfilled accumulator, a dynamic K.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT:   hexir.operand_cast
// CHECK-NOT:   truncf
// CHECK:       return
func.func @kept(%a: tensor<16x32xf32>, %b: tensor<32x48xf16>, %a2: tensor<64x32xf32>, %b2: tensor<32x48xf32>,
                %init: tensor<64x48xf32>, %a3: tensor<64x?xf32>, %b3: tensor<?x48xf16>)
    -> (tensor<16x48xf32>, tensor<64x48xf32>, tensor<64x48xf32>, tensor<64x48xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x48xf32>) -> tensor<16x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x48xf16>) outs(%f : tensor<16x48xf32>) -> tensor<16x48xf32>
  %e2 = tensor.empty() : tensor<64x48xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r2 = linalg.matmul ins(%a2, %b2 : tensor<64x32xf32>, tensor<32x48xf32>) outs(%f2 : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r3 = linalg.matmul ins(%a2, %b : tensor<64x32xf32>, tensor<32x48xf16>) outs(%init : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r4 = linalg.matmul ins(%a3, %b3 : tensor<64x?xf32>, tensor<?x48xf16>) outs(%f2 : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %r, %r2, %r3, %r4 : tensor<16x48xf32>, tensor<64x48xf32>, tensor<64x48xf32>, tensor<64x48xf32>
}
