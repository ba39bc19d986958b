// RUN: hexir-opt %s -verify-diagnostics --hexir-outline-dispatch-regions

// A dispatch result whose size cannot be expressed on the host is an error at the region.
func.func @opaque(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{cannot compute dynamic dimension 0 of dispatch result 0 for target 'cpu'}}
  %r = hexir.dispatch_region -> (tensor<?xf32>) {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?xf32>
    %m = arith.addi %n, %n : index
    %e = tensor.empty(%m) : tensor<?xf32>
    hexir.yield %e : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
