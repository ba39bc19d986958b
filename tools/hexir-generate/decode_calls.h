// hexir-generate's calls into one context: the single session's, or one rank's of a group
// driven by this process (rank_generate.h). The module's queries (@tensor_parallel,
// @cache_len) and the greedy @generate call with the download of its ids.
//
// Thread-safety: each function uses only the context and devices it is given (one call at a
// time per context).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "hal/api.h"
#include "vm/api.h"

namespace hexir::tools {

// A context and its devices by module ordinal (device 0 takes the prompt, returns the ids).
struct DecodeContext {
  vm::Context& context;
  const std::vector<vm::Ref<hal::Device>>& devices;
};

// What @tensor_parallel returns: the ranks the module was imported for, this context's rank
// and the rank count of its channel.
struct TensorParallelRank {
  int64_t ranks = 1;
  int64_t rank = 0;
  int64_t count = 1;
};

// @tensor_parallel's answer, or nullopt for a module that has none (not tensor-parallel).
StatusOr<std::optional<TensorParallelRank>> QueryTensorParallel(DecodeContext target,
                                                                const std::string& module_path);

// `max_tokens` clamped to the module's KV cache (@cache_len; unchanged without it); a prompt
// longer than the cache is InvalidArgument naming both lengths and the module.
StatusOr<int64_t> FitToCache(DecodeContext target, const std::string& module_path,
                             size_t prompt_length, int64_t max_tokens, int64_t seq_len, bool verbose);

// Orders every later submission of `device`'s (in-order) queue after `ready` (the upload's
// last write) without a host wait: one empty submission waiting for it.
Status OrderAfter(hal::Device& device, const hal::SemaphoreValue& ready);

// One greedy @generate(prompt, max_tokens, weights...) call and the download of its ids (up to
// the first negative id), bounded by `timeout_seconds` (0: none).
Status CallGenerate(DecodeContext target, const vm::Function& generate,
                    const vm::Ref<hal::BufferView>& prompt, int64_t max_tokens,
                    const std::vector<vm::Ref<hal::BufferView>>& weights, double timeout_seconds,
                    std::vector<int64_t>* ids);

}  // namespace hexir::tools
