// RUN: hexir-opt %s -split-input-file --hexir-prepare-device-loops | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// A loop whose condition reads a carried one-element i32 flag and whose body is device work:
// each yield becomes an in-place write-back into its body argument (a full-size
// insert_slice), the inits (function arguments, not owned by the loop) are copied by a
// gather kernel first, and the loop is marked.
// CHECK-LABEL: func.func @counts_down(
// CHECK-SAME:    %[[F0:[a-z0-9]+]]: tensor<1xi32>, %[[X0:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         %[[FC:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<1xi32>)
// CHECK:           tensor.extract %[[F0]]
// CHECK:         %[[XC:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<4xf32>)
// CHECK:           tensor.extract %[[X0]]
// CHECK:         scf.while (%{{.+}} = %[[FC]], %{{.+}} = %[[XC]])
// CHECK:         ^bb0(%[[F:[a-z0-9]+]]: tensor<1xi32>, %[[X:[a-z0-9]+]]: tensor<4xf32>):
// CHECK:           %[[X1:.+]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4xf32>)
// CHECK:           %[[F1:.+]] = linalg.generic {{.*}} ins(%[[F]] : tensor<1xi32>)
// CHECK:           %[[WF:.+]] = tensor.insert_slice %[[F1]] into %[[F]][0] [1] [1]
// CHECK:           %[[WX:.+]] = tensor.insert_slice %[[X1]] into %[[X]][0] [4] [1]
// CHECK:           scf.yield %[[WF]], %[[WX]] : tensor<1xi32>, tensor<4xf32>
// CHECK:         } attributes {hexir.device_loop}
func.func @counts_down(%f0: tensor<1xi32>, %x0: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = scf.while (%f = %f0, %x = %x0) : (tensor<1xi32>, tensor<4xf32>) -> (tensor<1xi32>, tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f, %x : tensor<1xi32>, tensor<4xf32>
  } do {
  ^bb0(%f: tensor<1xi32>, %x: tensor<4xf32>):
    %ex = tensor.empty() : tensor<4xf32>
    %x1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%ex : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %two = arith.constant 2.0 : f32
      %m = arith.mulf %a, %two : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    %ef = tensor.empty() : tensor<1xi32>
    %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%f : tensor<1xi32>) outs(%ef : tensor<1xi32>) {
    ^bb0(%a: i32, %o: i32):
      %one = arith.constant 1 : i32
      %s = arith.subi %a, %one : i32
      linalg.yield %s : i32
    } -> tensor<1xi32>
    scf.yield %f1, %x1 : tensor<1xi32>, tensor<4xf32>
  }
  return %r#1 : tensor<4xf32>
}

// -----

// A yield that already updates its carried value in place (a row written with
// insert_slice) and a value passed through need no write-back; inits computed by kernels of
// the block are owned and not copied.
// CHECK-LABEL: func.func @row_update(
// CHECK-SAME:    %{{[a-z0-9]+}}: tensor<1xi32>, %[[W0:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         %[[F0:.+]] = linalg.generic
// CHECK:         %[[C0:.+]] = linalg.fill
// CHECK-NEXT:    scf.while (%{{.+}} = %[[F0]], %{{.+}} = %[[C0]], %{{.+}} = %[[W0]])
// CHECK:         ^bb0(%[[F:[a-z0-9]+]]: tensor<1xi32>, %[[C:[a-z0-9]+]]: tensor<8x4xf32>, %[[W:[a-z0-9]+]]: tensor<4xf32>):
// CHECK:           %[[ROW:.+]] = tensor.insert_slice %{{.+}} into %[[C]][0, 0] [1, 4] [1, 1]
// CHECK:           %[[WF:.+]] = tensor.insert_slice %{{.+}} into %[[F]][0] [1] [1]
// CHECK-NEXT:      scf.yield %[[WF]], %[[ROW]], %[[W]]
// CHECK:         } attributes {hexir.device_loop}
#id = affine_map<(d0) -> (d0)>
func.func @row_update(%a: tensor<1xi32>, %w: tensor<4xf32>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<1xi32>
  %f0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<1xi32>) outs(%e0 : tensor<1xi32>) {
  ^bb0(%v: i32, %o: i32):
    linalg.yield %v : i32
  } -> tensor<1xi32>
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<8x4xf32>
  %c0t = linalg.fill ins(%zero : f32) outs(%ec : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r:3 = scf.while (%f = %f0, %c = %c0t, %ww = %w) : (tensor<1xi32>, tensor<8x4xf32>, tensor<4xf32>) -> (tensor<1xi32>, tensor<8x4xf32>, tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %z, %e : i32
    scf.condition(%go) %f, %c, %ww : tensor<1xi32>, tensor<8x4xf32>, tensor<4xf32>
  } do {
  ^bb0(%f: tensor<1xi32>, %c: tensor<8x4xf32>, %ww: tensor<4xf32>):
    %row = tensor.expand_shape %ww [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
    %c1 = tensor.insert_slice %row into %c[0, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    %ef = tensor.empty() : tensor<1xi32>
    %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%f : tensor<1xi32>) outs(%ef : tensor<1xi32>) {
    ^bb0(%v: i32, %o: i32):
      %one = arith.constant 1 : i32
      %s = arith.subi %v, %one : i32
      linalg.yield %s : i32
    } -> tensor<1xi32>
    scf.yield %f1, %c1, %ww : tensor<1xi32>, tensor<8x4xf32>, tensor<4xf32>
  }
  return %r#1 : tensor<8x4xf32>
}

// -----

// Not device loops, left unchanged: a condition on a host scalar, an i64 flag (the device
// tests 32 bits), a body reading a tensor on the host, a carried host scalar.
// CHECK-LABEL: func.func @host_loops(
// CHECK-NOT:     hexir.device_loop
// CHECK-NOT:     tensor.insert_slice
// CHECK:         return
#id = affine_map<(d0) -> (d0)>
func.func @host_loops(%n: i64, %x0: tensor<4xf32>, %g0: tensor<1xi64>, %f0: tensor<1xi32>) -> (tensor<4xf32>, tensor<1xi64>, tensor<1xi32>, tensor<1xi32>) {
  %r:2 = scf.while (%i = %n, %x = %x0) : (i64, tensor<4xf32>) -> (i64, tensor<4xf32>) {
    %z = arith.constant 0 : i64
    %go = arith.cmpi ne, %i, %z : i64
    scf.condition(%go) %i, %x : i64, tensor<4xf32>
  } do {
  ^bb0(%i: i64, %x: tensor<4xf32>):
    %one = arith.constant 1 : i64
    %i1 = arith.subi %i, %one : i64
    scf.yield %i1, %x : i64, tensor<4xf32>
  }
  %g = scf.while (%f = %g0) : (tensor<1xi64>) -> tensor<1xi64> {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi64>
    %z = arith.constant 0 : i64
    %go = arith.cmpi ne, %e, %z : i64
    scf.condition(%go) %f : tensor<1xi64>
  } do {
  ^bb0(%f: tensor<1xi64>):
    %ef = tensor.empty() : tensor<1xi64>
    %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%f : tensor<1xi64>) outs(%ef : tensor<1xi64>) {
    ^bb0(%v: i64, %o: i64):
      %one = arith.constant 1 : i64
      %s = arith.subi %v, %one : i64
      linalg.yield %s : i64
    } -> tensor<1xi64>
    scf.yield %f1 : tensor<1xi64>
  }
  %h = scf.while (%f = %f0) : (tensor<1xi32>) -> tensor<1xi32> {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f : tensor<1xi32>
  } do {
  ^bb0(%f: tensor<1xi32>):
    %c0 = arith.constant 0 : index
    %v = tensor.extract %f[%c0] : tensor<1xi32>
    %one = arith.constant 1 : i32
    %s = arith.subi %v, %one : i32
    %f1 = tensor.from_elements %s : tensor<1xi32>
    scf.yield %f1 : tensor<1xi32>
  }
  %k:2 = scf.while (%f = %f0, %i = %n) : (tensor<1xi32>, i64) -> (tensor<1xi32>, i64) {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f, %i : tensor<1xi32>, i64
  } do {
  ^bb0(%f: tensor<1xi32>, %i: i64):
    scf.yield %f, %i : tensor<1xi32>, i64
  }
  return %r#1, %g, %h, %k#0 : tensor<4xf32>, tensor<1xi64>, tensor<1xi32>, tensor<1xi32>
}

// -----

// A generic whose one init is its body argument, read only as each point's own element,
// updates it in place: marked hexir.in_place, no write-back. One that also reads its
// argument as an input (another point's element could be read) gets the write-back.
// CHECK-LABEL: func.func @own_elements(
// CHECK:         ^bb0(%[[F:[a-z0-9]+]]: tensor<1xi32>, %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[Y:[a-z0-9]+]]: tensor<4xf32>):
// CHECK:           %[[X1:.+]] = linalg.generic {{.*}} outs(%[[X]] : tensor<4xf32>) attrs ={{ +}}{hexir.in_place}
// CHECK:           %[[Y1:.+]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<4xf32>) outs(%[[Y]] : tensor<4xf32>) {
// CHECK:           %[[F1:.+]] = linalg.generic {{.*}} outs(%[[F]] : tensor<1xi32>) attrs ={{ +}}{hexir.in_place}
// CHECK:           %[[WY:.+]] = tensor.insert_slice %[[Y1]] into %[[Y]][0] [4] [1]
// CHECK-NEXT:      scf.yield %[[F1]], %[[X1]], %[[WY]]
// CHECK:         } attributes {hexir.device_loop}
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (3 - d0)>
func.func @own_elements(%a: tensor<1xi32>) -> tensor<4xf32> {
  %e0 = tensor.empty() : tensor<1xi32>
  %f0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<1xi32>) outs(%e0 : tensor<1xi32>) {
  ^bb0(%v: i32, %o: i32):
    linalg.yield %v : i32
  } -> tensor<1xi32>
  %one = arith.constant 1.0 : f32
  %ex = tensor.empty() : tensor<4xf32>
  %x0 = linalg.fill ins(%one : f32) outs(%ex : tensor<4xf32>) -> tensor<4xf32>
  %ey = tensor.empty() : tensor<4xf32>
  %y0 = linalg.fill ins(%one : f32) outs(%ey : tensor<4xf32>) -> tensor<4xf32>
  %r:3 = scf.while (%f = %f0, %x = %x0, %y = %y0) : (tensor<1xi32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1xi32>, tensor<4xf32>, tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f, %x, %y : tensor<1xi32>, tensor<4xf32>, tensor<4xf32>
  } do {
  ^bb0(%f: tensor<1xi32>, %x: tensor<4xf32>, %y: tensor<4xf32>):
    %x1 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%x : tensor<4xf32>) {
    ^bb0(%o: f32):
      %two = arith.constant 2.0 : f32
      %m = arith.mulf %o, %two : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    %y1 = linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
        ins(%y : tensor<4xf32>) outs(%y : tensor<4xf32>) {
    ^bb0(%i: f32, %o: f32):
      %s = arith.addf %i, %o : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %f1 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%f : tensor<1xi32>) {
    ^bb0(%o: i32):
      %m1 = arith.constant 1 : i32
      %s = arith.subi %o, %m1 : i32
      linalg.yield %s : i32
    } -> tensor<1xi32>
    scf.yield %f1, %x1, %y1 : tensor<1xi32>, tensor<4xf32>, tensor<4xf32>
  }
  return %r#1 : tensor<4xf32>
}
