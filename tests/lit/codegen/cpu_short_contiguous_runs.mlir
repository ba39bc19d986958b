// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// codegen::VectorizeShortContiguousRuns (passes/codegen/CPUCollapseContiguousLoops.h): the
// squeeze-excitation scale y = x * s[n][c] over 2 x 3 planes of 5 x 7 (one run of 35 after
// the collapse) is a loop over n and c, each running its plane as vectors of 16, 16 and 3
// lanes, s[n][c] loaded once and broadcast; no scalar loop over the plane.
// CHECK-LABEL: hexir.executable @channel_scale
// CHECK-COUNT-2: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK:         %[[S:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<3xf32>
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : vector<3xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<3xf32>, !llvm.ptr
// CHECK:         llvm.func @channel_scale(
hexir.executable @channel_scale attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @channel_scale(%s: tensor<2x3x1x1xf32>, %x: tensor<2x3x5x7xf32>, %o: tensor<2x3x5x7xf32>, %id: index) -> tensor<2x3x5x7xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %x : tensor<2x3x1x1xf32>, tensor<2x3x5x7xf32>) outs(%o : tensor<2x3x5x7xf32>) {
      ^bb0(%a: f32, %v: f32, %out: f32):
        %m = arith.mulf %a, %v : f32
        linalg.yield %m : f32
      } -> tensor<2x3x5x7xf32>
      return %r : tensor<2x3x5x7xf32>
    }
  }
}

// -----

// A hard-swish (constants as splats, compares and selects lane-wise) after a bias broadcast
// along channels over 5 channels of 2 x 2: one loop over the channels, 4 lanes each.
// CHECK-LABEL: hexir.executable @bias_hardswish
// CHECK-COUNT-1: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.intr.maximum(%{{.*}}, %{{.*}}) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<4xf32>, !llvm.ptr
// CHECK:         llvm.func @bias_hardswish(
hexir.executable @bias_hardswish attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @bias_hardswish(%b: tensor<5xf32>, %x: tensor<1x5x2x2xf32>, %o: tensor<1x5x2x2xf32>, %id: index) -> tensor<1x5x2x2xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b, %x : tensor<5xf32>, tensor<1x5x2x2xf32>) outs(%o : tensor<1x5x2x2xf32>) {
      ^bb0(%bias: f32, %v: f32, %out: f32):
        %c3 = arith.constant 3.0 : f32
        %c0 = arith.constant 0.0 : f32
        %c6 = arith.constant 6.0 : f32
        %y = arith.addf %v, %bias : f32
        %t = arith.addf %y, %c3 : f32
        %lo = arith.maximumf %t, %c0 : f32
        %hi = arith.minimumf %lo, %c6 : f32
        %p = arith.mulf %y, %hi : f32
        %q = arith.divf %p, %c6 : f32
        linalg.yield %q : f32
      } -> tensor<1x5x2x2xf32>
      return %r : tensor<1x5x2x2xf32>
    }
  }
}

// -----

// A plane of 65 positions is left to LLVM's loop vectorizer (one loop of 3 x 65 after the
// collapse, scalar in the IR), and so is an f16 operand.
// CHECK-LABEL: hexir.executable @long_run
// CHECK-NOT:     vector<
// CHECK:         llvm.func @long_run(
hexir.executable @long_run attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @long_run(%s: tensor<1x3x1x1xf32>, %x: tensor<1x3x5x13xf32>, %o: tensor<1x3x5x13xf32>, %id: index) -> tensor<1x3x5x13xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %x : tensor<1x3x1x1xf32>, tensor<1x3x5x13xf32>) outs(%o : tensor<1x3x5x13xf32>) {
      ^bb0(%a: f32, %v: f32, %out: f32):
        %m = arith.mulf %a, %v : f32
        linalg.yield %m : f32
      } -> tensor<1x3x5x13xf32>
      return %r : tensor<1x3x5x13xf32>
    }
  }
}

// -----

// CHECK-LABEL: hexir.executable @f16_scale
// CHECK-NOT:     vector<
// CHECK:         llvm.func @f16_scale(
hexir.executable @f16_scale attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @f16_scale(%s: tensor<1x3x1x1xf16>, %x: tensor<1x3x2x2xf16>, %o: tensor<1x3x2x2xf16>, %id: index) -> tensor<1x3x2x2xf16> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %x : tensor<1x3x1x1xf16>, tensor<1x3x2x2xf16>) outs(%o : tensor<1x3x2x2xf16>) {
      ^bb0(%a: f16, %v: f16, %out: f16):
        %m = arith.mulf %a, %v : f16
        linalg.yield %m : f16
      } -> tensor<1x3x2x2xf16>
      return %r : tensor<1x3x2x2xf16>
    }
  }
}

// -----

// A dynamic export's bias over rows of 32 (a transformer's hidden size), the row count a
// run-time value: one loop to the row count, each row as two vectors of 16 lanes and the bias
// as two vector loads. LLVM vectorized the loop nest across rows instead (the row of 32
// unrolled, gathers and scatters over a run-time count: 0.6 us for 20 rows against 0.13 static).
// CHECK-LABEL: hexir.executable @rows_bias
// CHECK:         llvm.func internal @rows_bias_impl(
// CHECK-COUNT-1: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK-COUNT-2: llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK-COUNT-2: llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK-NOT:     llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         llvm.func @rows_bias(
hexir.executable @rows_bias attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @rows_bias(%b: tensor<32xf32>, %x: tensor<?x32xf32>, %o: tensor<?x32xf32>, %id: index) -> tensor<?x32xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %x : tensor<32xf32>, tensor<?x32xf32>) outs(%o : tensor<?x32xf32>) {
      ^bb0(%bias: f32, %v: f32, %out: f32):
        %s = arith.addf %bias, %v : f32
        linalg.yield %s : f32
      } -> tensor<?x32xf32>
      return %r : tensor<?x32xf32>
    }
  }
}

// -----

// In a row chain (softmax over a run-time count of rows of 32), the all-parallel ops of a block
// of a run-time row count: the division by the row's sum as two vectors of 16 per row (the
// reciprocal spread once per vector), not LLVM's vectorization across the block's rows with
// gathers and scatters. Static blocks stay as they were (@softmax of cpu_row_chain_prefetch).
// CHECK-LABEL: hexir.executable @row_chain_rows
// CHECK:         llvm.func internal @row_chain_rows_impl(
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.func @row_chain_rows(
hexir.executable @row_chain_rows attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @row_chain_rows(%x: tensor<?x32xf32>, %o: tensor<?x32xf32>, %id: index) -> tensor<?x32xf32> {
      %ninf = arith.constant 0xFF800000 : f32
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %m = tensor.dim %x, %c0 : tensor<?x32xf32>
      %er = tensor.empty(%m) : tensor<?xf32>
      %e = tensor.empty(%m) : tensor<?x32xf32>
      %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
      %max = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x32xf32>) outs(%mi : tensor<?xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.maximumf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<?xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<?x32xf32>, tensor<?xf32>) outs(%e : tensor<?x32xf32>) {
      ^bb0(%v: f32, %a: f32, %u: f32):
        %d = arith.subf %v, %a : f32
        %p = math.exp %d : f32
        linalg.yield %p : f32
      } -> tensor<?x32xf32>
      %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
      %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<?x32xf32>) outs(%si : tensor<?xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.addf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %sum : tensor<?x32xf32>, tensor<?xf32>) outs(%o : tensor<?x32xf32>) {
      ^bb0(%v: f32, %s: f32, %u: f32):
        %q = arith.divf %v, %s : f32
        linalg.yield %q : f32
      } -> tensor<?x32xf32>
      return %y : tensor<?x32xf32>
    }
  }
}

// -----

// The same over rows of a run-time length (a dynamic export's attention softmax): the
// division runs whole vectors of 16 in a loop to the last multiple of 16, then the partial one
// masked (llvm.intr.masked.load / store), where LLVM's own loop ran 4 lanes and then scalars.
// CHECK-LABEL: hexir.executable @row_chain_run_time_rows
// CHECK:         llvm.func internal @row_chain_run_time_rows_impl(
// CHECK:         %[[L:.+]] = llvm.urem %{{.+}}, %{{.+}} : i64
// CHECK:         llvm.sub %{{.+}}, %[[L]] : i64
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.intr.masked.load %{{.*}}, %{{.*}}, %{{.*}} {alignment = 4 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xf32>) -> vector<16xf32>
// CHECK:         llvm.fmul %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:         llvm.intr.masked.store %{{.*}}, %{{.*}}, %{{.*}} {alignment = 4 : i32} : vector<16xf32>, vector<16xi1> into !llvm.ptr
// CHECK:         llvm.func @row_chain_run_time_rows(
hexir.executable @row_chain_run_time_rows attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @row_chain_run_time_rows(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>, %id: index) -> tensor<?x?xf32> {
      %ninf = arith.constant 0xFF800000 : f32
      %zero = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %m = tensor.dim %x, %c0 : tensor<?x?xf32>
      %n = tensor.dim %x, %c1 : tensor<?x?xf32>
      %er = tensor.empty(%m) : tensor<?xf32>
      %e = tensor.empty(%m, %n) : tensor<?x?xf32>
      %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
      %max = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%mi : tensor<?xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.maximumf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<?xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
      ^bb0(%v: f32, %a: f32, %u: f32):
        %d = arith.subf %v, %a : f32
        %p = math.exp %d : f32
        linalg.yield %p : f32
      } -> tensor<?x?xf32>
      %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
      %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<?x?xf32>) outs(%si : tensor<?xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.addf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %sum : tensor<?x?xf32>, tensor<?xf32>) outs(%o : tensor<?x?xf32>) {
      ^bb0(%v: f32, %s: f32, %u: f32):
        %q = arith.divf %v, %s : f32
        linalg.yield %q : f32
      } -> tensor<?x?xf32>
      return %y : tensor<?x?xf32>
    }
  }
}
