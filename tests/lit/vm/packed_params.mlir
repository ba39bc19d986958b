// RUN: hexir-opt %s -split-input-file --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm | FileCheck %s

// A region's CPU dispatches share one parameter buffer (passes/vm/ParamsPacking.cpp): each
// distinct word list at a 64-byte aligned offset (the two dispatches of @k read [n, n] at 0;
// @rows reads [n, n, s] and its dynamic count, x | 1 << 32 and z = 1, at 64, the count at
// 64 + 24), one reuse_uniform of every word after the region's host work, one slot.
// Dispatches at offset 0 keep dispatch_slots; @rows is recorded with (slot, offset) pairs.
// Before: three dispatches, two reuse_uniform (the equal lists shared one), two slots:
//   reuse_uniform(dev, held0, n, n); reuse_uniform(dev, held1, n, n, s, count, 1)
//   dispatch_slots(.., 3, 0, 1, 2); dispatch_slots(.., 3, 1, 3, 2)
//   dispatch_indirect_slots(.., count slot 4, 24, 3, 3, 5, 4); execute_bound(.., 6 buffers)
// CHECK-LABEL: module attributes {hexir_vm.ref_globals = 4 : i64}
// CHECK-LABEL: func.func @packed(
// CHECK-SAME:      %[[A:.+]]: !hexir_vm.ref, %[[S:.+]]: i64)
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK-NOT:     hal.allocator.reuse_uniform
// CHECK:         %[[XY:.+]] = hexir_vm.inst "or.i64"
// CHECK-NEXT:    %[[Z:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[ZERO:.+]] = hexir_vm.const.i64 0
// CHECK-NEXT:    %[[HELD:.+]] = hexir_vm.global.load.ref 1
// CHECK-NEXT:    %[[P:.+]] = hexir_vm.call.import "hal.allocator.reuse_uniform"(%{{.+}}, %[[HELD]], %[[N]], %[[N]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[N]], %[[N]], %[[S]], %[[XY]], %[[Z]])
// CHECK-NEXT:    hexir_vm.global.store.ref %[[P]], 1
// CHECK-NOT:     hal.allocator.reuse_uniform
// CHECK:         "hal.command_buffer.dispatch_slots"
// CHECK:         "hal.command_buffer.dispatch_slots"
// CHECK:         %[[COUNTSLOT:.+]] = hexir_vm.const.i64 2
// CHECK-NEXT:    %[[COUNTAT:.+]] = hexir_vm.const.i64 88
// CHECK-NEXT:    %[[NB:.+]] = hexir_vm.const.i64 3
// CHECK-NEXT:    %[[S0:.+]] = hexir_vm.const.i64 3
// CHECK-NEXT:    %[[O0:.+]] = hexir_vm.const.i64 0
// CHECK-NEXT:    %[[S1:.+]] = hexir_vm.const.i64 4
// CHECK-NEXT:    %[[O1:.+]] = hexir_vm.const.i64 0
// CHECK-NEXT:    %[[S2:.+]] = hexir_vm.const.i64 2
// CHECK-NEXT:    %[[O2:.+]] = hexir_vm.const.i64 64
// CHECK-NEXT:    hexir_vm.call.import "hal.command_buffer.dispatch_indirect_slots_at"(%{{.+}}, %{{.+}}, %{{.+}}, %[[COUNTSLOT]], %[[COUNTAT]], %[[NB]], %[[S0]], %[[O0]], %[[S1]], %[[O1]], %[[S2]], %[[O2]])
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[P]], %{{.+}}, %{{.+}})
hexir.executable @k attributes {hexir.format = "cpu-elf-x86_64", hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @rows attributes {hexir.format = "cpu-elf-x86_64", hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 1>, limit = 64 : i64, tile = 32 : i64}} {
}
func.func @packed(%a: tensor<?x4xf32>, %s: i64) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = hexir.dispatch @k(%0) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = hexir.dispatch @rows(%1, %s) dims(%n) : (tensor<?x4xf32>, i64) -> tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}

// -----

// Two regions (a host read between them) pack their words each: one buffer per region, each in
// its own ref global.
// CHECK-LABEL: func.func @two_regions(
// CHECK:         hexir_vm.global.load.ref 0
// CHECK-NEXT:    "hal.allocator.reuse_uniform"
// CHECK-NEXT:    hexir_vm.global.store.ref %{{.+}}, 0
// CHECK:         "hal.device.queue.execute_bound"
// CHECK:         "hal.device.read_f64"
// CHECK:         hexir_vm.global.load.ref 2
// CHECK-NEXT:    "hal.allocator.reuse_uniform"
// CHECK-NEXT:    hexir_vm.global.store.ref %{{.+}}, 2
// CHECK:         "hal.device.queue.execute_bound"
hexir.executable @k attributes {hexir.format = "cpu-elf-x86_64", hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @two_regions(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  %x = tensor.extract %0[%c0] : tensor<?xf32>
  %1 = hexir.dispatch @k(%0, %x) dims(%n) : (tensor<?xf32>, f32) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// CUDA executables pack the same way: one reused buffer (one uniform shadow, copied once a
// submission), no per-dispatch allocate_uniform; the second list ([n, s]) at byte offset 64.
// CHECK-LABEL: func.func @cuda_packed(
// CHECK-SAME:      %[[A:.+]]: !hexir_vm.ref, %[[S:.+]]: i64)
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK:         %[[HELD:.+]] = hexir_vm.global.load.ref 1
// CHECK-NEXT:    %[[P:.+]] = hexir_vm.call.import "hal.allocator.reuse_uniform"(%{{.+}}, %[[HELD]], %[[N]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[N]], %[[S]])
// CHECK-NEXT:    hexir_vm.global.store.ref %[[P]], 1
// CHECK:         "hal.command_buffer.dispatch_slots"
// CHECK:         %[[O:.+]] = hexir_vm.const.i64 64
// CHECK-NEXT:    hexir_vm.call.import "hal.command_buffer.dispatch_slots_at"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[O]])
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK:         "hal.device.queue.execute_bound"
hexir.executable @k attributes {hexir.format = "cuda-cubin-sm_90", hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @cuda_packed(%a: tensor<?xf32>, %s: i64) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = hexir.dispatch @k(%0, %s) dims(%n) : (tensor<?xf32>, i64) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}
