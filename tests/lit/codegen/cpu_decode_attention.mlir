// RUN: hexir-opt %s --hexir-cpu-lower-executables=cpu=x86-64-v3 | FileCheck %s

// The llama decode attention as one CPU executable (hexir.dispatch_group = "decode_attention",
// not distributed: one workgroup) becomes vector loops over contiguous cache rows
// (codegen/CPUDecodeAttention.h): K/V caches [61][32] (2 KV heads of head size 16), q and the
// result [2][2][16] (GQA 2:1), n = arg 4. AVX2: 8-lane vectors, 2 chunks per row. Scores: per
// position, each K chunk loaded once (<8 x f32>) and multiplied into the 2 heads' accumulators,
// reduced per head; softmax with the exp polynomial; values: V chunks loaded once for the 2
// heads; no gathers, no scalar cache loads.
// CHECK-LABEL: hexir.executable @main_dispatch_0
// CHECK:         llvm.func internal @main_dispatch_0_impl
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:           llvm.alloca
// CHECK:           llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK-COUNT-2:   llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-COUNT-2:   llvm.intr.vector.reduce.fadd
// CHECK:           llvm.intr.maximum
// CHECK:           llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK-COUNT-2:   llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.store %{{.+}} : vector<8xf32>, !llvm.ptr
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:         llvm.func @main_dispatch_0(
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1)>
hexir.executable @main_dispatch_0 attributes {hexir.dispatch_group = "decode_attention", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @main_dispatch_0(%arg0: tensor<61x32xf32>, %arg1: tensor<2x2x16xf32>, %arg2: tensor<61x32xf32>, %arg3: tensor<2x2x16xf32>, %arg4: index) -> tensor<2x2x16xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x2x?xf32>) -> tensor<2x2x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg1 : tensor<2x2x16xf32>) outs(%1 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x2xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x2x?xf32>) outs(%4 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x2xf32>
      %6 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%6 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x2x?xf32>
      %8 = tensor.empty() : tensor<2x2xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x2x?xf32>) outs(%9 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x2xf32>
      %11 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%11 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x2x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x2x?xf32>) outs(%13 : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x16xf32>
      return %14 : tensor<2x2x16xf32>
    }
  }
}

// 40 query heads per KV head (more than 16 accumulators per chunk): the generic lowering.
// CHECK-LABEL: hexir.executable @main_dispatch_1
// CHECK-NOT:     llvm.intr.vector.reduce.fadd
// CHECK:         llvm.func @main_dispatch_1(
hexir.executable @main_dispatch_1 attributes {hexir.dispatch_group = "decode_attention", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @main_dispatch_1(%arg0: tensor<20000x64xf32>, %arg1: tensor<1x40x64xf32>, %arg2: tensor<20000x64xf32>, %arg3: tensor<1x40x64xf32>, %arg4: index) -> tensor<1x40x64xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty(%arg4) : tensor<1x40x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x40x?xf32>) -> tensor<1x40x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg1 : tensor<1x40x64xf32>) outs(%1 : tensor<1x40x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 64 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<20000x64xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<1x40x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<1x40xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<1x40xf32>) -> tensor<1x40xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<1x40x?xf32>) outs(%4 : tensor<1x40xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 8.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<1x40xf32>
      %6 = tensor.empty(%arg4) : tensor<1x40x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<1x40x?xf32>, tensor<1x40xf32>) outs(%6 : tensor<1x40x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 8.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<1x40x?xf32>
      %8 = tensor.empty() : tensor<1x40xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<1x40xf32>) -> tensor<1x40xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<1x40x?xf32>) outs(%9 : tensor<1x40xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<1x40xf32>
      %11 = tensor.empty(%arg4) : tensor<1x40x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<1x40x?xf32>, tensor<1x40xf32>) outs(%11 : tensor<1x40x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<1x40x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<1x40x64xf32>) -> tensor<1x40x64xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<1x40x?xf32>) outs(%13 : tensor<1x40x64xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 64 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<20000x64xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<1x40x64xf32>
      return %14 : tensor<1x40x64xf32>
    }
  }
}

// q from a prologue (the importer's rotary embedding, arg 5 the position): its loop lowering
// is kept (the cosine, a temporary for q), then the vector loops read that temporary.
// CHECK-LABEL: hexir.executable @main_dispatch_2
// CHECK:         llvm.func internal @main_dispatch_2_impl
// CHECK:           cos
// CHECK:           llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:           llvm.intr.vector.reduce.fadd
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:         llvm.func @main_dispatch_2(
hexir.executable @main_dispatch_2 attributes {hexir.dispatch_group = "decode_attention", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @main_dispatch_2(%arg0: tensor<61x32xf32>, %arg1: tensor<2x2x16xf32>, %arg2: tensor<61x32xf32>, %arg3: tensor<2x2x16xf32>, %arg4: index, %arg5: i64) -> tensor<2x2x16xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %q = tensor.empty() : tensor<2x2x16xf32>
      %qr = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x2x16xf32>) outs(%q : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %a = linalg.index 0 : index
        %g = linalg.index 1 : index
        %d = linalg.index 2 : index
        %c1 = arith.constant 1 : index
        %pd = arith.xori %d, %c1 : index
        %c6 = arith.constant 15 : index
        %pc = arith.minui %pd, %c6 : index
        %y = tensor.extract %arg1[%a, %g, %pc] : tensor<2x2x16xf32>
        %pf = arith.sitofp %arg5 : i64 to f32
        %cs = math.cos %pf : f32
        %t = arith.mulf %y, %cs : f32
        %r = arith.addf %in, %t : f32
        linalg.yield %r : f32
      } -> tensor<2x2x16xf32>
      %0 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x2x?xf32>) -> tensor<2x2x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qr : tensor<2x2x16xf32>) outs(%1 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x2xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x2x?xf32>) outs(%4 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x2xf32>
      %6 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%6 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x2x?xf32>
      %8 = tensor.empty() : tensor<2x2xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x2x?xf32>) outs(%9 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x2xf32>
      %11 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%11 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x2x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x2x?xf32>) outs(%13 : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x16xf32>
      return %14 : tensor<2x2x16xf32>
    }
  }
}

// The same kernel as hexir-cpu-distribute-workgroups leaves it (an unread workgroup id last,
// its limits on the kernel: 64 workgroups of at least 1024 multiply-adds; this one has 2 x 2
// x 2 x 16 x 61 = 7808): one KV head a workgroup, the executable's count set to the 2 heads;
// the prologue's loops run over its head's [1][2][16] view.
// CHECK-LABEL: hexir.executable @main_dispatch_3
// CHECK-SAME:    hexir.workgroup_count = array<i64: 2, 1, 1>
// CHECK:         llvm.func internal @main_dispatch_3_impl
// CHECK-NOT:       hexir.workgroup_limits
// CHECK:           cos
// CHECK:           llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:         llvm.func @main_dispatch_3(
hexir.executable @main_dispatch_3 attributes {hexir.dispatch_group = "decode_attention", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @main_dispatch_3(%arg0: tensor<61x32xf32>, %arg1: tensor<2x2x16xf32>, %arg2: tensor<61x32xf32>, %arg3: tensor<2x2x16xf32>, %arg4: index, %arg5: i64, %id: index) -> tensor<2x2x16xf32> attributes {hexir.workgroup_limits = array<i64: 64, 1024>} {
      %cst = arith.constant 0.000000e+00 : f32
      %q = tensor.empty() : tensor<2x2x16xf32>
      %qr = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x2x16xf32>) outs(%q : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %a = linalg.index 0 : index
        %g = linalg.index 1 : index
        %d = linalg.index 2 : index
        %c1 = arith.constant 1 : index
        %pd = arith.xori %d, %c1 : index
        %c6 = arith.constant 15 : index
        %pc = arith.minui %pd, %c6 : index
        %y = tensor.extract %arg1[%a, %g, %pc] : tensor<2x2x16xf32>
        %pf = arith.sitofp %arg5 : i64 to f32
        %cs = math.cos %pf : f32
        %t = arith.mulf %y, %cs : f32
        %r = arith.addf %in, %t : f32
        linalg.yield %r : f32
      } -> tensor<2x2x16xf32>
      %0 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x2x?xf32>) -> tensor<2x2x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qr : tensor<2x2x16xf32>) outs(%1 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x2xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x2x?xf32>) outs(%4 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x2xf32>
      %6 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%6 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x2x?xf32>
      %8 = tensor.empty() : tensor<2x2xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x2x?xf32>) outs(%9 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x2xf32>
      %11 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%11 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x2x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x2x?xf32>) outs(%13 : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x16xf32>
      return %14 : tensor<2x2x16xf32>
    }
  }
}

// A limit of 1 workgroup (--max-workgroups=1): every head in the one workgroup.
// CHECK-LABEL: hexir.executable @main_dispatch_4
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         llvm.func internal @main_dispatch_4_impl
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:         llvm.func @main_dispatch_4(
hexir.executable @main_dispatch_4 attributes {hexir.dispatch_group = "decode_attention", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @main_dispatch_4(%arg0: tensor<61x32xf32>, %arg1: tensor<2x2x16xf32>, %arg2: tensor<61x32xf32>, %arg3: tensor<2x2x16xf32>, %arg4: index, %arg5: i64, %id: index) -> tensor<2x2x16xf32> attributes {hexir.workgroup_limits = array<i64: 1, 1024>} {
      %cst = arith.constant 0.000000e+00 : f32
      %q = tensor.empty() : tensor<2x2x16xf32>
      %qr = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x2x16xf32>) outs(%q : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %a = linalg.index 0 : index
        %g = linalg.index 1 : index
        %d = linalg.index 2 : index
        %c1 = arith.constant 1 : index
        %pd = arith.xori %d, %c1 : index
        %c6 = arith.constant 15 : index
        %pc = arith.minui %pd, %c6 : index
        %y = tensor.extract %arg1[%a, %g, %pc] : tensor<2x2x16xf32>
        %pf = arith.sitofp %arg5 : i64 to f32
        %cs = math.cos %pf : f32
        %t = arith.mulf %y, %cs : f32
        %r = arith.addf %in, %t : f32
        linalg.yield %r : f32
      } -> tensor<2x2x16xf32>
      %0 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x2x?xf32>) -> tensor<2x2x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qr : tensor<2x2x16xf32>) outs(%1 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x2xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x2x?xf32>) outs(%4 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x2xf32>
      %6 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%6 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x2x?xf32>
      %8 = tensor.empty() : tensor<2x2xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x2x?xf32>) outs(%9 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x2xf32>
      %11 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%11 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x2x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x2x?xf32>) outs(%13 : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x16xf32>
      return %14 : tensor<2x2x16xf32>
    }
  }
}

// At least 8192 multiply-adds a workgroup (of 7808 in all): one workgroup.
// CHECK-LABEL: hexir.executable @main_dispatch_5
// CHECK-SAME:    hexir.workgroup_count = array<i64: 1, 1, 1>
// CHECK:         llvm.func internal @main_dispatch_5_impl
// CHECK-NOT:       llvm.intr.masked.gather
// CHECK:         llvm.func @main_dispatch_5(
hexir.executable @main_dispatch_5 attributes {hexir.dispatch_group = "decode_attention", hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @main_dispatch_5(%arg0: tensor<61x32xf32>, %arg1: tensor<2x2x16xf32>, %arg2: tensor<61x32xf32>, %arg3: tensor<2x2x16xf32>, %arg4: index, %arg5: i64, %id: index) -> tensor<2x2x16xf32> attributes {hexir.workgroup_limits = array<i64: 64, 8192>} {
      %cst = arith.constant 0.000000e+00 : f32
      %q = tensor.empty() : tensor<2x2x16xf32>
      %qr = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x2x16xf32>) outs(%q : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %a = linalg.index 0 : index
        %g = linalg.index 1 : index
        %d = linalg.index 2 : index
        %c1 = arith.constant 1 : index
        %pd = arith.xori %d, %c1 : index
        %c6 = arith.constant 15 : index
        %pc = arith.minui %pd, %c6 : index
        %y = tensor.extract %arg1[%a, %g, %pc] : tensor<2x2x16xf32>
        %pf = arith.sitofp %arg5 : i64 to f32
        %cs = math.cos %pf : f32
        %t = arith.mulf %y, %cs : f32
        %r = arith.addf %in, %t : f32
        linalg.yield %r : f32
      } -> tensor<2x2x16xf32>
      %0 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x2x?xf32>) -> tensor<2x2x?xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qr : tensor<2x2x16xf32>) outs(%1 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 3 : index
        %17 = linalg.index 2 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg0[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x?xf32>
      %cst_0 = arith.constant -3.000000e+38 : f32
      %3 = tensor.empty() : tensor<2x2xf32>
      %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<2x2x?xf32>) outs(%4 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %cst_1 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_1 : f32
        %16 = arith.maximumf %out, %15 : f32
        linalg.yield %16 : f32
      } -> tensor<2x2xf32>
      %6 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %5 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%6 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %cst_2 = arith.constant 4.000000e+00 : f32
        %15 = arith.divf %in, %cst_2 : f32
        %16 = arith.subf %15, %in_1 : f32
        %17 = math.exp %16 : f32
        linalg.yield %17 : f32
      } -> tensor<2x2x?xf32>
      %8 = tensor.empty() : tensor<2x2xf32>
      %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<2x2xf32>) -> tensor<2x2xf32>
      %10 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x2x?xf32>) outs(%9 : tensor<2x2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = arith.addf %out, %in : f32
        linalg.yield %15 : f32
      } -> tensor<2x2xf32>
      %11 = tensor.empty(%arg4) : tensor<2x2x?xf32>
      %12 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<2x2x?xf32>, tensor<2x2xf32>) outs(%11 : tensor<2x2x?xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %15 = arith.divf %in, %in_1 : f32
        linalg.yield %15 : f32
      } -> tensor<2x2x?xf32>
      %13 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
      %14 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%12 : tensor<2x2x?xf32>) outs(%13 : tensor<2x2x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %15 = linalg.index 0 : index
        %16 = linalg.index 2 : index
        %17 = linalg.index 3 : index
        %c7 = arith.constant 16 : index
        %18 = arith.muli %15, %c7 : index
        %19 = arith.addi %18, %16 : index
        %extracted = tensor.extract %arg2[%17, %19] : tensor<61x32xf32>
        %20 = arith.mulf %in, %extracted : f32
        %21 = arith.addf %out, %20 : f32
        linalg.yield %21 : f32
      } -> tensor<2x2x16xf32>
      return %14 : tensor<2x2x16xf32>
    }
  }
}
