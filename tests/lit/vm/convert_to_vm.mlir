// RUN: hexir-opt %s -split-input-file --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm | FileCheck %s

// Consecutive dispatches form one segment: its command buffer is recorded once into ref
// global 1 (on the first call: ref.is_null -> record block) with binding-table slots only,
// and every call replays it with execute_bound and this call's buffers. Scalars travel in
// a host parameter buffer written per call; the intermediate %0 is a transient kept in ref
// global 0 and reused by every call (hal.device.transient grows it when too small); nothing
// waits and nothing is deallocated.
// CHECK-LABEL: module attributes {hexir_vm.ref_globals = 2 : i64}
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: !hexir_vm.ref, %[[S:[a-z0-9]+]]: f64) -> !hexir_vm.ref
// CHECK-SAME:    hexir_vm.abi_args = "tensor<2x3xf32>;f32"
// CHECK:         %[[DEV:.+]] = hexir_vm.call.import "hal.device.default"()
// CHECK:         hexir_vm.call.import "hal.buffer_view.assert"(%[[A]],
// CHECK:         %[[BUF:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%[[A]])
// CHECK:         %[[HELD:.+]] = hexir_vm.global.load.ref 0
// CHECK:         %[[T:.+]] = hexir_vm.call.import "hal.device.transient"(%[[DEV]], %[[HELD]], %{{.+}}) : (!hexir_vm.ref, !hexir_vm.ref, i64) -> !hexir_vm.ref
// CHECK:         hexir_vm.global.store.ref %[[T]], 0
// CHECK:         %[[BITS:.+]] = hexir_vm.inst "trunc.f64.f32"(%[[S]])
// CHECK:         %[[P:.+]] = hexir_vm.call.import "hal.allocator.allocate_uniform"
// CHECK:         hexir_vm.call.import "hal.buffer.store_i64"(%[[P]], %{{.+}}, %[[BITS]])
// CHECK:         %[[OUT:.+]] = hexir_vm.call.import "hal.device.queue.alloca"(%[[DEV]]
// CHECK:         %[[CACHED:.+]] = hexir_vm.global.load.ref 1
// CHECK:         %[[NULL:.+]] = hexir_vm.ref.is_null %[[CACHED]]
// CHECK:         hexir_vm.cond_br %[[NULL]], ^[[RECORD:.+]], ^[[REPLAY:.+]](%[[CACHED]] : !hexir_vm.ref)
// CHECK:       ^[[RECORD]]:
// CHECK:         %[[CB:.+]] = hexir_vm.call.import "hal.command_buffer.create"(%[[DEV]])
// CHECK:         %[[EXE:.+]] = hexir_vm.call.import "hal.executable.lookup"(%[[DEV]]
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[CB]], %[[EXE]],
// CHECK:         hexir_vm.call.import "hal.command_buffer.barrier"(%[[CB]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"(%[[CB]], %[[EXE]],
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"(%[[CB]])
// CHECK:         hexir_vm.global.store.ref %[[CB]], 1
// CHECK:         hexir_vm.br ^[[REPLAY]](%[[CB]] : !hexir_vm.ref)
// CHECK:       ^[[REPLAY]](%[[RCB:.+]]: !hexir_vm.ref):
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"(%[[DEV]], %[[RCB]], {{.*}}, %[[BUF]], %[[T]], %[[P]], %[[OUT]]
// CHECK-NOT:     hal.semaphore
// CHECK-NOT:     hal.device.queue.dealloca
// CHECK:         %[[VIEW:.+]] = hexir_vm.call.import "hal.buffer_view.create"(%[[OUT]],
// CHECK:         hexir_vm.return %[[VIEW]]
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 2, 1, 1>} {
}
func.func @main(%a: tensor<2x3xf32>, %s: f32) -> tensor<2x3xf32> {
  %0 = hexir.dispatch @k(%a, %s) : (tensor<2x3xf32>, f32) -> tensor<2x3xf32>
  %1 = hexir.dispatch @k(%0, %s) : (tensor<2x3xf32>, f32) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Constant tensors are uploaded once by the module initializer into ref globals.
// CHECK-LABEL: func.func @constant
// CHECK:         %[[G:.+]] = hexir_vm.global.load.ref 0
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[G]],
// CHECK-LABEL: func.func private @__hexir_init() attributes {hexir_vm.initializer}
// CHECK:         %[[RO:.+]] = hexir_vm.rodata dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK:         %[[B:.+]] = hexir_vm.call.import "hal.allocator.allocate_initialized"(%{{.+}}, %[[RO]])
// CHECK:         hexir_vm.global.store.ref %[[B]], 0
func.func @constant() -> tensor<2xf32> {
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// Dynamic dims live in registers: read once from the argument view, multiplied into byte
// sizes, passed to the kernel in its parameter buffer (operand dims, then result dims) and
// used for the result view. The recording does not depend on them.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: !hexir_vm.ref
// CHECK:         %[[NEG:.+]] = hexir_vm.const.i64 -1
// CHECK:         hexir_vm.call.import "hal.buffer_view.assert"(%[[A]], %{{.+}}, %{{.+}}, %[[NEG]], %{{.+}})
// CHECK:         %[[D0:.+]] = hexir_vm.call.import "hal.buffer_view.dim"(%[[A]], %{{.+}}) : (!hexir_vm.ref, i64) -> i64
// CHECK:         %[[ROW:.+]] = hexir_vm.inst "mul.i64"(%[[D0]], %{{.+}})
// CHECK:         hexir_vm.call.import "hal.device.queue.alloca"(%{{.+}}, %[[ROW]])
// CHECK:         hexir_vm.call.import "hal.buffer.store_i64"(%{{.+}}, %{{.+}}, %[[D0]], %[[D0]])
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%{{.+}}, %{{.+}}, %[[D0]], %{{.+}})
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @dynamic(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?x4xf32>
  %0 = hexir.dispatch @k(%a) dims(%d) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Control flow: tensors cross edges as (buffer, dynamic dims); a device value read by the
// host is one hal.device.read_f64 (which waits); host scalar arithmetic is VM arithmetic;
// each block's dispatches are their own memoized segment.
// CHECK-LABEL: func.func @loop(
// CHECK:         hexir_vm.br ^[[HEAD:bb[0-9]+]](%{{.+}}, %{{.+}} : !hexir_vm.ref, i64)
// CHECK:       ^[[HEAD]](%[[BUF:.+]]: !hexir_vm.ref, %[[N:.+]]: i64):
// CHECK:         hexir_vm.global.load.ref 0
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"
// CHECK:         %[[X:.+]] = hexir_vm.call.import "hal.device.read_f64"
// CHECK:         %[[LT:.+]] = hexir_vm.inst "cmp.lt.f64"(%[[X]], %{{.+}}) : (f64, f64) -> i64
// CHECK:         hexir_vm.cond_br %[[LT]], ^[[HEAD]](%{{.+}}, %{{.+}} : !hexir_vm.ref, i64), ^{{.+}}
hexir.executable @step attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @loop(%a: tensor<?xf32>, %limit: f32) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?xf32>
  cf.br ^head(%a : tensor<?xf32>)
^head(%x: tensor<?xf32>):
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %y = hexir.dispatch @step(%x) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  %v = tensor.extract %y[%c0] : tensor<?xf32>
  %lt = arith.cmpf olt, %v, %limit : f32
  cf.cond_br %lt, ^head(%y : tensor<?xf32>), ^exit
^exit:
  return %y : tensor<?xf32>
}

// -----

// func.call: one VM call to one function; tensors pass as views.
// CHECK-LABEL: func.func @caller(
// CHECK:         %[[V:.+]] = hexir_vm.call.import "hal.buffer_view.create"
// CHECK:         %[[R:.+]] = hexir_vm.call @callee(%[[V]]) : (!hexir_vm.ref) -> !hexir_vm.ref
// CHECK:         hexir_vm.call.import "hal.buffer_view.buffer"(%[[R]])
// CHECK-LABEL: func.func private @callee(
func.func @caller(%a: index) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = func.call @callee(%e) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @callee(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// Host reshapes alias the buffer; dynamic dims: a collapsed group's product, an expanded
// dim's output_shape value.
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: !hexir_vm.ref, %[[H:[a-z0-9]+]]: i64
// CHECK:         %[[BUF:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%[[A]])
// CHECK:         %[[D0:.+]] = hexir_vm.call.import "hal.buffer_view.dim"(%[[A]]
// CHECK:         %[[D1:.+]] = hexir_vm.call.import "hal.buffer_view.dim"(%[[A]]
// CHECK:         %[[N:.+]] = hexir_vm.inst "mul.i64"(%[[D0]], %[[D1]])
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[BUF]], %{{.+}}, %[[N]]) : (!hexir_vm.ref, i64, i64) -> !hexir_vm.ref
// CHECK:         hexir_vm.call.import "hal.buffer_view.create"(%[[BUF]], %{{.+}}, %[[H]], %{{.+}}) : (!hexir_vm.ref, i64, i64, i64) -> !hexir_vm.ref
func.func @reshape(%a: tensor<?x?xf32>, %h: index) -> (tensor<?xf32>, tensor<?x4xf32>) {
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %two = tensor.expand_shape %flat [[0, 1]] output_shape [%h, 4] : tensor<?xf32> into tensor<?x4xf32>
  return %flat, %two : tensor<?xf32>, tensor<?x4xf32>
}

// -----

// Host floor / ceil signed division: the truncating quotient adjusted by one when the
// remainder is nonzero and its sign differs from (floor) / matches (ceil) the divisor's.
// CHECK-LABEL: func.func @floor_ceil_div
// CHECK:         %[[Q:.+]] = hexir_vm.inst "div.s.i64"(%arg0, %arg1)
// CHECK:         %[[R:.+]] = hexir_vm.inst "rem.s.i64"(%arg0, %arg1)
// CHECK:         %[[NZ:.+]] = hexir_vm.inst "cmp.ne.i64"(%[[R]],
// CHECK:         %[[RN:.+]] = hexir_vm.inst "cmp.lt.s.i64"(%[[R]],
// CHECK:         %[[BN:.+]] = hexir_vm.inst "cmp.lt.s.i64"(%arg1,
// CHECK:         %[[X:.+]] = hexir_vm.inst "xor.i64"(%[[RN]], %[[BN]])
// CHECK:         %[[ADJ:.+]] = hexir_vm.inst "and.i64"(%[[NZ]], %[[X]])
// CHECK:         %[[FLOOR:.+]] = hexir_vm.inst "sub.i64"(%[[Q]], %[[ADJ]])
// CHECK:         "div.s.i64"
// CHECK:         "xor.i64"
// CHECK:         %[[ONE:.+]] = hexir_vm.const.i64 1
// CHECK:         %[[SAME:.+]] = hexir_vm.inst "xor.i64"(%{{.+}}, %[[ONE]])
// CHECK:         %[[ADJ2:.+]] = hexir_vm.inst "and.i64"(%{{.+}}, %[[SAME]])
// CHECK:         %[[CEIL:.+]] = hexir_vm.inst "add.i64"(%{{.+}}, %[[ADJ2]])
// CHECK:         hexir_vm.return %[[FLOOR]], %[[CEIL]]
func.func @floor_ceil_div(%a: i64, %b: i64) -> (i64, i64) {
  %q = arith.floordivsi %a, %b : i64
  %c = arith.ceildivsi %a, %b : i64
  return %q, %c : i64, i64
}

// -----

// i32 signed division at 32 bits: INT32_MIN / -1 traps (as in kernels) instead of a 64-bit
// quotient wrapped by a truncation; the result is already sign-extended (no trunc.i64.i32).
// CHECK-LABEL: func.func @div_i32
// CHECK:         %[[Q:.+]] = hexir_vm.inst "div.s.i32"(%arg0, %arg1)
// CHECK-NEXT:    %[[R:.+]] = hexir_vm.inst "rem.s.i32"(%arg0, %arg1)
// CHECK:         "div.s.i32"(%arg0, %arg1)
// CHECK-NEXT:    "rem.s.i32"(%arg0, %arg1)
// CHECK-NOT:     "div.s.i64"
// CHECK:         hexir_vm.return %[[Q]], %[[R]],
func.func @div_i32(%a: i32, %b: i32) -> (i32, i32, i32) {
  %q = arith.divsi %a, %b : i32
  %r = arith.remsi %a, %b : i32
  %f = arith.floordivsi %a, %b : i32
  return %q, %r, %f : i32, i32, i32
}

// -----

// A check is one `assert` on the host values (index compare -> cmp.eq.i64); a cast aliases
// its source's buffer and returns a view with the cast's static dims.
// CHECK-LABEL: func.func @check_and_cast
// CHECK:         %[[BUF:.+]] = hexir_vm.call.import "hal.buffer_view.buffer"(%arg0)
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.buffer_view.dim"(%arg0,
// CHECK:         %[[EIGHT:.+]] = hexir_vm.const.i64 8
// CHECK:         %[[EQ:.+]] = hexir_vm.inst "cmp.eq.i64"(%[[N]], %[[EIGHT]])
// CHECK:         hexir_vm.assert %[[EQ]], "tensor.cast: dimension 0 of the source is {}, expected {}"(%[[N]], %[[EIGHT]])
// CHECK:         %[[VIEW:.+]] = hexir_vm.call.import "hal.buffer_view.create"(%[[BUF]], %{{.+}}, %{{.+}})
// CHECK:         hexir_vm.return %[[VIEW]]
func.func @check_and_cast(%a: tensor<?xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %eq = arith.cmpi eq, %n, %c8 : index
  hexir.check %eq, "tensor.cast: dimension 0 of the source is {}, expected {}"(%n, %c8) : index, index
  %s = tensor.cast %a : tensor<?xf32> to tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// A CPU executable's parameter buffer is kept in a ref global and passed to
// hal.allocator.reuse_uniform with this call's words: the previous call's buffer when they are
// equal (a dynamic module whose shapes repeat allocates no parameter buffer per call), a new
// one otherwise; it is never written after a submission read it, so no buffer.store_i64.
// CHECK-LABEL: module attributes {hexir_vm.ref_globals = 2 : i64}
// CHECK-LABEL: func.func @cpu_params(
// CHECK:         %[[D0:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK:         hal.device.queue.alloca
// CHECK:         %[[HELD:.+]] = hexir_vm.global.load.ref 0
// CHECK-NEXT:    %[[P:.+]] = hexir_vm.call.import "hal.allocator.reuse_uniform"(%{{.+}}, %[[HELD]], %[[D0]], %[[D0]])
// CHECK-NEXT:    hexir_vm.global.store.ref %[[P]], 0
// CHECK-NOT:     hal.buffer.store_i64
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"({{.*}}, %[[P]])
hexir.executable @k attributes {hexir.format = "cpu-elf-x86_64", hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @cpu_params(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// A CUDA executable's parameter buffer is kept across calls the same way (its device-side
// shadow is refreshed from it at each submission).
// CHECK-LABEL: func.func @cuda_params(
// CHECK:         %[[D0:.+]] = hexir_vm.call.import "hal.buffer_view.dim"
// CHECK:         %[[HELD:.+]] = hexir_vm.global.load.ref 0
// CHECK-NEXT:    %[[P:.+]] = hexir_vm.call.import "hal.allocator.reuse_uniform"(%{{.+}}, %[[HELD]], %[[D0]], %[[D0]])
// CHECK-NEXT:    hexir_vm.global.store.ref %[[P]], 0
// CHECK-NOT:     hal.buffer.store_i64
// CHECK-NOT:     hal.allocator.allocate_uniform
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"({{.*}}, %[[P]])
hexir.executable @k attributes {hexir.format = "cuda-ptx", hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @cuda_params(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
