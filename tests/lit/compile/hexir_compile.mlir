// RUN: hexir-compile %s --target=cpu --emit-vm-mlir -o - | FileCheck %s
// RUN: hexir-compile %s --target=cpu -o %t.vmfb && head -c 8 %t.vmfb | FileCheck %s --check-prefix=MAGIC
// RUN: not hexir-compile %s --target=tpu -o %t2.vmfb 2>&1 | FileCheck %s --check-prefix=TARGET

// The whole pipeline on matmul + bias + relu: one fused, serialized executable whose
// four bindings are (a, b, bias, result); 4*16*8 iterations are too few to split over
// workgroups (--min-work-per-workgroup), so one workgroup runs it.
// CHECK:       hexir.executable @main_dispatch_0
// CHECK-SAME:    hexir.entry = "main_dispatch_0"
// CHECK-SAME:    hexir.format = "cpu-elf-x86_64"
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK-LABEL: func.func @main(
// CHECK-COUNT-3: hal.buffer_view.assert
// CHECK:       hexir_vm.call.import "hal.command_buffer.dispatch_slots"({{.*}}) : (!hexir_vm.ref, !hexir_vm.ref, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
// CHECK-NOT:   hal.command_buffer.dispatch
// CHECK:       hal.device.queue.execute_bound
// CHECK-NOT:   hal.semaphore.wait
// CHECK:       hexir_vm.return
// MAGIC: HXIRVMFB
// TARGET: unsupported target 'tpu' (supported: cpu, cuda)
#map = affine_map<(i, j) -> (i, j)>
#bcast = affine_map<(i, j) -> (j)>
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #bcast, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %c0 = arith.constant 0.0 : f32
    %t = arith.maximumf %s, %c0 : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
