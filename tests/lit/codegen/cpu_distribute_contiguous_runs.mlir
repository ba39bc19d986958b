// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups | FileCheck %s

// A sum over the outer axis, s[i] = sum_j x[j][i]: loop 0 walks the contiguous dimension of
// s and of x, so each workgroup reads from every row of x the run of its columns. Runs of
// at least 1 KiB (256 f32): 4096 columns give 16 workgroups of 256 (not 64 of 64, four cache
// lines a row apart), a power of two.
// CHECK-LABEL: hexir.executable @outer_sum
// CHECK-SAME:    hexir.workgroup_count = array<i64: 16, 1, 1>
// CHECK:         arith.constant 256 : index
hexir.executable @outer_sum {
  builtin.module {
    func.func @outer_sum(%x: tensor<512x4096xf32>, %o: tensor<4096xf32>) -> tensor<4096xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<4096xf32>) -> tensor<4096xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
          ins(%x : tensor<512x4096xf32>) outs(%f : tensor<4096xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.addf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<4096xf32>
      return %s : tensor<4096xf32>
    }
  }
}

// -----

// 600 columns: runs of at least 256 allow 2 workgroups (a power of two) of 300.
// CHECK-LABEL: hexir.executable @outer_sum_odd
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:         arith.constant 300 : index
hexir.executable @outer_sum_odd {
  builtin.module {
    func.func @outer_sum_odd(%x: tensor<512x600xf32>, %o: tensor<600xf32>) -> tensor<600xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<600xf32>) -> tensor<600xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
          ins(%x : tensor<512x600xf32>) outs(%f : tensor<600xf32>) {
      ^bb0(%v: f32, %a: f32):
        %r = arith.addf %v, %a : f32
        linalg.yield %r : f32
      } -> tensor<600xf32>
      return %s : tensor<600xf32>
    }
  }
}

// -----

// A matvec's loop 0 walks the rows of W (each workgroup's rows are contiguous): the rule
// does not apply, 4096 rows keep 64 workgroups of 64.
// CHECK-LABEL: hexir.executable @matvec
// CHECK-SAME:    hexir.workgroup_count = array<i64: 64, 1, 1>
hexir.executable @matvec {
  builtin.module {
    func.func @matvec(%w: tensor<4096x512xf32>, %x: tensor<512xf32>, %o: tensor<4096xf32>) -> tensor<4096xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<4096xf32>) -> tensor<4096xf32>
      %y = linalg.matvec ins(%w, %x : tensor<4096x512xf32>, tensor<512xf32>) outs(%f : tensor<4096xf32>) -> tensor<4096xf32>
      return %y : tensor<4096xf32>
    }
  }
}
