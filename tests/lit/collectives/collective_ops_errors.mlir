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

// A dynamic result dim 0 serves any rank count; a static one needs a static source.
func.func @scatter_any_count(%x: tensor<?x4xf32>, %y: tensor<6x4xf32>) -> tensor<?x4xf32> {
  %r = hexir.reduce_scatter "max" %x : tensor<?x4xf32> -> tensor<?x4xf32>
  %s = hexir.reduce_scatter "min" %y : tensor<6x4xf32> -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

func.func @scatter_dynamic_source(%x: tensor<?x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{dimension 0 of the result and the source must be static (or the result's dynamic: any rank count)}}
  %r = hexir.reduce_scatter "sum" %x : tensor<?x4xf32> -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

func.func @scatter_dynamic_other_dim(%x: tensor<?x4xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{dimension 1 differs: 3 in the result, 4 in the source}}
  %r = hexir.reduce_scatter "sum" %x : tensor<?x4xf32> -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
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
