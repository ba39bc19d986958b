// RUN: hexir-compile %s --target=cpu --chunk-collectives -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=QUIET --allow-empty
// RUN: hexir-compile %s --target=cpu --chunk-collectives --remarks -o %t2.vmfb 2>&1 | FileCheck %s --check-prefix=REMARKS
// RUN: not hexir-compile %s --target=tpu -o %t3.vmfb 2>&1 | FileCheck %s --check-prefix=ERROR

// hexir-compile prints the passes' remarks (here the partitioner's cost model for a
// row-parallel matmul) only with --remarks; by default stderr has errors and warnings only,
// and errors are still printed.
// QUIET-NOT: remark
// QUIET-NOT: note
// REMARKS: remark: hexir-partition: row-parallel pipeline 64x16x48: {{.*}}: 1 block(s)
// ERROR: error: unsupported target 'tpu'
func.func @row_parallel(%x: tensor<64x32xf32> {hexir.sharding = #hexir.sharding<split 1>},
                        %w: tensor<32x48xf32> {hexir.sharding = #hexir.sharding<split 0>})
    -> tensor<64x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %y = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x48xf32>) outs(%z : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %y : tensor<64x48xf32>
}
