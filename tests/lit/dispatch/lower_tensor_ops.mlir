// RUN: hexir-opt %s --hexir-verify-input --hexir-form-dispatch-regions | FileCheck %s

// Host extract_slice / insert_slice / pad / from_elements become generics over their
// results that read the source with tensor.extract at coordinates computed from
// linalg.index (offsets are host values captured by the region; coordinates from dynamic
// offsets are clamped into the source, so a bad offset never reads outside the buffer).
// CHECK-LABEL: func.func @slices
// CHECK-SAME:      (%[[A:.+]]: tensor<4x6xf32>, %[[OFF:.+]]: index, %[[U:.+]]: tensor<2x3xf32>
// CHECK:         hexir.dispatch_region -> (tensor<2x3xf32>)
// CHECK:           linalg.generic
// CHECK:             %[[I1:.+]] = linalg.index 1
// CHECK:             %[[C:.+]] = arith.addi %[[I1]], %[[OFF]]
// CHECK:             %[[MIN:.+]] = arith.minsi %[[C]], %{{.+}}
// CHECK:             %[[CL:.+]] = arith.maxsi %[[MIN]], %{{.+}}
// CHECK:             tensor.extract %[[A]][%{{.+}}, %[[CL]]]
// CHECK:         hexir.dispatch_region -> (tensor<4x6xf32>)
// CHECK:           linalg.generic {{.*}} ins(%[[A]] : tensor<4x6xf32>)
// CHECK:             arith.cmpi sge
// CHECK:             tensor.extract %[[U]]
// CHECK:             arith.select
// CHECK:         hexir.dispatch_region -> (tensor<6x7xf32>)
// CHECK:           tensor.extract %[[A]]
// CHECK:           arith.select
// CHECK:         hexir.dispatch_region -> (tensor<2x2xf32>)
// CHECK:           arith.select
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor.insert_slice
// CHECK-NOT:     tensor.pad
// CHECK-NOT:     tensor.from_elements
func.func @slices(%a: tensor<4x6xf32>, %off: index, %u: tensor<2x3xf32>, %x: f32, %y: f32) -> (tensor<2x3xf32>, tensor<4x6xf32>, tensor<6x7xf32>, tensor<2x2xf32>) {
  %s = tensor.extract_slice %a[1, %off] [2, 3] [1, 1] : tensor<4x6xf32> to tensor<2x3xf32>
  %i = tensor.insert_slice %u into %a[%off, 2] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x6xf32>
  %z = arith.constant 9.0 : f32
  %p = tensor.pad %a low[1, 0] high[1, 1] {
  ^bb0(%p0: index, %p1: index):
    tensor.yield %z : f32
  } : tensor<4x6xf32> to tensor<6x7xf32>
  %f = tensor.from_elements %x, %y, %y, %x : tensor<2x2xf32>
  return %s, %i, %p, %f : tensor<2x3xf32>, tensor<4x6xf32>, tensor<6x7xf32>, tensor<2x2xf32>
}

// A 0-element from_elements is an empty tensor (no dispatch).
// CHECK-LABEL: func.func @no_elements
// CHECK-NOT:     hexir.dispatch_region
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<0xf32>
// CHECK:         return %[[E]]
func.func @no_elements() -> tensor<0xf32> {
  %f = tensor.from_elements : tensor<0xf32>
  return %f : tensor<0xf32>
}
