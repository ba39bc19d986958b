// Results too large for the cache written with non-temporal stores (hexir-cpu-lower-executables,
// on bufferized kernels).
//
// An ordinary store first reads its cache line from memory (write-allocate), so a kernel
// writing a 64 MiB result moves 1.5x the bytes of its reads and writes, and fills the caches
// with lines nothing reads before they are evicted. Non-temporal stores (x86 vmovntps) write
// whole lines past the caches: on this project's machine a 512-bit copy loop streams 43-51 GB/s
// with them against 30-36 GB/s with ordinary stores (glibc's memcpy: 31-38).
//
// LLVM's loop vectorizer refuses a loop whose stores are `!nontemporal` unless the target has
// unaligned non-temporal vector stores (x86 has none), so the generic's own loop cannot carry
// them. Instead each all-parallel linalg.generic on buffers that
//   - writes, through an identity map, a view of a kernel argument of at least `minBytes`
//     (static shape) whose innermost stride is 1 and whose innermost extent is at least four
//     vectors (or dynamic),
//   - does not read its output (no accumulation into it),
// is tiled into chunks of kStreamingChunkBytes along its innermost loop (1 along the others).
// Each chunk is computed into a stack buffer of that size (64-byte aligned, in L1; LLVM
// vectorizes and unrolls the generic's loop), then copied to the output with
// `vector.store {nontemporal}` of `vectorBytes`, aligned, when the chunk's destination address
// is a multiple of `vectorBytes` and its length of the vector's lanes (checked at run time;
// LLVM hoists the check out of the chunk loop when the chunk offsets keep the alignment), with
// an ordinary `memref.copy` otherwise (a misaligned view, a partial last chunk): results are
// the same either way. Chunks are small (four 64-byte lines) so that the non-temporal stores
// interleave with the arithmetic: chunks of 4 KiB made the elementwise chain alternate between
// computing and a burst of 64 line writes, 10% slower than ordinary stores.
// Non-temporal stores are weakly ordered: a kernel that has them ends with `llvm.fence seq_cst`
// (x86: a locked instruction, which drains the write-combining buffers) before returning, so
// its writes are visible to whatever the driver runs after the workgroup (added to the lowered
// LLVM function: buffer deallocation refuses ops with unknown memory effects such as a fence).
//
//   before: linalg.generic ins(%e, %s) outs(%y_row : memref<1x4096xf32, strided<[4096, 1], ...>>)
//   after:  scf.for %j = 0 to 4096 step 64 {
//             linalg.generic ins(%e_j, %s) outs(%chunk)       // %chunk: memref.alloca, 256 B
//             scf.if (address(%y_j) % 64 == 0 && 64 % 16 == 0) {
//               scf.for %k = 0 to 64 step 16 {
//                 vector.store (vector.load %chunk[0, %k]), %y_j[0, %k] {nontemporal, alignment 64}
//               }
//             } else { memref.copy %chunk, %y_j }
//           }
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace hexir::codegen {

// Bytes of one chunk (the stack buffer a tile of the generic writes before it is streamed out):
// four 64-byte lines.
inline constexpr int64_t kStreamingChunkBytes = 256;

// The rewrite above on every matching generic of `kernel` (bufferized). Returns the number of
// generics rewritten; `vectorBytes` is the target's vector register width in bytes (16, 32, 64).
// `minBytes` <= 0 rewrites none.
int64_t StreamLargeOutputs(mlir::func::FuncOp kernel, int64_t minBytes, int64_t vectorBytes);

// `llvm.fence seq_cst` before every return of `kernel` (the lowered kernel of a function that
// StreamLargeOutputs rewrote).
void FenceStreamingStores(mlir::LLVM::LLVMFuncOp kernel);

}  // namespace hexir::codegen
