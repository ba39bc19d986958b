// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections="max-work=1024 max-norm-extent=1024 group-tails=true" --hexir-form-dispatch-regions | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections="max-work=1024 max-norm-extent=1024 group-tails=false" --hexir-form-dispatch-regions | FileCheck %s --check-prefix=OFF
// RUN: hexir-opt %s -split-input-file --hexir-fuse-small-reductions --hexir-group-small-projections="max-work=1024 group-tails=true" --hexir-form-dispatch-regions | FileCheck %s --check-prefix=NOPAIR
// RUN: not hexir-opt %s --hexir-group-small-projections="group-tails=maybe" 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not hexir-compile %s --target=cuda --small-layer-tails=maybe -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=BADFLAG
// BADOPT: for the --group-tails option: 'maybe' is invalid value for boolean argument
// BADFLAG: hexir-compile: for the --small-layer-tails option: 'maybe' is invalid value for boolean argument

// hexir-group-small-projections' group-tails (passes/dispatch/fusion/README.md): the end of a
// greedy decode step after its last FFN. The FFN (norm, w1/w3, SiLU * mul, w2, residual) is
// a group; the final norm after it is a chain of hexir-fuse-small-reductions recomputed in
// the classifier, a projection (64 rows), which joins no group as a tail (its rows spread
// over blocks in a kernel of its own): that region stays as it is. The argmax over the 64
// logits and its index are a norm pair (a one-point reduction and the elementwise op reading
// it); its tails join it one at a time: the ids row written in place at the position the
// state holds, the state updated in place (reading the id), the stop flag written in place
// (reading the new state inside its body). One region whose results are the three updates.
// CHECK-LABEL: func.func @decode_tail
// CHECK:         hexir.dispatch_region -> (tensor<16xf32>)
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK:         hexir.dispatch_region -> (tensor<64xf32>)
// CHECK-NOT:       hexir.dispatch_group
// CHECK:         %[[R:.+]]:3 = hexir.dispatch_region -> (tensor<8xi64>, tensor<4xi64>, tensor<1xi32>)
// CHECK:           linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK:           hexir.in_place
// CHECK:           hexir.in_place
// CHECK:           hexir.in_place
// CHECK:         } {hexir.dispatch_group = "small_layer"}
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         return %[[R]]#0, %[[R]]#1, %[[R]]#2
// group-tails=false: the argmax pair, then one region for each in-place update.
// OFF-LABEL: func.func @decode_tail
// OFF:         hexir.dispatch_region -> (tensor<16xf32>)
// OFF:         hexir.dispatch_region -> (tensor<64xf32>)
// OFF:         hexir.dispatch_region -> (tensor<i64>)
// OFF:         } {hexir.dispatch_group = "small_layer"}
// OFF:         hexir.dispatch_region -> (tensor<8xi64>)
// OFF:         hexir.dispatch_region -> (tensor<4xi64>)
// OFF:         hexir.dispatch_region -> (tensor<1xi32>)
// OFF-NOT:     hexir.dispatch_region
// Without norm pairs the argmax is no group, and no group reads the updates' inputs: four
// regions after the classifier, as without tails.
// NOPAIR-LABEL: func.func @decode_tail
// NOPAIR:         hexir.dispatch_region -> (tensor<64xf32>)
// NOPAIR:         hexir.dispatch_region -> (tensor<i64>)
// NOPAIR-NOT:     hexir.dispatch_group
// NOPAIR:         hexir.dispatch_region -> (tensor<8xi64>)
// NOPAIR:         hexir.dispatch_region -> (tensor<4xi64>)
// NOPAIR:         hexir.dispatch_region -> (tensor<1xi32>)
// NOPAIR:         return
#id = affine_map<(d) -> (d)>
#all = affine_map<(d) -> ()>
#s0 = affine_map<() -> ()>
func.func @decode_tail(%x: tensor<16xf32>, %w: tensor<16xf32>, %w1: tensor<24x16xf32>, %w3: tensor<24x16xf32>, %w2: tensor<16x24xf32>, %wf: tensor<16xf32>, %wc: tensor<64x16xf32>, %ids: tensor<8xi64>, %state: tensor<4xi64>, %flag: tensor<1xi32>) -> (tensor<8xi64>, tensor<4xi64>, tensor<1xi32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<16xf32>
  %xn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%x, %ss, %w : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %eh = tensor.empty() : tensor<24xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<24xf32>) -> tensor<24xf32>
  %h1 = linalg.matvec ins(%w1, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %h3 = linalg.matvec ins(%w3, %xn : tensor<24x16xf32>, tensor<16xf32>) outs(%zh : tensor<24xf32>) -> tensor<24xf32>
  %es = tensor.empty() : tensor<24xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%h1, %h3 : tensor<24xf32>, tensor<24xf32>) outs(%es : tensor<24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %na = arith.negf %a : f32
    %ex = math.exp %na : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %silu = arith.divf %a, %den : f32
    %y = arith.mulf %silu, %b : f32
    linalg.yield %y : f32
  } -> tensor<24xf32>
  %ed = tensor.empty() : tensor<16xf32>
  %zd = linalg.fill ins(%zero : f32) outs(%ed : tensor<16xf32>) -> tensor<16xf32>
  %d = linalg.matvec ins(%w2, %h : tensor<16x24xf32>, tensor<24xf32>) outs(%zd : tensor<16xf32>) -> tensor<16xf32>
  %er = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %d : tensor<16xf32>, tensor<16xf32>) outs(%er : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  // The final norm and the classifier.
  %ss2 = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%r : tensor<16xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %rn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = ["parallel"]} ins(%r, %ss2, %wf : tensor<16xf32>, tensor<f32>, tensor<16xf32>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%a: f32, %sum: f32, %g: f32, %o: f32):
    %n = arith.constant 16.0 : f32
    %mean = arith.divf %sum, %n : f32
    %inv = math.rsqrt %mean : f32
    %xs = arith.mulf %a, %inv : f32
    %y = arith.mulf %g, %xs : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %el = tensor.empty() : tensor<64xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<64xf32>) -> tensor<64xf32>
  %logits = linalg.matvec ins(%wc, %rn : tensor<64x16xf32>, tensor<16xf32>) outs(%zl : tensor<64xf32>) -> tensor<64xf32>
  // The argmax: the larger packed (ordered bits, inverted index) wins.
  %min = arith.constant -9223372036854775808 : i64
  %em = tensor.empty() : tensor<i64>
  %zm = linalg.fill ins(%min : i64) outs(%em : tensor<i64>) -> tensor<i64>
  %best = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%logits : tensor<64xf32>) outs(%zm : tensor<i64>) {
  ^bb0(%in: f32, %out: i64):
    %i = linalg.index 0 : index
    %bits = arith.bitcast %in : f32 to i32
    %b64 = arith.extsi %bits : i32 to i64
    %c32 = arith.constant 32 : i64
    %hi = arith.shli %b64, %c32 : i64
    %i64 = arith.index_cast %i : index to i64
    %mask = arith.constant 4294967295 : i64
    %lo = arith.subi %mask, %i64 : i64
    %p = arith.ori %hi, %lo : i64
    %mx = arith.maxsi %out, %p : i64
    linalg.yield %mx : i64
  } -> tensor<i64>
  %ei = tensor.empty() : tensor<i64>
  %id = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%best : tensor<i64>) outs(%ei : tensor<i64>) {
  ^bb0(%in: i64, %out: i64):
    %mask = arith.constant 4294967295 : i64
    %lo = arith.andi %in, %mask : i64
    %t = arith.subi %mask, %lo : i64
    linalg.yield %t : i64
  } -> tensor<i64>
  // The in-place updates: the ids row at the state's position, the state, the stop flag.
  %ids2 = linalg.generic {indexing_maps = [#all, #id], iterator_types = ["parallel"]} ins(%id : tensor<i64>) outs(%ids : tensor<8xi64>) attrs = {hexir.in_place} {
  ^bb0(%in: i64, %out: i64):
    %i = linalg.index 0 : index
    %i64 = arith.index_cast %i : index to i64
    %c1 = arith.constant 1 : index
    %pos = tensor.extract %state[%c1] : tensor<4xi64>
    %here = arith.cmpi eq, %i64, %pos : i64
    %v = arith.select %here, %in, %out : i64
    linalg.yield %v : i64
  } -> tensor<8xi64>
  %state2 = linalg.generic {indexing_maps = [#all, #id], iterator_types = ["parallel"]} ins(%id : tensor<i64>) outs(%state : tensor<4xi64>) attrs = {hexir.in_place} {
  ^bb0(%in: i64, %out: i64):
    %i = linalg.index 0 : index
    %one = arith.constant 1 : i64
    %next = arith.addi %out, %one : i64
    %c2 = arith.constant 2 : index
    %is_id = arith.cmpi eq, %i, %c2 : index
    %v = arith.select %is_id, %in, %next : i64
    linalg.yield %v : i64
  } -> tensor<4xi64>
  %flag2 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%flag : tensor<1xi32>) attrs = {hexir.in_place} {
  ^bb0(%out: i32):
    %c0 = arith.constant 0 : index
    %n = tensor.extract %state2[%c0] : tensor<4xi64>
    %limit = arith.constant 8 : i64
    %go = arith.cmpi slt, %n, %limit : i64
    %v = arith.extui %go : i1 to i32
    linalg.yield %v : i32
  } -> tensor<1xi32>
  return %ids2, %state2, %flag2 : tensor<8xi64>, tensor<4xi64>, tensor<1xi32>
}
