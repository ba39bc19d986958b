// RUN: hexir-opt %s --hexir-dissolve-dispatch-groups="kinds=prompt_attention" | FileCheck %s
// RUN: hexir-opt %s --hexir-dissolve-dispatch-groups="kinds=prompt_attention" --hexir-form-dispatch-regions | FileCheck %s --check-prefix=REGIONS

// The marks of the listed kinds go (also a call site's renamed instance, "KIND.INSTANCE_cN");
// other groups keep theirs. Then the dissolved generics form regions as unmarked ones (here
// one: sqrt fused into exp's region as its elementwise consumer), the kept group its own.
// CHECK-LABEL: func.func @groups
// CHECK:         linalg.generic
// CHECK-NOT:       hexir.dispatch_group
// CHECK-SAME:      ins(%arg0
// CHECK:         linalg.generic
// CHECK-NOT:       hexir.dispatch_group
// CHECK-SAME:      ins(%{{.+}} :
// CHECK:         linalg.generic
// CHECK-SAME:      hexir.dispatch_group = "decode_attention.7"
// CHECK:         linalg.generic
// CHECK-SAME:      hexir.dispatch_group = "decode_attention.7"
// REGIONS-LABEL: func.func @groups
// REGIONS:         hexir.dispatch_region
// REGIONS:           math.exp
// REGIONS:           math.sqrt
// REGIONS:         }
// REGIONS-NOT:     hexir.dispatch_group
// REGIONS:         hexir.dispatch_region
// REGIONS:           math.exp
// REGIONS:           math.sqrt
// REGIONS:         } {hexir.dispatch_group = "decode_attention"}
#id = affine_map<(i) -> (i)>
func.func @groups(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], hexir.dispatch_group = "prompt_attention.3"}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], hexir.dispatch_group = "prompt_attention.3_c1"}
      ins(%0 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.sqrt %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], hexir.dispatch_group = "decode_attention.7"}
      ins(%b : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"], hexir.dispatch_group = "decode_attention.7"}
      ins(%2 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.sqrt %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %1, %3 : tensor<8xf32>, tensor<8xf32>
}
