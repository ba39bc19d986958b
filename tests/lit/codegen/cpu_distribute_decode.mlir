// RUN: hexir-opt %s -split-input-file --hexir-cpu-distribute-workgroups | FileCheck %s

// A q4_0 matvec (768 rows of 64 blocks: a layer's down projection) dotted with 8-bit
// activations: each workgroup quantizes all of x first, so it gets at least 48 rows (16
// workgroups of 48, a power of two), not the 48 workgroups of 16 rows its 1.5M iterations
// would give at 32768 each.
// CHECK-LABEL: hexir.executable @down
// CHECK-SAME:    hexir.workgroup_count = array<i64: 16, 1, 1>
// CHECK:         arith.constant 48 : index
hexir.executable @down {
  builtin.module {
    func.func @down(%w: tensor<768x1152xi8>, %xb: tensor<64x32xf32>) -> tensor<768xf32> {
      %e = tensor.empty() : tensor<768xf32>
      %c = arith.constant 0.0 : f32
      %f = linalg.fill ins(%c : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(n, b, j) -> (b, j)>, affine_map<(n, b, j) -> (n)>], iterator_types = ["parallel", "reduction", "reduction"], hexir.block_matvec = "q4_0"} ins(%xb : tensor<64x32xf32>) outs(%f : tensor<768xf32>) {
    ^bb0(%a941: f32, %a942: f32):
      %v943 = linalg.index 0 : index
      %v944 = linalg.index 1 : index
      %v945 = linalg.index 2 : index
      %v946 = arith.constant 18 : index
      %v947 = arith.muli %v944, %v946 : index
      %v948 = arith.constant 15 : index
      %v949 = arith.andi %v945, %v948 : index
      %v950 = arith.constant 4 : index
      %v951 = arith.shrui %v945, %v950 : index
      %v952 = arith.constant 2 : index
      %v953 = arith.addi %v947, %v952 : index
      %v954 = arith.addi %v953, %v949 : index
      %v955 = tensor.extract %w[%v943, %v954] : tensor<768x1152xi8>
      %v956 = arith.extui %v955 : i8 to i32
      %v957 = arith.constant 4 : index
      %v958 = arith.muli %v951, %v957 : index
      %v959 = arith.index_cast %v958 : index to i32
      %v960 = arith.shrui %v956, %v959 : i32
      %v961 = arith.constant 15 : i32
      %v962 = arith.andi %v960, %v961 : i32
      %v963 = arith.constant 8 : i32
      %v964 = arith.subi %v962, %v963 : i32
      %v965 = arith.sitofp %v964 : i32 to f32
      %v966 = arith.constant 0 : index
      %v967 = arith.addi %v947, %v966 : index
      %v968 = tensor.extract %w[%v943, %v967] : tensor<768x1152xi8>
      %v969 = arith.extui %v968 : i8 to i32
      %v970 = arith.constant 1 : index
      %v971 = arith.addi %v947, %v970 : index
      %v972 = tensor.extract %w[%v943, %v971] : tensor<768x1152xi8>
      %v973 = arith.extui %v972 : i8 to i32
      %v974 = arith.constant 8 : i32
      %v975 = arith.shli %v973, %v974 : i32
      %v976 = arith.ori %v969, %v975 : i32
      %v977 = arith.trunci %v976 : i32 to i16
      %v978 = arith.bitcast %v977 : i16 to f16
      %v979 = arith.extf %v978 : f16 to f32
      %v980 = arith.mulf %v979, %v965 : f32
      %v981 = arith.mulf %a941, %v980 : f32
      %v982 = arith.addf %a942, %v981 : f32
      linalg.yield %v982 : f32
    } -> tensor<768xf32>
      return %y : tensor<768xf32>
    }
  }
}

// -----

// A decode attention group stays whole (no tile loop): its lowering splits the KV heads
// over workgroups (CPUDecodeAttention.h), within the limits recorded on the kernel (max-workgroups, min-work-per-workgroup).
// CHECK-LABEL: hexir.executable @attention
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         func.func @attention(%{{.+}}: tensor<12x1x64xf32>, %{{.+}}: tensor<256x768xf32>, %{{.+}}: index, %{{.+}}: index) -> tensor<12x1x64xf32> attributes {hexir.workgroup_limits = array<i64: 64, 32768>}
// CHECK-NOT:     scf.for
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
hexir.executable @attention attributes {hexir.dispatch_group = "decode_attention"} {
  builtin.module {
    func.func @attention(%q: tensor<12x1x64xf32>, %k: tensor<256x768xf32>, %n: index) -> tensor<12x1x64xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty(%n) : tensor<12x1x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<12x1x?xf32>) -> tensor<12x1x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q : tensor<12x1x64xf32>) outs(%1 : tensor<12x1x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %a = linalg.index 0 : index
        %d = linalg.index 3 : index
        %s = linalg.index 2 : index
        %c64 = arith.constant 64 : index
        %col0 = arith.muli %a, %c64 : index
        %col = arith.addi %col0, %d : index
        %kv = tensor.extract %k[%s, %col] : tensor<256x768xf32>
        %p = arith.mulf %in, %kv : f32
        %r = arith.addf %out, %p : f32
        linalg.yield %r : f32
      } -> tensor<12x1x?xf32>
      %e = tensor.empty() : tensor<12x1x64xf32>
      %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%2 : tensor<12x1x?xf32>) outs(%e : tensor<12x1x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        %r = arith.addf %out, %in : f32
        linalg.yield %r : f32
      } -> tensor<12x1x64xf32>
      return %3 : tensor<12x1x64xf32>
    }
  }
}
