// Emits the Hexir program (MLIR text in func/scf/linalg/tensor/arith/math) for a llama2.c
// model. MLIR-free (text only); thread-safe.
//
// Program structure (every shape static except the prompt and the id list):
//   func.func @generate(%prompt: tensor<?xi64>, %max_new: i64, <weights...>) -> tensor<?xi64>
//     weights: LlamaWeights(config) order (Checkpoint.h). Result: min(max(max_new, 0),
//     cache_len) ids (a larger request is clamped: nothing is generated past the cache),
//     generated in order, the rest -1. The prompt runs in one pass (@prefill_layer per layer, M rows);
//     then a chunked decode loop (scf.while of scf.for steps) runs the layers (@layer) on one
//     row, picks the argmax on the device, and stops after max_new ids, a BOS or EOS token (config.bos_id /
//     eos_id), or at the cache length. EmitOptions::device_loop: the same steps as a loop on
//     the device (one step per iteration, its state in device tensors).
//   func.func private @prefill_layer(%x: [M][D], %kc, %vc, 9 layer weights) -> (x', k', v')
//   func.func private @layer(%x: [D], %kc, %vc, %pos: i64, 9 layer weights) -> (x', k', v')
//     one decode row at position %pos (EmitOptions::layer_calls; else written out per layer)
//   func.func @cache_len() -> tensor<1xi64>
//   func.func @generate_begin(%prompt, %max_new, %sampler_floats, %sampler_ints, weights) -> state
//   func.func @generate_chunk(%prompt, %max_new, %sampler_floats, %sampler_ints, state, weights)
//     -> state: the same decode, chunk by chunk from the host (streaming), each token chosen by
//     the device sampler (Sampler.h); state = (pos, n, token, stop flag, ids, K/V caches).
//   One layer emitter serves both: it is parameterised by the rows it runs on (one decode
//   row at the loop's position, or the M prompt rows at positions 0..M-1); only the cache
//   write and the attention's position range differ between the two.
//   KV cache: per layer one K and one V tensor<cache_len x kv_dim x E>, zero-filled in
//   @generate and carried through the loop (2 * L tensors = [L][cache_len][kv_dim]); E is
//   EmitOptions::cache_type: rows are rounded to it when written and widened to f32 where
//   attention reads them (scores, softmax and sums stay f32).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/Placement.h"

namespace hexir::compiler::llama {

struct EmitOptions {
  int64_t cache_len = 0;  // KV-cache positions (prompt + generated); 0: the header's seq_len
  // Element type of the weight arguments: "f32" (the checkpoint's) or "f16" (the runtime
  // converts at upload; kernels widen each weight to f32 and accumulate in f32).
  std::string weight_type = "f32";
  // Element type of the KV cache: "f32", "f16" or "bf16" (half the cache's bytes and
  // attention's reads; rounding each K/V element once).
  std::string cache_type = "f32";
  // Decode steps run per host check of the stop flag (>= 1). The host reads one flag per
  // chunk (one wait); steps after a stop token inside a chunk compute but write no id, so
  // the ids do not depend on it.
  int64_t decode_chunk = 8;
  // Decode runs each layer as a call of @layer (one function per distinct list of weight
  // types, like @prefill_layer); hexir-compile records the calls into the step's command
  // buffer (passes/README.md "Recorded calls"; --inline-device-calls copies them into the
  // step; a tensor-parallel layer holds collectives, cannot record, and is inlined by
  // default, passes/README.md step 1a). false: the layers are written out in the loop body
  // (so they are with a placement).
  bool layer_calls = true;
  // @generate's decode loop runs on the device: one scf.while step per token whose condition
  // is a device flag (passes/loops/DeviceLoops.h), so that hexir-compile makes the whole loop
  // one command buffer (a CUDA conditional WHILE node; the host waits once, for the ids). The
  // position lives on the device: the K/V row write and the attention's mask read it in the
  // kernels (each step touches all S cache rows instead of pos + 1). Ids equal the chunked
  // loop's. Ignored (the chunked loop) with tensor_parallel > 1 or a placement; the streaming
  // pair keeps its chunks. false: the chunked host loop (decode_chunk), the CPU's choice for
  // larger models, unless small_model_device_loop picks the device loop. The kept @layer
  // calls stay for the prefill and the streaming pair; the device loop's body writes its
  // layers out (its position is a device value, @layer takes a host i64).
  bool device_loop = false;
  // The device loop for a small model (SmallDecodeModel below) where it qualifies (one rank,
  // no placement, an f32 KV cache), else the chunked loop: hexir-import's default. Measured
  // (issue 18): stories260K's device loop wins on the CPU (0.78x CPU time a token) and on the
  // H200 (0.91x); random768's loses on the CPU (1.33x) while it wins on the H200 (0.97x), and
  // the module does not know its target.
  bool small_model_device_loop = false;
  // Tensor parallelism (TensorParallel.h): > 1 emits one rank's SPMD program for this many
  // ranks (Megatron-style shards, all_reduce after wo and w2, a distributed argmax); the
  // weights passed must then be TensorParallelWeights'. 1: one device.
  int64_t tensor_parallel = 1;
  // Devices of the head and the layers (Placement.h); unplaced by default. Importers check it
  // with ResolvePlacement first (an invalid one is emitted unplaced).
  LlamaPlacement placement;
};

// Whether `config`'s model is small enough that the device loop wins on every target (at most
// kSmallDecodeModelParameters weights; stories260K has 0.26 Mi). Measured on the CPU (one
// thread, 200 tokens, CPU time a token, device loop / chunked): stories260K 0.78x; a random
// llama of 2.3 Mi weights (dim 128, 6 layers, vocab 4096, cache 512) 2.6x, stories15M's shape
// 1.1x, random768 1.33x: the device form attends over all cache rows every step.
inline constexpr int64_t kSmallDecodeModelParameters = int64_t{1} << 19;
bool SmallDecodeModel(const LlamaConfig& config);

// The importers' check of the element types: weights f32 or f16, KV cache f32, f16 or bf16
// (InvalidArgument naming the offending value otherwise).
Status CheckElementTypes(const EmitOptions& options);

std::string EmitLlamaModule(const LlamaConfig& config, const EmitOptions& options = {});

// As above for `weights` (LlamaWeights(config) order and dims) whose kept tensors (GGUF
// block-quantized or bf16 matrices, WeightTensor::kept) are arguments in their stored form:
// the matmuls iterate (row, block, element) and decode each element in registers
// (BlockDecode.h), the embedding gather decodes the row it reads; other weights take
// options.weight_type.
std::string EmitLlamaModule(const LlamaConfig& config, const std::vector<WeightTensor>& weights,
                            const EmitOptions& options = {});

}  // namespace hexir::compiler::llama
