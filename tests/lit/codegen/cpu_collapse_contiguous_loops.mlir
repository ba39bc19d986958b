// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables --cpu-short-run-positions=1 | FileCheck %s

// codegen::CollapseContiguousLoops (passes/codegen/CPUCollapseContiguousLoops.h): the
// squeeze-excitation scale y = x * s[n][c] over 2 x 3 planes of 5 x 7, s read as (n, c, 0, 0),
// runs its plane as one loop of 35: three loops (n, c, plane), not four.
// CHECK-LABEL: hexir.executable @channel_scale
// CHECK-COUNT-3: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
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

// codegen::CollapseDynamicLoopsAtRunTime: the same scale over planes of run-time extents (a
// dynamic export's). A branch on the operands' strides (x's and the output's planes dense:
// each a unit inner stride and a row stride equal to the row's size) runs three loops, the
// plane one loop over unit-stride views (memref.reinterpret_cast); the other branch the four
// loops as they were.
// CHECK-LABEL: hexir.executable @channel_scale_dynamic
// CHECK:         llvm.icmp "eq"
// CHECK:         llvm.cond_br
// CHECK-COUNT-3:   llvm.cond_br
// CHECK:           llvm.fmul
// CHECK-COUNT-4:   llvm.cond_br
// CHECK:           llvm.fmul
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.func @channel_scale_dynamic(
hexir.executable @channel_scale_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @channel_scale_dynamic(%s: tensor<?x3x1x1xf32>, %x: tensor<?x3x?x?xf32>, %o: tensor<?x3x?x?xf32>, %id: index) -> tensor<?x3x?x?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %x : tensor<?x3x1x1xf32>, tensor<?x3x?x?xf32>) outs(%o : tensor<?x3x?x?xf32>) {
      ^bb0(%a: f32, %v: f32, %out: f32):
        %m = arith.mulf %a, %v : f32
        linalg.yield %m : f32
      } -> tensor<?x3x?x?xf32>
      return %r : tensor<?x3x?x?xf32>
    }
  }
}

// -----

// Every loop read in order by every operand: one loop of 2 x 3 x 5 x 7.
// CHECK-LABEL: hexir.executable @same_shape
// CHECK-COUNT-1: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.func @same_shape(
hexir.executable @same_shape attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @same_shape(%y: tensor<2x3x5x7xf32>, %x: tensor<2x3x5x7xf32>, %o: tensor<2x3x5x7xf32>, %id: index) -> tensor<2x3x5x7xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y, %x : tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) outs(%o : tensor<2x3x5x7xf32>) {
      ^bb0(%a: f32, %v: f32, %out: f32):
        %m = arith.addf %a, %v : f32
        linalg.yield %m : f32
      } -> tensor<2x3x5x7xf32>
      return %r : tensor<2x3x5x7xf32>
    }
  }
}

// -----

// A row broadcast over the planes' rows (r read as (n, c, w)) reads w without h: h and w stay
// two loops, and so do n and c (r is not one run of them either way).
// CHECK-LABEL: hexir.executable @row_broadcast
// CHECK-COUNT-4: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.func @row_broadcast(
hexir.executable @row_broadcast attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @row_broadcast(%y: tensor<2x3x7xf32>, %x: tensor<2x3x5x7xf32>, %o: tensor<2x3x5x7xf32>, %id: index) -> tensor<2x3x5x7xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y, %x : tensor<2x3x7xf32>, tensor<2x3x5x7xf32>) outs(%o : tensor<2x3x5x7xf32>) {
      ^bb0(%a: f32, %v: f32, %out: f32):
        %m = arith.addf %a, %v : f32
        linalg.yield %m : f32
      } -> tensor<2x3x5x7xf32>
      return %r : tensor<2x3x5x7xf32>
    }
  }
}

// -----

// A global sum pool over 2 x 3 planes of 5 x 7 (the reductions h and w, which no output reads
// and x reads as one run): one reduction loop of 35, three loops (n, c, plane), not four.
// CHECK-LABEL: hexir.executable @plane_sum
// CHECK-COUNT-3: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.func @plane_sum(
hexir.executable @plane_sum attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @plane_sum(%x: tensor<2x3x5x7xf32>, %o: tensor<2x3xf32>, %id: index) -> tensor<2x3xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x3x5x7xf32>) outs(%o : tensor<2x3xf32>) {
      ^bb0(%v: f32, %acc: f32):
        %s = arith.addf %acc, %v : f32
        linalg.yield %s : f32
      } -> tensor<2x3xf32>
      return %r : tensor<2x3xf32>
    }
  }
}

// -----

// codegen::CollapseDynamicLoopsAtRunTime on a reduction: the same pool over planes of run-time
// extents (a dynamic export's squeeze-excitation pools). A branch on x's strides (its plane
// dense) runs three loops, the plane one reduction loop over a unit-stride view; the other
// branch the four loops as they were. In the dense branch the plane's length is first tested
// for 1, 4 and 9 positions (kStaticReductionRuns), each a copy of the three loops on views of
// that static length (LLVM unrolls the plane and vectorizes across the channels), then the
// three loops of the run-time length.
// CHECK-LABEL: hexir.executable @plane_sum_dynamic
// CHECK-DAG:     %[[ONE:.+]] = llvm.mlir.constant(1 : index) : i64
// CHECK-DAG:     %[[FOUR:.+]] = llvm.mlir.constant(4 : index) : i64
// CHECK-DAG:     %[[NINE:.+]] = llvm.mlir.constant(9 : index) : i64
// CHECK:         llvm.icmp "eq"
// CHECK:         llvm.cond_br
// CHECK:           %[[IS1:.+]] = llvm.icmp "eq" %[[LEN:.+]], %[[ONE]] : i64
// CHECK:           llvm.cond_br %[[IS1]]
// CHECK-COUNT-3:     llvm.cond_br
// CHECK:             llvm.fadd
// CHECK:           %[[IS4:.+]] = llvm.icmp "eq" %[[LEN]], %[[FOUR]] : i64
// CHECK:           llvm.cond_br %[[IS4]]
// CHECK-COUNT-3:     llvm.cond_br
// CHECK:             llvm.fadd
// CHECK:           %[[IS9:.+]] = llvm.icmp "eq" %[[LEN]], %[[NINE]] : i64
// CHECK:           llvm.cond_br %[[IS9]]
// CHECK-COUNT-3:     llvm.cond_br
// CHECK:             llvm.fadd
// CHECK-COUNT-3:   llvm.cond_br
// CHECK:           llvm.fadd
// CHECK-COUNT-4:   llvm.cond_br
// CHECK:           llvm.fadd
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.func @plane_sum_dynamic(
hexir.executable @plane_sum_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @plane_sum_dynamic(%x: tensor<?x3x?x?xf32>, %o: tensor<?x3xf32>, %id: index) -> tensor<?x3xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<?x3x?x?xf32>) outs(%o : tensor<?x3xf32>) {
      ^bb0(%v: f32, %acc: f32):
        %s = arith.addf %acc, %v : f32
        linalg.yield %s : f32
      } -> tensor<?x3xf32>
      return %r : tensor<?x3xf32>
    }
  }
}

// -----

// A reduction over h alone with w parallel inside it is left as it is: four loops.
// CHECK-LABEL: hexir.executable @column_sum
// CHECK-COUNT-4: llvm.cond_br
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.func @column_sum(
hexir.executable @column_sum attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @column_sum(%x: tensor<2x3x5x7xf32>, %o: tensor<2x3x7xf32>, %id: index) -> tensor<2x3x7xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%x : tensor<2x3x5x7xf32>) outs(%o : tensor<2x3x7xf32>) {
      ^bb0(%v: f32, %acc: f32):
        %s = arith.addf %acc, %v : f32
        linalg.yield %s : f32
      } -> tensor<2x3x7xf32>
      return %r : tensor<2x3x7xf32>
    }
  }
}

// -----

// A linalg.copy of run-time extents (a dynamic export's convolution bias, filled into a
// temporary and copied into the output's channel slice) becomes a copy generic first, and so
// takes the run-time branch on its operands' strides too: vector loads and stores of the run,
// no element-by-element f32 copy (convert-linalg-to-loops' four scalar loops, the innermost
// a row of the plane).
// CHECK-LABEL: hexir.executable @copy_dynamic
// CHECK:         llvm.icmp "eq"
// CHECK:         llvm.cond_br
// CHECK:         llvm.load %{{.+}} -> vector<{{[0-9]+}}xf32>
// CHECK-NOT:     -> f32
// CHECK:         llvm.func @copy_dynamic(
hexir.executable @copy_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @copy_dynamic(%x: tensor<?x3x?x?xf32>, %o: tensor<?x3x?x?xf32>, %id: index) -> tensor<?x3x?x?xf32> {
      %r = linalg.copy ins(%x : tensor<?x3x?x?xf32>) outs(%o : tensor<?x3x?x?xf32>) -> tensor<?x3x?x?xf32>
      return %r : tensor<?x3x?x?xf32>
    }
  }
}

// -----

// A linalg.fill of a strided view of run-time extents (a dynamic export's max-pool pad, -inf
// over a workgroup's slice of the padded buffer) becomes a generic first, and so takes the
// run-time branch on its strides: vector stores of the run, no scalar f32 store
// (convert-linalg-to-loops' four loops).
// CHECK-LABEL: hexir.executable @fill_dynamic
// CHECK:         llvm.icmp "eq"
// CHECK:         llvm.cond_br
// CHECK:         llvm.store %{{.+}} : vector<{{[0-9]+}}xf32>, !llvm.ptr
// CHECK-NOT:     : f32, !llvm.ptr
// CHECK:         llvm.func @fill_dynamic(
hexir.executable @fill_dynamic attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @fill_dynamic(%o: tensor<?x3x?x?xf32>, %id: index) -> tensor<?x3x?x?xf32> {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %cst = arith.constant 0xFF800000 : f32
      %n = tensor.dim %o, %c0 : tensor<?x3x?x?xf32>
      %h = tensor.dim %o, %c2 : tensor<?x3x?x?xf32>
      %w = tensor.dim %o, %c3 : tensor<?x3x?x?xf32>
      %s = tensor.extract_slice %o[0, 1, 0, 0] [%n, 2, %h, %w] [1, 1, 1, 1] : tensor<?x3x?x?xf32> to tensor<?x2x?x?xf32>
      %f = linalg.fill ins(%cst : f32) outs(%s : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
      %r = tensor.insert_slice %f into %o[0, 1, 0, 0] [%n, 2, %h, %w] [1, 1, 1, 1] : tensor<?x2x?x?xf32> into tensor<?x3x?x?xf32>
      return %r : tensor<?x3x?x?xf32>
    }
  }
}
