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
// The ABI v1 entry: bindings as pointers, then one i32 per push-constant word
// (s: 1 word, n: 2 words, low first); static descriptors (offset 0, sizes, strides).
// CHECK:         llvm.func @k(%[[A:.+]]: !llvm.ptr {llvm.noalias}, %[[O:.+]]: !llvm.ptr {llvm.noalias}, %[[W0:.+]]: i32, %[[W1:.+]]: i32, %[[W2:.+]]: i32)
// CHECK-SAME:      attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// CHECK-DAG:       %[[S:.+]] = llvm.bitcast %[[W0]] : i32 to f32
// CHECK-DAG:       %[[LO:.+]] = llvm.zext %[[W1]] : i32 to i64
// CHECK-DAG:       %[[HI:.+]] = llvm.zext %[[W2]] : i32 to i64
// CHECK-DAG:       %[[HIS:.+]] = llvm.shl %[[HI]], %{{.+}} : i64
// CHECK-DAG:       %[[N:.+]] = llvm.or %[[LO]], %[[HIS]] : i64
// CHECK-DAG:       %[[Z:.+]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-DAG:       %[[D0:.+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-DAG:       %[[D1:.+]] = llvm.mlir.constant(200 : i64) : i64
// CHECK-DAG:       %[[ONE:.+]] = llvm.mlir.constant(1 : i64) : i64
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
