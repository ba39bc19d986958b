// RUN: hexir-opt %s -split-input-file -verify-diagnostics --hexir-form-execution-regions --hexir-schedule-concurrency=mode=serial --hexir-elide-timepoints --hexir-convert-to-vm

// expected-error @+1 {{hexir.workgroup_count_dynamic must be {extent_words = array<i64: words >= 0>, extent_factor >= 0, tile >= 1, 1 <= limit < 2^31}}}
hexir.executable @k attributes {hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 0>, limit = 64 : i64, tile = 0 : i64}} {
}
func.func @zero_tile(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

hexir.executable @k attributes {hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 2>, limit = 64 : i64, tile = 32 : i64}} {
}
func.func @missing_word(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  // expected-error @+1 {{workgroup count reads parameter word 2 but the dispatch has 2}}
  %0 = hexir.dispatch @k(%a) dims(%n) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

hexir.executable @k {
}
func.func @no_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{executable has no hexir.workgroup_count (run codegen first)}}
  %0 = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
