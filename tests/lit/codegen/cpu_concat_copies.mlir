// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// codegen::LowerConcatenationsToCopies (passes/codegen/CPUConcatCopies.h): the ONNX importer's
// Concat of two 48-channel sources of run-time batch and plane (a select on the channel
// position between clamped, bound-checked reads) becomes, behind a run-time test that the
// offsets are the running sums of the sizes from 0 and each source holds the output's
// positions, one copy per source (no per-element select); the generic stays for the rest.
// CHECK-LABEL: hexir.executable @concat_channels
// CHECK:         llvm.func internal @concat_channels_impl(
// CHECK:           llvm.icmp "eq"
// CHECK:           llvm.icmp "sle"
// CHECK:           llvm.cond_br %{{.+}}, ^[[COPIES:bb[0-9]+]], ^[[GENERIC:bb[0-9]+]]
// CHECK:         ^[[COPIES]]:
// CHECK-NOT:       llvm.select {{.*}} : i1, f32
// CHECK:         ^[[GENERIC]]:
// CHECK:           llvm.select {{.*}} : i1, f32
// CHECK:         llvm.func @concat_channels(
hexir.executable @concat_channels attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @concat_channels(%a: tensor<?x48x?x?xf32>, %b: tensor<?x48x?x?xf32>, %o: tensor<?x96x?x?xf32>, %off0: index, %size: index, %id: index) -> tensor<?x96x?x?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%o : tensor<?x96x?x?xf32>) {
      ^bb0(%out: f32):
        %i0 = linalg.index 0 : index
        %i1 = linalg.index 1 : index
        %i2 = linalg.index 2 : index
        %i3 = linalg.index 3 : index
        %s0 = arith.subi %i1, %off0 : index
        %c1 = arith.constant 1 : index
        %l0 = arith.subi %size, %c1 : index
        %c0 = arith.constant 0 : index
        %m0 = arith.maxsi %s0, %c0 : index
        %a0 = arith.minsi %m0, %l0 : index
        %e0 = tensor.extract %a[%i0, %a0, %i2, %i3] : tensor<?x48x?x?xf32>
        %s1 = arith.subi %i1, %size : index
        %l1 = arith.subi %size, %c1 : index
        %m1 = arith.maxsi %s1, %c0 : index
        %a1 = arith.minsi %m1, %l1 : index
        %e1 = tensor.extract %b[%i0, %a1, %i2, %i3] : tensor<?x48x?x?xf32>
        %ge = arith.cmpi sge, %i1, %size : index
        %v = arith.select %ge, %e1, %e0 : f32
        linalg.yield %v : f32
      } -> tensor<?x96x?x?xf32>
      return %r : tensor<?x96x?x?xf32>
    }
  }
}

// -----

// Sources of run-time extent along the axis (detection scores per pyramid level, a level
// possibly empty): the importer reads each only when its extent is positive (scf.if; the
// clamp would give -1 on an empty source). Guarded reads are copies too.
// CHECK-LABEL: hexir.executable @concat_guarded
// CHECK:         llvm.func internal @concat_guarded_impl(
// CHECK:           llvm.cond_br %{{.+}}, ^[[COPIES:bb[0-9]+]], ^[[GENERIC:bb[0-9]+]]
// CHECK:         ^[[COPIES]]:
// CHECK-NOT:       llvm.select {{.*}} : i1, f32
// CHECK:         ^[[GENERIC]]:
// CHECK:           llvm.select {{.*}} : i1, f32
// CHECK:         llvm.func @concat_guarded(
hexir.executable @concat_guarded attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @concat_guarded(%a: tensor<?xf32>, %b: tensor<?xf32>, %o: tensor<?xf32>, %na: index, %nb: index) -> tensor<?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%o : tensor<?xf32>) {
      ^bb0(%out: f32):
        %i = linalg.index 0 : index
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %zero = arith.constant 0.0 : f32
        %l0 = arith.subi %na, %c1 : index
        %m0 = arith.maxsi %i, %c0 : index
        %a0 = arith.minsi %m0, %l0 : index
        %some0 = arith.cmpi sgt, %na, %c0 : index
        %e0 = scf.if %some0 -> (f32) {
          %x = tensor.extract %a[%a0] : tensor<?xf32>
          scf.yield %x : f32
        } else {
          scf.yield %zero : f32
        }
        %s1 = arith.subi %i, %na : index
        %l1 = arith.subi %nb, %c1 : index
        %m1 = arith.maxsi %s1, %c0 : index
        %a1 = arith.minsi %m1, %l1 : index
        %some1 = arith.cmpi sgt, %nb, %c0 : index
        %e1 = scf.if %some1 -> (f32) {
          %x = tensor.extract %b[%a1] : tensor<?xf32>
          scf.yield %x : f32
        } else {
          scf.yield %zero : f32
        }
        %ge = arith.cmpi sge, %i, %na : index
        %v = arith.select %ge, %e1, %e0 : f32
        linalg.yield %v : f32
      } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}
