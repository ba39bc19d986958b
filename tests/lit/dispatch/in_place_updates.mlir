// RUN: hexir-opt %s -split-input-file --hexir-form-dispatch-regions --hexir-outline-dispatch-regions | FileCheck %s

// A loop-carried tensor that only the loop sees (filled here, carried, updated once per
// iteration, read after the update): the row update writes into the carried buffer. The
// dispatch's result is tied to its destination operand; its kernel inserts into the output
// argument.
// CHECK-LABEL: hexir.executable @carried_dispatch_1
// CHECK:         tensor.insert_slice %{{.+}} into %arg2[
// CHECK-LABEL: func.func @carried(
// CHECK:         scf.for
// CHECK:           hexir.dispatch @carried_dispatch_1(%{{.+}}, %{{.+}}, %{{.+}}) {hexir.tied_operands = array<i64: 1>}
func.func @carried(%row: tensor<1x4xf32>, %n: index) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<8x4xf32>) {
    %u = tensor.insert_slice %row into %acc[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %u : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}

// -----

// Not owned, so copied (the kernel computes a fresh result, no tie): a function argument
// (the caller's buffer), a destination read again after the update, and a destination
// defined outside the loop that updates it (each iteration must see the original).
// CHECK-LABEL: func.func @not_owned
// CHECK-NOT:     hexir.tied_operands
// CHECK:         return
func.func @not_owned(%arg: tensor<8x4xf32>, %row: tensor<1x4xf32>, %n: index) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %u1 = tensor.insert_slice %row into %arg[0, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %u2 = tensor.insert_slice %row into %c[1, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %twice = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%c, %u2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %d = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %d) -> (tensor<8x4xf32>) {
    %u3 = tensor.insert_slice %row into %d[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %u3 : tensor<8x4xf32>
  }
  return %u1, %twice, %last : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A row computed by an elementwise generic that only the in-place update reads (the llama
// decode step's rotary-embedded, rounded K row) is computed in the update's kernel: one
// dispatch per iteration, still tied to the destination; the row's producer chain (rotation
// reading a partner element, then rounding to f16) comes in with it.
// CHECK-LABEL: hexir.executable @row_producer_dispatch_1
// CHECK:         tensor.extract
// CHECK:         arith.truncf
// CHECK:         tensor.insert_slice %{{.+}} into %arg{{[0-9]+}}[
// CHECK-LABEL: func.func @row_producer(
// CHECK:         scf.for
// CHECK-NOT:       hexir.dispatch
// CHECK:           hexir.dispatch @row_producer_dispatch_1({{.+}}) {hexir.tied_operands = array<i64: 1>}
// CHECK-NEXT:      scf.yield
func.func @row_producer(%row: tensor<1x4xf32>, %n: index) -> tensor<8x4xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x4xf16>
  %c = linalg.fill ins(%z : f16) outs(%e : tensor<8x4xf16>) -> tensor<8x4xf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<8x4xf16>) {
    %e1 = tensor.empty() : tensor<1x4xf32>
    %rot = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32>) {
    ^bb0(%x: f32, %o: f32):
      %a = linalg.index 0 : index
      %b = linalg.index 1 : index
      %one = arith.constant 1 : index
      %pb = arith.xori %b, %one : index
      %y = tensor.extract %row[%a, %pb] : tensor<1x4xf32>
      %s = arith.subf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %e2 = tensor.empty() : tensor<1x4xf16>
    %h = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%rot : tensor<1x4xf32>) outs(%e2 : tensor<1x4xf16>) {
    ^bb0(%x: f32, %o: f16):
      %t = arith.truncf %x : f32 to f16
      linalg.yield %t : f16
    } -> tensor<1x4xf16>
    %u = tensor.insert_slice %h into %acc[%i, 0] [1, 4] [1, 1] : tensor<1x4xf16> into tensor<8x4xf16>
    scf.yield %u : tensor<8x4xf16>
  }
  return %r : tensor<8x4xf16>
}

// -----

// A row that something else reads too keeps its own dispatch; the update copies it in.
// CHECK-LABEL: func.func @row_read_twice(
// CHECK:         scf.for
// CHECK:           hexir.dispatch @row_read_twice_dispatch_
// CHECK:           hexir.dispatch @row_read_twice_dispatch_{{.+}} {hexir.tied_operands = array<i64: 1>}
func.func @row_read_twice(%row: tensor<1x4xf32>, %n: index) -> (tensor<8x4xf32>, tensor<1x4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c, %last = %row) -> (tensor<8x4xf32>, tensor<1x4xf32>) {
    %e1 = tensor.empty() : tensor<1x4xf32>
    %neg = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32>) {
    ^bb0(%x: f32, %o: f32):
      %s = arith.negf %x : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32>
    %u = tensor.insert_slice %neg into %acc[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %u, %neg : tensor<8x4xf32>, tensor<1x4xf32>
  }
  return %r#0, %r#1 : tensor<8x4xf32>, tensor<1x4xf32>
}

// -----

// A GEMV row read only by the in-place update (the decode step's V projection), through a
// unit reshape: the reshape folds into a rank-reducing insert of the same slot and the GEMV
// (its fill with it) is computed in the update's kernel: one dispatch per iteration, tied to
// the destination.
// CHECK-LABEL: hexir.executable @gemv_row_dispatch_1
// CHECK:         func.func @gemv_row_dispatch_1(%{{.+}}: tensor<7xf32>, %{{.+}}: tensor<5x7xf32>, %{{.+}}: tensor<9x5xf32>, %[[OUT:[a-z0-9]+]]: tensor<9x5xf32>, %[[POS:[a-z0-9]+]]: index)
// CHECK:           linalg.fill
// CHECK:           %[[ROW:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           tensor.insert_slice %[[ROW]] into %[[OUT]][%[[POS]], 0] [1, 5] [1, 1] {hexir.in_place} : tensor<5xf32> into tensor<9x5xf32>
// CHECK-LABEL: func.func @gemv_row(
// CHECK:         scf.for
// CHECK-NEXT:      hexir.dispatch @gemv_row_dispatch_1({{.+}}) {hexir.tied_operands = array<i64: 2>}
// CHECK-NEXT:      scf.yield
func.func @gemv_row(%x: tensor<7xf32>, %w: tensor<5x7xf32>, %n: index) -> tensor<9x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<9x5xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<9x5xf32>) -> tensor<9x5xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<9x5xf32>) {
    %ev = tensor.empty() : tensor<5xf32>
    %fv = linalg.fill ins(%z : f32) outs(%ev : tensor<5xf32>) -> tensor<5xf32>
    %v = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<7xf32>, tensor<5x7xf32>) outs(%fv : tensor<5xf32>) {
    ^bb0(%a: f32, %b: f32, %s: f32):
      %m = arith.mulf %a, %b : f32
      %t = arith.addf %s, %m : f32
      linalg.yield %t : f32
    } -> tensor<5xf32>
    %row = tensor.expand_shape %v [[0, 1]] output_shape [1, 5] : tensor<5xf32> into tensor<1x5xf32>
    %u = tensor.insert_slice %row into %acc[%i, 0] [1, 5] [1, 1] : tensor<1x5xf32> into tensor<9x5xf32>
    scf.yield %u : tensor<9x5xf32>
  }
  return %r : tensor<9x5xf32>
}

// -----

// The same GEMV rounded to an f16 cache by an elementwise generic before the reshape: the
// GEMV and the rounding are both computed in the update's kernel. A GEMV whose row is also
// read elsewhere (here: returned) stays its own dispatch, and the update copies its row.
// CHECK-LABEL: hexir.executable @gemv_row_f16_dispatch_1
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           arith.truncf
// CHECK:           tensor.insert_slice %{{.+}} into %{{.+}} {hexir.in_place} : tensor<5xf16> into tensor<9x5xf16>
// CHECK-LABEL: hexir.executable @gemv_row_f16_dispatch_3
// CHECK:           iterator_types = ["parallel", "reduction"]
// CHECK-LABEL: hexir.executable @gemv_row_f16_dispatch_4
// CHECK-NOT:       iterator_types = ["parallel", "reduction"]
// CHECK:           tensor.insert_slice
// CHECK-LABEL: func.func @gemv_row_f16(
// CHECK:           hexir.dispatch @gemv_row_f16_dispatch_1({{.+}}) {hexir.tied_operands = array<i64: 2>}
// CHECK:           %[[V:.+]] = hexir.dispatch @gemv_row_f16_dispatch_3
// CHECK:           hexir.dispatch @gemv_row_f16_dispatch_4(%[[V]], {{.+}}) {hexir.tied_operands = array<i64: 1>}
func.func @gemv_row_f16(%x: tensor<7xf32>, %w: tensor<5x7xf32>, %pos: index) -> (tensor<9x5xf16>, tensor<9x5xf32>, tensor<5xf32>) {
  %z = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<9x5xf16>
  %c = linalg.fill ins(%zh : f16) outs(%e : tensor<9x5xf16>) -> tensor<9x5xf16>
  %ev = tensor.empty() : tensor<5xf32>
  %fv = linalg.fill ins(%z : f32) outs(%ev : tensor<5xf32>) -> tensor<5xf32>
  %v = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<7xf32>, tensor<5x7xf32>) outs(%fv : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<5xf32>
  %eh = tensor.empty() : tensor<5xf16>
  %h = linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>], iterator_types = ["parallel"]} ins(%v : tensor<5xf32>) outs(%eh : tensor<5xf16>) {
  ^bb0(%a: f32, %o: f16):
    %t = arith.truncf %a : f32 to f16
    linalg.yield %t : f16
  } -> tensor<5xf16>
  %row = tensor.expand_shape %h [[0, 1]] output_shape [1, 5] : tensor<5xf16> into tensor<1x5xf16>
  %u = tensor.insert_slice %row into %c[%pos, 0] [1, 5] [1, 1] : tensor<1x5xf16> into tensor<9x5xf16>
  %e2 = tensor.empty() : tensor<9x5xf32>
  %c2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<9x5xf32>) -> tensor<9x5xf32>
  %ev2 = tensor.empty() : tensor<5xf32>
  %fv2 = linalg.fill ins(%z : f32) outs(%ev2 : tensor<5xf32>) -> tensor<5xf32>
  %v2 = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<7xf32>, tensor<5x7xf32>) outs(%fv2 : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<5xf32>
  %row2 = tensor.expand_shape %v2 [[0, 1]] output_shape [1, 5] : tensor<5xf32> into tensor<1x5xf32>
  %u2 = tensor.insert_slice %row2 into %c2[%pos, 0] [1, 5] [1, 1] : tensor<1x5xf32> into tensor<9x5xf32>
  return %u, %u2, %v2 : tensor<9x5xf16>, tensor<9x5xf32>, tensor<5xf32>
}

// -----

// Donated arguments: a private callee's destination argument is owned when every caller
// passes a buffer it owns, at its last use there (a fresh fill, then the previous call's
// result: the KV cache a llama @layer updates). The callee's row update is in place (its
// result tied to the argument), so each call updates the caller's cache instead of copying
// it (before: the argument was never owned, a full copy per call).
// CHECK-LABEL: func.func private @write_row(
// CHECK:         hexir.dispatch @write_row_dispatch_0(%{{.+}}, %{{.+}}) {hexir.tied_operands = array<i64: 1>}
// CHECK-LABEL: func.func @two_steps(
func.func private @write_row(%row: tensor<1x4xf32>, %cache: tensor<8x4xf32>, %i: index) -> tensor<8x4xf32> {
  %u = tensor.insert_slice %row into %cache[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  return %u : tensor<8x4xf32>
}
func.func @two_steps(%row: tensor<1x4xf32>) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %a = func.call @write_row(%row, %c, %c0) : (tensor<1x4xf32>, tensor<8x4xf32>, index) -> tensor<8x4xf32>
  %b = func.call @write_row(%row, %a, %c1) : (tensor<1x4xf32>, tensor<8x4xf32>, index) -> tensor<8x4xf32>
  return %b : tensor<8x4xf32>
}

// -----

// Not donated: one caller reads its buffer after the call (so the callee must not write it),
// so the callee copies at every call (no tie).
// CHECK-LABEL: func.func private @write_row_copy(
// CHECK:         hexir.dispatch @write_row_copy_dispatch_0(
// CHECK-NOT:     hexir.tied_operands
// CHECK:         return
func.func private @write_row_copy(%row: tensor<1x4xf32>, %cache: tensor<8x4xf32>, %i: index) -> tensor<8x4xf32> {
  %u = tensor.insert_slice %row into %cache[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
  return %u : tensor<8x4xf32>
}
func.func @read_after(%row: tensor<1x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %a = func.call @write_row_copy(%row, %c, %c0) : (tensor<1x4xf32>, tensor<8x4xf32>, index) -> tensor<8x4xf32>
  return %a, %c : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A rank-reducing row update (the row a vector, the slice 1 x 4): its source is expanded to
// the slice's shape first (dispatch/LowerTensorOps.cpp), then it is the in-place update
// above: tied to the carried buffer (the kernel's canonicalization folds the expansion back
// into its insert). Before: "unsupported op 'tensor.insert_slice'".
// CHECK-LABEL: hexir.executable @carried_vector_dispatch_1
// CHECK:         tensor.insert_slice %arg0 into %arg2[%arg3, 0] [1, 4] [1, 1] {hexir.in_place} : tensor<4xf32> into tensor<8x4xf32>
// CHECK-LABEL: func.func @carried_vector(
// CHECK:         scf.for
// CHECK:           hexir.dispatch @carried_vector_dispatch_1(%{{.+}}, %{{.+}}, %{{.+}}) {hexir.tied_operands = array<i64: 1>}
func.func @carried_vector(%row: tensor<4xf32>, %n: index) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (tensor<8x4xf32>) {
    %u = tensor.insert_slice %row into %acc[%i, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<8x4xf32>
    scf.yield %u : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}
