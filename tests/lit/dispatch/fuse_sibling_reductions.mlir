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

// -----

// One-row quantized block matvecs of one format (the llama importer's w1 and w3, each
// reading its own tensor.expand_shape of the normed x) are siblings too: one region, w3's
// clone reading w1's reshape of x (the quantized GEMV kernel computes both,
// codegen/CUDAQuantizedGemv.h).
// CHECK-LABEL: func.func @ffn_gate_q8
// CHECK:         %[[XB:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [3, 32]
// CHECK:         %[[R:.+]] = hexir.dispatch_region -> (tensor<37xf32>) {
// CHECK:           %[[H1:.+]] = linalg.generic {{.*}} ins(%[[XB]] : tensor<3x32xf32>) {{.*}}hexir.block_matvec = "q8_0"
// CHECK:           %[[H3:.+]] = linalg.generic {{.*}} ins(%[[XB]] : tensor<3x32xf32>) {{.*}}hexir.block_matvec = "q8_0"
// CHECK:           %[[G:.+]] = linalg.generic {{.*}} ins(%[[H1]], %[[H3]]
// CHECK:           hexir.yield %[[G]]
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]
// OFF-LABEL: func.func @ffn_gate_q8
// OFF-COUNT-2: hexir.dispatch_region
// OFF:         return
func.func @ffn_gate_q8(%x: tensor<96xf32>, %w1: tensor<37x96xi8>, %w3: tensor<37x96xi8>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %t1 = tensor.empty() : tensor<37xf32>
  %fh1 = linalg.fill ins(%zero : f32) outs(%t1 : tensor<37xf32>) -> tensor<37xf32>
  %xb1 = tensor.expand_shape %x [[0, 1]] output_shape [3, 32] : tensor<96xf32> into tensor<3x32xf32>
  %h1 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb1 : tensor<3x32xf32>) outs(%fh1 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 32 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w1[%n, %at] : tensor<37x96xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %t3 = tensor.empty() : tensor<37xf32>
  %fh3 = linalg.fill ins(%zero : f32) outs(%t3 : tensor<37xf32>) -> tensor<37xf32>
  %xb3 = tensor.expand_shape %x [[0, 1]] output_shape [3, 32] : tensor<96xf32> into tensor<3x32xf32>
  %h3 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb3 : tensor<3x32xf32>) outs(%fh3 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 32 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w3[%n, %at] : tensor<37x96xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %to = tensor.empty() : tensor<37xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%to : tensor<37xf32>) {
  ^bb0(%a: f32, %c: f32, %u: f32):
    %na = arith.negf %a : f32
    %e = math.exp %na : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %silu = arith.mulf %a, %sg : f32
    %r = arith.mulf %silu, %c : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}

// -----

// Block matvecs of two formats are not siblings (one kernel decodes one format).
// CHECK-LABEL: func.func @ffn_gate_mixed
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK:         return
func.func @ffn_gate_mixed(%x: tensor<96xf32>, %w1: tensor<37x96xi8>, %w3: tensor<37x96xi8>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %t1 = tensor.empty() : tensor<37xf32>
  %fh1 = linalg.fill ins(%zero : f32) outs(%t1 : tensor<37xf32>) -> tensor<37xf32>
  %xb1 = tensor.expand_shape %x [[0, 1]] output_shape [3, 32] : tensor<96xf32> into tensor<3x32xf32>
  %h1 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"} ins(%xb1 : tensor<3x32xf32>) outs(%fh1 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 32 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w1[%n, %at] : tensor<37x96xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %t3 = tensor.empty() : tensor<37xf32>
  %fh3 = linalg.fill ins(%zero : f32) outs(%t3 : tensor<37xf32>) -> tensor<37xf32>
  %xb3 = tensor.expand_shape %x [[0, 1]] output_shape [3, 32] : tensor<96xf32> into tensor<3x32xf32>
  %h3 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_x"} ins(%xb3 : tensor<3x32xf32>) outs(%fh3 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 32 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w3[%n, %at] : tensor<37x96xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %to = tensor.empty() : tensor<37xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%to : tensor<37xf32>) {
  ^bb0(%a: f32, %c: f32, %u: f32):
    %na = arith.negf %a : f32
    %e = math.exp %na : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %silu = arith.mulf %a, %sg : f32
    %r = arith.mulf %silu, %c : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}

// -----

// Nor are block matvecs of 256-value super-blocks that the quantized GEMV kernel does not
// take (q6_k's 210-byte blocks keep the generic kernel, one matvec a kernel;
// passes/dispatch/FormDispatchRegions.cpp).
// CHECK-LABEL: func.func @ffn_gate_super_blocks
// CHECK-COUNT-2: hexir.dispatch_region
// CHECK:         return
func.func @ffn_gate_super_blocks(%x: tensor<256xf32>, %w1: tensor<37x256xi8>, %w3: tensor<37x256xi8>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %t1 = tensor.empty() : tensor<37xf32>
  %fh1 = linalg.fill ins(%zero : f32) outs(%t1 : tensor<37xf32>) -> tensor<37xf32>
  %xb1 = tensor.expand_shape %x [[0, 1]] output_shape [1, 256] : tensor<256xf32> into tensor<1x256xf32>
  %h1 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q6_k"} ins(%xb1 : tensor<1x256xf32>) outs(%fh1 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 256 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w1[%n, %at] : tensor<37x256xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %t3 = tensor.empty() : tensor<37xf32>
  %fh3 = linalg.fill ins(%zero : f32) outs(%t3 : tensor<37xf32>) -> tensor<37xf32>
  %xb3 = tensor.expand_shape %x [[0, 1]] output_shape [1, 256] : tensor<256xf32> into tensor<1x256xf32>
  %h3 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q6_k"} ins(%xb3 : tensor<1x256xf32>) outs(%fh3 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 256 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w3[%n, %at] : tensor<37x256xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %to = tensor.empty() : tensor<37xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%to : tensor<37xf32>) {
  ^bb0(%a: f32, %c: f32, %u: f32):
    %na = arith.negf %a : f32
    %e = math.exp %na : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %silu = arith.mulf %a, %sg : f32
    %r = arith.mulf %silu, %c : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}

// -----

// q4_k's (and q5_k's) super-blocks are, since the quantized GEMV dots them with 8-bit x:
// one region, w3's matvec cloned in before the consumer.
// CHECK-LABEL: func.func @ffn_gate_q4k
// CHECK:         hexir.dispatch_region
// CHECK-COUNT-2:   hexir.block_matvec = "q4_k"
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return
// OFF-LABEL:   func.func @ffn_gate_q4k
// OFF-COUNT-2: hexir.dispatch_region
func.func @ffn_gate_q4k(%x: tensor<256xf32>, %w1: tensor<37x256xi8>, %w3: tensor<37x256xi8>) -> tensor<37xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %t1 = tensor.empty() : tensor<37xf32>
  %fh1 = linalg.fill ins(%zero : f32) outs(%t1 : tensor<37xf32>) -> tensor<37xf32>
  %xb1 = tensor.expand_shape %x [[0, 1]] output_shape [1, 256] : tensor<256xf32> into tensor<1x256xf32>
  %h1 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_k"} ins(%xb1 : tensor<1x256xf32>) outs(%fh1 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 256 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w1[%n, %at] : tensor<37x256xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %t3 = tensor.empty() : tensor<37xf32>
  %fh3 = linalg.fill ins(%zero : f32) outs(%t3 : tensor<37xf32>) -> tensor<37xf32>
  %xb3 = tensor.expand_shape %x [[0, 1]] output_shape [1, 256] : tensor<256xf32> into tensor<1x256xf32>
  %h3 = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_k"} ins(%xb3 : tensor<1x256xf32>) outs(%fh3 : tensor<37xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %n = linalg.index 0 : index
    %b = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c32 = arith.constant 256 : index
    %base = arith.muli %b, %c32 : index
    %at = arith.addi %base, %j : index
    %q8 = tensor.extract %w3[%n, %at] : tensor<37x256xi8>
    %q = arith.sitofp %q8 : i8 to f32
    %p = arith.mulf %xv, %q : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<37xf32>
  %to = tensor.empty() : tensor<37xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<37xf32>, tensor<37xf32>) outs(%to : tensor<37xf32>) {
  ^bb0(%a: f32, %c: f32, %u: f32):
    %na = arith.negf %a : f32
    %e = math.exp %na : f32
    %den = arith.addf %e, %one : f32
    %sg = arith.divf %one, %den : f32
    %silu = arith.mulf %a, %sg : f32
    %r = arith.mulf %silu, %c : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  return %g : tensor<37xf32>
}
