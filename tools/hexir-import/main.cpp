// hexir-import: converts a model file into MLIR that hexir-compile accepts.
// The importer is chosen by compiler/importers/ImportModel.h (file suffix or --format).
//   hexir-import model.onnx -o model.mlir [--entry=main]
//   hexir-import CKPT.bin|MODEL.gguf -o llm.mlir [--cache-len=N] [--weights=f32|f16]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "compiler/importers/ImportModel.h"

int main(int argc, char** argv) {
  hexir::compiler::ImportModelOptions o;
  std::string input;
  std::string output = "-";
  CLI::App app{"hexir-import: model file -> MLIR for hexir-compile (kinds: .onnx, .bin = llama2.c, .gguf)"};
  app.add_option("input", input, "model file (.onnx, llama2.c .bin, GGUF .gguf)")->required();
  app.add_option("-o,--output", output, "output .mlir file ('-' = stdout)");
  app.add_option("--entry", o.entry, "name of the generated entry function");
  app.add_option("--format", o.format, "input kind, overriding the file name (onnx, llama2c, gguf)");
  app.add_option("--cache-len", o.cache_len, "llama2c/gguf: KV-cache positions (default: seq_len / llama.context_length)");
  app.add_option("--weights", o.weights, "llama2c/gguf: weight argument element type, f32 (default) or f16");
  app.add_option("--decode-chunk", o.decode_chunk,
                 "llama2c/gguf: decode steps per host check of the stop flag (default 8; 1 = check every token)");
  CLI11_PARSE(app, argc, argv);

  hexir::StatusOr<std::string> text = hexir::compiler::ImportModelFile(input, o);
  if (!text.ok()) {
    std::fprintf(stderr, "hexir-import: error: %s\n", text.status().ToString().c_str());
    return 1;
  }
  if (output == "-") {
    std::cout << *text;
    return 0;
  }
  std::ofstream out(output, std::ios::binary);
  out << *text;
  if (!out) {
    std::fprintf(stderr, "hexir-import: error: cannot write '%s'\n", output.c_str());
    return 1;
  }
  return 0;
}
