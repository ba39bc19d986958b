// RUN: hexir-opt %s -split-input-file --hexir-convert-to-vm -verify-diagnostics | FileCheck %s

// A callee recorded into its caller (passes/schedule/RecordedCalls.h). Its VM form takes and
// returns tensors as buffers (+ dynamic dims), then one buffer per result that the call site
// keeps (null where the caller yields the result), then one per transient of its region (the
// call site's own, as each inlined body has its own), does its region's host work (the
// transient %p and the result, each from its argument through hal.device.transient, allocated
// only when it is null or too small; no parameter buffer: static shapes) and returns, after
// its result, the buffers of its slots that the caller does not have (%p; its slots are %x, an
// argument, %p and %r, its result); it records and submits nothing. The first call's result is
// used only inside the caller's region: the caller keeps it in a ref global of that call site
// and passes it back at every call (one allocation per call site, not per call); the second
// call's result is yielded: null, the callee allocates it. Each call site keeps its %p in a
// ref global too. The caller binds each buffer once: the first call's result is slot 3 of both
// calls (written by the first, read by the second), so `@layer.record` gets the slot of each of
// its three buffers: 1, 2, 3 and 3, 4, 5; one submission with 6 slots.
// CHECK-LABEL: func.func @net(
// CHECK:         %[[A:.+]] = hexir_vm.call.import "hal.device.transient"
// CHECK:         %[[HELD:.+]] = hexir_vm.global.load.ref [[G:[0-9]+]]
// CHECK-NEXT:    %[[OWN0:.+]] = hexir_vm.global.load.ref [[T0:[0-9]+]]
// CHECK-NEXT:    %[[H0:.+]]:2 = hexir_vm.call @layer(%[[A]], %[[HELD]], %[[OWN0]]) : (!hexir_vm.ref, !hexir_vm.ref, !hexir_vm.ref) -> (!hexir_vm.ref, !hexir_vm.ref)
// CHECK:         hexir_vm.global.store.ref %[[H0]]#0, [[G]]
// CHECK-NEXT:    hexir_vm.global.store.ref %[[H0]]#1, [[T0]]
// CHECK:         %[[NONE:.+]] = hexir_vm.null
// CHECK-NEXT:    %[[OWN1:.+]] = hexir_vm.global.load.ref [[T1:[0-9]+]]
// CHECK-NEXT:    %[[H1:.+]]:2 = hexir_vm.call @layer(%[[H0]]#0, %[[NONE]], %[[OWN1]])
// CHECK:         hexir_vm.global.store.ref %[[H1]]#1, [[T1]]
// CHECK-NOT:     hal.device.queue.execute_bound
// CHECK:         %[[CB:.+]] = hexir_vm.call.import "hal.command_buffer.create"
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB]])
// CHECK-NEXT:    %[[S1:.+]] = hexir_vm.const.i64 1
// CHECK-NEXT:    %[[S2:.+]] = hexir_vm.const.i64 2
// CHECK-NEXT:    %[[S3:.+]] = hexir_vm.const.i64 3
// CHECK-NEXT:    hexir_vm.call @layer.record(%[[CB]], %[[S1]], %[[S2]], %[[S3]]) : (!hexir_vm.ref, i64, i64, i64) -> ()
// CHECK-NEXT:    hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB]])
// CHECK-NEXT:    %[[S3B:.+]] = hexir_vm.const.i64 3
// CHECK-NEXT:    %[[S4:.+]] = hexir_vm.const.i64 4
// CHECK-NEXT:    %[[S5:.+]] = hexir_vm.const.i64 5
// CHECK-NEXT:    hexir_vm.call @layer.record(%[[CB]], %[[S3B]], %[[S4]], %[[S5]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[A]], %[[H0]]#1, %[[H0]]#0, %[[H1]]#1, %[[H1]]#0)
// CHECK-NOT:     hal.device.queue.execute_bound
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME:    %[[X:.+]]: !hexir_vm.ref, %[[KEPT:.+]]: !hexir_vm.ref, %[[PKEPT:.+]]: !hexir_vm.ref) -> (!hexir_vm.ref, !hexir_vm.ref)
// CHECK-NOT:     hal.buffer_view
// CHECK-NOT:     hal.device.queue.alloca
// CHECK:         %[[P:.+]] = hexir_vm.call.import "hal.device.transient"(%{{.+}}, %[[PKEPT]], %{{.+}})
// CHECK-NOT:     hal.device.queue.alloca
// CHECK:         %[[R:.+]] = hexir_vm.call.import "hal.device.transient"(%{{.+}}, %[[KEPT]], %{{.+}})
// CHECK-NOT:     hal.command_buffer
// CHECK-NOT:     hal.device.queue.execute
// CHECK:         hexir_vm.return %[[R]], %[[P]] :
// CHECK-LABEL: func.func private @layer.record(
// CHECK-SAME:    %[[CB2:.+]]: !hexir_vm.ref, %[[SX:.+]]: i64, %[[SP:.+]]: i64, %[[SR:.+]]: i64)
// CHECK:         hexir_vm.call.import "hal.executable.lookup"
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[CB2]], {{.*}}, %[[SX]], %[[SP]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB2]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[CB2]], {{.*}}, %[[SP]], %[[SR]])
// CHECK:         hexir_vm.return
// CHECK-NOT:     hal.device.queue.execute_bound
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @net(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %h0 = func.call @layer(%a) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %h1 = func.call @layer(%h0) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %h1 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {hexir.records_into_caller} {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %p = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %q = hexir.dispatch @k(%p) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %q : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// Dynamic dims cross the call as registers: the callee's argument is its buffer and dim, its
// result its buffer and dim (no view, no assert); the dim goes into the callee's parameter
// buffer, which the callee makes with hal.allocator.reuse_uniform from its last argument: null
// at the first call of the region, then the buffer the previous call returned, reused when its
// words are equal (one parameter buffer for both calls, as inlined). The second call reads the
// first's result: one slot (%[[C]]#0) for both.
// CHECK-LABEL: func.func @dyn(
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK:         %[[NONE:.+]] = hexir_vm.null
// CHECK-NEXT:    %[[C:.+]]:3 = hexir_vm.call @scale(%{{.+}}, %[[N]], %{{.+}}, %[[NONE]]) : (!hexir_vm.ref, i64, !hexir_vm.ref, !hexir_vm.ref) -> (!hexir_vm.ref, i64, !hexir_vm.ref)
// CHECK:         %[[D:.+]]:3 = hexir_vm.call @scale(%[[C]]#0, %[[C]]#1, %{{.+}}, %[[C]]#2)
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[C]]#0, %[[C]]#2, %[[D]]#0, %[[D]]#2)
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[D]]#0, %{{.+}}, %[[D]]#1)
// CHECK-LABEL: func.func private @scale(
// CHECK-SAME:    %{{.+}}: !hexir_vm.ref, %[[DIM:.+]]: i64, %{{.+}}: !hexir_vm.ref, %[[PREV:.+]]: !hexir_vm.ref)
// CHECK-NOT:     hal.buffer_view
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK:         %[[PB:.+]] = hexir_vm.call.import "hal.allocator.reuse_uniform"(%{{.+}}, %[[PREV]], %[[DIM]], %[[DIM]])
// CHECK:         hexir_vm.return %{{.+}}, %[[DIM]], %[[PB]]
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @dyn(%x: tensor<?xf32>) -> tensor<?xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<?xf32> {
    %h = func.call @scale(%x) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.barrier
    %g = func.call @scale(%h) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.yield %g : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
func.func private @scale(%x: tensor<?xf32>) -> tensor<?xf32> attributes {hexir.records_into_caller} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %r, %t = hexir.execute on(0, "compute") -> tensor<?xf32> {
    %a = hexir.dispatch @k(%x) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.yield %a : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// The same calls of a CPU executable: the first call's parameter buffer argument is the one
// it returned at the region's previous execution (ref global G, stored back after the call),
// so a repeated shape allocates no parameter buffer per execution, as inlined dispatches do.
// CHECK-LABEL: func.func @dyn_cpu(
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK:         hexir_vm.global.load.ref
// CHECK-NEXT:    %[[HELD:.+]] = hexir_vm.global.load.ref [[G:[0-9]+]]
// CHECK-NEXT:    %[[C:.+]]:3 = hexir_vm.call @scale_cpu(%{{.+}}, %[[N]], %{{.+}}, %[[HELD]])
// CHECK:         hexir_vm.global.store.ref %[[C]]#2, [[G]]
// CHECK:         %[[D:.+]]:3 = hexir_vm.call @scale_cpu(%[[C]]#0, %[[C]]#1, %{{.+}}, %[[C]]#2)
// CHECK-NOT:     hexir_vm.global.store.ref %[[D]]#2
// CHECK-LABEL: func.func private @scale_cpu(
// CHECK:         hal.allocator.reuse_uniform
hexir.executable @k attributes {hexir.format = "cpu-elf-x86_64", hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @dyn_cpu(%x: tensor<?xf32>) -> tensor<?xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<?xf32> {
    %h = func.call @scale_cpu(%x) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.barrier
    %g = func.call @scale_cpu(%h) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.yield %g : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
func.func private @scale_cpu(%x: tensor<?xf32>) -> tensor<?xf32> attributes {hexir.records_into_caller} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %r, %t = hexir.execute on(0, "compute") -> tensor<?xf32> {
    %a = hexir.dispatch @k(%x) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.yield %a : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// A recorded callee called outside an execution region (the scheduling passes put every call
// of it in one) is refused by name.
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{call of @layer outside an execution region: its callee records into its callers' command buffers (run hexir-form-execution-regions)}}
  %h = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %h : tensor<4xf32>
}
func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {hexir.records_into_caller} {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %p = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.yield %p : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
