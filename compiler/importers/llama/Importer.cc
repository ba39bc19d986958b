#include "compiler/importers/llama/Importer.h"

#include <fstream>

#include "compiler/importers/llama/TensorParallel.h"

namespace hexir::compiler::llama {

StatusOr<std::string> ImportLlama2cFile(const std::string& path, const EmitOptions& options) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return NotFound("cannot open llama2.c checkpoint '", path, "'");
  size_t size = static_cast<size_t>(in.tellg());
  uint8_t header[kHeaderBytes] = {};
  in.seekg(0);
  in.read(reinterpret_cast<char*>(header), std::min(size, kHeaderBytes));
  StatusOr<LlamaConfig> config = ParseLlamaHeader(header, size);
  if (!config.ok()) return std::move(config).status().WithContext(StrCat("'", path, "'"));
  if (options.cache_len < 0 || options.cache_len > config->seq_len)
    return InvalidArgument("'", path, "': cache length ", options.cache_len,
                           " is outside 1..seq_len (", config->seq_len, ")");
  if (options.decode_chunk < 1 || options.decode_chunk > 4096)
    return InvalidArgument("decode chunk ", options.decode_chunk, " is outside 1..4096");
  HEXIR_RETURN_IF_ERROR(CheckElementTypes(options));
  if (options.tensor_parallel > 1) {
    Status split = TensorParallelWeights(*config, LlamaWeights(*config), options.tensor_parallel, 0).status();
    if (!split.ok()) return std::move(split).WithContext(StrCat("'", path, "'"));
  }
  HEXIR_RETURN_IF_ERROR(ResolvePlacement(options.placement, config->n_layers).status());
  return EmitLlamaModule(*config, options);
}

}  // namespace hexir::compiler::llama
