// RUN: hexir-opt %s -split-input-file --cpu-streaming-store-bytes=16384 --hexir-cpu-lower-executables="cpu=x86-64-v3" | FileCheck %s
// RUN: hexir-opt %s -split-input-file --cpu-streaming-store-bytes=0 --hexir-cpu-lower-executables="cpu=x86-64-v3" | FileCheck %s --check-prefix=NEVER
// RUN: hexir-opt %s -split-input-file --cpu-streaming-store-bytes=-4096 --hexir-cpu-lower-executables="cpu=x86-64-v3" | FileCheck %s --check-prefix=NEVER
// RUN: not hexir-opt %s --cpu-streaming-store-bytes=lots --hexir-cpu-lower-executables 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hexir-opt %s --cpu-streaming-store-bytes=99999999999999999999 --hexir-cpu-lower-executables 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not hexir-compile %s --cpu-streaming-store-bytes=16MiB -o %t.vmfb 2>&1 | FileCheck %s --check-prefix=BAD

// The threshold flag: 0 or a negative size never streams; a value that is not an integer
// (a word, a unit, one past int64) is refused by the command line with the flag named, no
// crash, no output.
// NEVER-NOT:   nontemporal
// NEVER-NOT:   llvm.fence
// BAD:         for the --cpu-streaming-store-bytes option: '{{.*}}' value invalid

// codegen::StreamLargeOutputs (passes/codegen/CPUStreamingStores.h): y = x * 2 over 4 x 4096
// f32 (64 KiB, past the 16 KiB threshold) is computed a chunk of 64 at a time into a 256-byte
// stack buffer, then stored with aligned non-temporal 256-bit stores (AVX2: 8 lanes, 32
// bytes) when the chunk's address allows, an ordinary copy otherwise; a fence ends the kernel.
// CHECK-LABEL: hexir.executable @large
// CHECK:         llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK:         llvm.store {{.*}} {alignment = 32 : i64, nontemporal} : vector<8xf32>, !llvm.ptr
// CHECK:         llvm.fence seq_cst
// CHECK:         llvm.func @large(
hexir.executable @large attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @large(%x: tensor<4x4096xf32>, %o: tensor<4x4096xf32>, %id: index) -> tensor<4x4096xf32> {
      %two = arith.constant 2.0 : f32
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4096xf32>) outs(%o : tensor<4x4096xf32>) {
      ^bb0(%v: f32, %u: f32):
        %m = arith.mulf %v, %two : f32
        linalg.yield %m : f32
      } -> tensor<4x4096xf32>
      return %y : tensor<4x4096xf32>
    }
  }
}

// -----

// A result below the threshold (2 x 1024 f32, 8 KiB) keeps ordinary stores and no fence.
// CHECK-LABEL: hexir.executable @small
// CHECK-NOT:     nontemporal
// CHECK-NOT:     llvm.fence
// CHECK:         llvm.func @small(
hexir.executable @small attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @small(%x: tensor<2x1024xf32>, %o: tensor<2x1024xf32>, %id: index) -> tensor<2x1024xf32> {
      %two = arith.constant 2.0 : f32
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x1024xf32>) outs(%o : tensor<2x1024xf32>) {
      ^bb0(%v: f32, %u: f32):
        %m = arith.mulf %v, %two : f32
        linalg.yield %m : f32
      } -> tensor<2x1024xf32>
      return %y : tensor<2x1024xf32>
    }
  }
}

// -----

// A large result the op also reads (o += x: the chunk would not hold o's values) keeps ordinary
// stores.
// CHECK-LABEL: hexir.executable @reads_output
// CHECK-NOT:     nontemporal
// CHECK:         llvm.func @reads_output(
hexir.executable @reads_output attributes {hexir.workgroup_count = array<i64: 1, 1, 1>} {
  builtin.module {
    func.func @reads_output(%x: tensor<4x4096xf32>, %o: tensor<4x4096xf32>, %id: index) -> tensor<4x4096xf32> {
      %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4096xf32>) outs(%o : tensor<4x4096xf32>) {
      ^bb0(%v: f32, %u: f32):
        %s = arith.addf %v, %u : f32
        linalg.yield %s : f32
      } -> tensor<4x4096xf32>
      return %y : tensor<4x4096xf32>
    }
  }
}
