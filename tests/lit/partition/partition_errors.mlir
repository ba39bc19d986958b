// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=4" -verify-diagnostics

// expected-error @+1 {{hexir.sharding on argument 0 of @out_of_range: split dimension 2 is out of range for 'tensor<4x8xf32>'}}
func.func @out_of_range(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 2>}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{hexir.sharding on argument 0 of @partial_argument: 'partial' is the partitioner's internal state, not an annotation}}
func.func @partial_argument(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<partial>}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{hexir.sharding on argument 0 of @not_divisible: dimension 1 (6) is not divisible by the 4 ranks}}
func.func @not_divisible(%x: tensor<4x6xf32> {hexir.sharding = #hexir.sharding<split 1>}) -> tensor<4x6xf32> {
  return %x : tensor<4x6xf32>
}

// -----

// expected-error @+1 {{hexir.sharding on argument 0 of @not_a_sharding must be a #hexir.sharding, got 1 : i64}}
func.func @not_a_sharding(%x: tensor<4x8xf32> {hexir.sharding = 1}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{hexir-partition: @called is called from the module; its shards would change the callers' types}}
func.func @called(%x: tensor<4x8xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}
func.func @caller(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = func.call @called(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// expected-error @+2 {{expected 'replicated', 'split D' or 'partial', got 'sideways'}}
func.func @bad_spelling(%x: tensor<4x8xf32>
    {hexir.sharding = #hexir.sharding<sideways>}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

func.func @chunks_not_dividing(%x: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>},
                               %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-error @+1 {{hexir-partition: hexir.collective_chunks = 3 does not divide the 8 rows of the matmul}}
  %y = linalg.matmul {hexir.collective_chunks = 3 : i64}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
