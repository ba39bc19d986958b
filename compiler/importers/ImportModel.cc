#include "compiler/importers/ImportModel.h"

#include "compiler/importers/llama/GgufLlama.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/onnx/Importer.h"

namespace hexir::compiler {
namespace {

StatusOr<std::string> ImportOnnx(const std::string& path, const ImportModelOptions& o) {
  importers::onnx::ImportOptions options;
  options.entry_name = o.entry;
  return importers::onnx::ImportOnnxFile(path, options);
}

llama::EmitOptions LlamaOptions(const ImportModelOptions& o) {
  llama::EmitOptions options;
  options.cache_len = o.cache_len;
  options.weight_type = o.weights;
  options.decode_chunk = o.decode_chunk;
  return options;
}

StatusOr<std::string> ImportLlama2c(const std::string& path, const ImportModelOptions& o) {
  return llama::ImportLlama2cFile(path, LlamaOptions(o));
}

StatusOr<std::string> ImportGguf(const std::string& path, const ImportModelOptions& o) {
  return llama::ImportGgufFile(path, LlamaOptions(o));
}

struct Importer {
  const char* kind;    // ImportModelOptions::format
  const char* suffix;  // file name suffix that selects it
  StatusOr<std::string> (*run)(const std::string&, const ImportModelOptions&);
};

const Importer kImporters[] = {
    {"gguf", ".gguf", ImportGguf},
    {"llama2c", ".bin", ImportLlama2c},
    {"onnx", ".onnx", ImportOnnx},
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ImportModelKinds() {
  std::vector<std::pair<std::string, std::string>> kinds;
  for (const Importer& i : kImporters) kinds.emplace_back(i.kind, i.suffix);
  return kinds;
}

StatusOr<std::string> ImportModelFile(const std::string& path, const ImportModelOptions& options) {
  for (const Importer& i : kImporters)
    if (options.format.empty() ? EndsWith(path, i.suffix) : options.format == i.kind)
      return i.run(path, options);
  std::string kinds;
  for (const Importer& i : kImporters) kinds += StrCat(kinds.empty() ? "" : ", ", i.kind, " (", i.suffix, ")");
  if (!options.format.empty())
    return InvalidArgument("unknown model format '", options.format, "' (supported: ", kinds, ")");
  return InvalidArgument("cannot tell the kind of '", path, "' (supported: ", kinds,
                         "; or give the format)");
}

}  // namespace hexir::compiler
