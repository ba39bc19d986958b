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

// -----

// B prepacked by a pack dispatch (codegen/CPUMatmulMicroKernel.cpp: 3 panels of 19 x 16, read through
// the marked unpack generic): the micro-kernel reads the panels in place, so the kernel
// packs nothing (no stack block) and the unpack and its 19 x 37 buffer are gone.
// CHECK-LABEL: hexir.executable @prepacked
// CHECK-NOT:     @malloc
// CHECK-NOT:     llvm.alloca
// CHECK:         llvm.func internal @prepacked_impl(
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:     @malloc
// CHECK:         llvm.func @prepacked(
hexir.executable @prepacked attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @prepacked(%a: tensor<13x19xf32>, %bp: tensor<3x19x16xf32>, %o: tensor<13x37xf32>, %id: index) -> tensor<13x37xf32> {
      %e = tensor.empty() : tensor<19x37xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(k, n) -> (n floordiv 16, k, n mod 16)>, affine_map<(k, n) -> (k, n)>], iterator_types = ["parallel", "parallel"]} ins(%bp : tensor<3x19x16xf32>) outs(%e : tensor<19x37xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%x: f32, %y: f32):
        linalg.yield %x : f32
      } -> tensor<19x37xf32>
      %m = linalg.matmul ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}

// -----

// The pack dispatch itself: B's rows copied in 8-lane vectors into the panels, the last
// panel (columns 32..36 of 37) with masked loads (zero past N); no scalar element loop.
// CHECK-LABEL: hexir.executable @pack
// CHECK:         llvm.func internal @pack_impl(
// CHECK:           llvm.load {{.*}} -> vector<8xf32>
// CHECK:           llvm.store {{.*}} : vector<8xf32>, !llvm.ptr
// CHECK:           llvm.intr.masked.load {{.*}} -> vector<8xf32>
// CHECK-NOT:       llvm.load {{.*}} -> f32
// CHECK:         llvm.func @pack(
hexir.executable @pack attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @pack(%b: tensor<19x37xf32>, %o: tensor<3x19x16xf32>, %id: index) -> tensor<3x19x16xf32> {
      %p = linalg.generic {indexing_maps = [affine_map<(p, k, j) -> (p, k, j)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%o : tensor<3x19x16xf32>) attrs = {hexir.pack_rhs} {
      ^bb0(%y: f32):
        %ip = linalg.index 0 : index
        %ik = linalg.index 1 : index
        %ij = linalg.index 2 : index
        %c16 = arith.constant 16 : index
        %c37 = arith.constant 37 : index
        %c0 = arith.constant 0 : index
        %zero = arith.constant 0.0 : f32
        %s = arith.muli %ip, %c16 : index
        %col = arith.addi %s, %ij : index
        %in = arith.cmpi ult, %col, %c37 : index
        %read = arith.select %in, %col, %c0 : index
        %v = tensor.extract %b[%ik, %read] : tensor<19x37xf32>
        %r = arith.select %in, %v, %zero : f32
        linalg.yield %r : f32
      } -> tensor<3x19x16xf32>
      return %p : tensor<3x19x16xf32>
    }
  }
}

// -----

// The ONNX importer's MatMul (a generic with the matmul's maps and a multiply-add body) with
// rows of run-time extent (a dynamic export's batch, a detection head's boxes) takes the same
// micro-kernel (codegen::NameMatmulGenerics); a static M keeps the loop lowering.
// CHECK-LABEL: hexir.executable @mm_generic_dynamic_rows
// CHECK:         llvm.func internal @mm_generic_dynamic_rows_impl(
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK-COUNT-12:  llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-LABEL: hexir.executable @mm_generic_static_rows
// CHECK-NOT:       llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK:         llvm.func @mm_generic_static_rows(
hexir.executable @mm_generic_dynamic_rows attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mm_generic_dynamic_rows(%a: tensor<?x19xf32>, %b: tensor<19x37xf32>, %o: tensor<?x37xf32>, %id: index) -> tensor<?x37xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<?x37xf32>) -> tensor<?x37xf32>
      %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<?x19xf32>, tensor<19x37xf32>) outs(%f : tensor<?x37xf32>) {
      ^bb0(%x: f32, %y: f32, %acc: f32):
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<?x37xf32>
      return %m : tensor<?x37xf32>
    }
  }
}

// -----

hexir.executable @mm_generic_static_rows attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @mm_generic_static_rows(%a: tensor<13x19xf32>, %b: tensor<19x37xf32>, %o: tensor<13x37xf32>, %id: index) -> tensor<13x37xf32> {
      %zero = arith.constant 0.0 : f32
      %f = linalg.fill ins(%zero : f32) outs(%o : tensor<13x37xf32>) -> tensor<13x37xf32>
      %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<13x19xf32>, tensor<19x37xf32>) outs(%f : tensor<13x37xf32>) {
      ^bb0(%x: f32, %y: f32, %acc: f32):
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<13x37xf32>
      return %m : tensor<13x37xf32>
    }
  }
}
