#include "compiler/importers/ImportModel.h"

#include "compiler/importers/llama/GgufLlama.h"
#include "compiler/importers/llama/HfLlama.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/onnx/Importer.h"

namespace hexir::compiler {
namespace {

StatusOr<std::string> ImportOnnx(const std::string& path, const ImportModelOptions& o) {
  if (o.tensor_parallel != 1)
    return InvalidArgument("'", path, "': --tensor-parallel applies to llama checkpoints, not ONNX models");
  importers::onnx::ImportOptions options;
  options.entry_name = o.entry;
  options.node_devices = o.onnx_devices;
  options.parameters_path = o.parameters;
  options.parameter_threshold = o.parameter_threshold;
  options.progress = o.progress;
  return importers::onnx::ImportOnnxFile(path, options);
}

StatusOr<llama::EmitOptions> LlamaOptions(const ImportModelOptions& o) {
  llama::EmitOptions options;
  options.cache_len = o.cache_len;
  options.weight_type = o.weights;
  options.cache_type = o.kv_cache;
  options.decode_chunk = o.decode_chunk;
  options.layer_calls = !o.inline_layers;
  options.device_loop = o.device_loop;
  options.small_model_device_loop = !o.host_loop;
  options.tensor_parallel = o.tensor_parallel;
  options.placement.embedding_device = o.embedding_device;
  if (!o.layer_devices.empty()) {
    HEXIR_ASSIGN_OR_RETURN(options.placement.layer_ranges, llama::ParseLayerRanges(o.layer_devices));
  }
  if (!o.parameters.empty())
    return InvalidArgument("--parameters applies to ONNX models: a llama checkpoint is its own "
                           "parameter file (hexir-generate --parameters=CHECKPOINT)");
  if (o.device_loop && (o.tensor_parallel != 1 || o.embedding_device >= 0 || !o.layer_devices.empty()))
    return InvalidArgument("--device-loop cannot be combined with --tensor-parallel, --embedding-device or "
                           "--layer-devices (a device loop runs on one device without collectives)");
  if (o.device_loop && o.host_loop)
    return InvalidArgument("--device-loop and --host-loop exclude each other");
  if (o.device_loop && o.kv_cache != "f32")
    return InvalidArgument("--device-loop cannot be combined with --kv-cache=", o.kv_cache,
                           " (the device loop's cache write and attention are f32 only)");
  if (o.tensor_parallel != 1 && (o.embedding_device >= 0 || !o.layer_devices.empty()))
    return InvalidArgument("--tensor-parallel=", o.tensor_parallel,
                           " cannot be combined with --embedding-device or --layer-devices (a "
                           "tensor-parallel program runs whole on each rank's device)");
  return options;
}

StatusOr<std::string> ImportLlama2c(const std::string& path, const ImportModelOptions& o) {
  HEXIR_ASSIGN_OR_RETURN(llama::EmitOptions options, LlamaOptions(o));
  return llama::ImportLlama2cFile(path, options);
}

StatusOr<std::string> ImportGguf(const std::string& path, const ImportModelOptions& o) {
  HEXIR_ASSIGN_OR_RETURN(llama::EmitOptions options, LlamaOptions(o));
  return llama::ImportGgufFile(path, options);
}

StatusOr<std::string> ImportHf(const std::string& path, const ImportModelOptions& o) {
  HEXIR_ASSIGN_OR_RETURN(llama::EmitOptions options, LlamaOptions(o));
  return llama::ImportHfFolder(path, options);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Importer {
  const char* kind;    // ImportModelOptions::format
  const char* suffix;  // file name suffix that selects it (null: a directory selects it)
  StatusOr<std::string> (*run)(const std::string&, const ImportModelOptions&);
};

const Importer kImporters[] = {
    {"gguf", ".gguf", ImportGguf},
    {"llama2c", ".bin", ImportLlama2c},
    {"onnx", ".onnx", ImportOnnx},
    {"hf", nullptr, ImportHf},  // a Hugging Face folder: config.json + safetensors
};

// How a row is shown: its suffix, or "a folder".
const char* Selector(const Importer& i) { return i.suffix ? i.suffix : "a folder"; }

bool Selects(const Importer& i, const std::string& path) {
  return i.suffix ? EndsWith(path, i.suffix) : llama::IsDirectory(path);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ImportModelKinds() {
  std::vector<std::pair<std::string, std::string>> kinds;
  for (const Importer& i : kImporters) kinds.emplace_back(i.kind, Selector(i));
  return kinds;
}

StatusOr<std::string> ImportModelFile(const std::string& path, const ImportModelOptions& options) {
  for (const Importer& i : kImporters)
    if (options.format.empty() ? Selects(i, path) : options.format == i.kind)
      return i.run(path, options);
  std::string kinds;
  for (const Importer& i : kImporters) kinds += StrCat(kinds.empty() ? "" : ", ", i.kind, " (", Selector(i), ")");
  if (!options.format.empty())
    return InvalidArgument("unknown model format '", options.format, "' (supported: ", kinds, ")");
  return InvalidArgument("cannot tell the kind of '", path, "' (supported: ", kinds,
                         "; or give the format)");
}

}  // namespace hexir::compiler
