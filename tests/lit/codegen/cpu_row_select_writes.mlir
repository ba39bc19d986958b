// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// codegen::NarrowRowSelectWrites (passes/codegen/RowSelectWrites.h) on the CPU: a KV-cache row
// written at a device-side position through a whole-cache select (the device loop's form, in
// a `small_layer` group) touches only its row. Awkward sizes: a 29 x 37 cache, a 37-row V
// projection of depth 19. Before: a loop over the 29 cache rows (bound 29), reading and
// rewriting all 1073 elements; now the row at min(pos, 28) only (an out-of-range position
// writes nothing: its compare fails), so no loop runs to 29.
// CHECK-LABEL: hexir.executable @row_write
// CHECK:         llvm.func internal @row_write_impl
// CHECK-NOT:       llvm.mlir.constant(29 : index)
// CHECK:           llvm.mlir.constant(28 : index)
// CHECK-NOT:       llvm.mlir.constant(29 : index)
// CHECK:           llvm.intr.umin
// CHECK-NOT:       llvm.mlir.constant(29 : index)
// CHECK:           llvm.return
#id = affine_map<(i) -> (i)>
#rows = affine_map<(i, k) -> (i, k)>
#cols = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>
#row = affine_map<(r, j) -> (j)>
#cache = affine_map<(r, j) -> (r, j)>
hexir.executable @row_write attributes {hexir.dispatch_group = "small_layer", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @row_write(%x: tensor<19xf32>, %w: tensor<37x19xf32>, %pos: tensor<1xi64>, %cout: tensor<29x37xf32>, %id: index) -> tensor<29x37xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<37xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<37xf32>) -> tensor<37xf32>
      %v = linalg.generic {indexing_maps = [#rows, #cols, #out], iterator_types = ["parallel", "reduction"]} ins(%w, %x : tensor<37x19xf32>, tensor<19xf32>) outs(%z : tensor<37xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %m : f32
        linalg.yield %s : f32
      } -> tensor<37xf32>
      %c = linalg.generic {indexing_maps = [#row, #cache], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<37xf32>) outs(%cout : tensor<29x37xf32>) {
      ^bb0(%in: f32, %old: f32):
        %r = linalg.index 0 : index
        %ri = arith.index_cast %r : index to i64
        %c0 = arith.constant 0 : index
        %p = tensor.extract %pos[%c0] : tensor<1xi64>
        %hit = arith.cmpi eq, %ri, %p : i64
        %new = arith.select %hit, %in, %old : f32
        linalg.yield %new : f32
      } -> tensor<29x37xf32>
      return %c : tensor<29x37xf32>
    }
  }
}

// -----

// Left as it is: the position is read from a buffer the kernel itself writes (the load would
// be hoisted above that write), so the select still covers all 29 rows.
// CHECK-LABEL: hexir.executable @pos_written_here
// CHECK:         llvm.mlir.constant(29 : index)
// CHECK-NOT:     llvm.intr.umin
// CHECK:         llvm.return
#id1 = affine_map<(i) -> (i)>
#row1 = affine_map<(r, j) -> (j)>
#cache1 = affine_map<(r, j) -> (r, j)>
hexir.executable @pos_written_here attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @pos_written_here(%v: tensor<37xf32>, %p0: tensor<1xi64>, %pos: tensor<1xi64>, %cout: tensor<29x37xf32>, %id: index) -> (tensor<1xi64>, tensor<29x37xf32>) {
      %np = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%p0 : tensor<1xi64>) outs(%pos : tensor<1xi64>) {
      ^bb0(%a: i64, %unused: i64):
        %one = arith.constant 1 : i64
        %b = arith.addi %a, %one : i64
        linalg.yield %b : i64
      } -> tensor<1xi64>
      %c = linalg.generic {indexing_maps = [#row1, #cache1], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<37xf32>) outs(%cout : tensor<29x37xf32>) {
      ^bb0(%in: f32, %old: f32):
        %r = linalg.index 0 : index
        %ri = arith.index_cast %r : index to i64
        %c0 = arith.constant 0 : index
        %p = tensor.extract %np[%c0] : tensor<1xi64>
        %hit = arith.cmpi eq, %ri, %p : i64
        %new = arith.select %hit, %in, %old : f32
        linalg.yield %new : f32
      } -> tensor<29x37xf32>
      return %np, %c : tensor<1xi64>, tensor<29x37xf32>
    }
  }
}
