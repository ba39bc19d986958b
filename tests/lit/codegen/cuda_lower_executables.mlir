// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s

// y = exp(x * s) + n over 2x200 elements, s: f32 and n: i64 captured scalars.
// The body moves into a gpu.module with the NVVM target and becomes the internal
// @k_impl (memref descriptors, noalias aligned pointers); threads past the 400 points
// branch to the return; math.exp becomes libdevice's __nv_expf.
// CHECK-LABEL: hexir.executable @k
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:       gpu.module @k [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
// CHECK:         llvm.func @__nv_expf(f32) -> f32
// CHECK:         llvm.func internal @k_impl(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias}, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias}, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: f32, %{{.+}}: i64)
// CHECK-DAG:       %[[C400:.+]] = llvm.mlir.constant(400 : i32) : i32
// CHECK-DAG:       nvvm.read.ptx.sreg.tid.x : i32
// CHECK-DAG:       nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK:           %[[IN:.+]] = llvm.icmp "ult" %{{.+}}, %[[C400]] : i32
// CHECK:           llvm.cond_br %[[IN]]
// CHECK:           llvm.urem
// CHECK:           llvm.udiv
// CHECK:           llvm.call @__nv_expf
// CHECK:           llvm.store
// CHECK-NOT:       llvm.call @malloc
// The ABI v1 entry: one pointer per binding, then the parameter buffer (present because
// of the scalars): i64 words in kernel-argument order, s (f32 bits, low 32) then n.
// Static descriptors: offset 0, sizes, row-major strides. No program says which bindings
// are read-only, so none keeps noalias on the entry (no ld.global.nc: a programmatic
// prerequisite may still be writing them); the parameter buffer does (the host writes it).
// CHECK:         llvm.func @k(%[[A:.+]]: !llvm.ptr {llvm.align = 16 : i64}, %[[O:.+]]: !llvm.ptr {llvm.align = 16 : i64}, %[[P:.+]]: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias})
// CHECK-SAME:      attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// Programmatic dependent launch: dependents may launch once every block started; nothing is
// read (not even the parameter buffer) before the prerequisite kernels completed.
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// CHECK-DAG:       %[[Z:.+]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-DAG:       %[[D0:.+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-DAG:       %[[D1:.+]] = llvm.mlir.constant(200 : i64) : i64
// CHECK-DAG:       %[[P0:.+]] = llvm.getelementptr %[[P]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-DAG:       %[[W0:.+]] = llvm.load %[[P0]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-DAG:       %[[LOW:.+]] = llvm.trunc %[[W0]] : i64 to i32
// CHECK-DAG:       %[[S:.+]] = llvm.bitcast %[[LOW]] : i32 to f32
// CHECK-DAG:       %[[P1:.+]] = llvm.getelementptr %[[P]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-DAG:       %[[N:.+]] = llvm.load %[[P1]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:           llvm.call @k_impl(%[[A]], %[[A]], %[[Z]], %[[D0]], %[[D1]], %{{.+}}, %{{.+}}, %[[O]], %[[O]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[S]], %[[N]])
// CHECK-NEXT:      llvm.return
hexir.executable @k {
  builtin.module {
    func.func @k(%a: tensor<2x200xf32>, %o: tensor<2x200xf32>, %s: f32, %n: i64) -> tensor<2x200xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<2x200xf32>) outs(%o : tensor<2x200xf32>) {
      ^bb0(%x: f32, %y: f32):
        %m = arith.mulf %x, %s : f32
        %e = math.exp %m : f32
        %f = arith.sitofp %n : i64 to f32
        %z = arith.addf %e, %f : f32
        linalg.yield %z : f32
      } -> tensor<2x200xf32>
      return %r : tensor<2x200xf32>
    }
  }
}
