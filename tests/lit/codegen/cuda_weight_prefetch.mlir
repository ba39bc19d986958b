// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables | FileCheck %s
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=prefetch-max-bytes=80000 | FileCheck %s --check-prefix=BOUND
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=prefetch-max-bytes=79999 | FileCheck %s --check-prefix=NONE
// RUN: hexir-opt %s --hexir-cuda-distribute-threads --hexir-cuda-lower-executables=prefetch-max-bytes=0 | FileCheck %s --check-prefix=NONE
// RUN: not hexir-compile %s --target=cuda --cuda-prefetch-max-bytes=-1 -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=REFUSED

// Weights streamed before the programmatic wait. A GEMV with whole rows per block (W x, 40
// rows of K = 1000 f16, a row per block of 2 warps: 40 blocks) whose W no dispatch of the
// program writes: thread 0 of block b < 40 asks L2 for its row, bytes [b 2000, b 2000 + 2000),
// with one bulk prefetch, after launch_dependents and before griddepcontrol.wait. Read-only
// bindings (every dispatch site's operand is a public function's argument or a constant,
// only read: no tied result, no return) are recorded on the executable; x is read-only too.
// Only weights of at most prefetch-max-bytes (default 8 MiB) are prefetched: W is 80000
// bytes; 0 turns prefetches off; the read-only bindings are recorded either way.
// BOUND-LABEL: llvm.func @gemv(
// BOUND:         nvvm.cp.async.bulk.prefetch
// BOUND:         llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// NONE-LABEL:  hexir.executable @gemv
// NONE-SAME:     hexir.cuda.read_only_bindings = array<i64: 0, 1>
// NONE-NOT:      nvvm.cp.async.bulk.prefetch
// REFUSED: hexir-compile: error: invalid_argument: --cuda-prefetch-max-bytes: -1 is not an integer >= 0 (0: none)
// CHECK-LABEL: hexir.executable @gemv
// CHECK-SAME:    hexir.cuda.read_only_bindings = array<i64: 0, 1>
// CHECK:         llvm.func @gemv(%[[X:.+]]: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %[[W:.+]]: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64})
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT:      %[[BID:.+]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT:      %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:      %[[FIRST:.+]] = llvm.icmp "eq" %[[TID]], %[[ZERO]] : i32
// CHECK-NEXT:      %[[BLOCKS:.+]] = llvm.mlir.constant(40 : i32) : i32
// CHECK-NEXT:      %[[INSIDE:.+]] = llvm.icmp "ult" %[[BID]], %[[BLOCKS]] : i32
// CHECK:           %[[ISSUE:.+]] = llvm.and %[[FIRST]], %[[INSIDE]] : i1
// CHECK:           llvm.cond_br %[[ISSUE]], ^[[PREFETCH:bb[0-9]+]], ^[[WAIT:bb[0-9]+]]
// CHECK:         ^[[PREFETCH]]:
// CHECK:           %[[B64:.+]] = llvm.zext %[[BID]] : i32 to i64
// CHECK:           %[[ROW:.+]] = llvm.mlir.constant(2000 : i64) : i64
// CHECK:           %[[OFFSET:.+]] = llvm.mul %[[B64]], %[[ROW]] : i64
// CHECK:           %[[AT:.+]] = llvm.getelementptr %[[W]][%[[OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:           %[[GLOBAL:.+]] = llvm.addrspacecast %[[AT]] : !llvm.ptr to !llvm.ptr<1>
// CHECK:           nvvm.cp.async.bulk.prefetch %[[GLOBAL]], %{{.+}} : <1>
// CHECK-NEXT:      llvm.br ^[[WAIT]]
// CHECK:         ^[[WAIT]]:
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// CHECK:           llvm.call @gemv_impl
hexir.executable @gemv {
  builtin.module {
    func.func @gemv(%x: tensor<1000xf32>, %w: tensor<40x1000xf16>, %o: tensor<40xf32>) -> tensor<40xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<40xf32>) -> tensor<40xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<1000xf32>, tensor<40x1000xf16>) outs(%z : tensor<40xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<40xf32>
      return %r : tensor<40xf32>
    }
  }
}
// The same kernel at a site whose W is a dispatch's result: W is not read-only (x still is),
// nothing is prefetched, the entry waits first.
// Only x keeps noalias on the entry: ld.global.nc (NVPTX's path for noalias arguments a
// kernel only reads) needs memory read-only for the kernel's lifetime, and under
// programmatic launch the kernel overlaps the dispatch that writes W.
// CHECK-LABEL: hexir.executable @gemv_computed
// CHECK-SAME:    hexir.cuda.read_only_bindings = array<i64: 0>
// CHECK:         llvm.func @gemv_computed(%{{.+}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64}, %{{.+}}: !llvm.ptr {llvm.align = 16 : i64})
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
hexir.executable @gemv_computed {
  builtin.module {
    func.func @gemv_computed(%x: tensor<1000xf32>, %w: tensor<40x1000xf16>, %o: tensor<40xf32>) -> tensor<40xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<40xf32>) -> tensor<40xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<1000xf32>, tensor<40x1000xf16>) outs(%z : tensor<40xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<40xf32>
      return %r : tensor<40xf32>
    }
  }
}
// W written in place by a dispatch (its result tied to operand 0), and a donated argument
// (returned by a private callee): neither is read-only; nothing is prefetched.
// CHECK-LABEL: hexir.executable @gemv_written
// CHECK-SAME:    hexir.cuda.read_only_bindings = array<i64: 0>,
// CHECK:         llvm.func @gemv_written(
// CHECK-NEXT:      nvvm.griddepcontrol launch_dependents
// CHECK-NEXT:      llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
hexir.executable @gemv_written {
  builtin.module {
    func.func @gemv_written(%x: tensor<1000xf32>, %w: tensor<40x1000xf16>, %o: tensor<40xf32>) -> tensor<40xf32> {
      %zero = arith.constant 0.0 : f32
      %z = linalg.fill ins(%zero : f32) outs(%o : tensor<40xf32>) -> tensor<40xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<1000xf32>, tensor<40x1000xf16>) outs(%z : tensor<40xf32>) {
      ^bb0(%a: f32, %b: f16, %acc: f32):
        %bf = arith.extf %b : f16 to f32
        %p = arith.mulf %a, %bf : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      } -> tensor<40xf32>
      return %r : tensor<40xf32>
    }
  }
}
hexir.executable @fill {
  builtin.module {
    func.func @fill(%w: tensor<40x1000xf16>, %o: tensor<40x1000xf16>) -> tensor<40x1000xf16> {
      %one = arith.constant 1.0 : f16
      %r = linalg.fill ins(%one : f16) outs(%o : tensor<40x1000xf16>) -> tensor<40x1000xf16>
      return %r : tensor<40x1000xf16>
    }
  }
}
// A private callee's argument is read-only when every call passes a read-only value.
func.func private @layer(%x: tensor<1000xf32>, %w: tensor<40x1000xf16>) -> tensor<40xf32> {
  %r = hexir.dispatch @gemv(%x, %w) : (tensor<1000xf32>, tensor<40x1000xf16>) -> tensor<40xf32>
  return %r : tensor<40xf32>
}
func.func private @donate(%w: tensor<40x1000xf16>) -> tensor<40x1000xf16> {
  return %w : tensor<40x1000xf16>
}
func.func @main(%x: tensor<1000xf32>, %w: tensor<40x1000xf16>, %v: tensor<40x1000xf16>, %u: tensor<40x1000xf16>) -> (tensor<40xf32>, tensor<40xf32>, tensor<40xf32>, tensor<40xf32>, tensor<40x1000xf16>) {
  %a = func.call @layer(%x, %w) : (tensor<1000xf32>, tensor<40x1000xf16>) -> tensor<40xf32>
  %c = hexir.dispatch @fill(%w) : (tensor<40x1000xf16>) -> tensor<40x1000xf16>
  %b = hexir.dispatch @gemv_computed(%x, %c) : (tensor<1000xf32>, tensor<40x1000xf16>) -> tensor<40xf32>
  %t = hexir.dispatch @fill(%v) {hexir.tied_operands = array<i64: 0>} : (tensor<40x1000xf16>) -> tensor<40x1000xf16>
  %d = hexir.dispatch @gemv_written(%x, %v) : (tensor<1000xf32>, tensor<40x1000xf16>) -> tensor<40xf32>
  %kept = func.call @donate(%u) : (tensor<40x1000xf16>) -> tensor<40x1000xf16>
  %e = hexir.dispatch @gemv_written(%x, %u) : (tensor<1000xf32>, tensor<40x1000xf16>) -> tensor<40xf32>
  return %a, %b, %d, %e, %kept : tensor<40xf32>, tensor<40xf32>, tensor<40xf32>, tensor<40xf32>, tensor<40x1000xf16>
}
