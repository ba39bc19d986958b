// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// codegen::LowerDynamicPadsToCopies (passes/codegen/CPUDynamicPad.h): the ONNX importer's pad
// in a dynamic export, its extents kernel arguments (%h, %w) and split over workgroups along
// the batch (the tile's batch position an affine.apply of the tile offset), becomes a fill of
// the tile and a copy of the source: no per-element select of the value, and no bound check
// of the clamped read (a call to the kernel error record) remains. The fill of the tile (a
// strided view: a generic, one run where it is dense at run time) and the copy's rows, of
// run-time length, are whole vectors and then one masked vector (CPUCollapseContiguousLoops.h:
// a copy's run of run-time length).
// CHECK-LABEL: hexir.executable @dynamic_tiled_pad
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK-NOT:     hexir_kernel_error
// CHECK:         llvm.store {{.*}} : vector<{{[0-9]+}}xf32>, !llvm.ptr
// CHECK:         llvm.intr.masked.store
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.load {{.*}} -> vector<{{[0-9]+}}xf32>
// CHECK-NEXT:    llvm.getelementptr
// CHECK:         llvm.store {{.*}} : vector<{{[0-9]+}}xf32>, !llvm.ptr
// CHECK:         llvm.intr.masked.load
// CHECK:         llvm.intr.masked.store
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.return
hexir.executable @dynamic_tiled_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dynamic_tiled_pad(%x: tensor<?x16x?x?xf32>, %o: tensor<?x16x?x?xf32>, %h: index, %w: index, %id: index) -> tensor<?x16x?x?xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %n = tensor.dim %o, %c0 : tensor<?x16x?x?xf32>
      %oh = tensor.dim %o, %c2 : tensor<?x16x?x?xf32>
      %ow = tensor.dim %o, %c3 : tensor<?x16x?x?xf32>
      %first = arith.muli %id, %c1 : index
      %end = arith.addi %first, %c1 : index
      %last = arith.minsi %end, %n : index
      %r = scf.for %i = %first to %last step %c1 iter_args(%acc = %o) -> (tensor<?x16x?x?xf32>) {
        %tile = tensor.extract_slice %acc[%i, 0, 0, 0] [1, 16, %oh, %ow] [1, 1, 1, 1] : tensor<?x16x?x?xf32> to tensor<1x16x?x?xf32>
        %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%tile : tensor<1x16x?x?xf32>) {
        ^bb0(%out: f32):
          %i0 = linalg.index 0 : index
          %n0 = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%i0]
          %i1 = linalg.index 1 : index
          %i2 = linalg.index 2 : index
          %s2 = arith.subi %i2, %c1 : index
          %l2 = arith.subi %h, %c1 : index
          %m2 = arith.maxsi %s2, %c0 : index
          %a2 = arith.minsi %m2, %l2 : index
          %g2 = arith.cmpi sge, %s2, %c0 : index
          %t2 = arith.cmpi slt, %s2, %h : index
          %v2 = arith.andi %g2, %t2 : i1
          %i3 = linalg.index 3 : index
          %s3 = arith.subi %i3, %c1 : index
          %l3 = arith.subi %w, %c1 : index
          %m3 = arith.maxsi %s3, %c0 : index
          %a3 = arith.minsi %m3, %l3 : index
          %g3 = arith.cmpi sge, %s3, %c0 : index
          %t3 = arith.cmpi slt, %s3, %w : index
          %v3 = arith.andi %g3, %t3 : i1
          %v = arith.andi %v2, %v3 : i1
          %e = tensor.extract %x[%n0, %i1, %a2, %a3] : tensor<?x16x?x?xf32>
          %y = arith.select %v, %e, %cst : f32
          linalg.yield %y : f32
        } -> tensor<1x16x?x?xf32>
        %put = tensor.insert_slice %p into %acc[%i, 0, 0, 0] [1, 16, %oh, %ow] [1, 1, 1, 1] : tensor<1x16x?x?xf32> into tensor<?x16x?x?xf32>
        scf.yield %put : tensor<?x16x?x?xf32>
      }
      return %r : tensor<?x16x?x?xf32>
    }
  }
}

// -----

// A clamp to another bound than the condition's extent (here E - 2 against E) is not a pad:
// the generic stays, with its per-element select and the clamped read's bound check.
// CHECK-LABEL: hexir.executable @not_a_pad
// CHECK:         llvm.select {{.*}} : i1, f32
hexir.executable @not_a_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @not_a_pad(%x: tensor<?xf32>, %o: tensor<?xf32>, %n: index, %id: index) -> tensor<?xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%o : tensor<?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %s0 = arith.subi %i0, %c2 : index
        %l0 = arith.subi %n, %c2 : index
        %m0 = arith.maxsi %s0, %c0 : index
        %a0 = arith.minsi %m0, %l0 : index
        %g0 = arith.cmpi sge, %s0, %c0 : index
        %t0 = arith.cmpi slt, %s0, %n : index
        %v0 = arith.andi %g0, %t0 : i1
        %e = tensor.extract %x[%a0] : tensor<?xf32>
        %y = arith.select %v0, %e, %cst : f32
        linalg.yield %y : f32
      } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}

// -----

// A dynamic dim that is not padded (read at its index) and a padded static one: the fill and
// the copy (this was cpu_constant_pad.mlir's case of a pad left per element).
// CHECK-LABEL: hexir.executable @dynamic_pad
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK:         llvm.return
hexir.executable @dynamic_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dynamic_pad(%x: tensor<?x7xf32>, %o: tensor<?x9xf32>, %id: index) -> tensor<?x9xf32> {
      %c1 = arith.constant 1 : index
      %c7 = arith.constant 7 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<?x9xf32>) {
      ^bb0(%out: f32):
        %c0 = arith.constant 0 : index
        %one = arith.constant 1 : index
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %s1 = arith.subi %i1, %c1 : index
        %l1 = arith.subi %c7, %one : index
        %m1 = arith.maxsi %s1, %c0 : index
        %a1 = arith.minsi %m1, %l1 : index
        %g1 = arith.cmpi sge, %s1, %c0 : index
        %t1 = arith.cmpi slt, %s1, %c7 : index
        %v = arith.andi %g1, %t1 : i1
        %e = tensor.extract %x[%i0, %a1] : tensor<?x7xf32>
        %cst = arith.constant 0.000000e+00 : f32
        %y = arith.select %v, %e, %cst : f32
        linalg.yield %y : f32
      } -> tensor<?x9xf32>
      return %r : tensor<?x9xf32>
    }
  }
}

// -----

// An end-only pad (a dynamic export's ceil-mode max pool: the -inf elements its last window
// may reach past the input), whose low of 0 canonicalization folded away: the clamp reads
// max(i, 0) of the index itself. Still the fill and the copy.
// CHECK-LABEL: hexir.executable @end_only_pad
// CHECK-NOT:     llvm.select {{.*}} : i1, f32
// CHECK-NOT:     hexir_kernel_error
// CHECK:         llvm.return
hexir.executable @end_only_pad attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @end_only_pad(%x: tensor<?x8x?x?xf32>, %o: tensor<?x8x?x?xf32>, %h: index, %w: index, %id: index) -> tensor<?x8x?x?xf32> {
      %cst = arith.constant 0xFF800000 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%o : tensor<?x8x?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %l2 = arith.subi %h, %c1 : index
        %m2 = arith.maxsi %i2, %c0 : index
        %a2 = arith.minsi %m2, %l2 : index
        %g2 = arith.cmpi sge, %i2, %c0 : index
        %t2 = arith.cmpi slt, %i2, %h : index
        %v2 = arith.andi %g2, %t2 : i1
        %i3 = linalg.index 3 : index
        %l3 = arith.subi %w, %c1 : index
        %m3 = arith.maxsi %i3, %c0 : index
        %a3 = arith.minsi %m3, %l3 : index
        %g3 = arith.cmpi sge, %i3, %c0 : index
        %t3 = arith.cmpi slt, %i3, %w : index
        %v3 = arith.andi %g3, %t3 : i1
        %v = arith.andi %v2, %v3 : i1
        %e = tensor.extract %x[%i0, %i1, %a2, %a3] : tensor<?x8x?x?xf32>
        %y = arith.select %v, %e, %cst : f32
        linalg.yield %y : f32
      } -> tensor<?x8x?x?xf32>
      return %r : tensor<?x8x?x?xf32>
    }
  }
}
