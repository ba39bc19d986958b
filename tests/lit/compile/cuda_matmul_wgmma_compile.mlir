// REQUIRES: cuda-toolkit
// RUN: hexir-compile %s --target=cuda -o %t.vmfb
// RUN: python3 %S/dump_vmfb_executables.py %t.vmfb | FileCheck %s
// RUN: hexir-compile %s --target=cuda --cuda-chip=sm_80 -o %t.sm80.vmfb
// RUN: python3 %S/dump_vmfb_executables.py %t.sm80.vmfb | FileCheck %s --check-prefix=SM80

// The wgmma GEMM assembled by ptxas for sm_90a (so a PTX syntax error fails here, without a
// GPU): a bf16 matmul with a [K][N] B (128x64 tiles, 6 stages: 148480 bytes of dynamic
// shared memory), one with a [N][K] B (128x256 tiles, 4 stages: 197632 bytes), and a
// prefill-shaped one whose K is split over clusters of 4 blocks (`.reqnctapercluster`,
// distributed shared memory reads), then the
// same module for sm_80, where both take the mma.sync kernel in static shared memory.
// CHECK-LABEL: executable 0 format=cuda-cubin-sm_90a entry_points=mm_kn_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190 size>0=True
// CHECK:         attr cuda.block_size.mm_kn_dispatch_0 = 256,1,1
// CHECK:         attr cuda.shared_bytes.mm_kn_dispatch_0 = 148480
// CHECK:         .target sm_90a
// CHECK:         .shared .align 16 .b8 __dynamic_shmem
// CHECK:         cp.async.cg.shared.global
// CHECK:         fence.proxy.async.shared::cta
// CHECK:         wgmma.fence.sync.aligned
// CHECK:         wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK:         wgmma.commit_group.sync.aligned
// CHECK:         wgmma.wait_group.sync.aligned 1
// CHECK-LABEL: executable 1 format=cuda-cubin-sm_90a entry_points=mm_nk_dispatch_0
// CHECK:         attr cuda.shared_bytes.mm_nk_dispatch_0 = 197632
// CHECK:         wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-LABEL: executable 2 format=cuda-cubin-sm_90a entry_points=mm_prefill_dispatch_0
// CHECK:         .reqnctapercluster 4, 1, 1
// CHECK:         mapa.shared::cluster
// CHECK:         wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK:         st.shared.v2.b32
// CHECK:         barrier.cluster.arrive
// CHECK-NEXT:    barrier.cluster.wait
// CHECK:         ld.shared::cluster.v4.b32
// SM80-LABEL: executable 0 format=cuda-cubin-sm_80 entry_points=mm_kn_dispatch_0
// SM80-NOT:      cuda.shared_bytes
// SM80:          .target sm_80
// SM80-NOT:      wgmma
// SM80:          mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SM80-LABEL: executable 1 format=cuda-cubin-sm_80 entry_points=mm_nk_dispatch_0
func.func @mm_kn(%a: tensor<1024x512xbf16>, %b: tensor<512x2048xbf16>) -> tensor<1024x2048xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x2048xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  %c = linalg.matmul ins(%a, %b : tensor<1024x512xbf16>, tensor<512x2048xbf16>) outs(%f : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  return %c : tensor<1024x2048xf32>
}

func.func @mm_nk(%a: tensor<2048x256xbf16>, %b: tensor<4096x256xbf16>) -> tensor<2048x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x4096xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x4096xf32>) -> tensor<2048x4096xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2048x256xbf16>, tensor<4096x256xbf16>) outs(%f : tensor<2048x4096xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2048x4096xf32>
  return %c : tensor<2048x4096xf32>
}

func.func @mm_prefill(%a: tensor<128x2048xbf16>, %b: tensor<2048x2048xbf16>) -> tensor<128x2048xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x2048xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x2048xf32>) -> tensor<128x2048xf32>
  %c = linalg.matmul ins(%a, %b : tensor<128x2048xbf16>, tensor<2048x2048xbf16>) outs(%f : tensor<128x2048xf32>) -> tensor<128x2048xf32>
  return %c : tensor<128x2048xf32>
}
