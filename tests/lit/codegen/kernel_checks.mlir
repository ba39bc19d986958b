// RUN: hexir-opt %s -split-input-file --hexir-cpu-lower-executables | FileCheck %s

// A gather: the index read from data is compared unsigned with the table's extent (10);
// out of range, the kernel stores {code 1, index, extent} into the record the entry passes
// as the impl's last argument unless the record already holds a failure (its code is not 0:
// the first failure of the workgroup is named), and reads element 0 instead. The entry zeroes the record's
// code and returns 0 or, when it is set, the code after copying the two values to
// workgroup->error (offset 16 of the workgroup state).
// CHECK-LABEL: hexir.executable @gather
// CHECK:         llvm.func internal @gather_impl({{.+}}, %[[REC:.+]]: !llvm.ptr)
// CHECK:           %[[BAD:.+]] = llvm.icmp "uge" %[[I:.+]], %[[TEN:.+]] : i64
// CHECK:           llvm.cond_br %[[BAD]], ^[[REPORT:.+]], ^
// CHECK:         ^[[REPORT]]:
// CHECK:           %[[OLD:.+]] = llvm.load %[[REC]] : !llvm.ptr -> i64
// CHECK:           %[[FIRST:.+]] = llvm.icmp "eq" %[[OLD]], %{{.+}} : i64
// CHECK:           %[[AT0:.+]] = llvm.getelementptr %[[REC]][0]
// CHECK:           %[[C0:.+]] = llvm.select %[[FIRST]], %{{.+}}, %[[OLD]] : i1, i64
// CHECK:           llvm.store %[[C0]], %[[AT0]] : i64, !llvm.ptr
// CHECK:           %[[AT1:.+]] = llvm.getelementptr %[[REC]][8]
// CHECK:           %[[KEPT1:.+]] = llvm.load %[[AT1]] : !llvm.ptr -> i64
// CHECK:           %[[V1:.+]] = llvm.select %[[FIRST]], %[[I]], %[[KEPT1]] : i1, i64
// CHECK:           llvm.store %[[V1]], %[[AT1]] : i64, !llvm.ptr
// CHECK:           %[[AT2:.+]] = llvm.getelementptr %[[REC]][16]
// CHECK:           llvm.store %{{.+}}, %[[AT2]] : i64, !llvm.ptr
// CHECK:           llvm.select %[[BAD]], %{{.+}}, %[[I]] : i1, i64
// CHECK-NOT:     hexir_kernel_error
// CHECK:         llvm.func @gather(%{{.+}}: !llvm.ptr, %[[W:.+]]: !llvm.ptr) -> i32
// CHECK:           %[[R:.+]] = llvm.alloca %{{.+}} x !llvm.array<3 x i64>
// CHECK:           llvm.store %{{.+}}, %[[R]] : i64, !llvm.ptr
// CHECK:           llvm.call @gather_impl({{.+}}, %[[R]])
// CHECK:           %[[CODE:.+]] = llvm.load %[[R]] : !llvm.ptr -> i64
// CHECK:           %[[FAILED:.+]] = llvm.icmp "ne" %[[CODE]]
// CHECK:           llvm.cond_br %[[FAILED]], ^[[FAIL:.+]], ^[[OK:[a-z0-9]+]]
// CHECK:         ^[[OK]]:
// CHECK:           llvm.return %{{.+}} : i32
// CHECK:         ^[[FAIL]]:
// CHECK:           %[[EP:.+]] = llvm.getelementptr %[[W]][16]
// CHECK:           %[[E:.+]] = llvm.load %[[EP]] : !llvm.ptr -> !llvm.ptr
// CHECK:           %[[RC:.+]] = llvm.trunc %[[CODE]] : i64 to i32
// CHECK:           llvm.return %[[RC]] : i32
hexir.executable @gather attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @gather(%table: tensor<10xf32>, %idx: tensor<4xi64>, %o: tensor<4xf32>, %id: index) -> tensor<4xf32> {
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

// Indices built from the loops (linalg.index, here plus a constant) are in range by
// construction: no check, no record, the entry returns 0.
// CHECK-LABEL: hexir.executable @shift
// CHECK-NOT:     llvm.icmp "uge"
// CHECK:         llvm.func @shift(
// CHECK-NOT:       llvm.alloca
// CHECK:           llvm.return
hexir.executable @shift attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @shift(%a: tensor<8xf32>, %o: tensor<4xf32>, %id: index) -> tensor<4xf32> {
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

// -----

// An integer division by a value from data: the divisor 0 (or INT_MIN / -1) is reported
// (codes 2 and 3) and replaced by 1; a constant nonzero divisor needs nothing.
// CHECK-LABEL: hexir.executable @divide
// CHECK:         llvm.func internal @divide_impl(
// CHECK:           %[[ZERO:.+]] = llvm.icmp "eq" %[[Y:.+]], %{{.+}} : i32
// CHECK-DAG:       llvm.icmp "eq" %[[Y]], %{{.+}} : i32
// CHECK-DAG:       llvm.icmp "eq" %[[X:[0-9a-z]+]], %{{.+}} : i32
// CHECK:           %[[SAFE:.+]] = llvm.select %{{.+}}, %{{.+}}, %[[Y]] : i1, i32
// CHECK:           %[[Q:.+]] = llvm.sdiv %[[X]], %[[SAFE]] : i32
// CHECK-NOT:       llvm.icmp "eq"
// CHECK:           llvm.sdiv %[[Q]], %{{.+}} : i32
// CHECK:         llvm.func @divide(
hexir.executable @divide attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @divide(%a: tensor<4xi32>, %b: tensor<4xi32>, %o: tensor<4xi32>, %id: index) -> tensor<4xi32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%o : tensor<4xi32>) {
      ^bb0(%x: i32, %y: i32, %z: i32):
        %q = arith.divsi %x, %y : i32
        %c3 = arith.constant 3 : i32
        %h = arith.divsi %q, %c3 : i32
        linalg.yield %h : i32
      } -> tensor<4xi32>
      return %r : tensor<4xi32>
    }
  }
}
