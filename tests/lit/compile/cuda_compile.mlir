// REQUIRES: cuda-toolkit
// RUN: hexir-compile %s --target=cuda -o %t.vmfb
// RUN: python3 %S/dump_vmfb_executables.py %t.vmfb | FileCheck %s
// RUN: hexir-compile %s --target=cuda --cuda-format=ptx -o %t.ptx.vmfb
// RUN: python3 %S/dump_vmfb_executables.py %t.ptx.vmfb | FileCheck %s --check-prefix=PTX
// RUN: hexir-compile %s --target=cuda --emit-vm-mlir -o - | FileCheck %s --check-prefix=VM
// RUN: env CUDA_HOME=%t.missing not hexir-compile %s --target=cuda -o %t.bad.vmfb 2>&1 | FileCheck %s --check-prefix=NOKIT
// RUN: env CUDA_HOME=%t.missing not hexir-compile %s --target=cuda --cuda-format=ptx -o %t.bad.vmfb 2>&1 | FileCheck %s --check-prefix=NOLIBDEVICE

// Each executable: a cubin (ELF, e_machine 190 = EM_CUDA) for sm_90, its block size, that
// its entry waits for its prerequisite grids before anything else (programmatic edges into it
// are safe: griddepcontrol.launch_dependents then .wait first), and
// its PTX twice: inline as the driver's JIT fallback attr cuda.ptx, and as a rodata
// segment named by cuda.ptx_segment; the bindings that no dispatch of the program writes
// (here the public function's arguments: cuda.read_only_bindings). The PTX entry takes one .u64
// per binding (operands, results, then the parameter buffer when there are scalars).

// matmul + bias + relu: one fused dispatch, one thread per output element (4x16 = 64).
// CHECK-LABEL: executable 0 format=cuda-cubin-sm_90 entry_points=mbr_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190 size>0=True
// CHECK:         attr cuda.block_size.mbr_dispatch_0 = 64,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.mbr_dispatch_0 = 1
// CHECK-NEXT:    attr cuda.ptx = <text, {{[0-9]+}} lines>
// CHECK-NEXT:    attr cuda.read_only_bindings.mbr_dispatch_0 = 0,1,2
// CHECK-NEXT:    attr cuda.ptx_segment = [[PTX0:[0-9]+]]
// CHECK-NEXT:    cuda.ptx equals the cuda.ptx_segment text: True
// CHECK:         .target sm_90
// CHECK:         .visible .entry mbr_dispatch_0(
// CHECK-NEXT:      .param .u64 {{.*}}mbr_dispatch_0_param_0,
// CHECK-NEXT:      .param .u64 {{.*}}mbr_dispatch_0_param_1,
// CHECK-NEXT:      .param .u64 {{.*}}mbr_dispatch_0_param_2,
// CHECK-NEXT:      .param .u64 {{.*}}mbr_dispatch_0_param_3
// CHECK-NEXT:    )
// CHECK-NEXT:    .maxntid 64, 1, 1
// CHECK:         griddepcontrol.launch_dependents;
// CHECK-NEXT:    // begin inline asm
// CHECK-NEXT:    griddepcontrol.wait;
// CHECK:         %tid.x
// CHECK:         %ctaid.x
// CHECK:         ld.global
// CHECK:         max{{.*}}.f32
// CHECK:         st.global

// exp/tanh chain over 3x100 = 300 elements: 2 blocks of 256; libdevice inlined (no calls).
// CHECK-LABEL: executable 1 format=cuda-cubin-sm_90 entry_points=chain_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.chain_dispatch_0 = 256,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.chain_dispatch_0 = 1
// CHECK-NEXT:    attr cuda.ptx = <text
// CHECK-NEXT:    attr cuda.read_only_bindings.chain_dispatch_0 = 0
// CHECK-NEXT:    attr cuda.ptx_segment = [[PTX1:[0-9]+]]
// CHECK-NOT:     executable
// CHECK:         .target sm_90
// CHECK:         .visible .entry chain_dispatch_0(
// CHECK-NEXT:      .param .u64 {{.*}}_param_0,
// CHECK-NEXT:      .param .u64 {{.*}}_param_1
// CHECK-NEXT:    )
// CHECK-NOT:     call
// CHECK:         ex2.approx

// Row sums 6x50 -> 6: the reduction stays inside each of 6 threads.
// CHECK-LABEL: executable 2 format=cuda-cubin-sm_90 entry_points=rowsum_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.rowsum_dispatch_0 = 6,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.rowsum_dispatch_0 = 1

// Transpose 6x50 -> 50x6: 300 threads, writes coalesced.
// CHECK-LABEL: executable 3 format=cuda-cubin-sm_90 entry_points=transpose_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.transpose_dispatch_0 = 256,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.transpose_dispatch_0 = 1

// A host f32 scalar travels in the parameter buffer: one more .u64 pointer parameter.
// CHECK-LABEL: executable 4 format=cuda-cubin-sm_90 entry_points=scale_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.scale_dispatch_0 = 8,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.scale_dispatch_0 = 1
// CHECK-NEXT:    attr cuda.ptx = <text
// CHECK-NEXT:    attr cuda.read_only_bindings.scale_dispatch_0 = 0
// CHECK-NEXT:    attr cuda.ptx_segment =
// CHECK:         .visible .entry scale_dispatch_0(
// CHECK-NEXT:      .param .u64 {{.*}}scale_dispatch_0_param_0,
// CHECK-NEXT:      .param .u64 {{.*}}scale_dispatch_0_param_1,
// CHECK-NEXT:      .param .u64 {{.*}}scale_dispatch_0_param_2
// CHECK-NEXT:    )

// A large elementwise add: 4 elements per thread (16384 threads), 16-byte loads/stores.
// CHECK-LABEL: executable 5 format=cuda-cubin-sm_90 entry_points=wide_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.wide_dispatch_0 = 256,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.wide_dispatch_0 = 1
// CHECK:         ld.global.nc.v4.b32
// CHECK:         ld.global.nc.v4.b32
// CHECK:         st.global.v4.b32

// A 256x128 @ 128x512 f32 matmul: the SIMT GEMM kernel (passes/codegen/CUDAMatmul.h), 8
// blocks of 256 threads per 128x128 tile, two stages of A^T and B in 16 KiB of shared
// memory, 16-byte global loads, 16-byte shared loads feeding fma, two blocks per SM.
// CHECK-LABEL: executable 6 format=cuda-cubin-sm_90 entry_points=mm_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.mm_dispatch_0 = 256,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.mm_dispatch_0 = 1
// CHECK:         .minnctapersm 2
// CHECK:         .shared .align 16 .b8 __hexir_shared[16384];
// CHECK:         ld.global.v4.b32
// CHECK:         st.shared.v4.b32
// CHECK:         bar.sync 0;
// CHECK:         ld.shared.v4.b32
// CHECK:         fma.rn.f32

// Row sums of squares, 64x1000: four warps per row (64 rows fill few SMs; 8192 threads,
// one row per block of 128): lanes read the row 16 bytes at a time, then a five-step
// shuffle butterfly; each warp's lane 0 stores its sum in shared memory, a barrier, and
// thread 0 adds the four and stores.
// CHECK-LABEL: executable 7 format=cuda-cubin-sm_90 entry_points=sumsq_dispatch_0
// CHECK-NEXT:    binary: ELF e_machine=190
// CHECK:         attr cuda.block_size.sumsq_dispatch_0 = 128,1,1
// CHECK-NEXT:    attr cuda.programmatic_wait.sumsq_dispatch_0 = 1
// CHECK:         .shared .align 16 .b8 __hexir_shared[16];
// CHECK:         setp.gt.u32 {{.*}}, 8191;
// CHECK:         ld.global.nc.v4.b32
// CHECK-COUNT-5: shfl.sync.bfly.b32
// CHECK-NOT:     shfl.sync
// CHECK:         st.shared.b32
// CHECK:         bar.sync 0;
// CHECK:         ld.shared.v4.b32
// CHECK:         st.global.b32

// a * (row sums of a^2), the sums returned too (so no row chain makes one kernel of the two,
// passes/codegen/CUDARowChains.h): the reduction, then an elementwise dispatch reading a (a
// public argument, read-only) and the sums (the first dispatch's result). Under programmatic
// launch the second kernel starts while the first still writes the sums, so only a, which
// no dispatch writes, is loaded through the non-coherent path (ld.global.nc, 16 bytes); the
// sums are loaded coherently (ld.global) after the wait.
// CHECK-LABEL: executable 9 format=cuda-cubin-sm_90 entry_points=rescale_dispatch_1
// CHECK:         attr cuda.read_only_bindings.rescale_dispatch_1 = 0
// CHECK-NOT:     ld.global.nc.b32
// CHECK:         griddepcontrol.wait
// CHECK-NOT:     ld.global.nc.b32
// CHECK:         ld.global.b32
// CHECK:         ld.global.nc.v4.b32

// --cuda-format=ptx: the PTX is the binary itself, no cubin, no extra segment.
// PTX:       executable 0 format=cuda-ptx entry_points=mbr_dispatch_0
// PTX-NEXT:    binary: //
// PTX:         attr cuda.block_size.mbr_dispatch_0 = 64,1,1
// PTX-NOT:     cuda.ptx

// The host program is the CPU one; the grid the codegen chose is the dispatch's
// workgroup count (300 points / 256 = 2 blocks for the chain).
// VM-LABEL: func.func @chain
// VM:         %[[X:.+]] = hexir_vm.const.i64 2
// VM:         "hal.command_buffer.dispatch{{[_a-z]*}}"(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[X]],
// VM-LABEL: func.func @rowsum

// NOKIT: error: CUDA toolkit not found: no ptxas at {{.*}}.missing/bin/ptxas (set CUDA_HOME to the toolkit, or use --cuda-format=ptx)
// NOLIBDEVICE: error: CUDA libdevice not found at {{.*}}.missing/nvvm/libdevice/libdevice.10.bc

func.func @mbr(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(j)>, affine_map<(i,j)->(i,j)>], iterator_types = ["parallel","parallel"]} ins(%m, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      %t = arith.maximumf %s, %z : f32
      linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

func.func @chain(%a: tensor<3x100xf32>) -> tensor<3x100xf32> {
  %e = tensor.empty() : tensor<3x100xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i,j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<3x100xf32>) outs(%e : tensor<3x100xf32>) {
    ^bb0(%x: f32, %o: f32):
      %ex = math.exp %x : f32
      %t = math.tanh %ex : f32
      linalg.yield %t : f32
  } -> tensor<3x100xf32>
  return %r : tensor<3x100xf32>
}

func.func @rowsum(%a: tensor<6x50xf32>) -> tensor<6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i)>], iterator_types = ["parallel","reduction"]} ins(%a : tensor<6x50xf32>) outs(%f : tensor<6xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
  } -> tensor<6xf32>
  return %sum : tensor<6xf32>
}

func.func @transpose(%a: tensor<6x50xf32>) -> tensor<50x6xf32> {
  %e = tensor.empty() : tensor<50x6xf32>
  %t = linalg.transpose ins(%a : tensor<6x50xf32>) outs(%e : tensor<50x6xf32>) permutation = [1, 0]
  return %t : tensor<50x6xf32>
}

func.func @scale(%a: tensor<8xf32>, %s: f32) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i)->(i)>, affine_map<(i)->(i)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %s : f32
      linalg.yield %y : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

func.func @wide(%a: tensor<64x1024xf32>, %b: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %e = tensor.empty() : tensor<64x1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i,j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<64x1024xf32>, tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
  } -> tensor<64x1024xf32>
  return %r : tensor<64x1024xf32>
}

func.func @mm(%a: tensor<256x128xf32>, %b: tensor<128x512xf32>) -> tensor<256x512xf32> {
  %e = tensor.empty() : tensor<256x512xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x512xf32>) -> tensor<256x512xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x128xf32>, tensor<128x512xf32>) outs(%f : tensor<256x512xf32>) -> tensor<256x512xf32>
  return %m : tensor<256x512xf32>
}

func.func @sumsq(%a: tensor<64x1000xf32>) -> tensor<64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i,k)->(i,k)>, affine_map<(i,k)->(i)>], iterator_types = ["parallel","reduction"]} ins(%a : tensor<64x1000xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %m = arith.mulf %x, %x : f32
      %y = arith.addf %m, %acc : f32
      linalg.yield %y : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}

func.func @rescale(%a: tensor<64x1024xf32>) -> (tensor<64x1024xf32>, tensor<64xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i,k)->(i,k)>, affine_map<(i,k)->(i)>], iterator_types = ["parallel","reduction"]} ins(%a : tensor<64x1024xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %m = arith.mulf %x, %x : f32
      %y = arith.addf %m, %acc : f32
      linalg.yield %y : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i)>, affine_map<(i,j)->(i,j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %s : tensor<64x1024xf32>, tensor<64xf32>) outs(%e2 : tensor<64x1024xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %p = arith.mulf %x, %y : f32
      linalg.yield %p : f32
  } -> tensor<64x1024xf32>
  return %r, %s : tensor<64x1024xf32>, tensor<64xf32>
}
