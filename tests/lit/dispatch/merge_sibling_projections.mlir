// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions=fuse-sibling-reductions=true --hexir-merge-sibling-projections | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions=fuse-sibling-reductions=true | FileCheck %s --check-prefix=OFF

// A llama decode layer's projections (GQA: 24 q rows, 6 k and v rows) of one x: their regions
// become one `sibling_projections` region at the last (v's, which writes its row into the cache
// in place), yielding q, k and the cache; the k rotary's region, which reads k and sat between
// k and v, moves after it. Without the pass: four regions (q, k, the rotary, v with its row).
// CHECK-LABEL: func.func @qkv
// CHECK:         %[[P:.+]]:3 = hexir.dispatch_region -> (tensor<24xf32>, tensor<6xf32>, tensor<9x6xf32>) {
// CHECK:           %[[Q:.+]] = linalg.matvec ins(%{{.+}}, %{{.+}} : tensor<24x64xf32>
// CHECK:           %[[K:.+]] = linalg.matvec ins(%{{.+}}, %{{.+}} : tensor<6x64xf32>
// CHECK:           %[[V:.+]] = linalg.matvec ins(%{{.+}}, %{{.+}} : tensor<6x64xf32>
// CHECK:           %[[C:.+]] = tensor.insert_slice %[[V]] into %{{.+}} {hexir.in_place}
// CHECK:           hexir.yield %[[Q]], %[[K]], %[[C]]
// CHECK:         } {hexir.dispatch_group = "sibling_projections"}
// CHECK:         %[[R:.+]] = hexir.dispatch_region
// CHECK:           linalg.generic {{.*}} ins(%[[P]]#1
// CHECK:         return %[[P]]#0, %[[R]], %[[P]]#2
// OFF-LABEL: func.func @qkv
// OFF-COUNT-4: hexir.dispatch_region
// OFF-NOT:     hexir.dispatch_group
// OFF:         return
#id = affine_map<(d) -> (d)>
func.func @qkv(%x: tensor<64xf32>, %wq: tensor<24x64xf32>, %wk: tensor<6x64xf32>, %wv: tensor<6x64xf32>, %vc: tensor<9x6xf32>, %pos: index) -> (tensor<24xf32>, tensor<6xf32>, tensor<9x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %eq = tensor.empty() : tensor<24xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<24xf32>) -> tensor<24xf32>
  %q = linalg.matvec ins(%wq, %x : tensor<24x64xf32>, tensor<64xf32>) outs(%zq : tensor<24xf32>) -> tensor<24xf32>
  %ek = tensor.empty() : tensor<6xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<6xf32>) -> tensor<6xf32>
  %k = linalg.matvec ins(%wk, %x : tensor<6x64xf32>, tensor<64xf32>) outs(%zk : tensor<6xf32>) -> tensor<6xf32>
  %er = tensor.empty() : tensor<6xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%k : tensor<6xf32>) outs(%er : tensor<6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %c1 = arith.constant 1 : index
    %p = arith.xori %i, %c1 : index
    %b = tensor.extract %k[%p] : tensor<6xf32>
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %ev = tensor.empty() : tensor<6xf32>
  %zv = linalg.fill ins(%zero : f32) outs(%ev : tensor<6xf32>) -> tensor<6xf32>
  %v = linalg.matvec ins(%wv, %x : tensor<6x64xf32>, tensor<64xf32>) outs(%zv : tensor<6xf32>) -> tensor<6xf32>
  %c = tensor.insert_slice %v into %vc[%pos, 0] [1, 6] [1, 1] {hexir.in_place} : tensor<6xf32> into tensor<9x6xf32>
  return %q, %r, %c : tensor<24xf32>, tensor<6xf32>, tensor<9x6xf32>
}

// -----

// Rows of 48 (shorter than a CUDA warp reduces, 64) stay apart.
// CHECK-LABEL: func.func @short_rows
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_group
// CHECK:         return
func.func @short_rows(%x: tensor<48xf32>, %w1: tensor<24x48xf32>, %w2: tensor<6x48xf32>) -> (tensor<24xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<24xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<24xf32>) -> tensor<24xf32>
  %a = linalg.matvec ins(%w1, %x : tensor<24x48xf32>, tensor<48xf32>) outs(%z1 : tensor<24xf32>) -> tensor<24xf32>
  %e2 = tensor.empty() : tensor<6xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<6xf32>) -> tensor<6xf32>
  %b = linalg.matvec ins(%w2, %x : tensor<6x48xf32>, tensor<48xf32>) outs(%z2 : tensor<6xf32>) -> tensor<6xf32>
  return %a, %b : tensor<24xf32>, tensor<6xf32>
}

// -----

// Projections of different vectors stay apart.
// CHECK-LABEL: func.func @other_vectors
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_group
// CHECK:         return
func.func @other_vectors(%x: tensor<64xf32>, %y: tensor<64xf32>, %w1: tensor<24x64xf32>, %w2: tensor<6x64xf32>) -> (tensor<24xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<24xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<24xf32>) -> tensor<24xf32>
  %a = linalg.matvec ins(%w1, %x : tensor<24x64xf32>, tensor<64xf32>) outs(%z1 : tensor<24xf32>) -> tensor<24xf32>
  %e2 = tensor.empty() : tensor<6xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<6xf32>) -> tensor<6xf32>
  %b = linalg.matvec ins(%w2, %y : tensor<6x64xf32>, tensor<64xf32>) outs(%z2 : tensor<6xf32>) -> tensor<6xf32>
  return %a, %b : tensor<24xf32>, tensor<6xf32>
}
