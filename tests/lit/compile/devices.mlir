// RUN: hexir-compile %s --target=cpu --target=cpu -o %t.vmfb && hexir-dump --no-code %t.vmfb | FileCheck %s
// RUN: hexir-compile %s --target=cpu --target=cpu --copy-shared-memory -o %t2.vmfb && hexir-dump --no-code %t2.vmfb | FileCheck %s --check-prefix=COPY
// RUN: hexir-compile %s --target=cpu -o %t1.vmfb && hexir-dump --no-code %t1.vmfb | FileCheck %s --check-prefix=ONE
// RUN: not hexir-compile %s --target=cpu --target=tpu -o %t3.vmfb 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hexir-compile %s --target=cpu --target=cpu --placement=random -o %t4.vmfb 2>&1 | FileCheck %s --check-prefix=PLACEMENT

// A module of two devices records its device list and reaches device 1 through
// hal.device.at; the value crossing between the two CPU devices is read in place behind a
// fence, or copied with --copy-shared-memory. With one target the annotation is ignored: no
// list, no second device.
// CHECK:       devices: 0=cpu 1=cpu
// CHECK:       hal.device.at : i_r
// CHECK:       hal.device.queue.fence : rr
// CHECK-NOT:   hal.device.queue.transfer
// COPY:        devices: 0=cpu 1=cpu
// COPY:        hal.device.queue.transfer : rririrrri
// ONE-NOT:     devices:
// ONE-NOT:     hal.device.at
// BAD:         unsupported target 'tpu' (supported: cpu, cuda)
// PLACEMENT:   unsupported placement 'random' (supported: annotations, auto)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %d = arith.addf %v, %v : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"], hexir.device = 1 : i64} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %b : tensor<4xf32>
}
