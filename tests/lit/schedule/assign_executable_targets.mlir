// RUN: hexir-opt %s --hexir-assign-executable-targets | FileCheck %s

// Each executable is compiled for the kinds of the devices that run it: @both runs on the CPU
// (device 0) and on two GPUs (devices 1, 2: one copy for both), @gpu only on a GPU; one that
// no dispatch names is kept for device 0's kind.
// CHECK:       hexir.executable @both attributes {hexir.target = "cpu"}
// CHECK:       hexir.executable @both_cuda attributes {hexir.target = "cuda"}
// CHECK:       hexir.executable @gpu attributes {hexir.target = "cuda"}
// CHECK:       hexir.executable @unused attributes {hexir.target = "cpu"}
// CHECK-LABEL: func.func @f(
// CHECK:         hexir.dispatch @both(%{{.+}}) {hexir.device = 0 : i64}
// CHECK-NEXT:    hexir.dispatch @both_cuda(%{{.+}}) {hexir.device = 1 : i64}
// CHECK-NEXT:    hexir.dispatch @both_cuda(%{{.+}}) {hexir.device = 2 : i64}
// CHECK-NEXT:    hexir.dispatch @gpu(%{{.+}}) {hexir.device = 2 : i64}
module attributes {hexir.devices = ["cpu", "cuda", "cuda"]} {
  hexir.executable @both {
  }
  hexir.executable @gpu {
  }
  hexir.executable @unused {
  }
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = hexir.dispatch @both(%x) {hexir.device = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %b = hexir.dispatch @both(%a) {hexir.device = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = hexir.dispatch @both(%b) {hexir.device = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %d = hexir.dispatch @gpu(%c) {hexir.device = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %d : tensor<4xf32>
  }
}
