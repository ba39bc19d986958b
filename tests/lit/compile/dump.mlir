// RUN: hexir-compile %s --target=cpu --dump-after=hexir-outline-dispatch-regions -o %t.vmfb 2>&1 | FileCheck %s
// RUN: hexir-compile %s --target=cpu --dump-all -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: not hexir-compile %s --target=cpu --dump-after=no-such-pass -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=BAD

// --dump-after=PASS prints the module after that pass only.
// CHECK:     IR Dump After OutlineDispatchRegions (hexir-outline-dispatch-regions)
// CHECK:     hexir.executable @main_dispatch_0
// CHECK:     hexir.dispatch @main_dispatch_0
// CHECK-NOT: IR Dump After

// --dump-all prints it after every pass, in pipeline order.
// ALL: IR Dump After VerifyInput
// ALL: IR Dump After FormDispatchRegions
// ALL: IR Dump After OutlineDispatchRegions
// ALL: IR Dump After CPUSerializeExecutables
// ALL: IR Dump After SCFToControlFlowPass
// ALL: IR Dump After ConvertToVM
// ALL: hexir_vm.call.import "hal.device.queue.execute_bound"

// BAD: error: --dump-after: no pass named 'no-such-pass' ran in the pipeline
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
