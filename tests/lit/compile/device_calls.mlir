// RUN: hexir-compile %s --target=cpu --emit-vm-mlir -o - | FileCheck %s --check-prefix=KEPT
// RUN: hexir-compile %s --target=cpu --keep-device-calls --emit-vm-mlir -o - | FileCheck %s --check-prefix=KEPT
// RUN: hexir-compile %s --target=cpu --inline-device-calls --emit-vm-mlir -o - | FileCheck %s --check-prefix=INLINED
// RUN: not hexir-compile %s --target=cpu --keep-device-calls --inline-device-calls -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=BOTH

// Calls to functions with device work stay calls by default (--keep-device-calls, the old
// spelling, changes nothing): the private one-region @layer records into @net's one command
// buffer (passes/README.md step 10 "Recorded calls"), once in the bytecode; the public @scale
// is not recorded, each call of it submits its own command buffer.
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
