// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// An f32 linalg.matvec becomes the vector matvec (codegen/CPUMatvecKernel.h): one row at a
// time (one sequential stream, no software prefetch: the hardware's follows it), 2 vectors of
// 8 lanes per k step, the rest of K with masked loads, one reduction per row.
// CHECK-LABEL: hexir.executable @mv
// CHECK:         llvm.func internal @mv_impl(
// CHECK-NOT:       "llvm.intr.prefetch"
// CHECK-COUNT-2:   llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.intr.masked.load
// CHECK:           llvm.intr.vector.reduce.fadd
hexir.executable @mv attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mv(%w: tensor<37x19xf32>, %x: tensor<19xf32>, %o: tensor<37xf32>, %id: index) -> tensor<37xf32> {
      %y = linalg.matvec ins(%w, %x : tensor<37x19xf32>, tensor<19xf32>) outs(%o : tensor<37xf32>) -> tensor<37xf32>
      return %y : tensor<37xf32>
    }
  }
}

// -----

// f16 weights (a generic widening them): one row at a time (one sequential stream, not
// prefetched in software), vector loads of 8 halves, widened in registers.
// CHECK-LABEL: hexir.executable @mv_f16
// CHECK:         llvm.func internal @mv_f16_impl(
// CHECK-NOT:       "llvm.intr.prefetch"
// CHECK:           llvm.load {{.*}} -> vector<8xf16>
// CHECK:           llvm.fpext {{.*}} : vector<8xf16> to vector<8xf32>
// CHECK:           llvm.intr.fmuladd
hexir.executable @mv_f16 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mv_f16(%w: tensor<5x40xf16>, %x: tensor<40xf32>, %o: tensor<5xf32>, %id: index) -> tensor<5xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>],
                           iterator_types = ["parallel", "reduction"]}
          ins(%x, %w : tensor<40xf32>, tensor<5x40xf16>) outs(%o : tensor<5xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<5xf32>
      return %y : tensor<5xf32>
    }
  }
}

// -----

// A q8_0 block matvec (the importer's mark) with f32 activations (K dynamic; a static K
// takes 8-bit ones: cpu_matvec_int8.mlir): per block the scale's two bytes as one f16, the
// 32 quants as four 8-byte vector loads sign-extended and converted in registers; the body's
// per-element byte reads are gone.
// CHECK-LABEL: hexir.executable @q8
// CHECK:         llvm.func internal @q8_impl(
// CHECK:           llvm.load {{.*}} -> vector<2xi8>
// CHECK:           llvm.bitcast {{.*}} : vector<2xi8> to vector<1xf16>
// CHECK-COUNT-4:   llvm.sext {{.*}} : vector<8xi8> to vector<8xi32>
// CHECK-NOT:       llvm.load {{.*}} -> i8
// CHECK:           llvm.intr.vector.reduce.fadd
hexir.executable @q8 attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @q8(%xb: tensor<?x32xf32>, %w: tensor<6x68xi8>, %o: tensor<6xf32>, %id: index) -> tensor<6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q8_0"}
          ins(%xb : tensor<?x32xf32>) outs(%o : tensor<6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %c2 = arith.constant 2 : index
        %base = arith.muli %b, %c34 : index
        %at = arith.addi %base, %c2 : index
        %at2 = arith.addi %at, %j : index
        %q = tensor.extract %w[%n, %at2] : tensor<6x68xi8>
        %lo = tensor.extract %w[%n, %base] : tensor<6x68xi8>
        %c1 = arith.constant 1 : index
        %hiat = arith.addi %base, %c1 : index
        %hi = tensor.extract %w[%n, %hiat] : tensor<6x68xi8>
        %lo32 = arith.extui %lo : i8 to i32
        %hi32 = arith.extui %hi : i8 to i32
        %c8 = arith.constant 8 : i32
        %hish = arith.shli %hi32, %c8 : i32
        %bits32 = arith.ori %lo32, %hish : i32
        %bits = arith.trunci %bits32 : i32 to i16
        %h = arith.bitcast %bits : i16 to f16
        %d = arith.extf %h : f16 to f32
        %qi = arith.extsi %q : i8 to i32
        %qf = arith.sitofp %qi : i32 to f32
        %wv = arith.mulf %d, %qf : f32
        %p = arith.mulf %a, %wv : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<6xf32>
      return %y : tensor<6xf32>
    }
  }
}

// -----

// Without the mark the same generic keeps the loop lowering (one byte load per element).
// CHECK-LABEL: hexir.executable @unmarked
// CHECK-NOT:     llvm.intr.vector.reduce.fadd
// CHECK:         llvm.func @unmarked(
hexir.executable @unmarked attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @unmarked(%xb: tensor<2x32xf32>, %w: tensor<6x68xi8>, %o: tensor<6xf32>, %id: index) -> tensor<6xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>],
                           iterator_types = ["parallel", "reduction", "reduction"]}
          ins(%xb : tensor<2x32xf32>) outs(%o : tensor<6xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %n = linalg.index 0 : index
        %b = linalg.index 1 : index
        %j = linalg.index 2 : index
        %c34 = arith.constant 34 : index
        %base = arith.muli %b, %c34 : index
        %at = arith.addi %base, %j : index
        %q = tensor.extract %w[%n, %at] : tensor<6x68xi8>
        %qi = arith.extsi %q : i8 to i32
        %qf = arith.sitofp %qi : i32 to f32
        %p = arith.mulf %a, %qf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<6xf32>
      return %y : tensor<6xf32>
    }
  }
}

// -----

// A generic over (n, k) whose combiner is not the multiply-add (a max) is no matvec.
// CHECK-LABEL: hexir.executable @maxdot
// CHECK-NOT:     llvm.intr.vector.reduce.fadd
// CHECK:         llvm.func @maxdot(
hexir.executable @maxdot attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @maxdot(%w: tensor<5x40xf32>, %x: tensor<40xf32>, %o: tensor<5xf32>, %id: index) -> tensor<5xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>],
                           iterator_types = ["parallel", "reduction"]}
          ins(%x, %w : tensor<40xf32>, tensor<5x40xf32>) outs(%o : tensor<5xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %s = arith.maximumf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<5xf32>
      return %y : tensor<5xf32>
    }
  }
}
