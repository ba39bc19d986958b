// The device sampler of the llama decode program, as MLIR text (func/linalg/tensor/arith/math):
// one token id chosen from logits [V] on the device, inside the compiled decode step.
// MLIR-free (text only); thread-safe.
//
// Samplers in llama.cpp's default order (common_params_sampling::samplers), each on the
// candidates the previous one kept:
//   1. repetition penalty: a token among the last `last_n` (<= kRepetitionWindow) tokens of
//      prompt + generated ids gets logit * penalty when logit <= 0, else logit / penalty (once,
//      however often it occurred); penalty 1 changes nothing.
//   2. top-k: the k highest logits (k <= 0 or k >= V: all; tokens tied with the k-th are kept).
//   3. top-p: softmax over the top-k candidates, then the fewest highest ones whose mass reaches
//      p (the token crossing p included; p >= 1: all; p <= 0: the top token).
//   4. min-p: candidates whose logit >= max logit + log(min_p), i.e. p >= min_p * p_max
//      (min_p <= 0: all).
//   5. temperature T and the draw: an id with probability softmax(logit / T) over the survivors,
//      drawn as argmax(logit / T + Gumbel noise) (the Gumbel-max trick: one parallel argmax).
//      T <= 0: greedy, the first index of the maximum penalized logit (no noise, no filters).
// The noise of token i at step s is -log(-log(u)), u from Philox4x32-10 (Salmon et al. 2011,
// as Random123 and cuRAND) with key (seed low 32 bits, seed high 32 bits) and counter
// (i, s, 0, 0): a counter-based generator, so a fixed seed draws the same ids on every run and
// on every device, without state carried between steps.
// The top-k and top-p thresholds are found without sorting: a bitwise search over the 32-bit
// order-preserving keys of the logits, one bit per round from the top, each round a parallel
// count (top-k) or fixed-point mass (top-p, weights exp(l - max) * 2^32 as i64: exact sums in
// any order) of the keys at or above the candidate threshold. The logits are viewed as [R][C]
// (C the largest divisor of V up to 256) so every reduction has R parallel rows.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace hexir::compiler::llama {

// The sampler arguments of @generate_sampled: `tensor<4xf32>` then `tensor<3xi64>`, in these
// orders (hexir-generate, the Python package and the tests fill them by these names).
enum SamplerFloat : int { kTemperature = 0, kTopP, kMinP, kRepetitionPenalty, kSamplerFloats };
enum SamplerInt : int { kSeed = 0, kTopK, kRepetitionLastN, kSamplerInts };

// The most recent tokens the repetition penalty can look at (llama.cpp's default last_n).
constexpr int64_t kRepetitionWindow = 64;

// SSA names (already defined where the sampler is emitted) the sampler reads.
struct SamplerOperands {
  std::string logits;       // tensor<Vxf32>
  std::string floats;       // tensor<4xf32>, SamplerFloat order
  std::string ints;         // tensor<3xi64>, SamplerInt order
  std::string prompt;       // tensor<?xi64>: the first tokens of the history
  std::string prompt_len;   // i64: the prompt's length
  std::string ids;          // tensor<?xi64>: the generated ids after the prompt, or "" (none)
  std::string history_len;  // i64: tokens before the one being chosen (prompt + generated)
  std::string step;         // i64: the RNG counter's step (ids generated before this one)
};

// Appends the sampler's ops to `os` (a function body; SSA names start with `prefix`, which
// must be unique in the function) and returns the chosen id's SSA name (tensor<i64>).
std::string EmitSampler(std::ostream& os, int64_t vocab, const SamplerOperands& in,
                        const std::string& prefix);

// A module of one function running the sampler alone, for tests:
//   func.func @sample(%logits: tensor<Vxf32>, %floats: tensor<4xf32>, %ints: tensor<3xi64>,
//                     %history: tensor<?xi64>, %step: i64) -> tensor<i64>
std::string EmitSamplerModule(int64_t vocab);

}  // namespace hexir::compiler::llama
