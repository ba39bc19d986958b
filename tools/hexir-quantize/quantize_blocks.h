// Quantizers writing GGUF's block layouts (compiler/importers/llama/ggml_block_types.def and
// BlockDecode.h describe them): one row of `k` f32 values -> GgmlBlockInfo::RowBytes(k) bytes,
// little-endian, readable by llama.cpp and by Hexir's kernels.
//
// The choice of scales is simple (no error search, unlike llama.cpp's quantize): legacy types
// take the block's signed absolute maximum (q4_0, q5_0, q8_0) or its range (q4_1); K-quants
// take each sub-block's range (q4_k, q5_k: 6-bit scale and min, both relative to the block's
// f16 d and dmin) or its absolute maximum (q6_k: 8-bit scales). bf16 rounds to nearest even.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "compiler/importers/llama/GgmlBlocks.h"

namespace hexir::tools {

// Writes the row `x[0, k)` in `format`; k must be a multiple of format.block_elements.
void QuantizeRow(const compiler::llama::GgmlBlockInfo& format, const float* x, int64_t k, uint8_t* out);

}  // namespace hexir::tools
