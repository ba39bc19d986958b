// RUN: not hexir-compile %s --target=cpu -o %t.vmfb 2>&1 | FileCheck %s

// The error points at the user's op and names the target; the exit code is non-zero.
// CHECK: unsupported.mlir:[[@LINE+3]]:8: error: unsupported op 'scf.for' for target 'cpu'
func.func @loop(%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %r = scf.for %i = %c0 to %n step %n iter_args(%x = %a) -> tensor<4xf32> {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
