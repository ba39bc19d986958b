// RUN: hexir-opt %s -split-input-file -verify-diagnostics

func.func @bad_queue(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hexir.execute' op queue must be "compute" or "transfer", got "copy"}}
  %t = hexir.execute on(0, "copy") {
    hexir.yield
  }
  return
}

// -----

func.func @bad_device(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hexir.execute' op device ordinal must be >= 0, got -1}}
  %t = hexir.execute on(-1, "compute") {
    hexir.yield
  }
  return
}

// -----

func.func @yield_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'hexir.execute' op yields 0 values whose types do not match its tensor results}}
  %r, %t = hexir.execute on(0, "compute") -> tensor<4xf32> {
    hexir.yield
  }
  return %r : tensor<4xf32>
}

// -----

func.func @host_op_inside(%x: tensor<4xf32>, %i: index) {
  %t = hexir.execute on(0, "compute") {
    // expected-error @+1 {{'arith.addi' op cannot be in a hexir.execute region (only hexir.dispatch, collectives, hexir.transfer, hexir.barrier, tensor reshapes/casts and recorded calls)}}
    %j = arith.addi %i, %i : index
    hexir.yield
  }
  return
}

// -----

func.func @barrier_outside() {
  // expected-error @+1 {{'hexir.barrier' op expects parent op 'hexir.execute'}}
  hexir.barrier
  return
}
