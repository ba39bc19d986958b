// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-convert-to-vm

// The VM lowering only lowers the schedule: a dispatch must be in an execution region.
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
}
func.func @bare(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{hexir.dispatch outside a hexir.execute region (run hexir-form-execution-regions first)}}
  %0 = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
