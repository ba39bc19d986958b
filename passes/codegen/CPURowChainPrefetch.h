// The next block's rows prefetched while a row chain computes on this block (hexir-cpu-lower-
// executables, on a bufferized kernel of kRowChainGroup, CPURowChains.h).
//
// A row chain's kernel walks its rows a block at a time: the first pass over a block (a
// softmax's max) reads it from memory, the later passes (exp, sum, scaling) work on it in
// cache. The core then alternates between waiting on memory and computing with the memory
// idle (measured on a 4096 x 4096 softmax, one thread: the max pass, the exp pass and the
// store pass each took about a third of the kernel). Prefetching the next block during the
// arithmetic overlaps the two.
//
// In each block loop, the first all-parallel linalg.generic that reads, through an identity
// map, a `memref.subview` of a kernel argument or of a view of one (the workgroup's rows; rank
// >= 2, unit strides, the rows along the second-to-last dimension) is tiled along its innermost loop into runs of
// kPrefetchRunBytes (1 along the other loops; 1 KiB: LLVM unrolls a run into 16 vectors and
// loads the exp polynomial's constants once per run: runs of 256 bytes reloaded them every 4
// vectors, and were slower). Before each run, one `memref.prefetch` (read,
// locality 2: into L2, since the block's own rows and temporaries fill L1) per cache line of
// the same run `B` rows further in the subview's source, B the subview's row count (the block),
// the row clamped to the source's last (a workgroup's last block prefetches nothing new) and
// the column to the row's last (a prefetch never faults, but an index past
// the buffer is not a valid memref access):
//
//   before: linalg.generic ins(%xb, %m) outs(%t)      // %xb = subview %x[%i, 0] [B, C] [1, 1]
//   after:  scf.for %r = 0 to B { scf.for %j = 0 to C step 256 {
//             memref.prefetch %x[min(%i + %r + B, R - 1), min(%j + 16 * l, C - 1)], read, locality<2>  (l = 0..15)
//             linalg.generic ins(%xb[%r, %j][1, 256], %m[%r]) outs(%t[%r, %j][1, 256]) } }
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Bytes of one run of the tiled generic: sixteen 64-byte lines, sixteen prefetches per run.
inline constexpr int64_t kPrefetchRunBytes = 1024;
inline constexpr int64_t kCacheLineBytes = 64;

// The rewrite above in each block loop of `kernel`; returns the number of generics rewritten.
int64_t PrefetchNextRowBlocks(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
