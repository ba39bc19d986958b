// GGUF tensor types kept as stored (ggml_block_types.def): block-quantized matrices and bf16.
//
// A kept matrix [rows][k] is passed to the program as its file bytes: block formats as an i8
// tensor [rows][RowBytes(k)] (each row k / elements blocks, as in the file), bf16 as a bf16
// tensor [rows][k]. The program decodes elements inside its kernels (BlockDecode.h); nothing
// expands a whole matrix. Header-only; constexpr tables; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace hexir::compiler::llama {

enum class GgmlBlockType : uint32_t {
#define HEXIR_GGML_BLOCK_TYPE(Name, id, name, elements, bytes) k##Name = id,
#include "compiler/importers/llama/ggml_block_types.def"
#undef HEXIR_GGML_BLOCK_TYPE
};

struct GgmlBlockInfo {
  GgmlBlockType type;
  const char* name;        // ggml's: "q4_0", "q6_k", "bf16"
  int64_t block_elements;  // values per block (1 for bf16)
  int64_t block_bytes;     // bytes per block

  // Bytes of one row of `k` values (k a multiple of block_elements).
  int64_t RowBytes(int64_t k) const { return k / block_elements * block_bytes; }
  bool is_bf16() const { return type == GgmlBlockType::kBF16; }
  // The program's argument for a kept [rows][k] matrix: bf16 [rows][k], else i8 [rows][RowBytes(k)].
  std::vector<int64_t> ArgumentDims(int64_t rows, int64_t k) const {
    return {rows, is_bf16() ? k : RowBytes(k)};
  }
  const char* ArgumentElement() const { return is_bf16() ? "bf16" : "i8"; }
};

inline constexpr GgmlBlockInfo kGgmlBlockInfos[] = {
#define HEXIR_GGML_BLOCK_TYPE(Name, id, name, elements, bytes) {GgmlBlockType::k##Name, name, elements, bytes},
#include "compiler/importers/llama/ggml_block_types.def"
#undef HEXIR_GGML_BLOCK_TYPE
};

// The row of a ggml type id; null for types not in the table (f32, f16, q5_1, iq*, ...).
inline const GgmlBlockInfo* FindGgmlBlockType(uint32_t ggml_type) {
  for (const GgmlBlockInfo& info : kGgmlBlockInfos)
    if (uint32_t(info.type) == ggml_type) return &info;
  return nullptr;
}

// The row named `name` ("q8_0", ...); null when none is.
inline const GgmlBlockInfo* FindGgmlBlockTypeByName(std::string_view name) {
  for (const GgmlBlockInfo& info : kGgmlBlockInfos)
    if (name == info.name) return &info;
  return nullptr;
}

}  // namespace hexir::compiler::llama
