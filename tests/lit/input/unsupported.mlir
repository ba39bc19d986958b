// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-verify-input

func.func @dynamic(%a: tensor<?x4xf32>) -> tensor<4xf32> { // expected-error {{unsupported dynamic shape 'tensor<?x4xf32>' for target 'cpu'}}
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

func.func @op(%a: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{unsupported op 'tensor.expand_shape' for target 'cpu'}}
  %r = tensor.expand_shape %a [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

func.func @element(%a: tensor<4xf16>) -> tensor<4xf16> { // expected-error {{unsupported element type 'f16' for target 'cpu'}}
  return %a : tensor<4xf16>
}
