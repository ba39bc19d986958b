// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads=block-reductions=false --hexir-cuda-lower-executables | FileCheck %s

// A dynamic-length max with one warp. Lane = tid % 32 reads 4 contiguous floats per step
// (16-byte vector loads: a 1-D kernel argument is aligned): a loop of 8 steps with 8
// accumulators from -inf (the identity of maximumf) up to K rounded down to 1024, one of
// single steps up to K rounded down to 128 (Kc), then a scalar tail k = Kc + lane, k < K,
// striding by 32 (bounded by the lane's own k). The eight accumulators combine, then five
// xor shuffles (16, 8, 4, 2, 1); lane 0 combines with the initial output value and stores
// it.
// CHECK-LABEL: hexir.executable @dynmax
// CHECK:         llvm.func internal @dynmax_impl({{.*}}, %[[K:.+]]: i64, %{{.+}}: i64, %{{.+}}: !llvm.ptr, %[[OUT:.+]]: !llvm.ptr {llvm.noalias}, %{{.+}}: i64)
// CHECK-DAG:       %[[NINF:.+]] = llvm.mlir.constant(0xFF800000 : f32) : f32
// CHECK-DAG:       %[[C0:.+]] = llvm.mlir.constant(0 : index) : i64
// CHECK-DAG:       %[[C32:.+]] = llvm.mlir.constant(32 : index) : i64
// CHECK-DAG:       %[[C4:.+]] = llvm.mlir.constant(4 : index) : i64
// CHECK-DAG:       %[[C128:.+]] = llvm.mlir.constant(128 : index) : i64
// CHECK-DAG:       %[[C1024:.+]] = llvm.mlir.constant(1024 : index) : i64
// CHECK:           %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:           %[[TID64:.+]] = llvm.sext %[[TID]] : i32 to i64
// CHECK:           %[[IN:.+]] = llvm.icmp "ult" %{{.+}}, %{{.+}} : i32
// CHECK:           llvm.cond_br %[[IN]]
// CHECK:           %[[LANE:.+]] = llvm.urem %[[TID64]], %[[C32]] : i64
// CHECK:           %[[LANEOFF:.+]] = llvm.mul %[[LANE]], %[[C4]] : i64
// CHECK:           %[[R1024:.+]] = llvm.urem %[[K]], %[[C1024]] : i64
// CHECK:           %[[KS:.+]] = llvm.sub %[[K]], %[[R1024]] : i64
// CHECK:           %[[R128:.+]] = llvm.urem %[[K]], %[[C128]] : i64
// CHECK:           %[[KC:.+]] = llvm.sub %[[K]], %[[R128]] : i64
// CHECK:           llvm.br ^[[UNROLLED:bb[0-9]+]](%[[C0]], %[[NINF]], %[[NINF]], %[[NINF]], %[[NINF]], %[[NINF]], %[[NINF]], %[[NINF]], %[[NINF]] : i64, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:         ^[[UNROLLED]](%[[S:.+]]: i64, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK:           llvm.icmp "slt" %[[S]], %[[KS]] : i64
// CHECK-COUNT-8:   llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-COUNT-32:  llvm.intr.maximum
// CHECK:           llvm.add %[[S]], %[[C1024]] : i64
// CHECK:         ^[[SINGLE:bb[0-9]+]](%[[S1:.+]]: i64, %{{.+}}: f32):
// CHECK:           llvm.icmp "slt" %[[S1]], %[[KC]] : i64
// CHECK:           llvm.add %[[S1]], %[[LANEOFF]] : i64
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-COUNT-4:   llvm.intr.maximum
// CHECK:           llvm.add %[[S1]], %[[C128]] : i64
// CHECK:           %[[T0:.+]] = llvm.add %[[KC]], %[[LANE]] : i64
// CHECK:           llvm.br ^[[TAIL:bb[0-9]+]](%[[T0]], %{{.+}} : i64, f32)
// CHECK:         ^[[TAIL]](%[[T:.+]]: i64, %{{.+}}: f32):
// CHECK:           llvm.icmp "slt" %[[T]], %[[K]] : i64
// CHECK:           llvm.getelementptr inbounds|nuw %{{.+}}[%[[T]]]
// CHECK-NEXT:      llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK:           llvm.intr.maximum
// CHECK:           llvm.add %[[T]], %[[C32]] : i64
// CHECK-COUNT-7:   llvm.intr.maximum
// CHECK:           nvvm.shfl.sync  bfly %{{.+}}, %{{.+}}, {{.+}} : f32 -> f32
// CHECK:           llvm.intr.maximum
// CHECK:           nvvm.shfl.sync  bfly
// CHECK:           nvvm.shfl.sync  bfly
// CHECK:           nvvm.shfl.sync  bfly
// CHECK:           nvvm.shfl.sync  bfly
// CHECK-NOT:       nvvm.shfl.sync
// CHECK:           %[[FIRST:.+]] = llvm.icmp "eq" %[[LANE]], %[[C0]] : i64
// CHECK:           llvm.cond_br %[[FIRST]]
// CHECK:           %[[OLD:.+]] = llvm.load %[[OUT]]
// CHECK:           %[[R:.+]] = llvm.intr.maximum(%{{.+}}, %[[OLD]])
// CHECK:           llvm.store %[[R]], %[[OUT]]
// CHECK:         llvm.func @dynmax(
// CHECK-SAME:      nvvm.maxntid = array<i32: 32, 1, 1>
hexir.executable @dynmax {
  builtin.module {
    func.func @dynmax(%a: tensor<?xf32>, %o: tensor<f32>) -> tensor<f32> {
      %s = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>], iterator_types = ["reduction"]} ins(%a : tensor<?xf32>) outs(%o : tensor<f32>) {
      ^bb0(%x: f32, %acc: f32):
        %y = arith.maximumf %x, %acc : f32
        linalg.yield %y : f32
      } -> tensor<f32>
      return %s : tensor<f32>
    }
  }
}

// -----

// r + W x with f16 W (64 x 1000) and f32 x; the add is fused as the consumer. Each lane
// reads 8 elements per step: W with 16-byte vector<8xf16> loads, x with vector<8xf32>
// (two 16-byte accesses). K = 1000 is static: no 8-step loop runs (1000 < 2048); the three
// remaining steps are unrolled with their loads first, into three accumulators; the last
// 232 elements go through the scalar tail. After the butterfly, lane 0 alone stores the
// row's sum into the (per-thread) temporary and runs the consumer: r[i] + sum -> out[i].
// CHECK-LABEL: hexir.executable @mvres
// CHECK-SAME:    hexir.cuda.block_size = array<i64: 64, 1, 1>
// CHECK-SAME:    hexir.workgroup_count = array<i64: 32, 1, 1>
// CHECK:         llvm.func internal @mvres_impl(%{{.+}}: !llvm.ptr, %[[W:.+]]: !llvm.ptr {llvm.noalias}, {{.*}}, %{{.+}}: !llvm.ptr, %[[X:.+]]: !llvm.ptr {llvm.noalias}, {{.*}}, %{{.+}}: !llvm.ptr, %[[RES:.+]]: !llvm.ptr {llvm.noalias}, {{.*}}, %{{.+}}: !llvm.ptr, %[[O:.+]]: !llvm.ptr {llvm.noalias},
// CHECK-NOT:       llvm.br ^{{.+}}(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : i64, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:           %[[TMP:.+]] = llvm.alloca %{{.+}} x f32
// CHECK:           %[[ROW:.+]] = llvm.getelementptr %[[W]][%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f16
// CHECK:           llvm.getelementptr %[[ROW]]
// CHECK-NEXT:      llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CHECK:           llvm.getelementptr %[[X]]
// CHECK-NEXT:      llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK-NOT:       llvm.load
// CHECK-COUNT-24:  llvm.fpext
// CHECK:           llvm.load %{{.+}} : !llvm.ptr -> f16
// CHECK:           llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK-COUNT-5:   nvvm.shfl.sync  bfly
// CHECK:           %[[FIRST:.+]] = llvm.icmp "eq"
// CHECK-NEXT:      llvm.cond_br %[[FIRST]], ^[[LANE0:bb[0-9]+]], ^[[NEXT:bb[0-9]+]]
// CHECK:         ^[[LANE0]]:
// CHECK-NEXT:      %[[OLD:.+]] = llvm.load %[[TMP]] : !llvm.ptr -> f32
// CHECK-NEXT:      %[[SUM:.+]] = llvm.fadd %[[OLD]], %{{.+}} : f32
// CHECK-NEXT:      llvm.store %[[SUM]], %[[TMP]] : f32, !llvm.ptr
// CHECK-NEXT:      %[[RP:.+]] = llvm.getelementptr %[[RES]]
// CHECK-NEXT:      %[[RV:.+]] = llvm.load %[[RP]] : !llvm.ptr -> f32
// CHECK-NEXT:      %[[SV:.+]] = llvm.load %[[TMP]] : !llvm.ptr -> f32
// CHECK-NEXT:      %[[Y:.+]] = llvm.fadd %[[RV]], %[[SV]] : f32
// CHECK-NEXT:      %[[OP:.+]] = llvm.getelementptr %[[O]]
// CHECK-NEXT:      llvm.store %[[Y]], %[[OP]] : f32, !llvm.ptr
// CHECK-NEXT:      llvm.br ^[[NEXT]]
// CHECK:         ^[[NEXT]]:
// CHECK-NOT:       llvm.store
// CHECK:           llvm.return
hexir.executable @mvres {
  builtin.module {
    func.func @mvres(%w: tensor<64x1000xf16>, %x: tensor<1000xf32>, %r: tensor<64xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<64xf32>
      %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w, %x : tensor<64x1000xf16>, tensor<1000xf32>) outs(%z : tensor<64xf32>) {
      ^bb0(%a: f16, %b: f32, %acc: f32):
        %af = arith.extf %a : f16 to f32
        %p = arith.mulf %af, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      %sum = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%r, %y : tensor<64xf32>, tensor<64xf32>) outs(%o : tensor<64xf32>) {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %sum : tensor<64xf32>
    }
  }
}

// -----

// K = 773: W's rows (pitch 773 floats) are not 16-byte aligned, so W is read with four
// scalar loads per step while x (a whole argument) still gets one vector<4xf32> load.
// Rows with a dynamic pitch take the same scalar path (@dynk: only x is vectorized).
// CHECK-LABEL: hexir.executable @k773
// CHECK-COUNT-4:   llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK-NOT:       llvm.fmul
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NOT:       -> vector<8x
// CHECK:           llvm.fmul
// CHECK-LABEL: hexir.executable @dynk
// CHECK-COUNT-8:   llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NOT:       -> vector<4xf32>
// CHECK:           llvm.icmp "slt"
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NOT:       -> vector<4xf32>
// CHECK:           nvvm.shfl.sync
hexir.executable @k773 {
  builtin.module {
    func.func @k773(%w: tensor<64x773xf32>, %x: tensor<773xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %y = linalg.matvec ins(%w, %x : tensor<64x773xf32>, tensor<773xf32>) outs(%z : tensor<64xf32>) -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}
hexir.executable @dynk {
  builtin.module {
    func.func @dynk(%w: tensor<64x?xf32>, %x: tensor<?xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %y = linalg.matvec ins(%w, %x : tensor<64x?xf32>, tensor<?xf32>) outs(%z : tensor<64xf32>) -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}

// -----

// The argmax step (select-bodied i64 reduction, combiner minsi): eight accumulators from
// INT64_MAX (minsi's identity) fold select(x == max, min(acc, k), acc) per element; the
// partials combine with smin alone, and each i64 shuffle is two 32-bit ones.
// CHECK-LABEL: hexir.executable @argmax
// CHECK-DAG:       %[[MAX:.+]] = llvm.mlir.constant(9223372036854775807 : i64) : i64
// CHECK:           llvm.br ^{{.+}}(%{{.+}}, %[[MAX]], %[[MAX]], %[[MAX]], %[[MAX]], %[[MAX]], %[[MAX]], %[[MAX]], %[[MAX]] : i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK:           llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:           %[[EQ:.+]] = llvm.fcmp "oeq"
// CHECK-NEXT:      %[[MIN:.+]] = llvm.intr.smin(%[[ACC:.+]], %{{.+}}) : (i64, i64) -> i64
// CHECK-NEXT:      llvm.select %[[EQ]], %[[MIN]], %[[ACC]] : i1, i64
// CHECK-COUNT-2:   nvvm.shfl.sync  bfly %{{.+}} : i32 -> i32
// CHECK:           llvm.intr.smin
// CHECK-COUNT-8:   nvvm.shfl.sync  bfly %{{.+}} : i32 -> i32
// CHECK-NOT:       nvvm.shfl.sync
// CHECK:           llvm.cond_br
// CHECK:           %[[OLD:.+]] = llvm.load %{{.+}} : !llvm.ptr -> i64
// CHECK-NEXT:      %[[R:.+]] = llvm.intr.smin(%[[OLD]], %{{.+}}) : (i64, i64) -> i64
// CHECK-NEXT:      llvm.store %[[R]]
hexir.executable @argmax {
  builtin.module {
    func.func @argmax(%l: tensor<32000xf32>, %m: tensor<f32>, %o: tensor<i64>) -> tensor<i64> {
      %n = arith.constant 32000 : i64
      %zi = linalg.fill ins(%n : i64) outs(%o : tensor<i64>) -> tensor<i64>
      %i = linalg.generic {indexing_maps = [affine_map<(v) -> (v)>, affine_map<(v) -> ()>, affine_map<(v) -> ()>], iterator_types = ["reduction"]} ins(%l, %m : tensor<32000xf32>, tensor<f32>) outs(%zi : tensor<i64>) {
      ^bb0(%a: f32, %mx: f32, %acc: i64):
        %v = linalg.index 0 : index
        %vi = arith.index_cast %v : index to i64
        %eq = arith.cmpf oeq, %a, %mx : f32
        %mn = arith.minsi %acc, %vi : i64
        %r = arith.select %eq, %mn, %acc : i64
        linalg.yield %r : i64
      } -> tensor<i64>
      return %i : tensor<i64>
    }
  }
}

// -----

// A static tail of a whole number of elements per lane (K = 1152 = 4 steps of 32 x 8 + 128,
// 4 per lane): unrolled, its 4 scalar loads of W and of x issued before the first use (no
// loop waiting out each load), accumulated in the loop's order (k = 1024 + lane + 32 j).
// CHECK-LABEL: hexir.executable @mvtail
// CHECK:         llvm.func internal @mvtail_impl(
// CHECK-COUNT-4:   llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CHECK-COUNT-32:  llvm.fpext
// CHECK-COUNT-4:   llvm.load %{{.+}} : !llvm.ptr -> f16
// CHECK-NEXT:      llvm.getelementptr
// CHECK-NEXT:      llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK-NOT:       llvm.load
// CHECK-COUNT-4:   llvm.fpext
// CHECK-NOT:       llvm.br
// CHECK:           nvvm.shfl.sync  bfly
hexir.executable @mvtail {
  builtin.module {
    func.func @mvtail(%w: tensor<64x1152xf16>, %x: tensor<1152xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<64xf32>) -> tensor<64xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%w, %x : tensor<64x1152xf16>, tensor<1152xf32>) outs(%z : tensor<64xf32>) {
      ^bb0(%a: f16, %b: f32, %acc: f32):
        %af = arith.extf %a : f16 to f32
        %p = arith.mulf %af, %b : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<64xf32>
      return %y : tensor<64xf32>
    }
  }
}
