// RUN: hexir-opt %s --split-input-file --hexir-merge-specialization-switches | FileCheck %s
// RUN: hexir-opt %s --split-input-file --hexir-merge-specialization-switches --hexir-merge-specialization-switches | FileCheck %s

// Three matmuls specialized for M = 1 (as hexir-specialize-dispatches leaves them), an
// unspecialized relu and a check between them: one switch on M. Its then branch holds only the
// M = 1 kernels, its else branch only the generic ones; no switch is left inside. The second
// and third switches test dims of earlier results (a switch's result through its generic
// branch's dims, the relu's dims operand): they are the same M.
// CHECK-LABEL: func.func @mlp(
// CHECK:       %[[M:.+]] = tensor.dim %arg0, %c0
// CHECK:       %[[HOT:.+]] = arith.cmpi eq, %[[M]], %c1 : index
// CHECK-NEXT:  %[[R:.+]]:2 = scf.if %[[HOT]] -> (tensor<?x16xf32>, tensor<?x4xf32>) {
// CHECK-NOT:     scf.if
// CHECK:         %[[X1:.+]] = tensor.cast %arg0 : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK:         %[[A1:.+]] = hexir.dispatch @mm1_a0d0eq1(%[[X1]], %arg1)
// CHECK:         %[[A1D:.+]] = tensor.cast %[[A1]] : tensor<1x16xf32> to tensor<?x16xf32>
// CHECK:         %[[B1:.+]] = hexir.dispatch @relu(%[[A1D]], %{{.+}}) dims(%{{.+}})
// CHECK:         hexir.check
// CHECK:         hexir.dispatch @mm2_a0d0eq1(
// CHECK:         %[[C1:.+]] = hexir.dispatch @mm3_a0d0eq1(
// CHECK:         scf.yield %[[B1]], %[[C1]] : tensor<?x16xf32>, tensor<?x4xf32>
// CHECK-NEXT:  } else {
// CHECK-NOT:     scf.if
// CHECK:         %[[A2:.+]] = hexir.dispatch @mm1(%arg0, %arg1, %[[M]]) dims(%[[M]])
// CHECK:         %[[B2:.+]] = hexir.dispatch @relu(%[[A2]], %{{.+}}) dims(%{{.+}})
// CHECK:         hexir.check
// CHECK:         hexir.dispatch @mm2(
// CHECK:         %[[C2:.+]] = hexir.dispatch @mm3(
// CHECK:         scf.yield %[[B2]], %[[C2]] : tensor<?x16xf32>, tensor<?x4xf32>
// CHECK-NEXT:  } {hexir.specialization_switch}
// CHECK-NOT:   scf.if
// CHECK:       return %[[R]]#1, %[[R]]#0
func.func @mlp(%arg0: tensor<?x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x16xf32>, %arg3: tensor<16x4xf32>) -> (tensor<?x4xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x8xf32>
  %h1 = arith.cmpi eq, %m, %c1 : index
  %a = scf.if %h1 -> (tensor<?x16xf32>) {
    %x1 = tensor.cast %arg0 : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm1_a0d0eq1(%x1, %arg1) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
    scf.yield %sd : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm1(%arg0, %arg1, %m) dims(%m) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  %ma = tensor.dim %a, %c0 : tensor<?x16xf32>
  %b = hexir.dispatch @relu(%a, %ma) dims(%ma) : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
  %ok = arith.cmpi ule, %m, %c1 : index
  hexir.check %ok, "a check between the switches"(%m) : index
  %mb = tensor.dim %b, %c0 : tensor<?x16xf32>
  %h2 = arith.cmpi eq, %mb, %c1 : index
  %d = scf.if %h2 -> (tensor<?x16xf32>) {
    %bs = tensor.cast %b : tensor<?x16xf32> to tensor<1x16xf32>
    %s = hexir.dispatch @mm2_a0d0eq1(%bs, %arg2, %m) dims(%m) : (tensor<1x16xf32>, tensor<16x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %s : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm2(%b, %arg2, %m) dims(%m) : (tensor<?x16xf32>, tensor<16x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  %md = tensor.dim %d, %c0 : tensor<?x16xf32>
  %h3 = arith.cmpi eq, %c1, %md : index
  %e = scf.if %h3 -> (tensor<?x4xf32>) {
    %ds = tensor.cast %d : tensor<?x16xf32> to tensor<1x16xf32>
    %s = hexir.dispatch @mm3_a0d0eq1(%ds, %arg3, %m) dims(%m) : (tensor<1x16xf32>, tensor<16x4xf32>, index) -> tensor<?x4xf32>
    scf.yield %s : tensor<?x4xf32>
  } else {
    %g = hexir.dispatch @mm3(%d, %arg3, %m) dims(%m) : (tensor<?x16xf32>, tensor<16x4xf32>, index) -> tensor<?x4xf32>
    scf.yield %g : tensor<?x4xf32>
  } {hexir.specialization_switch}
  return %e, %b : tensor<?x4xf32>, tensor<?x16xf32>
}

// -----

// Two switches on dims of different arguments: not the same value, nothing merges.
// CHECK-LABEL: func.func @two_inputs(
// CHECK:       scf.if
// CHECK:       hexir.dispatch @mm1_a0d0eq1(
// CHECK:       } else {
// CHECK:       hexir.dispatch @mm1(
// CHECK:       } {hexir.specialization_switch}
// CHECK:       scf.if
// CHECK:       hexir.dispatch @mm1_a0d0eq1(
// CHECK:       } else {
// CHECK:       hexir.dispatch @mm1(
// CHECK:       } {hexir.specialization_switch}
// CHECK-NEXT:  return
func.func @two_inputs(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %mx = tensor.dim %x, %c0 : tensor<?x8xf32>
  %hx = arith.cmpi eq, %mx, %c1 : index
  %a = scf.if %hx -> (tensor<?x16xf32>) {
    %x1 = tensor.cast %x : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm1_a0d0eq1(%x1, %w) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
    scf.yield %sd : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm1(%x, %w, %mx) dims(%mx) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  %my = tensor.dim %y, %c0 : tensor<?x8xf32>
  %hy = arith.cmpi eq, %my, %c1 : index
  %b = scf.if %hy -> (tensor<?x16xf32>) {
    %y1 = tensor.cast %y : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm1_a0d0eq1(%y1, %w) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
    scf.yield %sd : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm1(%y, %w, %my) dims(%my) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  return %a, %b : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// A loop between two switches on the same M ends the run: both switches stay as they are.
// CHECK-LABEL: func.func @loop_between(
// CHECK:       scf.if
// CHECK:       } {hexir.specialization_switch}
// CHECK:       scf.for
// CHECK:       scf.if
// CHECK:       } {hexir.specialization_switch}
func.func @loop_between(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %n: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %h = arith.cmpi eq, %m, %c1 : index
  %a = scf.if %h -> (tensor<?x16xf32>) {
    %x1 = tensor.cast %x : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm1_a0d0eq1(%x1, %w) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
    scf.yield %sd : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm1(%x, %w, %m) dims(%m) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%t = %a) -> (tensor<?x16xf32>) {
    %r = hexir.dispatch @relu(%t, %m) dims(%m) : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %r : tensor<?x16xf32>
  }
  %h2 = arith.cmpi eq, %m, %c1 : index
  %b = scf.if %h2 -> (tensor<?x16xf32>) {
    %x1 = tensor.cast %x : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm1_a0d0eq1(%x1, %w) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
    scf.yield %sd : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm1(%x, %w, %m) dims(%m) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  return %l, %b : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// A lone switch, and an scf.if that is not a specialization switch, are left alone.
// CHECK-LABEL: func.func @lone(
// CHECK:       scf.if
// CHECK:       } {hexir.specialization_switch}
// CHECK:       scf.if
// CHECK-NOT:   hexir.specialization_switch
// CHECK:       return
func.func @lone(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %h = arith.cmpi eq, %m, %c1 : index
  %a = scf.if %h -> (tensor<?x16xf32>) {
    %x1 = tensor.cast %x : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm1_a0d0eq1(%x1, %w) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
    scf.yield %sd : tensor<?x16xf32>
  } else {
    %g = hexir.dispatch @mm1(%x, %w, %m) dims(%m) : (tensor<?x8xf32>, tensor<8x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %g : tensor<?x16xf32>
  } {hexir.specialization_switch}
  %b = scf.if %h -> (tensor<?x16xf32>) {
    %r = hexir.dispatch @relu(%a, %m) dims(%m) : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %r : tensor<?x16xf32>
  } else {
    scf.yield %a : tensor<?x16xf32>
  }
  return %b : tensor<?x16xf32>
}

// -----

// A switch in a loop body testing a dim that no iteration changes (the rows of the carried
// state h: its initial value's rows are the input's M, and so are the rows each iteration
// yields): the loop is unswitched, one switch on M before it with the loop cloned into each
// branch, each clone holding only its branch's kernel (a recurrent network's batch = 1;
// each iteration one segment instead of three); the switch then takes in the dispatch before
// it (@init: one segment with the loop). The loop whose switch tests the rows of a tensor of
// i rows (they change every iteration) keeps its switch, widened to the dispatch before it in
// the body (@prefix).
// CHECK-LABEL: func.func @recurrent(
// CHECK:       %[[M:.+]] = tensor.dim %arg0, %c0
// CHECK:       %[[ROWS:.+]] = tensor.dim %arg0, %c0
// CHECK:       %[[HOT:.+]] = arith.cmpi eq, %[[ROWS]], %c1{{.*}} : index
// CHECK-NEXT:  %[[R:.+]]:2 = scf.if %[[HOT]] -> (tensor<?x16xf32>, tensor<?x16xf32>) {
// CHECK-NEXT:    %[[H1:.+]] = hexir.dispatch @init(
// CHECK-NEXT:    %[[L1:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[H1]])
// CHECK-NOT:       scf.if
// CHECK:           hexir.dispatch @mm_a0d0eq1(
// CHECK-NOT:       scf.if
// CHECK:           hexir.dispatch @step(
// CHECK:         scf.yield %[[H1]], %[[L1]]
// CHECK-NEXT:  } else {
// CHECK-NEXT:    %[[H2:.+]] = hexir.dispatch @init(
// CHECK-NEXT:    %[[L2:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[H2]])
// CHECK-NOT:       scf.if
// CHECK:           hexir.dispatch @mm(
// CHECK-NOT:       scf.if
// CHECK:           hexir.dispatch @step(
// CHECK:         scf.yield %[[H2]], %[[L2]]
// CHECK-NEXT:  } {hexir.specialization_switch}
// CHECK:       %[[K:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[R]]#0)
// CHECK:         scf.if
// CHECK-NEXT:      hexir.dispatch @prefix(
// CHECK:           hexir.dispatch @mm_a0d0eq1(
// CHECK:         } else {
// CHECK-NEXT:      hexir.dispatch @prefix(
// CHECK:           hexir.dispatch @mm(
// CHECK:         } {hexir.specialization_switch}
// CHECK:       return %[[R]]#1, %[[K]]
func.func @recurrent(%x: tensor<?x8xf32>, %w: tensor<16x16xf32>, %n: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %h0 = hexir.dispatch @init(%x, %m) dims(%m) : (tensor<?x8xf32>, index) -> tensor<?x16xf32>
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%h = %h0) -> (tensor<?x16xf32>) {
    %rows = tensor.dim %h, %c0 : tensor<?x16xf32>
    %hot = arith.cmpi eq, %rows, %c1 : index
    %a = scf.if %hot -> (tensor<?x16xf32>) {
      %h1 = tensor.cast %h : tensor<?x16xf32> to tensor<1x16xf32>
      %s = hexir.dispatch @mm_a0d0eq1(%h1, %w) : (tensor<1x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
      %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
      scf.yield %sd : tensor<?x16xf32>
    } else {
      %g = hexir.dispatch @mm(%h, %w, %rows) dims(%rows) : (tensor<?x16xf32>, tensor<16x16xf32>, index) -> tensor<?x16xf32>
      scf.yield %g : tensor<?x16xf32>
    } {hexir.specialization_switch}
    %next = hexir.dispatch @step(%a, %h, %m) dims(%m) : (tensor<?x16xf32>, tensor<?x16xf32>, index) -> tensor<?x16xf32>
    scf.yield %next : tensor<?x16xf32>
  }
  %k = scf.for %i = %c0 to %n step %c1 iter_args(%t = %h0) -> (tensor<?x16xf32>) {
    %p = hexir.dispatch @prefix(%t, %i) dims(%i) : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
    %rows = tensor.dim %p, %c0 : tensor<?x16xf32>
    %hot = arith.cmpi eq, %rows, %c1 : index
    %a = scf.if %hot -> (tensor<?x16xf32>) {
      %p1 = tensor.cast %p : tensor<?x16xf32> to tensor<1x16xf32>
      %s = hexir.dispatch @mm_a0d0eq1(%p1, %w) : (tensor<1x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
      %sd = tensor.cast %s : tensor<1x16xf32> to tensor<?x16xf32>
      scf.yield %sd : tensor<?x16xf32>
    } else {
      %g = hexir.dispatch @mm(%p, %w, %rows) dims(%rows) : (tensor<?x16xf32>, tensor<16x16xf32>, index) -> tensor<?x16xf32>
      scf.yield %g : tensor<?x16xf32>
    } {hexir.specialization_switch}
    scf.yield %a : tensor<?x16xf32>
  }
  return %l, %k : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// A switch testing two invariant dims (M = 1 and N = 1) unswitches its loop once: the switch
// is replaced in both clones (where the conjunction fails, a switch testing both takes its
// else branch), so no clone is unswitched again.
// CHECK-LABEL: func.func @two_terms(
// CHECK:       scf.if
// CHECK-NEXT:    scf.for
// CHECK-NOT:       scf.if
// CHECK:           hexir.dispatch @mm_a0d0eq1_a0d1eq1(
// CHECK:       } else {
// CHECK-NEXT:    scf.for
// CHECK-NOT:       scf.if
// CHECK:           hexir.dispatch @mm(
// CHECK:       } {hexir.specialization_switch}
// CHECK-NOT:   scf.for
// CHECK:       return
func.func @two_terms(%x: tensor<?x?xf32>, %n: index) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x?xf32>
  %k = tensor.dim %x, %c1 : tensor<?x?xf32>
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%h = %x) -> (tensor<?x?xf32>) {
    %rows = tensor.dim %h, %c0 : tensor<?x?xf32>
    %cols = tensor.dim %h, %c1 : tensor<?x?xf32>
    %r1 = arith.cmpi eq, %rows, %c1 : index
    %k1 = arith.cmpi eq, %cols, %c1 : index
    %hot = arith.andi %r1, %k1 : i1
    %a = scf.if %hot -> (tensor<?x?xf32>) {
      %h1 = tensor.cast %h : tensor<?x?xf32> to tensor<1x1xf32>
      %s = hexir.dispatch @mm_a0d0eq1_a0d1eq1(%h1) : (tensor<1x1xf32>) -> tensor<1x1xf32>
      %sd = tensor.cast %s : tensor<1x1xf32> to tensor<?x?xf32>
      scf.yield %sd : tensor<?x?xf32>
    } else {
      %g = hexir.dispatch @mm(%h, %m, %k) dims(%m, %k) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
      scf.yield %g : tensor<?x?xf32>
    } {hexir.specialization_switch}
    scf.yield %a : tensor<?x?xf32>
  }
  return %l : tensor<?x?xf32>
}

// -----

// A switch alone between dispatches (an M = 1 matmul in the middle of a network, its M the
// rows of a dispatch's result) is widened to them: @pre and @post join both branches, one
// segment per branch instead of three; the switch tests the rows' key (dim 0 of %x) since its
// own test reads a result of the run; the constants and dims stay before it.
// CHECK-LABEL: func.func @widened(
// CHECK:       %[[M:.+]] = tensor.dim %arg0, %c0
// CHECK:       %[[KEY:.+]] = tensor.dim %arg0, %c0
// CHECK:       %[[HOT:.+]] = arith.cmpi eq, %[[KEY]], %c1
// CHECK-NEXT:  %[[R:.+]] = scf.if %[[HOT]] -> (tensor<?x8xf32>) {
// CHECK-NEXT:    hexir.dispatch @pre(%arg0, %[[M]])
// CHECK:         hexir.dispatch @mm_a0d0eq1(
// CHECK:         hexir.dispatch @post(
// CHECK:       } else {
// CHECK-NEXT:    hexir.dispatch @pre(%arg0, %[[M]])
// CHECK:         hexir.dispatch @mm(
// CHECK:         hexir.dispatch @post(
// CHECK:       } {hexir.specialization_switch}
// CHECK-NEXT:  return %[[R]]
func.func @widened(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %a = hexir.dispatch @pre(%x, %m) dims(%m) : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %rows = tensor.dim %a, %c0 : tensor<?x8xf32>
  %hot = arith.cmpi eq, %rows, %c1 : index
  %b = scf.if %hot -> (tensor<?x8xf32>) {
    %a1 = tensor.cast %a : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @mm_a0d0eq1(%a1, %w) : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
    %sd = tensor.cast %s : tensor<1x8xf32> to tensor<?x8xf32>
    scf.yield %sd : tensor<?x8xf32>
  } else {
    %g = hexir.dispatch @mm(%a, %w, %rows) dims(%rows) : (tensor<?x8xf32>, tensor<8x8xf32>, index) -> tensor<?x8xf32>
    scf.yield %g : tensor<?x8xf32>
  } {hexir.specialization_switch}
  %c = hexir.dispatch @post(%b, %m) dims(%m) : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}

// -----

// The switch's test reads a dim of a tensor made by a deep DAG of dispatches each reading the
// previous result twice, which an op with regions keeps out of the merged run: the widening's
// walk over the test's producers looks at each op once (following every path took 2^40
// steps here, and minutes on torchvision's Faster R-CNN).
// CHECK-LABEL: func.func @deep_test(
// CHECK:       scf.if
// CHECK:         hexir.dispatch @s_a0d0eq1(
// CHECK:       } else {
// CHECK:         hexir.dispatch @s(
// CHECK:       } {hexir.specialization_switch}
func.func @deep_test(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %arg0, %c0 : tensor<?xf32>
  %t1 = hexir.dispatch @add(%arg0, %arg0, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t2 = hexir.dispatch @add(%t1, %t1, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t3 = hexir.dispatch @add(%t2, %t2, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t4 = hexir.dispatch @add(%t3, %t3, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t5 = hexir.dispatch @add(%t4, %t4, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t6 = hexir.dispatch @add(%t5, %t5, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t7 = hexir.dispatch @add(%t6, %t6, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t8 = hexir.dispatch @add(%t7, %t7, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t9 = hexir.dispatch @add(%t8, %t8, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t10 = hexir.dispatch @add(%t9, %t9, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t11 = hexir.dispatch @add(%t10, %t10, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t12 = hexir.dispatch @add(%t11, %t11, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t13 = hexir.dispatch @add(%t12, %t12, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t14 = hexir.dispatch @add(%t13, %t13, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t15 = hexir.dispatch @add(%t14, %t14, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t16 = hexir.dispatch @add(%t15, %t15, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t17 = hexir.dispatch @add(%t16, %t16, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t18 = hexir.dispatch @add(%t17, %t17, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t19 = hexir.dispatch @add(%t18, %t18, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t20 = hexir.dispatch @add(%t19, %t19, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t21 = hexir.dispatch @add(%t20, %t20, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t22 = hexir.dispatch @add(%t21, %t21, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t23 = hexir.dispatch @add(%t22, %t22, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t24 = hexir.dispatch @add(%t23, %t23, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t25 = hexir.dispatch @add(%t24, %t24, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t26 = hexir.dispatch @add(%t25, %t25, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t27 = hexir.dispatch @add(%t26, %t26, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t28 = hexir.dispatch @add(%t27, %t27, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t29 = hexir.dispatch @add(%t28, %t28, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t30 = hexir.dispatch @add(%t29, %t29, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t31 = hexir.dispatch @add(%t30, %t30, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t32 = hexir.dispatch @add(%t31, %t31, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t33 = hexir.dispatch @add(%t32, %t32, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t34 = hexir.dispatch @add(%t33, %t33, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t35 = hexir.dispatch @add(%t34, %t34, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t36 = hexir.dispatch @add(%t35, %t35, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t37 = hexir.dispatch @add(%t36, %t36, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t38 = hexir.dispatch @add(%t37, %t37, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t39 = hexir.dispatch @add(%t38, %t38, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %t40 = hexir.dispatch @add(%t39, %t39, %n) dims(%n) : (tensor<?xf32>, tensor<?xf32>, index) -> tensor<?xf32>
  %m = tensor.dim %t40, %c0 : tensor<?xf32>
  %big = arith.cmpi ugt, %n, %c1 : index
  %w = scf.if %big -> (index) {
    scf.yield %c0 : index
  } else {
    scf.yield %c1 : index
  }
  %hot = arith.cmpi eq, %m, %c1 : index
  %r = scf.if %hot -> (tensor<?xf32>) {
    %x1 = tensor.cast %t40 : tensor<?xf32> to tensor<1xf32>
    %s = hexir.dispatch @s_a0d0eq1(%x1) : (tensor<1xf32>) -> tensor<1xf32>
    %sd = tensor.cast %s : tensor<1xf32> to tensor<?xf32>
    scf.yield %sd : tensor<?xf32>
  } else {
    %g = hexir.dispatch @s(%t40, %m) dims(%m) : (tensor<?xf32>, index) -> tensor<?xf32>
    scf.yield %g : tensor<?xf32>
  } {hexir.specialization_switch}
  return %r : tensor<?xf32>
}
