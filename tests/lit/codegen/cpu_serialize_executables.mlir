// RUN: hexir-opt %s --hexir-cpu-lower-executables --hexir-cpu-serialize-executables | FileCheck %s
// RUN: hexir-opt %s --hexir-cpu-lower-executables --hexir-cpu-serialize-executables=linker=/usr/lib/llvm-22/bin/ld.lld | FileCheck %s
// RUN: not hexir-opt %s --hexir-cpu-lower-executables --hexir-cpu-serialize-executables=linker=/nonexistent/ld 2>&1 | FileCheck %s --check-prefix=NO-LINKER

// The linker option is the program linking each object: GNU ld by default, ld.lld named;
// a missing one fails naming it.
// NO-LINKER: error: linking with /nonexistent/ld failed

// Serialization attaches the ELF shared object and empties the executable.
// CHECK:      hexir.executable @k attributes {
// CHECK-SAME:   hexir.binary = "\7FELF
// CHECK-SAME:   hexir.entry = "k"
// CHECK-SAME:   hexir.format = "cpu-elf-x86_64"
// CHECK-SAME:   hexir.workgroup_count = array<i64: 1, 1, 1>} {
// CHECK-NEXT: }
hexir.executable @k attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @k(%a: tensor<4xf32>, %o: tensor<4xf32>, %id: index) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%o : tensor<4xf32>) {
      ^bb0(%x: f32, %y: f32):
        %z = math.exp %x : f32
        linalg.yield %z : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
