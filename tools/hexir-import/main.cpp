// hexir-import: converts a model file into MLIR that hexir-compile accepts.
// The importer is chosen by compiler/importers/ImportModel.h (file suffix or --format).
//   hexir-import model.onnx -o model.mlir [--entry=main]
//   hexir-import CKPT.bin|MODEL.gguf|HF_DIR -o llm.mlir [--cache-len=N] [--weights=f32|f16]
//                [--kv-cache=f32|f16|bf16]
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "compiler/importers/ImportModel.h"
#include "tools/common/flag_checks.h"
#include "tools/common/tool_main.h"

namespace {

struct Options {
  std::string input;
  std::string output = "-";
  hexir::compiler::ImportModelOptions import;  // format, entry, cache_len, weights, decode_chunk
};

hexir::Status Run(const Options& o) {
  HEXIR_ASSIGN_OR_RETURN(std::string text, hexir::compiler::ImportModelFile(o.input, o.import));
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
  Options flags;
  hexir::compiler::ImportModelOptions& o = flags.import;
  CLI::App app{"hexir-import: model file -> MLIR for hexir-compile (kinds: .onnx, .bin = llama2.c, .gguf, a Hugging Face folder)"};
  app.add_option("input", flags.input, "model file (.onnx, llama2.c .bin, GGUF .gguf) or Hugging Face folder")->required();
  app.add_option("-o,--output", flags.output, "output .mlir file ('-' = stdout)");
  app.add_option("--entry", o.entry, "name of the generated entry function");
  app.add_option("--format", o.format, "input kind, overriding the file name (onnx, llama2c, gguf, hf)");
  app.add_option("--cache-len", o.cache_len, "llama2c/gguf: KV-cache positions (default: seq_len / llama.context_length)");
  app.add_option("--weights", o.weights, "llama2c/gguf: weight argument element type, f32 (default) or f16");
  app.add_option("--kv-cache", o.kv_cache,
                 "llama2c/gguf/hf: KV-cache element type, f32 (default), f16 or bf16 (rows rounded when "
                 "written, attention accumulates in f32)");
  CLI::Option* decode_chunk = app.add_option(
      "--decode-chunk", o.decode_chunk,
      "llama2c/gguf: decode steps per host check of the stop flag (default 8; 1 = check every token); "
      "given, the chunked host loop (as --host-loop) unless --device-loop");
  app.add_flag("--inline-layers", o.inline_layers,
               "llama2c/gguf/hf: write each decode layer out in the step instead of calling @layer "
               "(the same command buffer once compiled; for comparison)");
  app.add_flag("--device-loop", o.device_loop,
               "llama2c/gguf/hf: the whole decode loop on the device (one step per iteration, the stop "
               "condition a device flag: one CUDA graph launch per @generate); default: for a small model "
               "(at most 0.5 Mi weights, f32 KV cache, one device) the device loop, else chunks checked by the "
               "host (--decode-chunk), the CPU's better form for larger models");
  app.add_flag("--host-loop", o.host_loop,
               "llama2c/gguf/hf: the chunked host loop (--decode-chunk) even for a small model");
  app.add_option("--tensor-parallel", o.tensor_parallel,
                 "llama2c/gguf/hf: one SPMD program for N ranks (Megatron-style shards; run it with "
                 "mpirun -n N hexir-generate)")
      ->check(hexir::tools::IntegerRange(1, 4096));
  app.add_option("--embedding-device", o.embedding_device,
                 "llama2c/gguf/hf: device ordinal (of hexir-compile's --target list) of the embedding gather, "
                 "final norm, classifier and argmax; the layers go to the other of devices 0 and 1 unless --layer-devices");
  app.add_option("--layer-devices", o.layer_devices,
                 "llama2c/gguf/hf: layers by device, FIRST-LAST:DEVICE or LAYER:DEVICE, comma-separated (e.g. 0-5:0,6-11:1)");
  app.add_option("--onnx-devices", o.onnx_devices,
                 "onnx: nodes by device, SELECTOR:DEVICE comma-separated; SELECTOR = node index, FIRST-LAST "
                 "(graph order, from 0) or node name; other nodes follow their operands");
  app.add_option("--parameters", o.parameters,
                 "onnx: write initializers over --parameter-threshold bytes to this parameter file "
                 "(GGUF) as trailing arguments of the entry function; run with hexir-run --parameters");
  app.add_option("--parameter-threshold", o.parameter_threshold,
                 "onnx: initializers of more bytes than this become parameters (default 4096)")
      ->check(hexir::tools::IntegerAtLeast(0));
  if (int exit = hexir::tools::ParseFlags("hexir-import", app, argc, argv); exit >= 0) return exit;
  o.progress = isatty(STDERR_FILENO) != 0;
  if (decode_chunk->count() > 0 && !o.device_loop) o.host_loop = true;  // chunks asked for
  return hexir::tools::RunTool("hexir-import", [&] { return Run(flags); });
}
