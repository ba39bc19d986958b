// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// An f32 matmul becomes the packed micro-kernel (codegen/CPUMatmulMicroKernel.h): on AVX2
// (8 lanes, 16 registers) a 6 x 16 register tile, a 256 x 16 packed panel of B on the stack
// (one alloca at entry), masked loads past N, one 8-lane FMA per row and vector.
// CHECK-LABEL: hexir.executable @mm
// CHECK:         llvm.func internal @mm_impl(
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK:           llvm.intr.masked.load {{.*}} -> vector<8xf32>
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.store
hexir.executable @mm attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mm(%a: tensor<13x19xf32>, %b: tensor<19x37xf32>, %o: tensor<13x37xf32>, %id: index) -> tensor<13x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}

// -----

// A GEMV (static M below 4) keeps the loop lowering: its weights are read once, packing
// them would only add traffic.
// CHECK-LABEL: hexir.executable @gemv
// CHECK-NOT:     llvm.intr.masked.load
// CHECK:         llvm.func @gemv(
hexir.executable @gemv attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @gemv(%a: tensor<1x19xf32>, %b: tensor<19x37xf32>, %o: tensor<1x37xf32>, %id: index) -> tensor<1x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<1x19xf32>, tensor<19x37xf32>) outs(%o : tensor<1x37xf32>) -> tensor<1x37xf32>
      return %m : tensor<1x37xf32>
    }
  }
}

// -----

// A bf16 matmul keeps the loop lowering (the micro-kernel is f32 only).
// CHECK-LABEL: hexir.executable @bf16
// CHECK-NOT:     llvm.intr.masked.load
// CHECK:         llvm.func @bf16(
hexir.executable @bf16 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @bf16(%a: tensor<13x19xbf16>, %b: tensor<19x37xbf16>, %o: tensor<13x37xf32>, %id: index) -> tensor<13x37xf32> {
      %m = linalg.matmul ins(%a, %b : tensor<13x19xbf16>, tensor<19x37xbf16>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}
