// The quantized GEMV on CUDA: a GGUF block-format decode matvec (the llama importer's
// generic over (n, b, j) marked `hexir.block_matvec`, CUDABlockMatvec.h) as one dedicated
// kernel, shared by CUDADistributeThreads (which recognizes it and picks the launch) and
// CUDALowerExecutables (which replaces the bufferized body):
//   y[n] = init + sum_{b, j} x[b][j] * decode(W[n], b, j)     W: i8 [N][row bytes]
//   out  = epilogue(y)                                      (fused elementwise consumers:
//                                                            residual add, SiLU * up)
// Rows: pass p (0 <= p < P) of block `bid` takes rows (p gridBlocks + bid) R + r, R the
// rows a block's warps hold, r the lane's row in the block; each pass ends with its rows'
// butterflies and stores, and the next pass's first group's loads are issued before the
// current pass's last group is decoded (the pipeline runs across rows). P > 1 stages x once
// for P row blocks and keeps the grid within one wave of resident blocks.
// A row is read in groups of G consecutive blocks of at most 64 values (or one block of up
// to 256) whose bytes are a multiple of the load width A (q4_0 2 blocks = 36 bytes in 4-byte
// loads, q5_0 2 = 44 (4), q8_0 2 = 68 (4), q4_1 2 = 40 (8), q4_k and q5_k 1 = 144 / 176 (16);
// A is the largest power of two <= 16 the row length and the group allow, down to 1). L
// lanes of a warp share a row (L a power of two near the groups per row, so no lane idles
// where a row has 8 groups), lane l taking groups l, l + L, ...; a warp holds 32 / L rows.
// Each group is loaded with G bytes / A vector loads issued together, then
// decoded in registers: the importer's decode body is cloned once per value of the group
// with its byte offsets evaluated at compile time (offset = group start + a constant, checked
// to step by exactly the group's bytes from one group to the next), each byte read taken from
// the loaded vectors, so the decode keeps no byte loads, no index arithmetic and no branch;
// the clones share what values share (a block's scale: decoded once), small integers become
// f32 without the conversion unit (a nibble in place in its loaded word: one LOP3 and one add),
// and terms x * (a * v +- c) are summed as a * fma-chains of x v +- c * sum x
// (CUDAGemvDecode.h). The lane's first group's loads are issued before x is staged, and a lane
// with several groups issues the next one's loads before decoding the current one (software
// pipelining). x is staged once per block in shared memory (each group's values then 4
// unused f32s, so a row's lanes, one group apart, read different banks): copied in 16-byte
// pieces (a thread's pieces loaded 8 at a time before any is stored, so a block waits for
// L2 once per 8 pieces, not once per piece: H200, session 22, profiled, q4_k w1 9.5 -> 8.4
// us, q 7.6 -> 6.9, q4_0 w1 8.3 -> 7.4), or computed there by elementwise generics (the final
// RMSNorm's scaling fused into the classifier), a share per thread, before a barrier; an x
// too long for shared memory (over 48 KB) is read with 16-byte loads from global memory.
// (Reading it so where staging left most SMs idle, the 256-row k/v projections in one-warp
// blocks, 64 instead of 16, measured slower on the H200: 7.6 against 6.2 us.)
// H200 profile that led here (session 18): x read from L1 by every lane (1 KB a group) kept
// the earlier kernel L1-bound (87.8% L1 throughput, 6.5% of DRAM bandwidth), and its
// cvt.rn.f32.s32 per value issues at 16 a clock per SM. Sums are f32:
// per group the factored sums' pairwise tree, per lane a running sum over its groups, then
// an xor butterfly over the row's L lanes; the row's first lane adds the init (the fill),
// applies the fused consumers to its element and stores it, into the result or into one row
// of a 2-D kernel argument (the decode step's V projection writing its KV cache row). Rows
// past N (the last warp of a grid that N does not fill) compute on row N - 1 and store
// nothing, so every shuffle sees its whole warp. Nothing is expanded: every weight byte is
// read once, by one lane.
// 8-bit x (the default where the format has an int8 dot: q4_0, q4_1, q5_0, q8_0, q4_k, q5_k,
// and the group's loads hold whole 4-byte words; hidden flag --cuda-quantized-gemv-x=f32 for
// the f32 path above): x is staged quantized per 32 values (ggml's q8_1: one f32 scale and
// sum each) and a group's weights are dotted with it by dp4a, the importer's decode body
// not cloned (the format's layout is CUDAQuantizedGemvInt8.h's); what differs from the f32
// path is only the staging and a group's sum. The result is W x^, x^ the quantized x (as
// llama.cpp's MMVQ computes it).
// A recomputed norm (hexir-fuse-small-reductions' max-block-matvec-extent): x computed by the
// prologue from a whole sum over [K] of kernel arguments (RMSNorm's sum of squares, acc +
// term) is staged after each block sums it (CUDABlockSum.h: a thread's 8 steps' loads, a warp
// butterfly, the warps' sums through shared memory, one barrier; every thread then holds the
// same total), so a block computes the norm once where the warp kernels recompute it per warp.
// Siblings: a second marked generic of the same x, weight shape and format after the first
// (hexir-form-dispatch-regions' fuse-sibling-reductions: a llama layer's w3 beside w1), read
// only by the first consumer (SiLU(w1 x) * w3 x): each lane loads the group of both rows
// (its W's bytes then the sibling's, pipelined together) and keeps two sums, butterflied in
// turn; the first consumer reads the sibling's value in its place. Its fill may be the
// first's (one after CSE; bufferized, a copy of the filled buffer). H200, TinyLlama decode
// (tests/llm/gpu_quant_profile.sh, 4 alternating rounds): q4_0 0.8778 -> 0.7567 ms/token
// (0.862x; 7 -> 6 GEMV kernels a layer, w1 + w3 9.0 us where each was 5.9-6.2); q4_k merged
// measured 1.017x slower with f32 x, 0.908x with 8-bit x (1.020 -> 0.927 ms/token, session
// 28), so the fusion takes blocks of at most 64 values and q4_k/q5_k super-blocks.
#pragma once

#include <optional>
#include <vector>

#include "llvm/ADT/SmallVector.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::cuda {

// Most bytes of one group (q8_0's 8 blocks) and most loads per group: more registers than
// this per lane would cost occupancy (q6_k's 210-byte blocks, 2-byte aligned, keep the
// generic warp-reduction kernel of CUDABlockMatvec.h).
inline constexpr int64_t kMaxGemvGroupBytes = 288;
inline constexpr int64_t kMaxGemvGroupLoads = 72;
// Most values one group decodes (code size: the decode is written out per value): one block
// of up to 256 (the K-quants'), or several blocks of at most 64 (q4_0: 2 blocks, 36 bytes).
// H200 profile (session 20): with 256-value groups (q4_0: 8 blocks) every kernel took 5.4-8.5
// us whatever its bytes (the 256-row k/v projections' 0.3 MB as long as w1's 6.5 MB): the
// warps walk ~1300 instructions of straight-line code, fetched cold.
inline constexpr int64_t kMaxGemvGroupValues = 256;
inline constexpr int64_t kMaxGemvGroupValuesOfBlocks = 64;
// Shared memory for x (the static limit without opting in), and the f32s after each
// group's values there (16 bytes: a row's lanes read 16-byte pieces one group apart, which
// the padding moves to different banks).
inline constexpr int64_t kMaxGemvSharedBytes = 48 * 1024;
inline constexpr int64_t kGemvSharedPad = 4;

struct QuantizedGemv {
  int64_t rows = 0;         // N (static)
  int64_t blocks = 0;       // blocks per row (x's [blocks][B])
  int64_t blockValues = 0;  // B
  int64_t blockBytes = 0;   // bytes of one block (row bytes / blocks)
  int64_t groupBlocks = 1;  // G
  int64_t align = 1;        // A: bytes per load
  int64_t lanes = 32;       // L: lanes per row
  int64_t warps = 8;        // warps per block
  int64_t passes = 1;       // P: rows a lane's slot takes in turn (x staged once for all)
  bool int8X = false;       // x quantized to 8 bits in shared memory, dotted by dp4a
                            // (CUDAQuantizedGemvInt8.h); else f32 x, the decode in f32

  int64_t groups() const { return blocks / groupBlocks; }          // U, per row
  int64_t groupBytes() const { return groupBlocks * blockBytes; }
  int64_t groupValues() const { return groupBlocks * blockValues; }
  int64_t threads() const { return 32 * warps; }
  int64_t rowsPerBlock() const { return warps * (32 / lanes); }   // a pass's
  int64_t rowBlocks() const { return (rows + rowsPerBlock() - 1) / rowsPerBlock(); }
  int64_t gridBlocks() const { return (rowBlocks() + passes - 1) / passes; }
  // f32 x in shared memory: a group's values then kGemvSharedPad unused ones.
  int64_t sharedGroupStride() const { return groupValues() + kGemvSharedPad; }
  // 8-bit x: a group's bytes, then (d, s) as two f32 per 32 values, in an odd count of 16
  // bytes (a row's lanes, one group apart, read different banks).
  int64_t int8GroupBytes() const {
    const int64_t pieces = (groupValues() + 8 * (groupValues() / 32) + 15) / 16;
    return 16 * (pieces % 2 ? pieces : pieces + 1);
  }
  int64_t sharedBytes() const { return groups() * (int8X ? int8GroupBytes() : sharedGroupStride() * 4); }
  bool stagesX() const { return sharedBytes() <= kMaxGemvSharedBytes; }
  std::vector<int64_t> encode() const;
  static std::optional<QuantizedGemv> decode(llvm::ArrayRef<int64_t> words);
};

// The kernel attribute carrying QuantizedGemv::encode() from distribution to lowering.
inline constexpr char kQuantizedGemvAttr[] = "hexir.cuda.quantized_gemv";

// The launch of `kernel` (tensor form, before distribution) when it is the computation above
// and nothing else: the marked generic (and maybe its sibling, above) with one input x ([blocks][B] f32, a kernel argument
// or a reshape of one, or of the result of elementwise generics over [K] reading kernel
// arguments ([K] or rank 0, or a whole sum over [K] of [K] kernel arguments, above) and at
// most one earlier such result, K x 4 bytes within
// kMaxGemvSharedBytes), every byte read from one i8 [N][row bytes] kernel argument at row n
// and an offset that is a function of (b, j) alone, an init filled with a scalar, static
// shapes; then zero or more elementwise generics over [N] (identity maps, no reads in their
// bodies) each consuming the previous result, the last one returned, or inserted as row p of
// a 2-D kernel argument ([1, N] at [p, 0], p a kernel argument or scalar arithmetic on
// them) and that returned. Group: the most blocks
// (8, 4, 2, 1) dividing the row with at most kMaxGemvGroupBytes bytes and
// kMaxGemvGroupValuesOfBlocks values (one block: kMaxGemvGroupValues); load width: the
// largest power of two <= 16 dividing both the group's and the row's bytes, refused below
// kMaxGemvGroupLoads loads a group. Lanes: the groups per row rounded up to a power of two,
// at most 32; warps per block: ChooseWarps. nullopt (nothing changed) otherwise.
std::optional<QuantizedGemv> MatchQuantizedGemv(mlir::func::FuncOp kernel);

// Whether the kernel takes a one-row block matvec whose rows are `blocks` blocks of
// `blockValues` values in `blockBytes` bytes with x staged in shared memory (f32: the larger
// of the two stagings): a group fits (every GGUF format but q6_k) and x within
// kMaxGemvSharedBytes. hexir-fuse-small-reductions asks before it recomputes a norm inside
// one (what MatchQuantizedGemv then refuses would run on one thread).
bool QuantizedGemvTakes(int64_t blocks, int64_t blockValues, int64_t blockBytes);

// Chooses `s.warps` and `s.passes` (its other fields set): where x is staged in shared
// memory, the warps a block (8 or 4; 8, 4, 2 or 1 where 4 warps make fewer than 132 / 4
// blocks: the K-quants' 256-row k/v projections) whose grid spreads most evenly over the
// H200's 132 SMs (ties: more warps); else 8, halved while under 132 blocks. Passes: 1.
// H200, session 26 (tests/llm/gpu_quant_profile.sh): q4_k k/v in 64 one-warp blocks instead
// of 16 four-warp ones, TinyLlama decode 0.946x the time a token (though each is slower
// alone under ncu: 5.06 against 4.3-4.5 us); q4_0 / q8_0 k/v in 128 two-warp blocks instead
// of 64 four-warp ones 1.037x / 1.060x (so the threshold).
// The hidden flags --cuda-quantized-gemv-{lanes,warps,passes}=N override the choices
// (every quantized GEMV of the compilation; 0: chosen as above) for measurements and tests.
// H200, session 22, TinyLlama-shaped decode (ms/token, q4_0 / q4_k; default 1.028 / 1.861):
// 2 passes 1.025 / 2.220, 2 warps 1.059 / 2.116, 1 warp 1.291 / 2.156, 8 lanes 1.738 /
// 1.970; per kernel (profiled) 4 passes and 16 lanes were no faster anywhere either.
void ChooseWarps(QuantizedGemv& s);

// Records the launch of `shape` on `kernel`'s executable (block size, workgroup count) and
// the kernel attribute lowering reads.
void ScheduleQuantizedGemv(mlir::func::FuncOp kernel, const QuantizedGemv& shape);

// Replaces the body of the bufferized `kernel` with the kernel above.
mlir::LogicalResult LowerQuantizedGemv(mlir::func::FuncOp kernel, const QuantizedGemv& shape);

// The kernel arguments holding W (then the sibling's W, if any) of the quantized GEMV in
// `kernel` (tensor or buffer form); empty where `kernel` holds none. Read by the lowering to
// L2-prefetch read-only weights before the programmatic wait (CUDALowerExecutables.cpp).
llvm::SmallVector<unsigned> QuantizedGemvWeights(mlir::func::FuncOp kernel);

}  // namespace hexir::cuda
