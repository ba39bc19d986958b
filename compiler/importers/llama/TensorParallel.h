// Tensor parallelism for the llama program (Megatron-style): which part of each weight one
// rank of N holds. The program (EmitModule.h, EmitOptions::tensor_parallel) is one SPMD
// module for every rank; the rank is read from the channel at run time, and a runtime
// (tools/common/llama_parameters.h) uploads only its rank's parts.
//
//   column-parallel, rows [r*n/N, (r+1)*n/N) of a [n][k] matrix:
//       wq, wk, wv (by heads / KV heads), w1, w3 (hidden units), classifier (vocabulary;
//       a shared classifier becomes a row part of the embedding)
//   row-parallel, columns [r*k/N, (r+1)*k/N) of every row: wo, w2 (their products are
//       partial sums, all-reduced by the program)
//   replicated: token_embedding, rms_att, rms_ffn, rms_final
//
// MLIR-free; no state; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"

namespace hexir::compiler::llama {

// Ok when `config` splits over `ranks` (>= 1): n_heads, n_kv_heads, hidden_dim and vocab_size
// divisible by it; else InvalidArgument naming every count that does not divide.
Status CheckTensorParallel(const LlamaConfig& config, int64_t ranks);

// The weights rank `rank` of `ranks` takes, in the program's argument order (`full`, which
// is LlamaWeights-ordered, with a classifier appended when it is shared): dims are the part's,
// offset the byte offset of its first element, and a row-parallel part has stored_columns set
// (WeightTensor). Matrices kept in a GGUF block or bf16 form are split in that form: rows
// whole, columns between blocks; a column part that is not whole blocks (k / ranks not a
// multiple of the block size) is refused naming the tensor, its type and the sizes.
StatusOr<std::vector<WeightTensor>> TensorParallelWeights(const LlamaConfig& config,
                                                          const std::vector<WeightTensor>& full,
                                                          int64_t ranks, int64_t rank);

}  // namespace hexir::compiler::llama
