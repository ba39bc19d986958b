// RUN: hexir-opt %s --hexir-cpu-lower-executables=cpu=x86-64-v4 | FileCheck %s

// A temporary of static shape (the convolution's tile before its fused epilogue, which
// reads it twice) is a stack buffer at the kernel's entry, not a malloc and free per call
// (codegen/CPUKernelTemporaries.h, PromoteSmallTemporariesToStack).
// CHECK-LABEL: hexir.executable @tile_temporary
// CHECK-NOT:     llvm.call @malloc
// CHECK:         llvm.func internal @tile_temporary_impl(
// CHECK:           llvm.alloca %{{.+}} x f32 {alignment = 64 : i64}
// CHECK-NOT:       llvm.call @malloc
// CHECK-NOT:       llvm.call @free
// CHECK:         llvm.func @tile_temporary(
hexir.executable @tile_temporary attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @tile_temporary(%x: tensor<1x24x2x2xf32>, %wp: tensor<2x24x32xf32>, %bias: tensor<40xf32>, %o: tensor<1x40x2x2xf32>, %id: index) -> tensor<1x40x2x2xf32> {
      %e = tensor.empty() : tensor<40x24x1x1xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 32, d1 + d2 + d3, d0 mod 32)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<2x24x32xf32>) outs(%e : tensor<40x24x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x24x1x1xf32>
      %t = tensor.empty() : tensor<1x40x2x2xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<40xf32>) outs(%t : tensor<1x40x2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<1x40x2x2xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x24x2x2xf32>, tensor<40x24x1x1xf32>) outs(%b : tensor<1x40x2x2xf32>) {
      ^bb0(%a: f32, %bb: f32, %acc: f32):
        %p = arith.mulf %a, %bb : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x40x2x2xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y, %y : tensor<1x40x2x2xf32>, tensor<1x40x2x2xf32>) outs(%o : tensor<1x40x2x2xf32>) {
      ^bb0(%v: f32, %v2: f32, %out: f32):
        %z = arith.mulf %v, %v2 : f32
        linalg.yield %z : f32
      } -> tensor<1x40x2x2xf32>
      return %r : tensor<1x40x2x2xf32>
    }
  }
}


// A row chain over a dynamic count of rows of 32 (a layer norm's shape in a dynamic export):
// blocks of 85 rows (L1 / 3 streams / 32 floats) clamped at the last block, so each block's
// temporaries (its sums and its exp) are dynamic allocations of at most 85 and 85 x 32
// elements: views of stack slots of those sizes at the entry, no malloc per block.
// CHECK-LABEL: hexir.executable @rows_dynamic
// CHECK-NOT:     llvm.call @malloc
// CHECK:         llvm.func internal @rows_dynamic_impl(
// CHECK-DAG:       %[[ROWS:.+]] = llvm.mlir.constant(85 : index) : i64
// CHECK-DAG:       %[[BLOCK:.+]] = llvm.mlir.constant(2720 : index) : i64
// CHECK-DAG:       llvm.alloca %[[ROWS]] x f32 {alignment = 64 : i64}
// CHECK-DAG:       llvm.alloca %[[BLOCK]] x f32 {alignment = 64 : i64}
// CHECK-NOT:       llvm.call @malloc
// CHECK-NOT:       llvm.call @free
// CHECK:         llvm.func @rows_dynamic(
hexir.executable @rows_dynamic attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @rows_dynamic(%x: tensor<?x32xf32>, %o: tensor<?x32xf32>, %id: index) -> tensor<?x32xf32> {
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


// The same chain over rows of a run-time length: a block holds as many rows as fit L1, so its
// temporaries have no constant bound. Each gets a stack slot of 16 KiB (4096 floats) and a
// run-time choice: the slot's view when the block's elements fit, else malloc, freed only then.
// CHECK-LABEL: hexir.executable @softmax_dynamic
// CHECK:         llvm.func internal @softmax_dynamic_impl(
// CHECK:           %[[SLOT:.+]] = llvm.mlir.constant(4096 : index) : i64
// CHECK:           llvm.alloca %[[SLOT]] x f32 {alignment = 64 : i64}
// CHECK:           llvm.alloca %[[SLOT]] x f32 {alignment = 64 : i64}
// CHECK:           %[[FITS:.+]] = llvm.icmp "ule" %{{.+}}, %[[SLOT]] : i64
// CHECK-NEXT:      %[[SPILLS:.+]] = llvm.icmp "ugt" %{{.+}}, %[[SLOT]] : i64
// CHECK-NEXT:      llvm.cond_br %[[FITS]], ^{{bb[0-9]+}}, ^[[HEAP:bb[0-9]+]]
// CHECK:         ^[[HEAP]]:
// CHECK:           llvm.call @malloc
// CHECK:           llvm.cond_br %[[SPILLS]], ^[[FREE:bb[0-9]+]], ^
// CHECK-NEXT:    ^[[FREE]]:
// CHECK-NEXT:      llvm.call @free
// CHECK:         llvm.func @softmax_dynamic(
hexir.executable @softmax_dynamic attributes {hexir.dispatch_group = "row_chain", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @softmax_dynamic(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>, %id: index) -> tensor<?x?xf32> {
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


// A dynamic export's convolution with its bias and ReLU (ShuffleNet's stem): the kernels
// absorb the bias and the ReLU (the packed-filter kernel on tiny planes, the input-packing
// kernel where out's rows are contiguous at run time); only the loop lowering left in the
// last else branch reads the bias-initialized tile, a temporary of run-time sizes (past the
// 16 KiB slot at 40 x 8 x 32). Its allocation moves into that branch
// (CPUKernelTemporaries.h, SinkTemporariesIntoTheirBranch): no malloc before the packed
// kernel or among the input-packing kernel's FMAs, one after the last of them.
// CHECK-LABEL: hexir.executable @branch_temporary
// CHECK:         llvm.func internal @branch_temporary_impl(
// CHECK-NOT:       llvm.call @malloc
// CHECK:           llvm.intr.fmuladd
// CHECK:           llvm.call @malloc
// CHECK-NOT:       llvm.intr.fmuladd
// CHECK-NOT:       llvm.call @malloc
// CHECK:         llvm.func @branch_temporary(
hexir.executable @branch_temporary attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @branch_temporary(%bias: tensor<40xf32>, %x: tensor<?x12x?x?xf32>, %w: tensor<40x12x1x1xf32>, %wp: tensor<3x12x16xf32>, %o: tensor<?x40x?x?xf32>, %id: index) -> tensor<?x40x?x?xf32> {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %zero = arith.constant 0.0 : f32
      %n = tensor.dim %x, %c0 : tensor<?x12x?x?xf32>
      %h = tensor.dim %x, %c2 : tensor<?x12x?x?xf32>
      %wd = tensor.dim %x, %c3 : tensor<?x12x?x?xf32>
      %e = tensor.empty() : tensor<40x12x1x1xf32>
      %u = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1, d0 mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp, %w : tensor<3x12x16xf32>, tensor<40x12x1x1xf32>) outs(%e : tensor<40x12x1x1xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %orig: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<40x12x1x1xf32>
      %t = tensor.empty(%n, %h, %wd) : tensor<?x40x?x?xf32>
      %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<40xf32>) outs(%t : tensor<?x40x?x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<?x40x?x?xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %u : tensor<?x12x?x?xf32>, tensor<40x12x1x1xf32>) outs(%b : tensor<?x40x?x?xf32>) {
      ^bb0(%a: f32, %bb: f32, %acc: f32):
        %p = arith.mulf %a, %bb : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x40x?x?xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<?x40x?x?xf32>) outs(%o : tensor<?x40x?x?xf32>) {
      ^bb0(%v: f32, %out: f32):
        %m = arith.maximumf %v, %zero : f32
        linalg.yield %m : f32
      } -> tensor<?x40x?x?xf32>
      return %r : tensor<?x40x?x?xf32>
    }
  }
}
