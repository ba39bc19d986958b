// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions=fuse-sibling-reductions=true | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions | FileCheck %s --check-prefix=OFF

// w1 and w3 read the same x; SiLU(w1 x) * (w3 x) reads both: with fuse-sibling-reductions
// the region of w1 (the first root) takes the consumer and, with it, w3 (cloned before the
// consumer): one region instead of two. Without it, w1 is a region of its own.
// CHECK-LABEL: func.func @ffn_gate
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<37xf32>) {
// CHECK:           %[[H1:.+]] = linalg.matvec ins(%{{.+}}, %{{.+}} : tensor<37x48xf32>
// CHECK:           %[[H3:.+]] = linalg.matvec ins(%{{.+}}, %{{.+}} : tensor<37x48xf32>
// CHECK:           %[[G:.+]] = linalg.generic {{.*}} ins(%[[H1]], %[[H3]]
// CHECK:           hexir.yield %[[G]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// OFF-LABEL: func.func @ffn_gate
// OFF-COUNT-2: hexir.dispatch_region
// OFF:         return
#id = affine_map<(d) -> (d)>
func.func @ffn_gate(%x: tensor<48xf32>, %w1: tensor<37x48xf32>, %w3: tensor<37x48xf32>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %h1 = linalg.matvec ins(%w1, %x : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %h3 = linalg.matvec ins(%w3, %x : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%e : tensor<37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d = arith.addf %one, %ex : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}

// -----

// Not siblings: w3's rows differ from w1's (a consumer reading both through a slice would not
// pair them point for point): two regions.
// CHECK-LABEL: func.func @different_extents
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_region
#id = affine_map<(d) -> (d)>
func.func @different_extents(%x: tensor<48xf32>, %y: tensor<64xf32>, %w1: tensor<37x48xf32>, %w3: tensor<37x64xf32>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %h1 = linalg.matvec ins(%w1, %x : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %h3 = linalg.matvec ins(%w3, %y : tensor<37x64xf32>, tensor<64xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%e : tensor<37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}

// -----

// Not siblings: w3's result is also returned (read outside the consumer): w1, w3 and the
// consumer each a region.
// CHECK-LABEL: func.func @sibling_read_elsewhere
// CHECK-COUNT-3: hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_region
#id = affine_map<(d) -> (d)>
func.func @sibling_read_elsewhere(%x: tensor<48xf32>, %w1: tensor<37x48xf32>, %w3: tensor<37x48xf32>) -> (tensor<37xf32>, tensor<37xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %h1 = linalg.matvec ins(%w1, %x : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %h3 = linalg.matvec ins(%w3, %x : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%e : tensor<37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g, %h3 : tensor<37xf32>, tensor<37xf32>
}

// -----

// Not siblings: the two matvecs read different vectors (independent branches, as a diamond's
// two arms: fusing them would run the second arm after the first's producer): w1 alone, w3
// with the consumer.
// CHECK-LABEL: func.func @sibling_other_input
// CHECK:         hexir.dispatch_region
// CHECK:           linalg.matvec ins(%arg2, %arg0
// CHECK-NEXT:      hexir.yield
// CHECK:         hexir.dispatch_region
// CHECK:           linalg.matvec ins(%arg3, %arg1
// CHECK:           linalg.generic
// CHECK-NOT:     hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_region
#id = affine_map<(d) -> (d)>
func.func @sibling_other_input(%x: tensor<48xf32>, %y: tensor<48xf32>, %w1: tensor<37x48xf32>, %w3: tensor<37x48xf32>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %h1 = linalg.matvec ins(%w1, %x : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %h3 = linalg.matvec ins(%w3, %y : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%e : tensor<37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}

// -----

// Not siblings: each matvec reads its own copy of a chain to recompute (hexir-fuse-small-
// reductions' mark): a kernel with such a chain in front of two point reductions is not one
// the CUDA target distributes, so w1 (with its copy) and w3 + consumer (with its copy) stay
// two regions.
// CHECK-LABEL: func.func @recomputed_inputs
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK-NOT:     hexir.dispatch_region
#id = affine_map<(d) -> (d)>
func.func @recomputed_inputs(%x: tensor<48xf32>, %w1: tensor<37x48xf32>, %w3: tensor<37x48xf32>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<48xf32>
  %xa = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<48xf32>) outs(%ex : tensor<48xf32>) attrs = {hexir.recompute_in_consumer = 2 : i64} {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<48xf32>
  %xb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<48xf32>) outs(%ex : tensor<48xf32>) attrs = {hexir.recompute_in_consumer = 2 : i64} {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<48xf32>
  %e = tensor.empty() : tensor<37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
  %h1 = linalg.matvec ins(%w1, %xa : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %h3 = linalg.matvec ins(%w3, %xb : tensor<37x48xf32>, tensor<48xf32>) outs(%z : tensor<37xf32>) -> tensor<37xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%e : tensor<37xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}
