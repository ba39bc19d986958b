// RUN: hexir-opt %s --split-input-file --hexir-unswitch-shape-branches | FileCheck %s

// Two run-time end pads (as the ONNX importer writes a ceil-mode pool's: x itself when the
// amount is 0) between three dispatches. One branch on both amounts being 0, computed before
// it from the argument's dims: its then branch holds every dispatch and no branch (one
// segment); its else branch is the function as it was.
// CHECK-LABEL: func.func @two_pads(
// CHECK-SAME:    %[[X:.+]]: tensor<?x?xf32>
// CHECK:       %[[H:.+]] = tensor.dim %[[X]], %c0
// CHECK:       %[[P1:.+]] = arith.remsi %[[H]], %c2
// CHECK:       %[[Z1:.+]] = arith.cmpi eq, %[[P1]], %c0
// CHECK:       %[[Z2:.+]] = arith.cmpi eq, %{{.+}}, %c0
// CHECK:       %[[BOTH:.+]] = arith.andi %[[Z1]], %[[Z2]] : i1
// CHECK-NEXT:  %[[R:.+]] = scf.if %[[BOTH]] -> (tensor<?x?xf32>) {
// CHECK-NOT:     scf.if
// CHECK:         %[[A:.+]] = hexir.dispatch @relu(%[[X]]
// CHECK-NOT:     hexir.dispatch @pad
// CHECK:         %[[B:.+]] = hexir.dispatch @pool(%[[A]]
// CHECK-NOT:     hexir.dispatch @pad
// CHECK:         %[[C:.+]] = hexir.dispatch @pool(%[[B]]
// CHECK:         scf.yield %[[C]] : tensor<?x?xf32>
// CHECK-NEXT:  } else {
// CHECK:         hexir.dispatch @relu(
// CHECK:         scf.if
// CHECK:           hexir.dispatch @pad(
// CHECK:         hexir.dispatch @pool(
// CHECK:         scf.if
// CHECK:           hexir.dispatch @pad(
// CHECK:         hexir.dispatch @pool(
// CHECK:       }
// CHECK-NEXT:  return %[[R]] : tensor<?x?xf32>
func.func @two_pads(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %h = tensor.dim %x, %c0 : tensor<?x?xf32>
  %w = tensor.dim %x, %c1 : tensor<?x?xf32>
  %a = hexir.dispatch @relu(%x, %h, %w) dims(%h, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
  %p1 = arith.remsi %h, %c2 : index
  %z1 = arith.cmpi eq, %p1, %c0 : index
  %ha = arith.addi %h, %p1 : index
  %a1 = scf.if %z1 -> (tensor<?x?xf32>) {
    scf.yield %a : tensor<?x?xf32>
  } else {
    %pa = hexir.dispatch @pad(%a, %ha, %w) dims(%ha, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
    scf.yield %pa : tensor<?x?xf32>
  }
  %h2 = arith.divsi %ha, %c2 : index
  %b = hexir.dispatch @pool(%a1, %h2, %w) dims(%h2, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
  %p2 = arith.remsi %h2, %c2 : index
  %z2 = arith.cmpi eq, %p2, %c0 : index
  %hb = arith.addi %h2, %p2 : index
  %b1 = scf.if %z2 -> (tensor<?x?xf32>) {
    scf.yield %b : tensor<?x?xf32>
  } else {
    %pb = hexir.dispatch @pad(%b, %hb, %w) dims(%hb, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
    scf.yield %pb : tensor<?x?xf32>
  }
  %h3 = arith.divsi %hb, %c2 : index
  %c = hexir.dispatch @pool(%b1, %h3, %w) dims(%h3, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}

// -----

// A branch whose condition reads data (a host read of a tensor element) is not decided by
// shapes: nothing is unswitched.
// CHECK-LABEL: func.func @data_branch(
// CHECK-COUNT-1: scf.if
// CHECK-NOT:   scf.if
func.func @data_branch(%x: tensor<?xf32>, %flag: tensor<1xi1>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %f = tensor.extract %flag[%c0] : tensor<1xi1>
  %r = scf.if %f -> (tensor<?xf32>) {
    scf.yield %x : tensor<?xf32>
  } else {
    %p = hexir.dispatch @neg(%x, %n) dims(%n) : (tensor<?xf32>, index) -> tensor<?xf32>
    scf.yield %p : tensor<?xf32>
  }
  %s = hexir.dispatch @relu(%r, %n) dims(%n) : (tensor<?xf32>, index) -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// A specialization switch alone (hexir-merge-specialization-switches has widened it already)
// is left as it is; a division by a run-time value in a condition keeps it out too (the clone
// would run before the checks that guard it).
// CHECK-LABEL: func.func @switch_only(
// CHECK-COUNT-1: scf.if
// CHECK-NOT:   scf.if
func.func @switch_only(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %hot = arith.cmpi eq, %m, %c1 : index
  %r = scf.if %hot -> (tensor<?x8xf32>) {
    %x1 = tensor.cast %x : tensor<?x8xf32> to tensor<1x8xf32>
    %s = hexir.dispatch @f_a0d0eq1(%x1) : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %sd = tensor.cast %s : tensor<1x8xf32> to tensor<?x8xf32>
    scf.yield %sd : tensor<?x8xf32>
  } else {
    %g = hexir.dispatch @f(%x, %m) dims(%m) : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
    scf.yield %g : tensor<?x8xf32>
  } {hexir.specialization_switch}
  return %r : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @runtime_divisor(
// CHECK-COUNT-1: scf.if
// CHECK-NOT:   scf.if
func.func @runtime_divisor(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = tensor.dim %x, %c0 : tensor<?x?xf32>
  %w = tensor.dim %x, %c1 : tensor<?x?xf32>
  %q = arith.remsi %h, %w : index
  %z = arith.cmpi eq, %q, %c0 : index
  %r = scf.if %z -> (tensor<?x?xf32>) {
    scf.yield %x : tensor<?x?xf32>
  } else {
    %p = hexir.dispatch @pad(%x, %h, %w) dims(%h, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
    scf.yield %p : tensor<?x?xf32>
  }
  %s = hexir.dispatch @relu(%r, %h, %w) dims(%h, %w) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// A branch without results or an else side, predicted not taken (its then side holds the
// dispatch): the new branch tests its condition's negation, and its then side holds nothing
// of it.
// CHECK-LABEL: func.func @no_else(
// CHECK:       %[[ODD:.+]] = arith.cmpi ne,
// CHECK:       %[[TRUE:.+]] = arith.constant true
// CHECK:       %[[EVEN:.+]] = arith.xori %[[ODD]], %[[TRUE]] : i1
// CHECK-NEXT:  %[[R:.+]] = scf.if %[[EVEN]] -> (tensor<?xf32>) {
// CHECK-NOT:     hexir.dispatch @neg
// CHECK:         hexir.dispatch @relu(
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } else {
// CHECK:         scf.if %{{.+}} {
// CHECK-NEXT:      hexir.dispatch @neg(
// CHECK:         hexir.dispatch @relu(
func.func @no_else(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %odd = arith.remsi %n, %c2 : index
  %isodd = arith.cmpi ne, %odd, %c0 : index
  scf.if %isodd {
    %d = hexir.dispatch @neg(%x, %n) dims(%n) : (tensor<?xf32>, index) -> tensor<?xf32>
  }
  %s = hexir.dispatch @relu(%x, %n) dims(%n) : (tensor<?xf32>, index) -> tensor<?xf32>
  return %s : tensor<?xf32>
}
