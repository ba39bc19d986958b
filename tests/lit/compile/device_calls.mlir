// RUN: hexir-compile %s --target=cpu --emit-vm-mlir -o - | FileCheck %s --check-prefix=DEFAULT
// RUN: hexir-compile %s --target=cpu --keep-device-calls --emit-vm-mlir -o - | FileCheck %s --check-prefix=KEPT
// RUN: hexir-compile %s --target=cpu --inline-device-calls --emit-vm-mlir -o - | FileCheck %s --check-prefix=INLINED
// RUN: not hexir-compile %s --target=cpu --keep-device-calls --inline-device-calls -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=BOTH

// By default a call stays a call where its callee records into the caller's command buffer
// and is inlined elsewhere (hexir-inline-unrecordable-calls, passes/README.md step 1a): the
// private one-region @layer records into @net's one command buffer (step 10 "Recorded
// calls"), once in the bytecode; the public @scale cannot record, so its calls are inlined
// (as with --inline-device-calls: one dispatch, one submission).
// DEFAULT-LABEL: func.func @net(
// DEFAULT:         hexir_vm.call @layer(
// DEFAULT:         hexir_vm.call @layer(
// DEFAULT:         hexir_vm.call @layer.record(
// DEFAULT:         hexir_vm.call @layer.record(
// DEFAULT:         "hal.device.queue.execute_bound"
// DEFAULT-NOT:     "hal.device.queue.execute_bound"
// DEFAULT-LABEL: func.func private @layer(
// DEFAULT-LABEL: func.func private @layer.record(
// DEFAULT:         "hal.command_buffer.dispatch_slots"
// DEFAULT-LABEL: func.func @twice(
// DEFAULT-NOT:     hexir_vm.call @
// DEFAULT-COUNT-1: "hal.command_buffer.dispatch_slots"
// DEFAULT:         "hal.device.queue.execute_bound"
// DEFAULT-NOT:     hexir_vm.call @
// DEFAULT-LABEL: func.func @scale(

// --keep-device-calls keeps every call: @layer as by default; the public @scale is not
// recorded, each call of it submits its own command buffer (two submissions per @twice).
// KEPT-LABEL: func.func @net(
// KEPT:         hexir_vm.call @layer(
// KEPT:         hexir_vm.call @layer(
// KEPT:         hexir_vm.call @layer.record(
// KEPT:         hexir_vm.call @layer.record(
// KEPT:         "hal.device.queue.execute_bound"
// KEPT-NOT:     "hal.device.queue.execute_bound"
// KEPT-LABEL: func.func private @layer(
// KEPT-LABEL: func.func private @layer.record(
// KEPT:         "hal.command_buffer.dispatch_slots"
// KEPT-LABEL: func.func @twice(
// KEPT:         hexir_vm.call @scale(
// KEPT:         hexir_vm.call @scale(
// KEPT-NOT:     "hal.device.queue.execute_bound"
// KEPT-LABEL: func.func @scale(
// KEPT:         "hal.device.queue.execute_bound"

// --inline-device-calls (hexir-inline-device-calls): a copy of the callee per call site, so
// the two tanh layers fuse into one dispatch; @layer is gone, the public @scale stays exported.
// INLINED-NOT:   hexir_vm.call @
// INLINED-LABEL: func.func @net(
// INLINED-COUNT-1: "hal.command_buffer.dispatch_slots"
// INLINED:         "hal.device.queue.execute_bound"
// INLINED-LABEL: func.func @twice(
// INLINED-NOT:     hexir_vm.call @
// INLINED-LABEL: func.func @scale(
// INLINED-NOT:   @layer

// BOTH: hexir-compile: --keep-device-calls and --inline-device-calls contradict each other
#map = affine_map<(i) -> (i)>
func.func @net(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = func.call @layer(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %b = func.call @layer(%a) : (tensor<8xf32>) -> tensor<8xf32>
  return %b : tensor<8xf32>
}
func.func private @layer(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @twice(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = func.call @scale(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %b = func.call @scale(%a) : (tensor<8xf32>) -> tensor<8xf32>
  return %b : tensor<8xf32>
}
func.func @scale(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
