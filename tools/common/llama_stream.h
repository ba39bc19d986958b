// Streaming generation with a module imported by compiler/importers/llama: the host drives
// the decode chunks (@generate_begin, then @generate_chunk until done) and hands the new ids
// of each chunk to a callback as soon as the chunk ends. Every token is chosen on the device
// by the compiled sampler (compiler/importers/llama/Sampler.h: llama.cpp's order and
// semantics); temperature 0 gives @generate's greedy ids.
//
// Ownership: the session and the weight views are borrowed for the call. Not thread-safe
// per session (one call at a time); the callback runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/span.h"
#include "base/status.h"
#include "hal/api.h"
#include "tools/common/invocation.h"
#include "vm/api.h"

namespace hexir::tools {

// Sampler settings (defaults as llama.cpp's, except temperature: 0 = greedy here).
struct SamplerSettings {
  float temperature = 0.0f;         // <= 0: greedy (argmax of the penalized logits)
  int64_t top_k = 40;               // <= 0: off
  float top_p = 0.95f;              // >= 1: off
  float min_p = 0.05f;              // <= 0: off
  float repetition_penalty = 1.0f;  // 1: off
  int64_t repeat_last_n = 64;       // tokens the penalty looks back, 0..64
  int64_t seed = 0;                 // the Philox key: the same seed draws the same ids
};

// Checks the ranges (a named error for each bad one).
Status ValidateSamplerSettings(const SamplerSettings& s);

struct StreamTiming {
  double prompt_seconds = 0;    // @generate_begin: prefill and the first token, until read
  double generate_seconds = 0;  // the @generate_chunk calls, until their ids were read
  int64_t generated = 0;        // ids produced (the first one included)
};

// The new ids of a chunk (possibly none); a non-OK status stops generation with it.
using TokenCallback = std::function<Status(Span<const int64_t> new_ids)>;

// Generates up to `max_tokens` ids after `prompt` (BOS included when wanted), stopping after a
// BOS/EOS id (included) or at the KV cache's end. `weights`: the uploaded weight views in
// argument order. `options` bounds each call and its downloads.
Status StreamGenerate(Session& session, const std::vector<vm::Ref<hal::BufferView>>& weights,
                      Span<const int64_t> prompt, int64_t max_tokens, const SamplerSettings& sampler,
                      const TokenCallback& on_ids, StreamTiming* timing,
                      const vm::InvokeOptions& options = {});

}  // namespace hexir::tools
