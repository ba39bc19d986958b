// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// codegen::LowerConstantPadsToCopies (passes/codegen/CPUConstantPad.h): a constant pad in the
// ONNX importer's form (clamped coordinates, the source's bounds as the condition) becomes a
// fill of the output and a copy of the source into its interior (two loop nests of plain
// stores, which LLVM vectorizes): no per-element select of the value remains. The fill runs
// as one loop over the output's 3 x 8 x 40 elements (CPUCollapseContiguousLoops.h,
// CollapseDenseFills; as four nested loops LLVM vectorized a 34-wide plane across its rows
// with scatters, 9.5 us for ShuffleNet's max-pool pad against 1.9).
// CHECK-LABEL: hexir.executable @importer_pad
// CHECK:         %[[ALL:.+]] = llvm.mlir.constant(960 : index) : i64
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         ^bb1(%[[I:.+]]: i64):
// CHECK-NEXT:      llvm.icmp "slt" %[[I]], %[[ALL]] : i64
// CHECK:         llvm.getelementptr inbounds|nuw %{{.+}}[%[[I]]]
// CHECK-NEXT:    llvm.store {{.*}} : f32, !llvm.ptr
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.load {{.*}} -> f32
// CHECK-NEXT:    llvm.getelementptr
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.store {{.*}} : f32, !llvm.ptr
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.return
hexir.executable @importer_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @importer_pad(%x: tensor<1x3x5x37xf32>, %o: tensor<1x3x8x40xf32>, %id: index) -> tensor<1x3x8x40xf32> {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c5 = arith.constant 5 : index
      %c37 = arith.constant 37 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%o : tensor<1x3x8x40xf32>) {
      ^bb0(%out: f32):
        %c0 = arith.constant 0 : index
        %one = arith.constant 1 : index
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %s2 = arith.subi %i2, %c1 : index
        %l2 = arith.subi %c5, %one : index
        %m2 = arith.maxsi %s2, %c0 : index
        %a2 = arith.minsi %m2, %l2 : index
        %g2 = arith.cmpi sge, %s2, %c0 : index
        %t2 = arith.cmpi slt, %s2, %c5 : index
        %v2 = arith.andi %g2, %t2 : i1
        %i3 = linalg.index 3 : index
        %s3 = arith.subi %i3, %c2 : index
        %l3 = arith.subi %c37, %one : index
        %m3 = arith.maxsi %s3, %c0 : index
        %a3 = arith.minsi %m3, %l3 : index
        %g3 = arith.cmpi sge, %s3, %c0 : index
        %t3 = arith.cmpi slt, %s3, %c37 : index
        %v3 = arith.andi %g3, %t3 : i1
        %v = arith.andi %v2, %v3 : i1
        %e = tensor.extract %x[%i0, %i1, %a2, %a3] : tensor<1x3x5x37xf32>
        %cst = arith.constant 0.000000e+00 : f32
        %y = arith.select %v, %e, %cst : f32
        linalg.yield %y : f32
      } -> tensor<1x3x8x40xf32>
      return %r : tensor<1x3x8x40xf32>
    }
  }
}

// -----

// dispatch/LowerTensorOps' form of a host tensor.pad (every dim shifted, coordinates selected
// to 0 outside, a constant true opening the condition) is left as it is: LLVM vectorizes it
// (1.7 us where the fill and copy take 2.7 us).
// CHECK-LABEL: hexir.executable @lowered_tensor_pad
// CHECK:         llvm.select {{.*}} : i1, f32
hexir.executable @lowered_tensor_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @lowered_tensor_pad(%x: tensor<3x7xf32>, %o: tensor<4x10xf32>, %value: f32, %id: index) -> tensor<4x10xf32> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c7 = arith.constant 7 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<4x10xf32>) {
      ^bb0(%out: f32):
        %true = arith.constant true
        %zero = arith.constant 0 : index
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %s0 = arith.subi %i0, %c0 : index
        %g0 = arith.cmpi sge, %s0, %zero : index
        %t0 = arith.cmpi slt, %s0, %c3 : index
        %b0 = arith.andi %g0, %t0 : i1
        %v0 = arith.andi %true, %b0 : i1
        %s1 = arith.subi %i1, %c1 : index
        %g1 = arith.cmpi sge, %s1, %zero : index
        %t1 = arith.cmpi slt, %s1, %c7 : index
        %b1 = arith.andi %g1, %t1 : i1
        %v = arith.andi %v0, %b1 : i1
        %a0 = arith.select %v, %s0, %zero : index
        %a1 = arith.select %v, %s1, %zero : index
        %e = tensor.extract %x[%a0, %a1] : tensor<3x7xf32>
        %y = arith.select %v, %e, %value : f32
        linalg.yield %y : f32
      } -> tensor<4x10xf32>
      return %r : tensor<4x10xf32>
    }
  }
}

// -----

// A condition that is not the source's bounds (the upper check of dim 1 is missing: past the
// source the clamped last column is repeated) is no constant pad: the select stays.
// CHECK-LABEL: hexir.executable @edge_repeat
// CHECK:         llvm.select {{.*}} : i1, f32
hexir.executable @edge_repeat attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @edge_repeat(%x: tensor<3x7xf32>, %o: tensor<3x10xf32>, %id: index) -> tensor<3x10xf32> {
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<3x10xf32>) {
      ^bb0(%out: f32):
        %c0 = arith.constant 0 : index
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %s1 = arith.subi %i1, %c1 : index
        %m1 = arith.maxsi %s1, %c0 : index
        %a1 = arith.minsi %m1, %c6 : index
        %g1 = arith.cmpi sge, %s1, %c0 : index
        %e = tensor.extract %x[%i0, %a1] : tensor<3x7xf32>
        %cst = arith.constant 0.000000e+00 : f32
        %y = arith.select %g1, %e, %cst : f32
        linalg.yield %y : f32
      } -> tensor<3x10xf32>
      return %r : tensor<3x10xf32>
    }
  }
}

// -----

// An end-only pad (a ceil-mode max pool's last window past an even plane) whose lows of 0
// canonicalization folded away: the clamp reads max(i, 0) of the index itself. The fill and
// the copy all the same.
// CHECK-LABEL: hexir.executable @end_only_pad
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.return
hexir.executable @end_only_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @end_only_pad(%x: tensor<1x4x6x6xf32>, %o: tensor<1x4x7x7xf32>, %id: index) -> tensor<1x4x7x7xf32> {
      %c0 = arith.constant 0 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %cst = arith.constant 0xFF800000 : f32
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%o : tensor<1x4x7x7xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %m2 = arith.maxsi %i2, %c0 : index
        %a2 = arith.minsi %m2, %c5 : index
        %g2 = arith.cmpi sge, %i2, %c0 : index
        %t2 = arith.cmpi slt, %i2, %c6 : index
        %v2 = arith.andi %g2, %t2 : i1
        %i3 = linalg.index 3 : index
        %m3 = arith.maxsi %i3, %c0 : index
        %a3 = arith.minsi %m3, %c5 : index
        %g3 = arith.cmpi sge, %i3, %c0 : index
        %t3 = arith.cmpi slt, %i3, %c6 : index
        %v3 = arith.andi %g3, %t3 : i1
        %v = arith.andi %v2, %v3 : i1
        %e = tensor.extract %x[%i0, %i1, %a2, %a3] : tensor<1x4x6x6xf32>
        %y = arith.select %v, %e, %cst : f32
        linalg.yield %y : f32
      } -> tensor<1x4x7x7xf32>
      return %r : tensor<1x4x7x7xf32>
    }
  }
}
