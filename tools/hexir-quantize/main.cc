// hexir-quantize: writes a llama checkpoint (llama2.c .bin, GGUF with f32/f16/bf16 tensors, or
// a Hugging Face folder) as a GGUF file whose matrices are in one of GGUF's block formats,
// bf16 or f16, readable by llama.cpp and by hexir-import (which keeps the blocks as stored).
//   hexir-quantize IN -o OUT.gguf --type=q8_0|q4_0|q4_1|q5_0|q4_k|q5_k|q6_k|bf16|f16 [--tokenizer=TOK.bin]
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "compiler/importers/llama/GgmlBlocks.h"
#include "compiler/importers/llama/Gguf.h"
#include "compiler/importers/llama/GgufLlama.h"
#include "tools/common/bulk_convert.h"
#include "tools/common/llama_parameters.h"
#include "tools/common/tensor_io.h"
#include "tools/common/tool_main.h"
#include "tools/hexir-quantize/gguf_writer.h"
#include "tools/hexir-quantize/quantize_blocks.h"

namespace hexir::tools {
namespace {

namespace llama = compiler::llama;
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1;

struct Flags {
  std::string input, output, type, tokenizer;
};

// A read-only file mapping (a safetensors shard or a tokenizer).
struct Mapping {
  uint8_t* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) munmap(data, size);
  }
};
StatusOr<std::unique_ptr<Mapping>> Map(const std::string& path) {
  auto m = std::make_unique<Mapping>();
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound("cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'", path, "' is empty, a directory or unreadable");
  }
  m->size = size_t(st.st_size);
  void* p = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return Internal("cannot mmap '", path, "': ", std::strerror(errno));
  m->data = static_cast<uint8_t*>(p);
  return m;
}

// llama.cpp's general.file_type for a whole-file type (LLAMA_FTYPE_*).
uint32_t FileType(const std::string& type) {
  static const std::map<std::string, uint32_t> kFileTypes = {
      {"f16", 1},  {"q4_0", 2}, {"q4_1", 3},  {"q8_0", 7},  {"q5_0", 8},
      {"q4_k", 15}, {"q5_k", 17}, {"q6_k", 18}, {"bf16", 32}};
  return kFileTypes.at(type);
}

// A llama2.c tokenizer (u32 max length, then per token f32 score, i32 length, bytes) as
// GGUF's "llama" vocabulary: ' ' as U+2581, ids 0/1/2 as <unk>/<s>/</s>, <0xXX> byte tokens.
Status AddLlama2cTokenizer(const std::string& path, int64_t vocab, GgufWriter* out) {
  HEXIR_ASSIGN_OR_RETURN(auto file, Map(path));
  llama::GgufValue tokens, scores, types;
  tokens.type = scores.type = types.type = llama::GgufValueType::kArray;
  tokens.elem_type = llama::GgufValueType::kString;
  scores.elem_type = llama::GgufValueType::kFloat32;
  types.elem_type = llama::GgufValueType::kInt32;
  size_t at = 4;
  while (at < file->size) {
    float score;
    int32_t n;
    if (file->size - at < 8) return InvalidArgument("tokenizer '", path, "' is truncated at offset ", at);
    std::memcpy(&score, file->data + at, 4);
    std::memcpy(&n, file->data + at + 4, 4);
    if (n < 0 || size_t(n) > file->size - at - 8)
      return InvalidArgument("tokenizer '", path, "': token ", tokens.array.size(), " at offset ", at,
                             " has length ", n, " past the end of the file");
    std::string piece(reinterpret_cast<const char*>(file->data + at + 8), size_t(n));
    at += 8 + size_t(n);
    const size_t id = tokens.array.size();
    llama::GgufValue text, s, t;
    text.type = llama::GgufValueType::kString;
    s.type = llama::GgufValueType::kFloat32;
    t.type = llama::GgufValueType::kInt32;
    s.f = score;
    if (id <= 2) {
      text.s = id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>";
      t.i = id == 0 ? 2 : 3;  // unknown, control
    } else if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0) {
      text.s = piece;
      t.i = 6;  // byte
    } else {
      for (char c : piece) text.s += c == ' ' ? std::string("\xe2\x96\x81") : std::string(1, c);
      t.i = 1;  // normal
    }
    tokens.array.push_back(text);
    scores.array.push_back(s);
    types.array.push_back(t);
  }
  if (int64_t(tokens.array.size()) != vocab)
    return InvalidArgument("tokenizer '", path, "' has ", tokens.array.size(), " tokens but the checkpoint's vocabulary is ",
                           vocab);
  out->AddString("tokenizer.ggml.model", "llama");
  out->AddValue("tokenizer.ggml.tokens", tokens);
  out->AddValue("tokenizer.ggml.scores", scores);
  out->AddValue("tokenizer.ggml.token_type", types);
  out->AddUint32("tokenizer.ggml.bos_token_id", 1);
  out->AddUint32("tokenizer.ggml.eos_token_id", 2);
  out->AddUint32("tokenizer.ggml.unknown_token_id", 0);
  llama::GgufValue add_bos;
  add_bos.type = llama::GgufValueType::kBool;
  add_bos.u = 1;
  out->AddValue("tokenizer.ggml.add_bos_token", add_bos);
  return Status::Ok();
}

Status Run(const Flags& f) {
  const llama::GgmlBlockInfo* format = llama::FindGgmlBlockTypeByName(f.type);
  if (!format && f.type != "f16")
    return InvalidArgument("--type=", f.type, " is not one of q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k, bf16, f16");
  HEXIR_ASSIGN_OR_RETURN(std::unique_ptr<LlamaParameters> in, LlamaParameters::Open(f.input));
  const llama::LlamaConfig& c = in->config();
  if (c.rope_scale != 1.0f)
    return InvalidArgument("'", f.input, "' uses linear rope scaling (factor ", 1.0f / c.rope_scale,
                           "), which hexir-import's GGUF mode does not read");

  GgufWriter out;
  out.AddString("general.architecture", "llama");
  out.AddString("general.name", "hexir-quantize");
  out.AddUint32("general.file_type", FileType(f.type));
  out.AddUint32("llama.context_length", uint32_t(c.seq_len));
  out.AddUint32("llama.embedding_length", uint32_t(c.dim));
  out.AddUint32("llama.block_count", uint32_t(c.n_layers));
  out.AddUint32("llama.feed_forward_length", uint32_t(c.hidden_dim));
  out.AddUint32("llama.rope.dimension_count", uint32_t(c.head_size()));
  out.AddUint32("llama.attention.head_count", uint32_t(c.n_heads));
  out.AddUint32("llama.attention.head_count_kv", uint32_t(c.n_kv_heads));
  out.AddFloat32("llama.attention.layer_norm_rms_epsilon", c.rms_eps);
  out.AddFloat32("llama.rope.freq_base", c.rope_theta);
  // The vocabulary: a GGUF input's tokenizer.* keys as they are; a llama2.c tokenizer file.
  bool has_tokenizer = false;
  if (in->data() && llama::IsGguf(in->data(), in->size())) {
    HEXIR_ASSIGN_OR_RETURN(llama::GgufFile gguf, llama::ParseGguf(in->data(), in->size()));
    for (const auto& [key, value] : gguf.metadata)
      if (key.compare(0, 10, "tokenizer.") == 0) {
        out.AddValue(key, value);
        has_tokenizer = true;
      }
  }
  if (!f.tokenizer.empty()) {
    if (has_tokenizer) return InvalidArgument("'", f.input, "' has its own tokenizer; --tokenizer is for llama2.c files");
    HEXIR_RETURN_IF_ERROR(AddLlama2cTokenizer(f.tokenizer, c.vocab_size, &out));
  } else if (!has_tokenizer) {
    out.AddUint32("tokenizer.ggml.bos_token_id", uint32_t(c.bos_id));
    out.AddUint32("tokenizer.ggml.eos_token_id", uint32_t(c.eos_id));
  }

  std::map<std::string, std::unique_ptr<Mapping>> shards;
  std::map<std::string, int> counts;  // stored type -> tensors
  std::string fallbacks;
  for (const llama::WeightTensor& w : in->weights()) {
    const uint8_t* base = in->data();
    size_t size = in->size();
    if (!w.file.empty()) {
      auto& shard = shards[w.file];
      if (!shard) {
        HEXIR_ASSIGN_OR_RETURN(shard, Map(w.file));
      }
      base = shard->data;
      size = shard->size;
    }
    if (w.kept && !w.kept->is_bf16())
      return InvalidArgument("tensor '", w.name, "' of '", f.input, "' is already ", w.kept->name,
                             "; quantize from an f32, f16 or bf16 checkpoint");
    const int64_t n = w.dims[0] * (w.dims.size() > 1 ? w.dims[1] : 1);
    const int bytes = w.type == hal::ElementType::kF32 ? 4 : 2;
    if (w.offset < 0 || size_t(w.offset) > size || size_t(n) * bytes > size - size_t(w.offset))
      return InvalidArgument("tensor '", w.name, "' at offset ", w.offset, " runs past the end of its file");
    std::vector<float> values(static_cast<size_t>(n));
    ConvertToF32(base + w.offset, size_t(n), bytes, w.type == hal::ElementType::kBF16, values.data());
    if (w.rotate_half_heads > 0) PermuteRotateHalfRows(w, &values);

    std::vector<uint64_t> ne(w.dims.rbegin(), w.dims.rend());
    std::vector<uint8_t> data;
    uint32_t ggml_type = kGgmlF32;
    const char* stored = "f32";
    if (w.dims.size() == 2) {
      const int64_t rows = w.dims[0], k = w.dims[1];
      // A row length the format's blocks do not divide falls back to q8_0 (K-quants), then f16.
      const llama::GgmlBlockInfo* use = format;
      if (use && k % use->block_elements) use = llama::FindGgmlBlockType(uint32_t(llama::GgmlBlockType::kQ8_0));
      if (use && k % use->block_elements) use = nullptr;
      if (use != format) fallbacks += StrCat(" ", llama::GgufTensorName(w.name), " (k = ", k, ")");
      if (use) {
        data.resize(size_t(rows * use->RowBytes(k)));
        for (int64_t r = 0; r < rows; ++r)
          QuantizeRow(*use, &values[size_t(r * k)], k, &data[size_t(r * use->RowBytes(k))]);
        ggml_type = uint32_t(use->type);
        stored = use->name;
      } else {
        data.resize(size_t(n) * 2);
        ConvertF32ToF16(reinterpret_cast<const uint8_t*>(values.data()), size_t(n),
                        reinterpret_cast<uint16_t*>(data.data()));
        ggml_type = kGgmlF16;
        stored = "f16";
      }
    } else {  // norms stay f32, as llama.cpp keeps them
      data.resize(size_t(n) * 4);
      std::memcpy(data.data(), values.data(), data.size());
    }
    ++counts[stored];
    out.AddTensor(llama::GgufTensorName(w.name), ne, ggml_type, std::move(data));
  }
  HEXIR_RETURN_IF_ERROR(out.Write(f.output));
  std::string summary;
  for (const auto& [type, count] : counts) summary += StrCat(summary.empty() ? "" : ", ", count, " ", type);
  std::printf("hexir-quantize: wrote '%s': %zu tensors (%s)\n", f.output.c_str(), in->weights().size(),
              summary.c_str());
  if (!fallbacks.empty())
    std::printf("hexir-quantize: rows not a multiple of %s's block size kept as q8_0 or f16:%s\n", f.type.c_str(),
                fallbacks.c_str());
  return Status::Ok();
}

}  // namespace
}  // namespace hexir::tools

int main(int argc, char** argv) {
  hexir::tools::Flags flags;
  CLI::App app{"hexir-quantize: llama checkpoint (llama2.c .bin, GGUF, Hugging Face folder) -> GGUF in a block format"};
  app.add_option("input", flags.input, "llama2.c .bin, GGUF (f32/f16/bf16 tensors) or Hugging Face folder")->required();
  app.add_option("-o,--output", flags.output, "output .gguf file")->required();
  app.add_option("--type", flags.type, "q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k, bf16 or f16 (matrices; norms stay f32)")
      ->required();
  app.add_option("--tokenizer", flags.tokenizer, "llama2.c tokenizer.bin to store as the file's vocabulary");
  if (int exit = hexir::tools::ParseFlags("hexir-quantize", app, argc, argv); exit >= 0) return exit;
  return hexir::tools::RunTool("hexir-quantize", [&] { return hexir::tools::Run(flags); });
}
