// RUN: hexir-opt %s -split-input-file --hexir-convert-to-vm -verify-diagnostics | FileCheck %s

// A callee recorded into its caller (passes/schedule/RecordedCalls.h). Its VM form takes and
// returns tensors as buffers (+ dynamic dims), then one buffer per result that the call site
// keeps (null where the caller yields the result), does its region's host work (the transient
// %p; the result from the held buffer through hal.device.transient, allocated only when it is
// null or too small; no parameter buffer: static shapes) and returns its three slot buffers
// (%x, %p, %r) after its result; it records and submits nothing. The first call's result is
// used only inside the caller's region: the caller keeps it in a ref global of that call site
// and passes it back at every call (one allocation per call site, not per call); the second
// call's result is yielded: null, the callee allocates it. `@layer.record` records its two
// dispatches with slot ordinals relative to its second argument. The caller records once:
// its own dispatch in slots 0-1, each call's slots from 2 and 5; one submission with 2 + 3 + 3
// slots.
// CHECK-LABEL: func.func @net(
// CHECK:         %[[A:.+]] = hexir_vm.call.import "hal.device.transient"
// CHECK:         %[[HELD:.+]] = hexir_vm.global.load.ref [[G:[0-9]+]]
// CHECK-NEXT:    %[[H0:.+]]:4 = hexir_vm.call @layer(%[[A]], %[[HELD]]) : (!hexir_vm.ref, !hexir_vm.ref) -> (!hexir_vm.ref, !hexir_vm.ref, !hexir_vm.ref, !hexir_vm.ref)
// CHECK:         hexir_vm.global.store.ref %[[H0]]#0, [[G]]
// CHECK:         %[[NONE:.+]] = hexir_vm.null
// CHECK-NEXT:    %[[H1:.+]]:4 = hexir_vm.call @layer(%[[H0]]#0, %[[NONE]])
// CHECK-NOT:     hal.device.queue.execute_bound
// CHECK:         %[[CB:.+]] = hexir_vm.call.import "hal.command_buffer.create"
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB]])
// CHECK-NEXT:    %[[TWO:.+]] = hexir_vm.const.i64 2
// CHECK-NEXT:    hexir_vm.call @layer.record(%[[CB]], %[[TWO]]) : (!hexir_vm.ref, i64) -> ()
// CHECK-NEXT:    hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB]])
// CHECK-NEXT:    %[[FIVE:.+]] = hexir_vm.const.i64 5
// CHECK-NEXT:    hexir_vm.call @layer.record(%[[CB]], %[[FIVE]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[A]], %[[H0]]#1, %[[H0]]#2, %[[H0]]#3, %[[H1]]#1, %[[H1]]#2, %[[H1]]#3)
// CHECK-NOT:     hal.device.queue.execute_bound
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME:    %[[X:.+]]: !hexir_vm.ref, %[[KEPT:.+]]: !hexir_vm.ref) -> (!hexir_vm.ref, !hexir_vm.ref, !hexir_vm.ref, !hexir_vm.ref)
// CHECK-NOT:     hal.buffer_view
// CHECK-NOT:     hal.device.queue.alloca
// CHECK:         %[[P:.+]] = hexir_vm.call.import "hal.device.transient"
// CHECK-NOT:     hal.device.queue.alloca
// CHECK:         %[[R:.+]] = hexir_vm.call.import "hal.device.transient"(%{{.+}}, %[[KEPT]], %{{.+}})
// CHECK-NOT:     hal.command_buffer
// CHECK-NOT:     hal.device.queue.execute
// CHECK:         hexir_vm.return %[[R]], %[[X]], %[[P]], %[[R]]
// CHECK-LABEL: func.func private @layer.record(
// CHECK-SAME:    %[[CB2:.+]]: !hexir_vm.ref, %[[FIRST:.+]]: i64)
// CHECK:         hexir_vm.call.import "hal.executable.lookup"
// CHECK:         %[[S0:.+]] = hexir_vm.inst "add.i64"(%[[FIRST]], %{{.+}})
// CHECK:         %[[S1:.+]] = hexir_vm.inst "add.i64"(%[[FIRST]], %{{.+}})
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[CB2]], {{.*}}, %[[S0]], %[[S1]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB2]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[CB2]],
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
// buffer, which is one of its three slots (argument, result, parameters).
// CHECK-LABEL: func.func @dyn(
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK:         %[[C:.+]]:5 = hexir_vm.call @scale(%{{.+}}, %[[N]], %{{.+}}) : (!hexir_vm.ref, i64, !hexir_vm.ref) -> (!hexir_vm.ref, i64, !hexir_vm.ref, !hexir_vm.ref, !hexir_vm.ref)
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[C]]#0, %{{.+}}, %[[C]]#1)
// CHECK-LABEL: func.func private @scale(
// CHECK-SAME:    %{{.+}}: !hexir_vm.ref, %[[D:.+]]: i64, %{{.+}}: !hexir_vm.ref)
// CHECK-NOT:     hal.buffer_view
// CHECK:         hexir_vm.call.import "hal.allocator.allocate_uniform"
// CHECK:         hexir_vm.call.import "hal.buffer.store_i64"(%{{.+}}, %{{.+}}, %[[D]], %[[D]])
// CHECK:         hexir_vm.return %{{.+}}, %[[D]], %{{.+}}, %{{.+}}, %{{.+}}
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @dyn(%x: tensor<?xf32>) -> tensor<?xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<?xf32> {
    %h = func.call @scale(%x) : (tensor<?xf32>) -> tensor<?xf32>
    hexir.yield %h : tensor<?xf32>
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
