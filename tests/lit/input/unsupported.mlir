// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-verify-input

func.func @dynamic(%a: tensor<?x4xf32>) -> tensor<4xf32> { // expected-error {{unsupported dynamic shape 'tensor<?x4xf32>' for target 'cpu'}}
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

func.func @op(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unsupported op 'tensor.extract_slice' for target 'cpu'}}
  %r = tensor.extract_slice %a[1] [2] [1] : tensor<4xf32> to tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @element(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> { // expected-error {{unsupported element type 'complex<f32>' for target 'cpu'}}
  return %a : tensor<4xcomplex<f32>>
}

// -----

func.func @host_math(%a: f32) -> f32 { // expected-error {{unsupported type 'f32' for target 'cpu'}}
  return %a : f32
}
