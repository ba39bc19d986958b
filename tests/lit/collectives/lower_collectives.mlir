// RUN: hexir-opt %s -split-input-file --hexir-convert-to-vm | FileCheck %s

// A collective is recorded into its region's command buffer from the binding table (its
// source and result slots) with hal/channel.h's codes, after a barrier where the region has
// one; the channel is the context's channel of the region's device. Static counts: recorded
// once (memoized in a ref global).
// CHECK-LABEL: func.func @all_reduce(
// CHECK:         hexir_vm.global.load.ref
// CHECK:         hexir_vm.call.import "hal.command_buffer.create"
// CHECK:         hexir_vm.call.import "hal.command_buffer.dispatch_slots"
// CHECK-NEXT:    hexir_vm.call.import "hal.command_buffer.barrier"
// CHECK:         %[[CH:.+]] = hexir_vm.call.import "hal.channel.default"
// CHECK:         hexir_vm.call.import "hal.command_buffer.collective_slots"(%{{.+}}, %[[CH]],
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"
// CHECK:         hexir_vm.global.store.ref
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @all_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
    hexir.barrier
    %s = hexir.all_reduce "sum" %a : tensor<4xf32>
    hexir.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// all_gather's types assume 2 ranks: the channel's count is asserted on the host before the
// region is submitted. Kind code 1, 4 elements sent.
// CHECK-LABEL: func.func @all_gather(
// CHECK:         %[[CH:.+]] = hexir_vm.call.import "hal.channel.default"
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.channel.count"(%[[CH]])
// CHECK:         hexir_vm.assert %{{.+}}, "hexir.all_gather: the program was written for 2 ranks, the channel has {}"(%[[N]])
// CHECK:         hexir_vm.call.import "hal.command_buffer.collective_slots"
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @all_gather(%x: tensor<4xf32>) -> tensor<8xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<8xf32> {
    %g = hexir.all_gather %x : tensor<4xf32> -> tensor<8xf32>
    hexir.yield %g : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// A dynamic element count (or a peer computed at run time) is only known per execution: the
// region is recorded at every execution (no ref global caches it).
// CHECK-LABEL: func.func @dynamic(
// CHECK-NOT:     hexir_vm.global.load.ref
// CHECK:         hexir_vm.call.import "hal.command_buffer.create"
// CHECK:         hexir_vm.call.import "hal.command_buffer.collective_slots"
// CHECK:         hexir_vm.call.import "hal.command_buffer.finalize"
// CHECK-NOT:     hexir_vm.global.store.ref
// CHECK:         hexir_vm.call.import "hal.device.queue.execute_bound"
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<?xf32> {
    %s = hexir.all_reduce "max" %x : tensor<?xf32>
    hexir.yield %s : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// reduce_scatter with a dynamic result dim 0 serves any rank count: its rows are the source's
// (6) divided by the channel's count, asserted to divide; the region is recorded per execution.
// CHECK-LABEL: func.func @reduce_scatter_any_count(
// CHECK:         %[[CH:.+]] = hexir_vm.call.import "hal.channel.default"
// CHECK:         %[[N:.+]] = hexir_vm.call.import "hal.channel.count"(%[[CH]])
// CHECK:         %[[REM:.+]] = hexir_vm.inst "rem.u.i64"(%[[ROWS:.+]], %[[N]])
// CHECK:         hexir_vm.assert %{{.+}}, "hexir.reduce_scatter: dimension 0 of the source ({}) is not divisible by the channel's {} ranks"(%[[ROWS]], %[[N]])
// CHECK:         hexir_vm.inst "div.u.i64"(%[[ROWS]], %[[N]])
// CHECK-NOT:     hexir_vm.global.load.ref
// CHECK:         hexir_vm.call.import "hal.command_buffer.collective_slots"
// CHECK-NOT:     hexir_vm.global.store.ref
func.func @reduce_scatter_any_count(%x: tensor<6x4xf32>) -> tensor<?x4xf32> {
  %r, %t = hexir.execute on(0, "compute") -> tensor<?x4xf32> {
    %s = hexir.reduce_scatter "min" %x : tensor<6x4xf32> -> tensor<?x4xf32>
    hexir.yield %s : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// -----

// The rank and the count are host values read from the channel.
// CHECK-LABEL: func.func @rank(
// CHECK:         %[[CH:.+]] = hexir_vm.call.import "hal.channel.default"
// CHECK:         hexir_vm.call.import "hal.channel.rank"(%[[CH]])
// CHECK:         %[[CH2:.+]] = hexir_vm.call.import "hal.channel.default"
// CHECK:         hexir_vm.call.import "hal.channel.count"(%[[CH2]])
func.func @rank() -> (index, index) {
  %r = hexir.channel.rank : index
  %c = hexir.channel.count : index
  return %r, %c : index, index
}
