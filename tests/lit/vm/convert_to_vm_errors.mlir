// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-form-execution-regions --hexir-convert-to-vm

func.func @insert(%t: tensor<4xf32>, %v: f32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{unsupported op 'tensor.insert' in a host function for target 'cpu'}}
  %r = tensor.insert %v into %t[%c0] : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @vector_arg(%v: vector<4xf32>) { // expected-error {{unsupported argument type 'vector<4xf32>' for target 'cpu'}}
  return
}
