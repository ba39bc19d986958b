// RUN: not hexir-compile %s --target=cpu -o %t.vmfb 2>&1 | FileCheck %s

// The error points at the user's op and names the target; the exit code is non-zero.
// (A pad whose padding value depends on the position is not supported; a constant one is.)
// CHECK: unsupported.mlir:[[@LINE+3]]:8: error: unsupported op 'tensor.pad' for target 'cpu': the padding value is not a constant (it depends on the position)
func.func @pad(%a: tensor<4xf32>, %v: f32) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %r = tensor.pad %a low[1] high[1] {
  ^bb0(%i: index):
    %w = arith.addf %v, %v : f32
    tensor.yield %w : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %r : tensor<6xf32>
}
