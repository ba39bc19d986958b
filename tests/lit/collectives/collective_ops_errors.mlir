// RUN: hexir-opt %s -split-input-file -verify-diagnostics

func.func @bad_reduction(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction must be "sum", "max", "min" or "prod", got "mean"}}
  %r = hexir.all_reduce "mean" %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @gather_not_multiple(%x: tensor<3x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{dimension 0 of the result (8) is not a multiple of the source's (3)}}
  %r = hexir.all_gather %x : tensor<3x2xf32> -> tensor<8x2xf32>
  return %r : tensor<8x2xf32>
}

// -----

func.func @gather_other_dims(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{dimension 1 differs: 3 in the source, 2 in the result}}
  %r = hexir.all_gather %x : tensor<2x3xf32> -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

func.func @gather_dynamic(%x: tensor<?xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{dimension 0 of the source and the result must be static}}
  %r = hexir.all_gather %x : tensor<?xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @scatter_types(%x: tensor<8xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{element types differ: 'i32' and 'f32'}}
  %r = hexir.reduce_scatter "sum" %x : tensor<8xf32> -> tensor<2xi32>
  return %r : tensor<2xi32>
}

// -----

func.func @negative_root(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{root rank must be >= 0, got -1}}
  %r = hexir.broadcast %x root(-1) : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @recv_dynamic(%p: index) -> tensor<?xf32> {
  // expected-error @+1 {{must be statically shaped tensor}}
  %r = hexir.recv from %p : tensor<?xf32>
  return %r : tensor<?xf32>
}
