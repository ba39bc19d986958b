// RUN: hexir-opt %s -split-input-file --hexir-inline-unrecordable-calls | FileCheck %s

// A callee that will record into its caller (private, linalg ops, reshapes and scalar
// arith, tensor results) stays a call: its calls are commands of the caller's one command
// buffer (passes/README.md step 10, "Recorded calls").
// CHECK-LABEL: func.func @recordable(
// CHECK:         call @layer(
// CHECK:         call @layer(
// CHECK-LABEL: func.func private @layer(
// CHECK:         linalg.add
func.func @recordable(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<2x2xf32> {
  %h = func.call @layer(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<2x2xf32>
  %f = tensor.collapse_shape %h [[0, 1]] : tensor<2x2xf32> into tensor<4xf32>
  %y = func.call @layer(%f, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
func.func private @layer(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = tensor.expand_shape %a [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// A callee holding a collective cannot record into its caller (a call of it would submit
// its own command buffer): inlined, as hexir-inline-device-calls does, and erased.
// CHECK-LABEL: func.func @collective(
// CHECK-NOT:     call @
// CHECK:         linalg.add
// CHECK:         hexir.all_reduce
// CHECK:         linalg.add
// CHECK:         hexir.all_reduce
// CHECK-NOT:   func.func private @reduced
func.func @collective(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %h = func.call @reduced(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = func.call @reduced(%h, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @reduced(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = hexir.all_reduce "sum" %a : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A dynamic-M matmul gets an M = 1 switch later (hexir-specialize-dispatches), so the callee
// would be several blocks and a call of its own: inlined.
// CHECK-LABEL: func.func @several_blocks(
// CHECK-NOT:     call @
// CHECK:         linalg.matmul
// CHECK:         linalg.matmul
// CHECK-NOT:   func.func private @project
func.func @several_blocks(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %h = func.call @project(%x, %w) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %y = func.call @project(%h, %w) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
func.func private @project(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// So does a matmul-shaped generic with dynamic rows (the llama importer's prefill projection:
// B as [N][K], f16 weights widened in the body). With static rows (the decode step's M = 1)
// it gets no switch: that callee stays a call.
// CHECK-LABEL: func.func @generic_rows(
// CHECK-NOT:     call @project_nk(
// CHECK:         linalg.generic
// CHECK:         call @project_nk1(
// CHECK-NOT:   func.func private @project_nk(
// CHECK-LABEL: func.func private @project_nk1(
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @generic_rows(%x: tensor<?x8xf32>, %x1: tensor<1x8xf32>, %w: tensor<8x8xf16>) -> (tensor<?x8xf32>, tensor<1x8xf32>) {
  %h = func.call @project_nk(%x, %w) : (tensor<?x8xf32>, tensor<8x8xf16>) -> tensor<?x8xf32>
  %y = func.call @project_nk1(%x1, %w) : (tensor<1x8xf32>, tensor<8x8xf16>) -> tensor<1x8xf32>
  return %h, %y : tensor<?x8xf32>, tensor<1x8xf32>
}
func.func private @project_nk(%x: tensor<?x8xf32>, %w: tensor<8x8xf16>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf16>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %bf = arith.extf %b : f16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
func.func private @project_nk1(%x: tensor<1x8xf32>, %w: tensor<8x8xf16>) -> tensor<1x8xf32> {
  %e = tensor.empty() : tensor<1x8xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x8xf32>, tensor<8x8xf16>) outs(%f : tensor<1x8xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %bf = arith.extf %b : f16 to f32
    %p = arith.mulf %a, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

// A host read (tensor.extract), a public callee and a callee calling another: inlined (each
// would end the caller's command buffer); the recordable innermost @leaf stays a call.
// CHECK-LABEL: func.func @others(
// CHECK-NOT:     call @read
// CHECK:         tensor.extract
// CHECK-NOT:     call @public_scale
// CHECK-NOT:     call @wrapper
// CHECK:         call @leaf(
// CHECK:         return
// CHECK-LABEL: func.func @public_scale(
// CHECK-NOT:   func.func private @wrapper
// CHECK-LABEL: func.func private @leaf(
func.func @others(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (f32, tensor<4xf32>, tensor<4xf32>) {
  %v = func.call @read(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> f32
  %p = func.call @public_scale(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %q = func.call @wrapper(%p, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %v, %p, %q : f32, tensor<4xf32>, tensor<4xf32>
}
func.func private @read(%x: tensor<4xf32>, %w: tensor<4xf32>) -> f32 {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %c0 = arith.constant 0 : index
  %v = tensor.extract %a[%c0] : tensor<4xf32>
  return %v : f32
}
func.func @public_scale(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.mul ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func private @wrapper(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @leaf(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func private @leaf(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.sub ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// In a module of several devices placement decides per op: no callee records, all inlined.
// CHECK-LABEL: func.func @two_devices(
// CHECK-NOT:     call @
// CHECK:         linalg.add
// CHECK:         linalg.add
module attributes {hexir.devices = ["cpu", "cpu"]} {
  func.func @two_devices(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %h = func.call @layer2(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %y = func.call @layer2(%h, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func private @layer2(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %e = tensor.empty() : tensor<4xf32>
    %a = linalg.add ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}
