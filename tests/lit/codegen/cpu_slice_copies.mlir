// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// codegen::LowerSlicesToCopies (passes/codegen/CPUSliceCopies.h): the ONNX importer's Split of
// a run-time batch and plane (a generic reading its source at the output's position, channels
// offset by 48) becomes, behind a run-time test that the source holds the slice, one copy:
// where the runs are whole at run time, two loops (batch, run) instead of four; the generic
// stays for the rest.
// CHECK-LABEL: hexir.executable @split_channels
// CHECK:         llvm.func internal @split_channels_impl(
// CHECK-COUNT-3:   llvm.icmp "sle"
// CHECK:           llvm.cond_br %{{.+}}, ^[[COPY:bb[0-9]+]], ^[[GENERIC:bb[0-9]+]]
// CHECK:         ^[[COPY]]:
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.cond_br %{{.+}}, ^[[DENSE:bb[0-9]+]], ^{{bb[0-9]+}}
// CHECK:         ^[[DENSE]]:
// CHECK:           llvm.cond_br
// CHECK:           llvm.cond_br
// CHECK:           llvm.load
// CHECK-NEXT:      llvm.mul
// CHECK-NEXT:      llvm.add
// CHECK-NEXT:      llvm.getelementptr
// CHECK-NEXT:      llvm.store
// CHECK:         ^[[GENERIC]]:
// CHECK:         llvm.func @split_channels(
hexir.executable @split_channels attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @split_channels(%a: tensor<?x96x?x?xf32>, %o: tensor<?x48x?x?xf32>, %id: index) -> tensor<?x48x?x?xf32> {
      %c48 = arith.constant 48 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%o : tensor<?x48x?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %c = arith.addi %i1, %c48 : index
        %e = tensor.extract %a[%i0, %c, %i2, %i3] : tensor<?x96x?x?xf32>
        linalg.yield %e : f32
      } -> tensor<?x48x?x?xf32>
      return %r : tensor<?x48x?x?xf32>
    }
  }
}

// -----

// A crop at offsets the host computes (kernel arguments): each is also tested to be
// non-negative, and its end against the source's extent.
// CHECK-LABEL: hexir.executable @crop
// CHECK:         llvm.func internal @crop_impl(
// CHECK:           llvm.icmp "sge"
// CHECK:           llvm.icmp "sle"
// CHECK:           llvm.icmp "sge"
// CHECK:           llvm.icmp "sle"
// CHECK:           llvm.cond_br
// CHECK:         llvm.func @crop(
hexir.executable @crop attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @crop(%a: tensor<?x?xf32>, %o: tensor<?x?xf32>, %top: index, %left: index, %id: index) -> tensor<?x?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %r0 = arith.addi %i0, %top : index
        %r1 = arith.addi %left, %i1 : index
        %e = tensor.extract %a[%r0, %r1] : tensor<?x?xf32>
        linalg.yield %e : f32
      } -> tensor<?x?xf32>
      return %r : tensor<?x?xf32>
    }
  }
}

// -----

// Static extents: LLVM copies the loop nest as it is (no test, no branch).
// CHECK-LABEL: hexir.executable @static_split
// CHECK:         llvm.func internal @static_split_impl(
// CHECK-NOT:       llvm.icmp "sle"
// CHECK:         llvm.func @static_split(
hexir.executable @static_split attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @static_split(%a: tensor<1x96x4x4xf32>, %o: tensor<1x48x4x4xf32>, %id: index) -> tensor<1x48x4x4xf32> {
      %c48 = arith.constant 48 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%o : tensor<1x48x4x4xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %c = arith.addi %i1, %c48 : index
        %e = tensor.extract %a[%i0, %c, %i2, %i3] : tensor<1x96x4x4xf32>
        linalg.yield %e : f32
      } -> tensor<1x48x4x4xf32>
      return %r : tensor<1x48x4x4xf32>
    }
  }
}
