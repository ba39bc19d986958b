// The weights of a llama2.c or GGUF checkpoint for the module hexir-import made from it:
// memory-mapped once, in the order @generate takes them after (prompt, max_tokens), and
// uploaded to a device once (hexir-generate, the Python package's hexir.Parameters).
//
// Ownership: a LlamaParameters owns the read-only mapping (unmapped on destruction); uploaded
// views are independent device buffers. Immutable after Open, so thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"
#include "hal/api.h"
#include "tools/common/invocation.h"

namespace hexir::tools {

class LlamaParameters {
 public:
  // Maps `path` and parses it as GGUF (by its magic) or as a llama2.c checkpoint. Errors name
  // the path (missing, empty, malformed header with the field's offset).
  static StatusOr<std::unique_ptr<LlamaParameters>> Open(const std::string& path);
  ~LlamaParameters();

  const std::string& path() const { return path_; }
  const compiler::llama::LlamaConfig& config() const { return config_; }
  const std::vector<compiler::llama::WeightTensor>& weights() const { return weights_; }

  // Checks that args[first..] of `function` (named in errors: "module 'm.vmfb': @generate")
  // are exactly these weights (count, dims, one element type that is f32 or f16) and returns
  // that type; errors also name the argument and the tensor.
  StatusOr<int32_t> CheckArguments(const std::vector<AbiType>& args, size_t first,
                                   const std::string& function) const;

  // Uploads every weight as `element_type` (f32 or f16; a tensor stored in the other type is
  // converted on the host first), in order.
  StatusOr<std::vector<vm::Ref<hal::BufferView>>> Upload(hal::Device& device,
                                                         int32_t element_type) const;

 private:
  LlamaParameters() = default;
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  compiler::llama::LlamaConfig config_;
  std::vector<compiler::llama::WeightTensor> weights_;
};

}  // namespace hexir::tools
