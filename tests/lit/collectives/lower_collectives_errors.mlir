// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-convert-to-vm

func.func @outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{collective outside a hexir.execute region (run hexir-form-execution-regions first)}}
  %s = hexir.all_reduce "sum" %x : tensor<4xf32>
  return %s : tensor<4xf32>
}
