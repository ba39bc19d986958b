// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// The kernel becomes an internal `_impl` taking memref descriptors; the ABI entry loads
// binding_ptrs (offset 32) from the dispatch state and workgroup_id[0] from the workgroup
// state. Scalars come from the parameter buffer bound after the memrefs (binding 2 here),
// one i64 word each (an f32 is the low 32 bits), not from push constants.
// CHECK-LABEL: hexir.executable @k
// CHECK:         llvm.func internal @k_impl(
// CHECK:         llvm.func @k(%[[D:.+]]: !llvm.ptr, %[[W:.+]]: !llvm.ptr) -> i32
// CHECK:           %[[BP:.+]] = llvm.getelementptr %[[D]][32] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           %[[B:.+]] = llvm.load %[[BP]] : !llvm.ptr -> !llvm.ptr
// CHECK:           llvm.getelementptr %[[B]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           llvm.getelementptr %[[B]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           %[[PP:.+]] = llvm.getelementptr %[[B]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           %[[P:.+]] = llvm.load %[[PP]] : !llvm.ptr -> !llvm.ptr
// CHECK:           %[[PC:.+]] = llvm.getelementptr %[[P]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           %[[WORD:.+]] = llvm.load %[[PC]] : !llvm.ptr -> i64
// CHECK:           %[[BITS:.+]] = llvm.trunc %[[WORD]] : i64 to i32
// CHECK:           llvm.bitcast %[[BITS]] : i32 to f32
// CHECK:           %[[IDP:.+]] = llvm.getelementptr %[[W]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           llvm.load %[[IDP]] : !llvm.ptr -> i32
// CHECK:           llvm.call @k_impl(
// CHECK:           llvm.return %{{.+}} : i32
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @k(%a: tensor<4xf32>, %o: tensor<4xf32>, %s: f32, %id: index) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%o : tensor<4xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = arith.mulf %x, %s : f32
        linalg.yield %z : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}

// -----

// Each memref's aligned pointer is noalias (second pointer of each descriptor).
// CHECK-LABEL: hexir.executable @mm
// CHECK:         llvm.func internal @mm_impl(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias}, {{.*}}, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias}, {{.*}}, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr {llvm.noalias},
hexir.executable @mm attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %o: tensor<4x16xf32>, %id: index) -> tensor<4x16xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
      return %m : tensor<4x16xf32>
    }
  }
}

// -----

// Dynamic dims come from the parameter buffer bound after the memrefs (binding 2), one i64
// word per dynamic dim in argument order; strides are computed at run time.
// CHECK-LABEL: hexir.executable @dyn
// CHECK:         llvm.func @dyn(%[[D:.+]]: !llvm.ptr, %{{.+}}: !llvm.ptr) -> i32
// CHECK:           %[[BP:.+]] = llvm.getelementptr %[[D]][32]
// CHECK:           %[[B:.+]] = llvm.load %[[BP]] : !llvm.ptr -> !llvm.ptr
// CHECK:           %[[PP:.+]] = llvm.getelementptr %[[B]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           %[[P:.+]] = llvm.load %[[PP]] : !llvm.ptr -> !llvm.ptr
// CHECK:           llvm.getelementptr %[[P]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           llvm.getelementptr %[[B]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           llvm.getelementptr %[[P]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:           llvm.call @dyn_impl(
hexir.executable @dyn attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @dyn(%a: tensor<?xf32>, %o: tensor<?xf32>, %id: index) -> tensor<?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = arith.negf %x : f32
        linalg.yield %z : f32
      } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}

// -----

// bf16 arithmetic runs in f32 and the bf16 conversions are integer code: no fptrunc to bf16
// is left for LLVM (it would call compiler-rt's __truncsfbf2, which the kernel cannot resolve).
// The truncation rounds to nearest even (adds 0x7fff plus the kept lowest bit) and selects the
// quiet NaN 0x7fc0 for NaN inputs.
// CHECK-LABEL: hexir.executable @bf16_add
// CHECK:         llvm.func internal @bf16_add_impl(
// CHECK-NOT:       llvm.fp{{ext|trunc}}
// CHECK:           llvm.mlir.constant(32767 : i32)
// CHECK-NOT:       llvm.fp{{ext|trunc}}
// CHECK:           %[[SUM:.+]] = llvm.fadd %{{.+}}, %{{.+}} : f32
// CHECK:           %[[NAN:.+]] = llvm.fcmp "une" %[[SUM]], %[[SUM]] : f32
// CHECK:           llvm.select %[[NAN]], %{{.+}}, %{{.+}} : i1, i16
// CHECK-NOT:       llvm.fp{{ext|trunc}}
// CHECK:         llvm.func @bf16_add(
hexir.executable @bf16_add attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @bf16_add(%a: tensor<4xbf16>, %b: tensor<4xbf16>, %o: tensor<4xbf16>, %id: index) -> tensor<4xbf16> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xbf16>, tensor<4xbf16>) outs(%o : tensor<4xbf16>) {
      ^bb0(%x: bf16, %y: bf16, %z: bf16):
        %s = arith.addf %x, %y : bf16
        linalg.yield %s : bf16
      } -> tensor<4xbf16>
      return %r : tensor<4xbf16>
    }
  }
}

// -----

// A row reduction along a contiguous input (sums of squares of [rows][in] f16 values: a dot
// product of each row with itself) keeps its reduction innermost and may reassociate it, so
// LLVM vectorizes the sum with several partial accumulators; the f16 widening stays in the
// loop (vcvtph2ps on F16C hosts). (Matvecs take the vector kernel: cpu_matvec_kernel.mlir.)
// CHECK-LABEL: hexir.executable @row_squares_f16
// CHECK:         llvm.func internal @row_squares_f16_impl(
// CHECK:           llvm.fpext %{{.+}} : f16 to f32
// CHECK:           llvm.fmul %{{.+}}, %{{.+}} {fastmathFlags = #llvm.fastmath<contract, reassoc>} : f32
// CHECK:           llvm.fadd %{{.+}}, %{{.+}} {fastmathFlags = #llvm.fastmath<contract, reassoc>} : f32
hexir.executable @row_squares_f16 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @row_squares_f16(%w: tensor<64x768xf16>, %o: tensor<64xf32>, %id: index) -> tensor<64xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]}
          ins(%w : tensor<64x768xf16>) outs(%o : tensor<64xf32>) {
        ^bb0(%b: f16, %acc: f32):
          %bf = arith.extf %b : f16 to f32
          %p = arith.mulf %bf, %bf : f32
          %s = arith.addf %acc, %p : f32
          linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// Matmul's k moves outside j: the innermost loop writes consecutive outputs and is not a
// reduction, so its arithmetic keeps strict IEEE semantics (no fastmath flags).
// CHECK-LABEL: hexir.executable @mm_order
// CHECK:         llvm.func internal @mm_order_impl(
// CHECK-NOT:       fastmath
// CHECK:         llvm.func @mm_order(
hexir.executable @mm_order attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mm_order(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %o: tensor<4x16xf32>, %id: index) -> tensor<4x16xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
      return %m : tensor<4x16xf32>
    }
  }
}

// -----

// A kernel whose result is a buffer it allocated (a mean over a 1 x 1 plane: the divide by
// 1.0 folded away, leaving the sum into a filled tensor.empty) writes the output instead:
// no allocation, the sum's stores go to the output binding (KernelLoweringUtils.cpp,
// FinishBufferizedKernel).
// CHECK-LABEL: hexir.executable @folded_mean
// CHECK-NOT:     llvm.call @malloc
// CHECK:         llvm.func internal @folded_mean_impl(%[[X:[^:]+]]: !llvm.ptr, %[[XA:[^:]+]]: !llvm.ptr {llvm.noalias}, {{.*}}, %[[O:[^:]+]]: !llvm.ptr, %[[OA:[^:]+]]: !llvm.ptr {llvm.noalias},
// CHECK:           %[[AT:.+]] = llvm.getelementptr inbounds|nuw %[[OA]][%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:           llvm.store %{{.+}}, %[[AT]] : f32, !llvm.ptr
// CHECK:           llvm.fadd
// CHECK:           llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr
// CHECK:         llvm.func @folded_mean(
hexir.executable @folded_mean attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @folded_mean(%x: tensor<2x13x1x1xf32>, %o: tensor<2x13xf32>, %id: index) -> tensor<2x13xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<2x13xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x13xf32>) -> tensor<2x13xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x13x1x1xf32>) outs(%z : tensor<2x13xf32>) {
      ^bb0(%v: f32, %acc: f32):
        %a = arith.addf %acc, %v : f32
        linalg.yield %a : f32
      } -> tensor<2x13xf32>
      return %s : tensor<2x13xf32>
    }
  }
}
