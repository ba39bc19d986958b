// MLIR text that decodes one element of a kept GGUF weight (GgmlBlocks.h) inside a kernel
// body: the emitter's matmuls and embedding gathers read the stored blocks with
// tensor.extract and dequantize in registers, so no kernel ever expands a whole matrix.
//
// Layouts (ggml's block structs, little-endian; d, dmin, m are f16; element e of a block):
//   q8_0 {d, qs[32] i8}                      e = d * qs[e]
//   q4_0 {d, qs[16]}                         e = d * (nibble - 8); nibble = e < 16 ? low of qs[e] : high of qs[e-16]
//   q4_1 {d, m, qs[16]}                      e = d * nibble + m
//   q5_0 {d, qh[4], qs[16]}                  e = d * ((nibble | bit e of qh << 4) - 16)
//   q4_k {d, dmin, scales[12], qs[128]}      8 sub-blocks of 32 with 6-bit scale sc and min m
//                                            (get_scale_min_k4 packing); e = d*sc * q - dmin*m,
//                                            q = nibble (sub-block s: low nibbles of qs[32*(s/2)..]
//                                            for even s, high for odd)
//   q5_k {d, dmin, scales[12], qh[32], qs[128]}  as q4_k plus bit s of qh[e % 32] as q's bit 4
//   q6_k {ql[128], qh[64], scales[16] i8, d}  e = d * scales[16-element group] * (q6 - 32)
// MLIR-free (text); thread-safe.
#pragma once

#include <functional>
#include <string>

#include "compiler/importers/llama/GgmlBlocks.h"

namespace hexir::compiler::llama {

// Appends to *text (one op per line, each prefixed by `indent`) the ops that compute, as an
// f32 SSA value whose name is returned, element `index` of block `block` of row `row` (three
// `index` SSA values) of `weight`, an i8 tensor [rows][row bytes] of type `weight_type` in
// block format `format` (not bf16). `fresh` returns a new SSA name each call.
std::string DecodeBlockElement(const GgmlBlockInfo& format, const std::string& weight, const std::string& weight_type,
                               const std::string& row, const std::string& block, const std::string& index,
                               const std::function<std::string()>& fresh, const std::string& indent,
                               std::string* text);

}  // namespace hexir::compiler::llama
