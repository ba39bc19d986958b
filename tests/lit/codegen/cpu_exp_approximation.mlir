// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables --cpu-short-run-positions=1 | FileCheck %s

// codegen::PopulateExpApproximation (passes/codegen/CPUExpApproximation.h): an f32 math.exp
// becomes x clamped to [-88, 89] (NaN kept: unordered compares), t = (x log2(e) - 0.5) +
// 1.5 * 2^23 and n = t - 1.5 * 2^23 (n = floor(x log2(e)), no floor or float-to-int
// conversion), r = x - n ln2 in two FMAs, a degree-5 polynomial (five FMAs), and 2^n from
// t's bits shifted by 23 plus 127 << 23, multiplied.
// CHECK-LABEL: hexir.executable @exp
// CHECK:         llvm.fcmp "uge"
// CHECK:         llvm.fcmp "ule"
// CHECK:         %[[Y:.*]] = llvm.intr.fma(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
// CHECK:         %[[T:.*]] = llvm.fadd %[[Y]], %[[SHIFT:.*]] : f32
// CHECK:         %[[N:.*]] = llvm.fsub %[[T]], %[[SHIFT]] : f32
// CHECK:         llvm.intr.fma(%[[N]],
// CHECK:         llvm.intr.fma(%[[N]],
// CHECK-COUNT-5: llvm.intr.fma
// CHECK-NOT:     llvm.fmul
// CHECK:         %[[BITS:.*]] = llvm.bitcast %[[T]] : f32 to i32
// CHECK:         %[[SHL:.*]] = llvm.shl %[[BITS]], %{{.*}} : i32
// CHECK:         %[[E:.*]] = llvm.add %[[SHL]], %{{.*}} : i32
// CHECK:         %[[S:.*]] = llvm.bitcast %[[E]] : i32 to f32
// CHECK:         llvm.fmul %{{.*}}, %[[S]] : f32
// CHECK-NOT:     llvm.intr.floor
// CHECK-NOT:     llvm.fptosi
// CHECK:         llvm.func @exp(
hexir.executable @exp attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @exp(%a: tensor<37xf32>, %o: tensor<37xf32>, %id: index) -> tensor<37xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<37xf32>) outs(%o : tensor<37xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.exp %x : f32
        linalg.yield %z : f32
      } -> tensor<37xf32>
      return %r : tensor<37xf32>
    }
  }
}

// -----

// An f16 exp is widened to f32 around the same expansion (MLIR's f32 expansion pattern).
// CHECK-LABEL: hexir.executable @exp_f16
// CHECK:         llvm.fpext %{{.*}} : f16 to f32
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK:         llvm.shl
// CHECK:         llvm.fptrunc %{{.*}} : f32 to f16
// CHECK-NOT:     llvm.intr.floor
hexir.executable @exp_f16 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @exp_f16(%a: tensor<9xf16>, %o: tensor<9xf16>, %id: index) -> tensor<9xf16> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<9xf16>) outs(%o : tensor<9xf16>) {
      ^bb0(%x: f16, %y: f16):
        %z = math.exp %x : f16
        linalg.yield %z : f16
      } -> tensor<9xf16>
      return %r : tensor<9xf16>
    }
  }
}
