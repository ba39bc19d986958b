// RUN: hexir-opt %s -split-input-file --hexir-form-device-loops | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-form-device-loops --convert-scf-to-cf --hexir-form-execution-regions --hexir-schedule-concurrency=mode=waves --hexir-elide-timepoints | FileCheck %s --check-prefix=REGION
// RUN: hexir-opt %s -split-input-file --hexir-form-device-loops --convert-scf-to-cf --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm | FileCheck %s --check-prefix=VM

// A prepared loop with a device condition and a body of dispatches whose yields update their
// carried values in place becomes a repeating execution region (flag: yield 0; the step
// limit from hexir.max_iterations) whose body reads the inits, its body constants move
// before it, and the host checks the flag once after it.
// CHECK-LABEL: func.func @device_loop(
// CHECK-SAME:    %[[F0:[a-z0-9]+]]: tensor<1xi32>, %[[X0:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         %[[TWO:.+]] = arith.constant 2.0
// CHECK:         %[[R:[a-z0-9_]+]]{{[:0-9]*}}{{(, %[a-z0-9_]+)?}} = hexir.execute on(0, "compute") -> tensor<1xi32>, tensor<4xf32> {
// CHECK-NEXT:      %[[X1:.+]] = hexir.dispatch @scale(%[[X0]], %[[TWO]]) {hexir.tied_operands = array<i64: 0>}
// CHECK-NEXT:      %[[F1:.+]] = hexir.dispatch @dec(%[[F0]]) {hexir.tied_operands = array<i64: 0>}
// CHECK-NEXT:      hexir.yield %[[F1]], %[[X1]] : tensor<1xi32>, tensor<4xf32>
// CHECK-NEXT:    } {hexir.repeat_while = array<i64: 0, 100>}
// CHECK:         %[[E:.+]] = tensor.extract %[[R]]#0
// CHECK:         %[[DONE:.+]] = arith.cmpi eq, %[[E]],
// CHECK:         hexir.check %[[DONE]], "hexir.repeat_while: the device loop reached its step limit of 100 iterations with its condition still true"
// CHECK:         return %[[R]]#1
// CHECK-NOT:     scf.while

// Region formation keeps the loop's region as it is (no region nested in it) and ends the
// run before it; scheduling puts its independent dispatches in one wave.
// REGION-LABEL: func.func @device_loop(
// REGION:         %[[R:[a-z0-9_]+]]{{[:0-9]*}}{{(, %[a-z0-9_]+)?}} = hexir.execute on(0, "compute") -> tensor<1xi32>, tensor<4xf32> {
// REGION-NEXT:      hexir.dispatch @scale
// REGION-NEXT:      hexir.dispatch @dec
// REGION-NEXT:      hexir.yield
// REGION-NEXT:    } {hexir.repeat_while = array<i64: 0, 100>}
// REGION:         tensor.extract %[[R]]#0

// The lowering: the carried buffers are copies of the inits (queue copies), the body is
// recorded into a command buffer of its own, and the region's command buffer repeats it
// while the flag's slot is nonzero, at most 100 times; one submission; then one host read
// of the flag and the step-limit assert.
// VM-LABEL: func.func @device_loop(
// VM:         %[[C0:.+]] = hexir_vm.call.import "hal.device.queue.alloca"
// VM:         hexir_vm.call.import "hal.device.queue.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[C0]],
// VM:         %[[C1:.+]] = hexir_vm.call.import "hal.device.queue.alloca"
// VM:         hexir_vm.call.import "hal.device.queue.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[C1]],
// VM:         %[[CB:.+]] = hexir_vm.call.import "hal.command_buffer.create"
// VM:         %[[BODY:.+]] = hexir_vm.call.import "hal.command_buffer.create"
// VM:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[BODY]],
// VM:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[BODY]])
// VM:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[BODY]],
// VM:         hexir_vm.call.import "hal.command_buffer.finalize"(%[[BODY]])
// VM:         %[[MAX:.+]] = hexir_vm.const.i64 100
// VM:         hexir_vm.call.import "hal.command_buffer.repeat_while_slot"(%[[CB]], %[[BODY]], %{{.+}}, %{{.+}}, %[[MAX]])
// VM:         hexir_vm.call.import "hal.command_buffer.finalize"(%[[CB]])
// VM:         hexir_vm.call.import "hal.device.queue.execute_bound"({{.*}}%[[C1]]{{.*}}%[[C0]]
// VM:         hexir_vm.call.import "hal.device.read_i64"(%{{.+}}, %[[C0]],
// VM:         hexir_vm.assert
hexir.executable @scale attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
hexir.executable @dec attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @device_loop(%f0: tensor<1xi32>, %x0: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = scf.while (%f = %f0, %x = %x0) : (tensor<1xi32>, tensor<4xf32>) -> (tensor<1xi32>, tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f, %x : tensor<1xi32>, tensor<4xf32>
  } do {
  ^bb0(%f: tensor<1xi32>, %x: tensor<4xf32>):
    %two = arith.constant 2.0 : f32
    %x1 = hexir.dispatch @scale(%x, %two) {hexir.tied_operands = array<i64: 0>} : (tensor<4xf32>, f32) -> tensor<4xf32>
    %f1 = hexir.dispatch @dec(%f) {hexir.tied_operands = array<i64: 0>} : (tensor<1xi32>) -> tensor<1xi32>
    scf.yield %f1, %x1 : tensor<1xi32>, tensor<4xf32>
  } attributes {hexir.device_loop, hexir.max_iterations = 100 : i64}
  return %r#1 : tensor<4xf32>
}

// -----

// Host loops stay: a yield whose buffer is a fresh result (not written back in place), a
// body reading a host value computed in it, a loop hexir-prepare-device-loops did not mark,
// two carried values with one init.
// CHECK-LABEL: func.func @host_loops(
// CHECK-NOT:     hexir.execute
// CHECK-NOT:     hexir.device_loop
// CHECK:         return
hexir.executable @dec attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @host_loops(%f0: tensor<1xi32>, %n: index) -> (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) {
  %a = scf.while (%f = %f0) : (tensor<1xi32>) -> tensor<1xi32> {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f : tensor<1xi32>
  } do {
  ^bb0(%f: tensor<1xi32>):
    %f1 = hexir.dispatch @dec(%f) : (tensor<1xi32>) -> tensor<1xi32>
    scf.yield %f1 : tensor<1xi32>
  } attributes {hexir.device_loop}
  %b = scf.while (%f = %f0) : (tensor<1xi32>) -> tensor<1xi32> {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f : tensor<1xi32>
  } do {
  ^bb0(%f: tensor<1xi32>):
    %m = arith.muli %n, %n : index
    %f1 = hexir.dispatch @dec(%f, %m) {hexir.tied_operands = array<i64: 0>} : (tensor<1xi32>, index) -> tensor<1xi32>
    scf.yield %f1 : tensor<1xi32>
  } attributes {hexir.device_loop}
  %c = scf.while (%f = %f0) : (tensor<1xi32>) -> tensor<1xi32> {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f : tensor<1xi32>
  } do {
  ^bb0(%f: tensor<1xi32>):
    %f1 = hexir.dispatch @dec(%f) {hexir.tied_operands = array<i64: 0>} : (tensor<1xi32>) -> tensor<1xi32>
    scf.yield %f1 : tensor<1xi32>
  }
  %d:2 = scf.while (%f = %f0, %g = %f0) : (tensor<1xi32>, tensor<1xi32>) -> (tensor<1xi32>, tensor<1xi32>) {
    %c0 = arith.constant 0 : index
    %e = tensor.extract %f[%c0] : tensor<1xi32>
    %z = arith.constant 0 : i32
    %go = arith.cmpi ne, %e, %z : i32
    scf.condition(%go) %f, %g : tensor<1xi32>, tensor<1xi32>
  } do {
  ^bb0(%f: tensor<1xi32>, %g: tensor<1xi32>):
    %f1 = hexir.dispatch @dec(%f) {hexir.tied_operands = array<i64: 0>} : (tensor<1xi32>) -> tensor<1xi32>
    scf.yield %f1, %g : tensor<1xi32>, tensor<1xi32>
  } attributes {hexir.device_loop}
  return %a, %b, %c, %d#1 : tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>
}
