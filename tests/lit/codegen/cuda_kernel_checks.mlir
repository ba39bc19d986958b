// RUN: hexir-opt %s -split-input-file --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s

// A gather on CUDA: the index read from data is compared unsigned with the table's extent
// (10); out of range, the thread claims the dispatch's status record (the impl's last
// argument) with a cmpxchg of its code 0 -> 1 and stores the index and the extent at
// offsets 8 and 16 if it won, else into the scratch word at 24; the read uses element 0.
// The ABI v1 entry takes the record as its optional last 8-byte parameter.
// CHECK-LABEL: hexir.executable @gather
// CHECK:       gpu.module @gather
// CHECK:         llvm.func internal @gather_impl({{.+}}, %[[REC:[a-z0-9]+]]: !llvm.ptr)
// CHECK:           %[[BAD:.+]] = llvm.icmp "uge" %[[I:.+]], %{{.+}} : i64
// CHECK:           llvm.cond_br %[[BAD]], ^[[REPORT:.+]], ^
// CHECK:         ^[[REPORT]]:
// CHECK:           %[[CLAIM:.+]] = llvm.cmpxchg %[[REC]], %{{.+}}, %{{.+}} monotonic monotonic : !llvm.ptr, i32
// CHECK:           %[[WON:.+]] = llvm.extractvalue %[[CLAIM]][1] : !llvm.struct<(i32, i1)>
// CHECK-DAG:       %[[AT8:.+]] = llvm.getelementptr %[[REC]][8]
// CHECK-DAG:       %[[AT24:.+]] = llvm.getelementptr %[[REC]][24]
// CHECK:           %[[SLOT:.+]] = llvm.select %[[WON]], %[[AT8]], %[[AT24]] : i1, !llvm.ptr
// CHECK:           llvm.store %[[I]], %[[SLOT]] : i64, !llvm.ptr
// CHECK:           llvm.getelementptr %[[REC]][16]
// CHECK:           llvm.select %[[WON]]
// CHECK:           llvm.store
// CHECK:           llvm.select %[[BAD]], %{{.+}}, %[[I]] : i1, i64
// CHECK-NOT:     hexir_kernel_error
// CHECK:         llvm.func @gather(%{{.+}}: !llvm.ptr {{.+}}, %{{.+}}: !llvm.ptr {{.+}}, %{{.+}}: !llvm.ptr {{.+}}, %[[STATUS:[a-z0-9]+]]: !llvm.ptr {{.+}})
// CHECK-SAME:      nvvm.kernel
// CHECK:           llvm.call @gather_impl({{.+}}, %[[STATUS]])
hexir.executable @gather {
  builtin.module {
    func.func @gather(%table: tensor<10xf32>, %idx: tensor<4xi64>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%idx : tensor<4xi64>) outs(%o : tensor<4xf32>) {
      ^bb0(%i: i64, %y: f32):
        %ii = arith.index_cast %i : i64 to index
        %v = tensor.extract %table[%ii] : tensor<10xf32>
        linalg.yield %v : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}

// -----

// Loop-built indices need no check: no record, the entry keeps its bindings only.
// CHECK-LABEL: hexir.executable @shift
// CHECK-NOT:     llvm.cmpxchg
// CHECK:         llvm.func @shift(%{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 16 : i64}, %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 16 : i64}) attributes {nvvm.kernel
hexir.executable @shift {
  builtin.module {
    func.func @shift(%a: tensor<8xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%o : tensor<4xf32>) {
      ^bb0(%y: f32):
        %i = linalg.index 0 : index
        %c2 = arith.constant 2 : index
        %j = arith.addi %i, %c2 : index
        %v = tensor.extract %a[%j] : tensor<8xf32>
        linalg.yield %v : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
