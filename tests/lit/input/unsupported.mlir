// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-verify-input

func.func @host_tensor_arith(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsupported op 'arith.addf' on tensors outside linalg for target 'cpu'}}
  %r = arith.addf %a, %a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @host_read(%a: tensor<?xf16>) -> tensor<?xf16> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{unsupported element type 'f16' for a host read (tensor.extract) for target 'cpu'}}
  %x = tensor.extract %a[%c0] : tensor<?xf16>
  return %a : tensor<?xf16>
}

// -----

// Dynamic shapes, scf and calls are accepted.
func.func @accepted(%a: tensor<?x4xf32>, %n: index) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> tensor<?x4xf32> {
    %y = func.call @id(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    scf.yield %y : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}
func.func private @id(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %a : tensor<?x4xf32>
}

// -----

func.func @op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unsupported op 'tensor.concat' for target 'cpu'}}
  %r = tensor.concat dim(0) %a : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @element(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> { // expected-error {{unsupported element type 'complex<f32>' for target 'cpu'}}
  return %a : tensor<4xcomplex<f32>>
}

// -----

// Scalar results are supported when they have a VM value kind (i64/i32/i1/index, f32/f64).
func.func @scalar_results(%a: f32, %n: index) -> (f32, index, i64) {
  %i = arith.index_cast %n : index to i64
  return %a, %n, %i : f32, index, i64
}

// -----

func.func @host_i8_result(%a: i64) -> i8 { // expected-error {{unsupported result type 'i8' for target 'cpu'}}
  %v = arith.trunci %a : i64 to i8
  return %v : i8
}

// -----

func.func @strided_slice(%a: tensor<8xf32>) -> tensor<4xf32> {
  %s = tensor.extract_slice %a[0] [4] [2] : tensor<8xf32> to tensor<4xf32> // expected-error {{unsupported op 'tensor.extract_slice' for target 'cpu': a stride is not 1 (host slices need unit strides)}}
  return %s : tensor<4xf32>
}

// -----

func.func @strided_insert(%a: tensor<8xf32>, %b: tensor<4xf32>) -> tensor<8xf32> {
  %s = tensor.insert_slice %b into %a[0] [4] [2] : tensor<4xf32> into tensor<8xf32> // expected-error {{unsupported op 'tensor.insert_slice' for target 'cpu': a stride is not 1 (host slices need unit strides)}}
  return %s : tensor<8xf32>
}
