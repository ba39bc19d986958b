// Register-blocked f32 matmul on a packed right-hand side (hexir-cpu-lower-executables,
// on bufferized kernels, before linalg becomes loops).
//
// C[M][N] += A[M][K] * B[K][N] becomes, per cache block of `depth` (KC) steps of k and
// `blockColumns` (NC) columns of B, then `rowBlock` (MC) rows of A:
//
//   for kc, nc:
//     pack B[kc:kc+KC][nc:nc+NC] once into a stack buffer of NC/NR panels Bp[p][KC][NR]
//       (zero past N; a dense B row by row, each row's NC columns one contiguous run: in L2)
//     for mc:  for each panel p (columns n0 = nc + p * NR; its KC x NR in L1):
//       for each tile of `rows` (MR) rows m:         (the A block MC x KC stays in L2)
//         acc[MR][NR/lanes] = C[m..][n0..]            (vector registers)
//         for k < KC: b = Bp[p][k]; acc[i] += broadcast(A[m+i][kc+k]) * b
//         C[m..][n0..] = acc                          (masked in the last panel)
//       the rows left (< MR) run the same kernel with MR = each power of two they contain.
//
// Tiles come from the target (CPUTarget.h): NR = 2 vectors, MR as many rows as the
// remaining registers hold (6 x 16 on AVX2, 14 x 32 on AVX-512), a panel half of L1, the B
// block half of L2 (at most 256 KiB of stack), the A block a quarter of L2. Only f32 matmuls
// with the default maps and unit-stride rows of B and C
// are rewritten, and not those with a static M below `minRows` (a GEMV reads its weights
// once: packing them would only add traffic); the rest keep the loop lowering.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "passes/codegen/CPUTarget.h"

namespace hexir::codegen {

struct MatmulTiles {
  int64_t lanes;     // f32 lanes of a vector register
  int64_t vectors;   // vectors per row of the register tile (NR = lanes * vectors)
  int64_t rows;      // MR
  int64_t depth;     // KC
  int64_t rowBlock;  // MC, a multiple of MR
  int64_t blockColumns;  // NC, a multiple of NR
  int64_t columns() const { return lanes * vectors; }
};

// Static M below this keeps the loop lowering (see above).
constexpr int64_t kMatmulMicroKernelMinRows = 4;

MatmulTiles ChooseMatmulTiles(const CPUTarget& target);

// True when `op` (on tensors or memrefs) is an f32 linalg.matmul that the micro-kernel
// takes (strides are checked only on memrefs).
bool TakesMatmulMicroKernel(mlir::linalg::LinalgOp op);

// Matmul-shaped generics of the tensor `kernel` as linalg.matmul, so that the micro-kernel
// and the packing of B (CPUPackMatmulOperands.cpp) take them: the ONNX importer writes MatMul
// and Gemm as generics (f32 2-D operands, the default maps, a multiply-add body, no other
// attributes, M of run-time extent: a dynamic export's, detection heads' boxes). Returns how many.
int NameMatmulGenerics(mlir::func::FuncOp kernel);

// Rewrites every such matmul of the bufferized `kernel`; the others are left as they are.
void LowerMatmulsToMicroKernels(mlir::func::FuncOp kernel, const MatmulTiles& tiles);

// The GEMM behind the micro-kernel, for other ops that are one (convolutions):
// C[cPrefix..., m, n] += A[m][k] * B[k][n] with A a [M][K] memref and C's last two dims
// [M][N], both with unit-stride rows. B exists only through `packB`, called once per panel
// of a block, which stores B[kc + k][n0 + j] into packed[k][j] (`packed`: the panel's
// [KC][NR] view of the block) for k < kcSize, j < NR, zero where n0 + j >= N
// (`masks[v]`: lanes of vector v inside N; `full`: the whole panel is inside N).
// A convolution's bias and ReLU in the GEMM (CPUConvolutionEpilogue.h): with `init`, C is
// not read: each register tile's accumulators start at init(row m, columns [n, n + lanes),
// their mask or null) in the first K block; with `relu`, the last K block stores
// max(acc, 0) (arith.maximumf, as the ReLU generic it replaces). `relu` needs `init`.
struct GemmEpilogue {
  std::function<mlir::Value(mlir::OpBuilder&, mlir::Value m, mlir::Value n, mlir::Value mask)> init;
  bool relu = false;
};
struct PackedGemm {
  mlir::Value a, c;
  llvm::SmallVector<mlir::Value> cPrefix;
  mlir::Value rows, columns, depth;  // M, N, K (index)
  GemmEpilogue epilogue = {};
};
using PackBPanel = llvm::function_ref<void(mlir::OpBuilder& b, mlir::Value packed, mlir::Value kc,
                                           mlir::Value kcSize, mlir::Value n0, mlir::Value full,
                                           llvm::ArrayRef<mlir::Value> masks)>;
// The stack buffer of one packed block, NC/NR panels [KC][NR] as [NC/NR * KC][NR],
// allocated at the kernel's entry.
mlir::Value AllocatePackedBlock(mlir::func::FuncOp kernel, const MatmulTiles& tiles);
void EmitPackedGemm(mlir::OpBuilder& b, mlir::Location loc, const MatmulTiles& tiles,
                    mlir::Value packed, const PackedGemm& gemm, PackBPanel packB);

// ---- GEMMs on a prepacked B whose A and C are reached through callbacks ----------------
// (convolutions: A gathered from the input, C the NCHW output seen transposed.)
// B read in place from prepacked panels (hexir-cpu-pack-matmul-operands):
// B[k][n] = packed[firstPanel + n / NR][k][n % NR], `packed` a [P][K][NR] memref.
struct PrepackedB {
  mlir::Value packed, firstPanel;
  int64_t nr;
};
// The panels behind `operand`, a memref written by an unpack generic (marked kPackedRhsAttr),
// or a unit-stride subview of one starting at 0 in every dim but `columnDim`, whose offset
// there is proven a multiple of NR. Emits the panel index at the builder's insertion point.
std::optional<PrepackedB> FindPrepackedOperand(mlir::OpBuilder& b, mlir::Value operand,
                                               unsigned columnDim);
// The same match, creating nothing: the panels' NR where `operand` is such a memref.
std::optional<int64_t> PrepackedOperandPanelWidth(mlir::Value operand, unsigned columnDim);
// The operand's original layout where its unpack is a dual one (a convolution filter over a
// run-time plane, hexir-cpu-pack-matmul-operands: the unpack's second input, the filter
// itself): that input, viewed as `operand` views the unpack's buffer (the same subview, made
// at the builder's insertion point); null otherwise.
mlir::Value DualUnpackOriginal(mlir::OpBuilder& b, mlir::Value operand);
// Whether `operand`'s unpack is a dual one (creating nothing).
bool HasDualUnpack(mlir::Value operand);
// Erases each unpack whose buffer is no longer read (its readers were rewritten), with the
// buffer and the dead views of it.
void ErasePrepackedOperands(mlir::func::FuncOp kernel);

struct GemmCallbacks {
  using Values = llvm::ArrayRef<mlir::Value>;
  // Values of register-tile row m computed once per tile (addresses), before the k loop.
  std::function<llvm::SmallVector<mlir::Value>(mlir::OpBuilder&, mlir::Value m)> row;
  // A[m][k] (an f32 scalar) from row m's values.
  std::function<mlir::Value(mlir::OpBuilder&, Values row, mlir::Value k)> loadA;
  // C[m][n, n + lanes) from row m's values; `mask`: lanes inside N, or null (all of them).
  std::function<mlir::Value(mlir::OpBuilder&, Values row, mlir::Value n, mlir::Value mask)> loadC;
  std::function<void(mlir::OpBuilder&, Values row, mlir::Value n, mlir::Value mask,
                     mlir::Value value)>
      storeC;
  // Optional, for a C whose register-tile rows are not its vectors (a transposed one): the
  // accumulators then start at zero (loadC is not called) and the tile is added to C at once:
  // C[m + i][n + v * lanes, +lanes) += acc[i * vectors + v] (`masks`: the lanes inside N per
  // vector, empty when all are); with `store` (an epilogue's init: the accumulators started
  // at it, and K must then be one block) written to C instead of added.
  std::function<void(mlir::OpBuilder&, llvm::ArrayRef<llvm::SmallVector<mlir::Value>> rows,
                     mlir::Value n, llvm::ArrayRef<mlir::Value> masks, mlir::ValueRange acc, bool store)>
      addTile;
};
// C[M][N] += A[M][K] * B[K][N] with the loops and register tiles of the packed GEMM above.
void EmitPrepackedGemm(mlir::OpBuilder& b, mlir::Location loc, const MatmulTiles& tiles,
                       const PrepackedB& rhs, mlir::Value rows, mlir::Value columns,
                       mlir::Value depth, const GemmCallbacks& callbacks,
                       const GemmEpilogue& epilogue = {});

}  // namespace hexir::codegen
