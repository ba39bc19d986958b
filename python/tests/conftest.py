"""Shared test modules: MLIR sources compiled once per session with hexir.compile."""
import functools

import hexir
import pytest

# A two-layer perceptron with constant weights (examples/mlp.mlir's body): W1, B1, W2 below
# are the same numbers, for an independent NumPy reference.
MLP = r"""
#bias = affine_map<(i, j) -> (j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w1 = arith.constant dense<[[0.5, -1.0, 0.25, 2.0, 0.0], [1.0, 0.5, -0.5, 0.0, 1.5],
                              [-0.25, 1.0, 1.0, -1.0, 0.5], [0.75, 0.0, 0.5, 1.0, -2.0]]> : tensor<4x5xf32>
  %b1 = arith.constant dense<[0.1, -0.2, 0.3, -0.4, 0.5]> : tensor<5xf32>
  %w2 = arith.constant dense<[[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [-1.0, 2.0, 0.0],
                              [0.0, -0.5, 1.0], [0.25, 0.25, 0.25]]> : tensor<5x3xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x5xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x5xf32>) -> tensor<2x5xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<2x4xf32>, tensor<4x5xf32>) outs(%f1 : tensor<2x5xf32>) -> tensor<2x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<2x5xf32>, tensor<5xf32>) outs(%e1 : tensor<2x5xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      %m = arith.maximumf %s, %zero : f32
      linalg.yield %m : f32
  } -> tensor<2x5xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<2x5xf32>, tensor<5x3xf32>) outs(%f2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
"""
W1 = [[0.5, -1.0, 0.25, 2.0, 0.0], [1.0, 0.5, -0.5, 0.0, 1.5],
      [-0.25, 1.0, 1.0, -1.0, 0.5], [0.75, 0.0, 0.5, 1.0, -2.0]]
B1 = [0.1, -0.2, 0.3, -0.4, 0.5]
W2 = [[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [-1.0, 2.0, 0.0], [0.0, -0.5, 1.0], [0.25, 0.25, 0.25]]

# Small functions over the call ABI: a dynamic shape with a scalar, an argument returned as
# is, tensor + scalar results, integer and boolean tensors.
ABI = r"""
#id = affine_map<(i) -> (i)>
func.func @scale(%x: tensor<?xf32>, %s: f32) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %s : f32
      linalg.yield %m : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}
func.func @pair(%x: tensor<3xi64>, %k: i64) -> (tensor<3xi64>, i64) {
  %c = arith.addi %k, %k : i64
  return %x, %c : tensor<3xi64>, i64
}
func.func @negate_mask(%x: tensor<4xi1>) -> tensor<4xi1> {
  %e = tensor.empty() : tensor<4xi1>
  %t = arith.constant true
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xi1>) outs(%e : tensor<4xi1>) {
    ^bb0(%a: i1, %o: i1):
      %n = arith.xori %a, %t : i1
      linalg.yield %n : i1
  } -> tensor<4xi1>
  return %r : tensor<4xi1>
}
"""

# A matmul of dynamic size: long enough (n = 768: ~0.9 GFLOP) to observe the GIL being released.
MATMUL = r"""
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
"""


@functools.lru_cache(maxsize=None)
def vmfb(source):
    return hexir.compile(source, targets=["cpu"])


@pytest.fixture
def mlp():
    return hexir.load(vmfb(MLP))


@pytest.fixture
def abi():
    return hexir.load(vmfb(ABI))


@pytest.fixture
def matmul():
    return hexir.load(vmfb(MATMUL))
