// Decode attention as one CUDA kernel (flash-decoding), shared by CUDADistributeThreads
// (which recognizes the kernel and picks the launch) and CUDALowerExecutables (which replaces
// the bufferized body). The llama importer marks the generics of one decode step's attention
// (scores, softmax, weighted V sum) `hexir.dispatch_group = "decode_attention.N"`, so they
// form one executable marked "decode_attention" (passes/dispatch/FormDispatchRegions.cpp):
//   out[a][g][d] = sum_{s < n} p[a][g][s] V[s][a HD + d],
//   p[a][g][s]   = softmax_s(sum_d' q[a][g][d'] K[s][a HD + d'] / sqrt(HD))
// for KV head a, query head g of its group, head dim d, cache rows K, V [S][KVH HD], n <= S.
// The caches hold f32, f16 or bf16 (hexir-import --kv-cache); elements are widened to f32 as
// they are loaded, and q, the scores, softmax and sums are f32. q may come from a prologue:
// an elementwise generic over [KVH][G][HD] whose input is the q argument (the importer's
// rotary embedding, which reads q's partner element and the position): the kernel computes
// it for each q element as it loads q (its body inlined), so it is no dispatch of its own.
//
// The kernel: one cluster of `splits` blocks per KV head and tile of query heads (at most 16
// heads of the group: they share each K and V row); block r takes the positions
// [r c, r c + c) with c = ceil(n / splits), so only filled rows are read and each K/V row is
// read once per head tile (q of the tile in shared memory). Per block, in windows of at most
// `window` positions: every thread first issues all its 16-byte loads of the window's K and V
// rows (head a's columns; rows past the block's last read the last filled row again and are
// never used), then stores them widened to f32 in shared memory (K rows padded by one word:
// a thread per position reads them without bank conflicts), so a window costs one memory
// round trip instead of one per row. Then the scores (a thread per (Rs query heads, position):
// each K element loaded once for the Rs heads, q rows read 4 words at a time), per query head
// the running maximum m, the sum l of exp(score - m) and the unnormalized sums o = sum p V (a
// warp per head for m and l, a thread per (Rv heads, d) for o, p rows read 4 positions at a
// time), the previous windows' l and o rescaled by exp(m_old - m_new) (online softmax). Rs and
// Rv: the largest of 4 and 2 dividing the block's heads that still give each thread an item.
// The blocks of a cluster then meet through distributed shared memory (sm_90 `mapa`, cluster
// barriers): out = sum_r o_r exp(m_r - M) / sum_r l_r exp(m_r - M), M = max_r m_r, in the fixed rank order
// (no dependence on block timing), each block writing a share of it. Before the kernel waits
// for its prerequisites (programmatic dependent launch), each block asks L2 for its share of
// both caches (CUDALowerExecutables; when they are small enough): rows written by earlier
// steps stream in while the kernels producing q and this step's rows drain.
//
// A prompt's attention (executables marked "prompt_attention": the llama importer's prefill,
// M prompt rows at positions 0..M-1, causal) takes the same kernel with a row dimension:
//   out[m][a][g][d] = sum_{s <= m} p[m][a][g][s] V[s][a HD + d]
// for M (dynamic) rows of q [M][KVH][G][HD]. A block's query slots are a tile of `rowTile`
// rows times `headTile` heads (all sharing K/V row s, the causal mask s <= m applied per
// slot); it reads the positions [0, last row of its tile] (no splits: M x KVH x tiles blocks
// fill the GPU), and blocks stride over the tiles by the launched grid (its size follows M,
// WorkgroupCount.h), the tiles of the last rows (the longest) first.
#pragma once

#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::cuda {

// Most blocks in a cluster the kernel asks for (the portable limit on sm_90).
inline constexpr int64_t kMaxAttentionSplits = 8;
inline constexpr int64_t kAttentionThreads = 256;
// Shared memory the kernel may use (the static limit without opting in).
inline constexpr int64_t kMaxAttentionSharedBytes = 48 * 1024;
// Most query heads one block scores together (accumulators per thread while scoring).
inline constexpr int64_t kMaxAttentionHeadTile = 16;
// Positions a window holds: at most kMaxAttentionWindow (its rows' loads in flight at once);
// head tiles shrink while fewer than kMinAttentionWindow fit, and a window of one head is
// never below kMinStagedWindow (else the kernel keeps the generic lowering).
inline constexpr int64_t kMaxAttentionWindow = 64;
inline constexpr int64_t kMinAttentionWindow = 32;
inline constexpr int64_t kMinStagedWindow = 8;

struct DecodeAttention {
  int64_t kvHeads = 0, group = 0, headDim = 0, cacheLen = 0;
  // Argument numbers of the kernel: q [KVH][G][HD], the K and V caches [S][KVH HD], the
  // result buffer (like q), the filled length n (index or i64), or a static 1-D i64 buffer
  // whose element 0 is the position, n = pos + 1 (the llama importer's device loop keeps the
  // position on the device; LowerDecodeAttention loads it).
  int64_t q = 0, k = 0, v = 0, out = 0, n = 0;
  int64_t splits = 1;  // blocks per KV head and head tile (one cluster)
  int64_t threads = kAttentionThreads;
  int64_t headTile = 1;  // query heads per block: tiles() blocks' clusters per KV head
  int64_t window = 1;    // positions scored per pass
  int64_t prologue = 0;  // 1: q is the input of an elementwise generic computing the q used
  // Prompt attention: 1 (q and out are [M][KVH][G][HD] or [M][KVH G HD], M dynamic; the
  // caches [S][KVH HD] or [S][KVH][HD]; n unused: -1). rowTile: prompt rows per block.
  int64_t prompt = 0, rowTile = 1;

  int64_t tiles() const { return (group + headTile - 1) / headTile; }
  // Query slots of a block: rowTile rows x headTile heads.
  int64_t slots() const { return rowTile * headTile; }
  // Positions one block holds at most: ceil(S / splits).
  int64_t chunk() const { return (cacheLen + splits - 1) / splits; }
  // f32 words of shared memory: q and o [headTile][HD], the scores of a window, m, l and
  // the rescale factor per head; the window's K rows [window][HD + 1] and V rows [window][HD].
  // (headTile: query slots.)
  static int64_t sharedWords(int64_t headTile, int64_t headDim, int64_t window) {
    return headTile * (2 * headDim + window + 3) + window * (2 * headDim + 1);
  }
  int64_t sharedWords() const { return sharedWords(slots(), headDim, window); }
  int64_t blocks() const { return kvHeads * tiles() * splits; }
  std::vector<int64_t> encode() const;
  static std::optional<DecodeAttention> decode(llvm::ArrayRef<int64_t> words);
};

// The kernel attribute carrying DecodeAttention::encode() from distribution to lowering.
inline constexpr char kDecodeAttentionAttr[] = "hexir.cuda.decode_attention";

// The roles and launch of an executable marked "decode_attention" (tensor form, before
// distribution), or nullopt (with a remark on the kernel saying why) when its arguments are
// not those of the computation above (f32 q and result; f32, f16 or bf16 caches; at most one
// prologue, whose scalar and tensor captures other than q are used by nothing else), or a head
// is too long for one query head's q, o and a window of kMinStagedWindow positions (scores, K
// and V rows) in 48 KiB: such a kernel keeps the generic lowering. Head tile: ceil(G / ceil(G
// / 16)) (equal tiles of at most 16), halved while 48 KiB holds fewer than
// kMinAttentionWindow positions; splits: the largest of 1, 2, 4, 8 with KVH x tiles x splits
// <= 2 x the H200's 132 SMs and at least 16 cache rows per split; window: the block's whole
// chunk up to kMaxAttentionWindow, less when 48 KiB holds less.
std::optional<DecodeAttention> MatchDecodeAttention(mlir::func::FuncOp kernel);

// The roles and tiles of an executable marked "prompt_attention" (tensor form): q the first
// input of the first generic (the scores), K its second, V the second input of the last (the
// weighted sum), through reshapes of kernel arguments; f32 q and result, caches as above.
// Query slots rowTile x headTile <= 16: head tiles as in decode, then rows filling the rest,
// fewer while 48 KiB holds fewer than kMinAttentionWindow positions; window as in decode.
// nullopt (with a remark) when the arguments are not those.
std::optional<DecodeAttention> MatchPromptAttention(mlir::func::FuncOp kernel);

// The dynamic workgroup count of a matched prompt attention (ceil(M x KVH x tiles /
// rowTile) blocks, WorkgroupCount.h) on its executable; failure when M is no parameter word.
mlir::LogicalResult SetPromptAttentionGrid(mlir::func::FuncOp kernel, const DecodeAttention& shape);

// Replaces the body of the bufferized `kernel` with the flash-decoding kernel above.
mlir::LogicalResult LowerDecodeAttention(mlir::func::FuncOp kernel, const DecodeAttention& shape);

}  // namespace hexir::cuda
