// RUN: hexir-opt %s -split-input-file --hexir-place-devices -verify-diagnostics

module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @k {
  }
  func.func @out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{dispatch: hexir.device = 2 is not a device of this module (2 target(s))}}
    %a = hexir.dispatch @k(%x) {hexir.device = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{hexir-place-devices: the module has no hexir.devices list}}
module {
  func.func @f() {
    return
  }
}
