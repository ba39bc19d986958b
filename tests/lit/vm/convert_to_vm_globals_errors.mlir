// RUN: hexir-opt %s -split-input-file -verify-diagnostics

// Tensor globals (hexir.global, hexir.global.load, hexir.global.store) are verified: a
// static shape, an existing global, the same type at every access.


// expected-error @+1 {{'hexir.global' op type must be a statically shaped tensor, got 'tensor<?xf32>'}}
hexir.global @dynamic : tensor<?xf32>

// -----

hexir.global @g : tensor<4xf32>
func.func @main() -> tensor<4xi32> {
  // expected-error @+1 {{'hexir.global.load' op type 'tensor<4xi32>' differs from the global's 'tensor<4xf32>'}}
  %0 = hexir.global.load @g : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @main(%x: tensor<4xf32>) {
  // expected-error @+1 {{'hexir.global.store' op no hexir.global named @missing}}
  hexir.global.store %x, @missing : tensor<4xf32>
  return
}
