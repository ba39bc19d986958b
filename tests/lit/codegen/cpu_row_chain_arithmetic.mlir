// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// codegen::CheapenRowChainArithmetic (passes/codegen/CPURowChainArithmetic.h) on a row
// softmax's kernel: the max, read only as exp(x - max), is nsz (x86 drops its zero-sign
// fix-up); the divide by the row's sum is one reciprocal (1.0 / sum) and a multiply.
// CHECK-LABEL: hexir.executable @softmax
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK:         llvm.intr.maximum({{.*}}) {fastmathFlags = #llvm.fastmath<nsz, contract, reassoc>}
// CHECK:         %[[R:.*]] = llvm.fdiv %[[ONE]], %{{.*}} : f32
// CHECK-NEXT:    llvm.fmul %{{.*}}, %[[R]] : f32
// CHECK-NOT:     llvm.fdiv
hexir.executable @softmax attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @softmax(%x: tensor<5x7xf32>, %o: tensor<5x7xf32>, %id: index) -> tensor<5x7xf32> {
      %ninf = arith.constant 0xFF800000 : f32
      %zero = arith.constant 0.0 : f32
      %er = tensor.empty() : tensor<5xf32>
      %e = tensor.empty() : tensor<5x7xf32>
      %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<5xf32>) -> tensor<5xf32>
      %max = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<5x7xf32>) outs(%mi : tensor<5xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.maximumf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<5xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<5x7xf32>, tensor<5xf32>) outs(%e : tensor<5x7xf32>) {
      ^bb0(%v: f32, %a: f32, %u: f32):
        %d = arith.subf %v, %a : f32
        %p = math.exp %d : f32
        linalg.yield %p : f32
      } -> tensor<5x7xf32>
      %si = linalg.fill ins(%zero : f32) outs(%er : tensor<5xf32>) -> tensor<5xf32>
      %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<5x7xf32>) outs(%si : tensor<5xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.addf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<5xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %sum : tensor<5x7xf32>, tensor<5xf32>) outs(%o : tensor<5x7xf32>) {
      ^bb0(%v: f32, %s: f32, %u: f32):
        %q = arith.divf %v, %s : f32
        linalg.yield %q : f32
      } -> tensor<5x7xf32>
      return %y : tensor<5x7xf32>
    }
  }
}

// -----

// A max also read as itself (x - max, not under an exponential) keeps its zero's sign; a
// divide by a value varying along the row (x / x) and one of two row-invariant values (the
// max by the count) stay divides.
// CHECK-LABEL: hexir.executable @kept
// CHECK:         llvm.intr.maximum({{.*}}) {fastmathFlags = #llvm.fastmath<contract, reassoc>}
// CHECK:         llvm.fdiv
// CHECK-NOT:     llvm.fmul
// CHECK:         llvm.fdiv
hexir.executable @kept attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @kept(%x: tensor<5x7xf32>, %o: tensor<5x7xf32>, %id: index) -> tensor<5x7xf32> {
      %ninf = arith.constant 0xFF800000 : f32
      %n = arith.constant 7.0 : f32
      %er = tensor.empty() : tensor<5xf32>
      %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<5xf32>) -> tensor<5xf32>
      %max = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<5x7xf32>) outs(%mi : tensor<5xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.maximumf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<5xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<5x7xf32>, tensor<5xf32>) outs(%o : tensor<5x7xf32>) {
      ^bb0(%v: f32, %a: f32, %u: f32):
        %d = arith.subf %v, %a : f32
        %q = arith.divf %d, %v : f32
        %c = arith.divf %a, %n : f32
        %r = arith.addf %q, %c : f32
        linalg.yield %r : f32
      } -> tensor<5x7xf32>
      return %y : tensor<5x7xf32>
    }
  }
}
