// hexir-import: converts a model file into MLIR that hexir-compile accepts.
// Dispatches on the input kind (by file name); each kind is one row of kImporters.
//   hexir-import model.onnx -o model.mlir [--entry=main]
//   hexir-import CKPT.bin|MODEL.gguf|HF_DIR -o llm.mlir [--cache-len=N] [--weights=f32|f16]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "compiler/importers/llama/GgufLlama.h"
#include "compiler/importers/llama/HfLlama.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/onnx/Importer.h"

namespace {

struct Options {
  std::string input;
  std::string output = "-";
  std::string entry = "main";
  std::string format;         // empty: by file name suffix
  long long cache_len = 0;    // llama2c/gguf: KV-cache positions (0: the header's seq_len)
  std::string weights = "f32";  // llama2c/gguf: weight element type (f32 or f16)
  long long decode_chunk = 8;   // llama2c/gguf: decode steps per host check of the stop flag
};

hexir::StatusOr<std::string> ImportOnnx(const Options& o) {
  hexir::importers::onnx::ImportOptions options;
  options.entry_name = o.entry;
  return hexir::importers::onnx::ImportOnnxFile(o.input, options);
}

hexir::StatusOr<std::string> ImportLlama2c(const Options& o) {
  hexir::compiler::llama::EmitOptions options;
  options.cache_len = o.cache_len;
  options.weight_type = o.weights;
  options.decode_chunk = o.decode_chunk;
  return hexir::compiler::llama::ImportLlama2cFile(o.input, options);
}

hexir::StatusOr<std::string> ImportHf(const Options& o) {
  hexir::compiler::llama::EmitOptions options;
  options.cache_len = o.cache_len;
  options.weight_type = o.weights;
  options.decode_chunk = o.decode_chunk;
  return hexir::compiler::llama::ImportHfFolder(o.input, options);
}

hexir::StatusOr<std::string> ImportGguf(const Options& o) {
  hexir::compiler::llama::EmitOptions options;
  options.cache_len = o.cache_len;
  options.weight_type = o.weights;
  options.decode_chunk = o.decode_chunk;
  return hexir::compiler::llama::ImportGgufFile(o.input, options);
}

struct Importer {
  const char* kind;    // shown in errors and --help
  const char* suffix;  // file name suffix that selects it (null: a directory selects it)
  hexir::StatusOr<std::string> (*run)(const Options&);
};

// New input kinds (e.g. llama2.c / GGUF checkpoints) add a row here.
const Importer kImporters[] = {
    {"onnx", ".onnx", ImportOnnx},
    {"llama2c", ".bin", ImportLlama2c},
    {"gguf", ".gguf", ImportGguf},
    {"hf", nullptr, ImportHf},  // a Hugging Face folder: config.json + safetensors
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"hexir-import: model file -> MLIR for hexir-compile (kinds: .onnx, .bin = llama2.c, .gguf, a Hugging Face folder)"};
  app.add_option("input", o.input, "model file (.onnx, llama2.c .bin, GGUF .gguf) or Hugging Face folder")->required();
  app.add_option("-o,--output", o.output, "output .mlir file ('-' = stdout)");
  app.add_option("--entry", o.entry, "name of the generated entry function");
  app.add_option("--format", o.format, "input kind, overriding the file name (onnx, llama2c, gguf, hf)");
  app.add_option("--cache-len", o.cache_len, "llama2c/gguf: KV-cache positions (default: seq_len / llama.context_length)");
  app.add_option("--weights", o.weights, "llama2c/gguf: weight argument element type, f32 (default) or f16");
  app.add_option("--decode-chunk", o.decode_chunk,
                 "llama2c/gguf: decode steps per host check of the stop flag (default 8; 1 = check every token)");
  CLI11_PARSE(app, argc, argv);

  const Importer* importer = nullptr;
  for (const Importer& i : kImporters)
    if (o.format.empty() ? (i.suffix ? EndsWith(o.input, i.suffix) : hexir::compiler::llama::IsDirectory(o.input))
                         : o.format == i.kind)
      importer = &i;
  if (!importer) {
    std::fprintf(stderr, "hexir-import: error: cannot tell the kind of '%s' (supported: .onnx, .bin, .gguf, a folder; or pass --format)\n",
                 o.input.c_str());
    return 1;
  }
  hexir::StatusOr<std::string> text = importer->run(o);
  if (!text.ok()) {
    std::fprintf(stderr, "hexir-import: error: %s\n", text.status().ToString().c_str());
    return 1;
  }
  if (o.output == "-") {
    std::cout << *text;
    return 0;
  }
  std::ofstream out(o.output, std::ios::binary);
  out << *text;
  if (!out) {
    std::fprintf(stderr, "hexir-import: error: cannot write '%s'\n", o.output.c_str());
    return 1;
  }
  return 0;
}
