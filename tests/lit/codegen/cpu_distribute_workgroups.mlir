// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups="max-workgroups=3 min-work-per-workgroup=1" | FileCheck %s
// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups="max-workgroups=3 min-work-per-workgroup=240" | FileCheck %s --check-prefix=MINWORK

// (bf16 operands: an f32 matmul takes the micro-kernel's rule, last case.)
// 10 rows over at most 3 workgroups: tiles of 4 rows, 3 workgroups; the fill is fused
// into the tile loop, which runs [id * 4, min(10, id * 4 + 4)). With at least 240 of the
// matmul's 10*6*8 = 480 iterations per workgroup (MINWORK): 2 workgroups of 5 rows.
// MINWORK-LABEL: hexir.executable @k
// MINWORK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// MINWORK:         arith.constant 5 : index
// CHECK-LABEL: hexir.executable @k
// CHECK-SAME:    hexir.workgroup_count = array<i64: 3, 1, 1>
// CHECK:         func.func @k(%{{.+}}: tensor<10x8xbf16>, %{{.+}}: tensor<8x6xbf16>, %[[OUT:[a-z0-9]+]]: tensor<10x6xf32>, %[[ID:[a-z0-9]+]]: index)
// CHECK-DAG:     %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG:     %[[C10:.+]] = arith.constant 10 : index
// CHECK:         %[[LB:.+]] = arith.muli %[[ID]], %[[C4]]
// CHECK:         %[[END:.+]] = arith.addi %[[LB]], %[[C4]]
// CHECK:         %[[UB:.+]] = arith.minsi %[[END]], %[[C10]]
// CHECK:         scf.for %{{.+}} = %[[LB]] to %[[UB]] step %[[C4]] iter_args(%{{.+}} = %[[OUT]])
// CHECK:           linalg.fill
// CHECK:           linalg.matmul
// CHECK:           tensor.insert_slice
hexir.executable @k {
  builtin.module {
    func.func @k(%a: tensor<10x8xbf16>, %b: tensor<8x6xbf16>, %o: tensor<10x6xf32>) -> tensor<10x6xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<10x6xf32>) -> tensor<10x6xf32>
      %m = linalg.matmul ins(%a, %b : tensor<10x8xbf16>, tensor<8x6xbf16>) outs(%f : tensor<10x6xf32>) -> tensor<10x6xf32>
      return %m : tensor<10x6xf32>
    }
  }
}

// -----

// A reduction as the outermost loop: one workgroup, no tiling, but the id argument exists.
// CHECK-LABEL: hexir.executable @r
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @r(%{{.+}}: tensor<16xf32>, %{{.+}}: tensor<f32>, %{{.+}}: index)
// CHECK-NOT:     scf.for
// CHECK:         linalg.generic
hexir.executable @r {
  builtin.module {
    func.func @r(%a: tensor<16xf32>, %o: tensor<f32>) -> tensor<f32> {
      %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%a : tensor<16xf32>) outs(%o : tensor<f32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.addf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}

// -----

// A dynamic extent: tiles of T rows (min-work-per-workgroup / the other extents: 1 here,
// 240 with MINWORK) grown to ceil(n / 3) past 3 * T rows; n is parameter word 0 (dim 0 of
// %a), so the host launches ceil(n / tile) workgroups (hexir.workgroup_count_dynamic) and
// each runs [id * tile, min(n, id * tile + tile)).
// MINWORK-LABEL: hexir.executable @dyn
// MINWORK-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 0>, limit = 3 : i64, tile = 240 : i64}
// MINWORK:         arith.constant 240 : index
// CHECK-LABEL: hexir.executable @dyn
// CHECK-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 0>, limit = 3 : i64, tile = 1 : i64}
// CHECK-NOT:     hexir.workgroup_count =
// CHECK:         func.func @dyn(%[[A:[a-z0-9]+]]: tensor<?xf32>, %[[OUT:[a-z0-9]+]]: tensor<?xf32>, %[[ID:[a-z0-9]+]]: index)
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C3:.+]] = arith.constant 3 : index
// CHECK:         %[[N:.+]] = tensor.dim
// CHECK:         %[[CEIL:.+]] = arith.ceildivsi %[[N]], %[[C3]]
// CHECK:         %[[TILE:.+]] = arith.maxsi %[[CEIL]], %[[C1]]
// CHECK:         %[[LB:.+]] = arith.muli %[[ID]], %[[TILE]]
// CHECK:         %[[END:.+]] = arith.addi %[[LB]], %[[TILE]]
// CHECK:         %[[UB:.+]] = arith.minsi %[[END]], %[[N]]
// CHECK:         scf.for %{{.+}} = %[[LB]] to %[[UB]] step %[[TILE]]
hexir.executable @dyn {
  builtin.module {
    func.func @dyn(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = arith.negf %x : f32
        linalg.yield %z : f32
      } -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}

// -----

// The extent is a scalar argument (word 2: after the dynamic dims of %a and %o), reached
// through tensor.empty(%m); the other loop's 16 columns give T = ceil(240 / 16) = 15 rows
// with MINWORK.
// MINWORK-LABEL: hexir.executable @scalar_extent
// MINWORK-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 2>, limit = 3 : i64, tile = 15 : i64}
hexir.executable @scalar_extent {
  builtin.module {
    func.func @scalar_extent(%a: tensor<?xf32>, %o: tensor<?x16xf32>, %m: index) -> tensor<?x16xf32> {
      %e = tensor.empty(%m) : tensor<?x16xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x16xf32>) {
      ^bb0(%y: f32):
        %i = linalg.index 0 : index
        %ii = arith.index_cast %i : index to i64
        %f = arith.sitofp %ii : i64 to f32
        linalg.yield %f : f32
      } -> tensor<?x16xf32>
      return %r : tensor<?x16xf32>
    }
  }
}

// -----

// An extent that is no parameter word (half of a dim): a fixed count of max-workgroups (3),
// each workgroup taking max(1, ceil(n / 3)) rows.
// CHECK-LABEL: hexir.executable @half
// CHECK-SAME:    hexir.workgroup_count = array<i64: 3, 1, 1>
// CHECK-NOT:     hexir.workgroup_count_dynamic
// CHECK:         arith.ceildivsi
// CHECK:         scf.for
hexir.executable @half {
  builtin.module {
    func.func @half(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %n = tensor.dim %a, %c0 : tensor<?xf32>
      %h = arith.divui %n, %c2 : index
      %s = tensor.extract_slice %a[0] [%h] [1] : tensor<?xf32> to tensor<?xf32>
      %e = tensor.empty(%h) : tensor<?xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%s : tensor<?xf32>) outs(%e : tensor<?xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = arith.negf %x : f32
        linalg.yield %z : f32
      } -> tensor<?xf32>
      %w = tensor.insert_slice %r into %o[0] [%h] [1] : tensor<?xf32> into tensor<?xf32>
      return %w : tensor<?xf32>
    }
  }
}

// -----

// An f32 matmul taking the packed micro-kernel: at least 32 rows per workgroup (each packs
// its own panels of B) and a power-of-two count: 100 rows, at most 3 -> 2 workgroups of 50.
// CHECK-LABEL: hexir.executable @micro
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:         arith.constant 50 : index
// MINWORK-LABEL: hexir.executable @micro
// MINWORK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
hexir.executable @micro {
  builtin.module {
    func.func @micro(%a: tensor<100x8xf32>, %b: tensor<8x6xf32>, %o: tensor<100x6xf32>) -> tensor<100x6xf32> {
      %z = arith.constant 0.0 : f32
      %f = linalg.fill ins(%z : f32) outs(%o : tensor<100x6xf32>) -> tensor<100x6xf32>
      %m = linalg.matmul ins(%a, %b : tensor<100x8xf32>, tensor<8x6xf32>) outs(%f : tensor<100x6xf32>) -> tensor<100x6xf32>
      return %m : tensor<100x6xf32>
    }
  }
}

// -----

// A convolution that takes a CPU convolution kernel is split along its 64 output channels
// (loop 1; batch 1 has nothing to split): at least 16 channels each, a power-of-two count
// within max-workgroups = 3: 2 workgroups of 32 channels.
// CHECK-LABEL: hexir.executable @conv
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:         func.func @conv(
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : index
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C32]]
// CHECK:           linalg.generic
// CHECK-SAME:        ins(%{{.+}}, %{{.+}} : tensor<1x5x10x10xf32>, tensor<32x5x3x3xf32>)
hexir.executable @conv {
  builtin.module {
    func.func @conv(%x: tensor<1x5x10x10xf32>, %w: tensor<64x5x3x3xf32>, %o: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x5x10x10xf32>, tensor<64x5x3x3xf32>) outs(%o : tensor<1x64x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x64x8x8xf32>
      return %y : tensor<1x64x8x8xf32>
    }
  }
}

// -----

// A dense convolution on the input-packing kernel over a static plane of 33 x 32 = 1056 output
// positions (at least two workgroups of 256) is split along its output rows (loop 2) instead:
// each workgroup packs the panels of its own rows only. At least ceil(256 / 32) = 8 rows
// each, a power-of-two count within max-workgroups = 3: 2 workgroups of 17 rows, each over
// all 20 filters, reading its window of x: rows from 34 * id, 65 columns (the last two unread).
// CHECK-LABEL: hexir.executable @conv_rows
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:         func.func @conv_rows(
// CHECK-DAG:     %[[C17:.+]] = arith.constant 17 : index
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C17]]
// CHECK:           linalg.generic
// CHECK-SAME:        ins(%{{.+}}, %{{.+}} : tensor<1x3x?x65xf32>, tensor<20x3x3x3xf32>)
// CHECK-SAME:        outs(%{{.+}} : tensor<1x20x?x32xf32>)
hexir.executable @conv_rows {
  builtin.module {
    func.func @conv_rows(%x: tensor<1x3x67x67xf32>, %w: tensor<20x3x3x3xf32>, %o: tensor<1x20x33x32xf32>) -> tensor<1x20x33x32xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x3x67x67xf32>, tensor<20x3x3x3xf32>) outs(%o : tensor<1x20x33x32xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x20x33x32xf32>
      return %y : tensor<1x20x33x32xf32>
    }
  }
}

// -----

// A grouped convolution (4 groups of 16 filters over 5 channels) is not split along its
// channels (its kernel takes whole groups of static filters): batch 1 has nothing to split.
// CHECK-LABEL: hexir.executable @conv_grouped
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.+}}, %{{.+}} : tensor<1x20x10x10xf32>, tensor<64x5x3x3xf32>)
hexir.executable @conv_grouped {
  builtin.module {
    func.func @conv_grouped(%x: tensor<1x20x10x10xf32>, %w: tensor<64x5x3x3xf32>, %o: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 16) * 5 + d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x20x10x10xf32>, tensor<64x5x3x3xf32>) outs(%o : tensor<1x64x8x8xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<1x64x8x8xf32>
      return %y : tensor<1x64x8x8xf32>
    }
  }
}

// -----

// A dense convolution on the input-packing kernel with dynamic batch and spatial dims: split
// along its output rows, as a static plane of >= 512 positions is (each workgroup packs only
// its rows' panels), in tiles of 8 rows (the plane's width unknown) grown to ceil(rows / 3)
// past 3 tiles; the host computes the count from the rows (parameter word 4, dim 2 of out).
// CHECK-LABEL: hexir.executable @conv_dynamic
// CHECK-SAME:    hexir.workgroup_count_dynamic = {extent_factor = 1 : i64, extent_words = array<i64: 4>, limit = 3 : i64, tile = 8 : i64}
// CHECK:         func.func @conv_dynamic(
// CHECK:         %[[ROWS:.+]] = tensor.dim %{{.+}}, %c2 : tensor<?x64x?x?xf32>
// CHECK:         %[[GROWN:.+]] = arith.ceildivsi %[[ROWS]], %c3
// CHECK:         %[[TILE:.+]] = arith.maxsi %[[GROWN]], %c8
// CHECK:         scf.for %[[ROW:.+]] = %{{.+}} to %{{.+}} step %[[TILE]]
// CHECK:           tensor.extract_slice %{{.+}}[0, 0, %[[ROW]], 0]
// CHECK:           linalg.generic
// CHECK-SAME:        tensor<?x5x?x?xf32>, tensor<64x5x3x3xf32>
hexir.executable @conv_dynamic {
  builtin.module {
    func.func @conv_dynamic(%x: tensor<?x5x?x?xf32>, %w: tensor<64x5x3x3xf32>, %o: tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x5x?x?xf32>, tensor<64x5x3x3xf32>) outs(%o : tensor<?x64x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x64x?x?xf32>
      return %y : tensor<?x64x?x?xf32>
    }
  }
}

// -----

// The same on a filter packed at load (its unpack marked hexir.packed_rhs): split along its
// channels instead, whole panels of 16 each (the kernel reads them in place). The count is
// still 2 (the dynamic extents count as large), and the kernel computes its channels per
// workgroup from the run-time work (window 5 x 3 x 3 times the root's extents, over the
// minimum work, 1 here): 2 workgroups of 32 when that allows, else 1 of all 64 (the second
// runs none).
// CHECK-LABEL: hexir.executable @conv_dynamic_prepacked
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:         func.func @conv_dynamic_prepacked(
// CHECK:         %[[ENOUGH:.+]] = arith.cmpi uge, %{{.+}}, %[[C2:.+]] :
// CHECK:         %[[WANTED:.+]] = arith.select %[[ENOUGH]], %[[C2]], %{{.+}} : index
// CHECK:         %[[SPLIT:.+]] = arith.ceildivui %{{.+}}, %[[WANTED]]
// CHECK:         %[[PER:.+]] = arith.maxui %[[SPLIT]], %{{.+}}
// CHECK:         %[[PANELS:.+]] = arith.ceildivui %[[PER]], %c16
// CHECK:         %[[TILE:.+]] = arith.muli %[[PANELS]], %c16
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[TILE]]
// CHECK:           linalg.generic
// CHECK-SAME:        tensor<?x5x?x?xf32>, tensor<?x5x3x3xf32>
hexir.executable @conv_dynamic_prepacked {
  builtin.module {
    func.func @conv_dynamic_prepacked(%x: tensor<?x5x?x?xf32>, %wp: tensor<4x45x16xf32>, %o: tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32> {
      %e = tensor.empty() : tensor<64x5x3x3xf32>
      %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 floordiv 16, d1 * 9 + d2 * 3 + d3, d0 mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%wp : tensor<4x45x16xf32>) outs(%e : tensor<64x5x3x3xf32>) attrs = {hexir.packed_rhs} {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<64x5x3x3xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<?x5x?x?xf32>, tensor<64x5x3x3xf32>) outs(%o : tensor<?x64x?x?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %acc, %p : f32
        linalg.yield %q : f32
      } -> tensor<?x64x?x?xf32>
      return %y : tensor<?x64x?x?xf32>
    }
  }
}
