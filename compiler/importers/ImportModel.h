// One entry point for every model importer: picks the importer by the file's kind (its name
// suffix, a directory for a Hugging Face folder, or an explicit format) and returns MLIR text
// for hexir-compile. Used by hexir-import
// and by the Python package (hexir.import_model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace hexir::compiler {

struct ImportModelOptions {
  std::string format;           // "onnx", "llama2c", "gguf", "hf"; empty: by the file name's suffix (a folder: hf)
  std::string entry = "main";   // onnx: name of the generated entry function
  int64_t cache_len = 0;        // llama2c/gguf/hf: KV-cache positions (0: the checkpoint's)
  std::string weights = "f32";  // llama2c/gguf/hf: weight argument element type (f32 or f16)
  std::string kv_cache = "f32";  // llama2c/gguf/hf: KV-cache element type (f32, f16 or bf16)
  int64_t decode_chunk = 8;     // llama2c/gguf/hf: decode steps per host check of the stop flag
  bool inline_layers = false;   // llama2c/gguf/hf: decode layers written out, not calls of @layer
  bool device_loop = false;     // llama2c/gguf/hf: @generate's decode loop on the device (llama/EmitModule.h)
  // llama2c/gguf/hf: the chunked host loop even for a small model (without it and without
  // device_loop, a small model takes the device loop: llama/EmitModule.h SmallDecodeModel).
  bool host_loop = false;
  int64_t tensor_parallel = 1;  // llama2c/gguf/hf: ranks of the SPMD program (llama/TensorParallel.h)
  // Device placement (modules compiled with --target repeated; see the importers' READMEs).
  int64_t embedding_device = -1;  // llama2c/gguf/hf: the head's device, layers on the other
  std::string layer_devices;      // llama2c/gguf/hf: "0-5:0,6-11:1"
  std::string onnx_devices;       // onnx: "NODES:N,..." (node index, FIRST-LAST or node name)
  // onnx: initializers over parameter_threshold bytes go to this parameter file (GGUF) and
  // become trailing arguments of the entry function (onnx/ParameterFile.h); empty: none.
  std::string parameters;
  int64_t parameter_threshold = 4096;
  bool progress = false;  // onnx: stage and node counts on stderr (a terminal)
};

// The model kinds ("onnx", "llama2c", "gguf", "hf") with their file suffixes (".onnx", ...;
// "a folder" for hf).
std::vector<std::pair<std::string, std::string>> ImportModelKinds();

// Imports `path`. Errors: InvalidArgument when the kind cannot be told (naming the path and
// the supported kinds), else the importer's error naming the offending op, tensor or offset.
StatusOr<std::string> ImportModelFile(const std::string& path, const ImportModelOptions& options);

}  // namespace hexir::compiler
