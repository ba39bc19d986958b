// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2 chunk-by-model=true" | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2" | FileCheck %s --check-prefix=DEFAULT
// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2 chunk-by-model=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// Rates measured by bench/collective_pipeline/run.sh on 2 CPU devices of a 2-core machine (in-process
// Gloo's 16 MiB all_reduce: 0.2 GB/s): the collective dominates, 8 blocks would save under a tenth.
// RUN: hexir-opt %s -split-input-file --hexir-partition="ranks=2 chunk-by-model=true matmul-gflops=15 collective-gbps=0.2 block-us=300" 2>&1 | FileCheck %s --check-prefix=MEASURED
// RUN: not hexir-opt %s -split-input-file --hexir-partition="ranks=2 chunk-by-model=true collective-gbps=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: hexir-partition: collective-gbps must be a positive number, got 0

// A row-parallel matmul (W split by rows: a partial sum) whose result is replicated, chunked
// by its annotation into 4 row blocks: each block's matmul and all_reduce, placed into the
// result, so block i's all_reduce can run while block i+1's matmul computes.
// CHECK-LABEL: func.func @forced_blocks(
// CHECK:         %[[A0:.+]] = tensor.extract_slice %arg0[0, 0] [2, 8] [1, 1] : tensor<8x8xf32> to tensor<2x8xf32>
// CHECK:         %[[M0:.+]] = linalg.matmul ins(%[[A0]], %arg1 : tensor<2x8xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<2x4xf32>)
// CHECK:         %[[S0:.+]] = hexir.all_reduce "sum" %[[M0]] : tensor<2x4xf32>
// CHECK:         tensor.insert_slice %[[S0]] into %{{.+}}[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<8x4xf32>
// CHECK:         %[[A1:.+]] = tensor.extract_slice %arg0[2, 0] [2, 8] [1, 1]
// CHECK:         %[[M1:.+]] = linalg.matmul ins(%[[A1]], %arg1
// CHECK:         %[[S1:.+]] = hexir.all_reduce "sum" %[[M1]] : tensor<2x4xf32>
// CHECK:         tensor.insert_slice %[[S1]] into %{{.+}}[2, 0] [2, 4] [1, 1]
// CHECK:         tensor.extract_slice %arg0[4, 0]
// CHECK:         hexir.all_reduce "sum" %{{.+}} : tensor<2x4xf32>
// CHECK:         tensor.extract_slice %arg0[6, 0]
// CHECK:         hexir.all_reduce "sum" %{{.+}} : tensor<2x4xf32>
// CHECK-NOT:     hexir.all_reduce
// CHECK-NOT:     hexir.collective_chunks
// CHECK:         return
func.func @forced_blocks(%x: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>},
                         %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul {hexir.collective_chunks = 4 : i64}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// The cost model: 2048 x 32 (per rank) x 2048 computes about as long as its 16 MiB
// all_reduce moves: 8 blocks of 256 rows.
// Without chunk-by-model (the default: the model is not calibrated) the pair stays whole,
// while an annotation still chunks (@forced_blocks).
// CHECK-LABEL: func.func @model_blocks(
// CHECK-COUNT-8: hexir.all_reduce "sum" %{{.+}} : tensor<256x2048xf32>
// CHECK-NOT:     hexir.all_reduce
// DEFAULT-LABEL: func.func @forced_blocks(
// DEFAULT-COUNT-4: hexir.all_reduce "sum" %{{.+}} : tensor<2x4xf32>
// DEFAULT-LABEL: func.func @model_blocks(
// DEFAULT:         hexir.all_reduce "sum" %{{.+}} : tensor<2048x2048xf32>
// DEFAULT-NOT:     hexir.all_reduce
// The model's choice, stated with its predicted times (every unannotated pair gets one; an
// annotated pair none):
// REMARK-NOT: remark
// REMARK: remark: hexir-partition: row-parallel pipeline 2048x32x2048: matmul 13421.8 us at 20.00 GFLOP/s, all_reduce 8388.6 us at 4.00 GB/s, whole 21850.4 us, 2 blocks 17696.1 us, 4 blocks 15678.9 us, 8 blocks 14790.3 us: 8 block(s)
// MEASURED: remark: hexir-partition: row-parallel pipeline 2048x32x2048: matmul 17895.7 us at 15.00 GFLOP/s, all_reduce 167772.2 us at 0.20 GB/s, whole 185967.9 us, {{.*}}, 8 blocks 172409.1 us: 1 block(s)
// MEASURED-LABEL: func.func @model_blocks(
// MEASURED:         hexir.all_reduce "sum" %{{.+}} : tensor<2048x2048xf32>
// MEASURED-NOT:     hexir.all_reduce
func.func @model_blocks(%x: tensor<2048x64xf32> {hexir.sharding = #hexir.sharding<split 1>},
                        %w: tensor<64x2048xf32> {hexir.sharding = #hexir.sharding<split 0>}) -> tensor<2048x2048xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x2048xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2048x64xf32>, tensor<64x2048xf32>) outs(%z : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  return %y : tensor<2048x2048xf32>
}

// -----

// Small (the blocks' overhead exceeds any overlap) or compute-bound (2048 x 1024 x 2048: the
// all_reduce is a tenth of the matmul) shapes stay whole, as does an annotation of 1.
// CHECK-LABEL: func.func @model_whole(
// DEFAULT-LABEL: func.func @model_whole(
// CHECK:         hexir.all_reduce "sum" %{{.+}} : tensor<8x4xf32>
// CHECK:         hexir.all_reduce "sum" %{{.+}} : tensor<2048x2048xf32>
// CHECK:         hexir.all_reduce "sum" %{{.+}} : tensor<2048x2048xf32>
// CHECK-NOT:     hexir.all_reduce
// REMARK: remark: hexir-partition: row-parallel pipeline 8x8x4: {{.*}}: 1 block(s)
// REMARK: remark: hexir-partition: row-parallel pipeline 2048x1024x2048: {{.*}}: 1 block(s)
// REMARK-NOT: remark
// At the measured rates the all_reduce is cheap beside a 2048x1024x2048 matmul no more: 8 blocks.
// MEASURED-LABEL: func.func @model_whole(
// MEASURED:         hexir.all_reduce "sum" %{{.+}} : tensor<8x4xf32>
// MEASURED-COUNT-8: hexir.all_reduce "sum" %{{.+}} : tensor<256x2048xf32>
// MEASURED:         hexir.all_reduce "sum" %{{.+}} : tensor<2048x2048xf32>
func.func @model_whole(%x: tensor<8x16xf32> {hexir.sharding = #hexir.sharding<split 1>},
                       %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 0>},
                       %a: tensor<2048x2048xf32> {hexir.sharding = #hexir.sharding<split 1>},
                       %b: tensor<2048x2048xf32> {hexir.sharding = #hexir.sharding<split 0>},
                       %c: tensor<2048x64xf32> {hexir.sharding = #hexir.sharding<split 1>},
                       %d: tensor<64x2048xf32> {hexir.sharding = #hexir.sharding<split 0>})
    -> (tensor<8x4xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<2048x2048xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %big = linalg.matmul ins(%a, %b : tensor<2048x2048xf32>, tensor<2048x2048xf32>) outs(%z2 : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %one = linalg.matmul {hexir.collective_chunks = 1 : i64}
      ins(%c, %d : tensor<2048x64xf32>, tensor<64x2048xf32>) outs(%z2 : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  return %y, %big, %one : tensor<8x4xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>
}
