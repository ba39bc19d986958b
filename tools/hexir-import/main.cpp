// hexir-import: converts a model file into MLIR that hexir-compile accepts.
// Dispatches on the input kind (by file name); each kind is one row of kImporters.
//   hexir-import model.onnx -o model.mlir [--entry=main]
//   hexir-import CKPT.bin|MODEL.gguf|HF_DIR -o llm.mlir [--cache-len=N] [--weights=f32|f16]
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "compiler/importers/llama/GgufLlama.h"
#include "compiler/importers/llama/HfLlama.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/onnx/Importer.h"
#include "tools/common/tool_main.h"

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

hexir::Status Run(const Options& o) {
  const Importer* importer = nullptr;
  for (const Importer& i : kImporters)
    if (o.format.empty() ? (i.suffix ? EndsWith(o.input, i.suffix) : hexir::compiler::llama::IsDirectory(o.input))
                         : o.format == i.kind)
      importer = &i;
  if (!importer) {
    return hexir::InvalidArgument("cannot tell the kind of '", o.input,
                                  "' (supported: .onnx, .bin, .gguf, a folder; or pass --format)");
  }
  HEXIR_ASSIGN_OR_RETURN(std::string text, importer->run(o));
  if (o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return hexir::Status::Ok();  // RunTool reports a failed write to standard output
  }
  std::FILE* out = std::fopen(o.output.c_str(), "wb");
  if (!out) return hexir::NotFound("cannot write '", o.output, "': ", std::strerror(errno));
  size_t written = std::fwrite(text.data(), 1, text.size(), out);
  int err = written == text.size() ? 0 : errno;
  if (std::fclose(out) != 0 && err == 0) err = errno ? errno : EIO;
  if (err != 0) return hexir::DataLoss("cannot write '", o.output, "': ", std::strerror(err));
  return hexir::Status::Ok();
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
  if (int exit = hexir::tools::ParseFlags("hexir-import", app, argc, argv); exit >= 0) return exit;
  return hexir::tools::RunTool("hexir-import", [&] { return Run(o); });
}
