#include "compiler/importers/llama/GgufLlama.h"
#include "compiler/importers/llama/TensorParallel.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace hexir::compiler::llama {
namespace {

// Integer metadata in 1..2^31-1 (the llama2.c header's range), any integer type.
StatusOr<int64_t> Positive(const GgufFile& f, const std::string& key, int64_t fallback = -1) {
  const GgufValue* v = f.Find(key);
  if (!v) {
    if (fallback > 0) return fallback;
    return InvalidArgument("GGUF: required metadata '", key, "' is missing");
  }
  if (!v->is_integer() || v->i <= 0 || v->i > 0x7fffffff)
    return InvalidArgument("GGUF: metadata '", key, "' at offset ", v->offset, " must be a positive integer below 2^31 (is ",
                           GgufValueTypeName(v->type), v->is_integer() ? " " + std::to_string(v->i) : std::string(), ")");
  return v->i;
}

// ", bf16, q4_0, ..." (every kept type, for errors).
std::string SupportedBlockTypes() {
  std::string s;
  for (const GgmlBlockInfo& info : kGgmlBlockInfos) s += StrCat(", ", info.name);
  return s;
}

StatusOr<float> Float(const GgufFile& f, const std::string& key, float fallback) {
  const GgufValue* v = f.Find(key);
  if (!v) return fallback;
  if (!v->is_float() || !(v->f > 0))
    return InvalidArgument("GGUF: metadata '", key, "' at offset ", v->offset, " must be a positive float (is ",
                           GgufValueTypeName(v->type), ")");
  return float(v->f);
}

}  // namespace

std::string GgufTensorName(const std::string& weight) {
  if (weight == "token_embedding") return "token_embd.weight";
  if (weight == "rms_final") return "output_norm.weight";
  if (weight == "classifier") return "output.weight";
  static const struct { const char* ours; const char* theirs; } kLayer[] = {
      {"rms_att", "attn_norm"}, {"wq", "attn_q"}, {"wk", "attn_k"}, {"wv", "attn_v"}, {"wo", "attn_output"},
      {"rms_ffn", "ffn_norm"}, {"w1", "ffn_gate"}, {"w2", "ffn_down"}, {"w3", "ffn_up"}};
  size_t dot = weight.find('.');
  if (weight.compare(0, 5, "layer") != 0 || dot == std::string::npos) return "";
  std::string layer = weight.substr(5, dot - 5), kind = weight.substr(dot + 1);  // "layer<l>.<kind>"
  for (const auto& k : kLayer)
    if (kind == k.ours) return "blk." + layer + "." + k.theirs + ".weight";
  return "";
}

StatusOr<GgufLlama> GgufLlamaModel(const GgufFile& f) {
  const GgufValue* arch = f.Find("general.architecture");
  if (!arch) return InvalidArgument("GGUF: metadata 'general.architecture' is missing (expected \"llama\")");
  if (arch->type != GgufValueType::kString || arch->s != "llama")
    return InvalidArgument("GGUF: metadata 'general.architecture' at offset ", arch->offset, " is '",
                           arch->type == GgufValueType::kString ? arch->s : GgufValueTypeName(arch->type),
                           "'; only \"llama\" is supported");
  GgufLlama m;
  LlamaConfig& c = m.config;
  HEXIR_ASSIGN_OR_RETURN(c.dim, Positive(f, "llama.embedding_length"));
  HEXIR_ASSIGN_OR_RETURN(c.hidden_dim, Positive(f, "llama.feed_forward_length"));
  HEXIR_ASSIGN_OR_RETURN(c.n_layers, Positive(f, "llama.block_count"));
  HEXIR_ASSIGN_OR_RETURN(c.n_heads, Positive(f, "llama.attention.head_count"));
  HEXIR_ASSIGN_OR_RETURN(c.n_kv_heads, Positive(f, "llama.attention.head_count_kv", c.n_heads));
  HEXIR_ASSIGN_OR_RETURN(c.seq_len, Positive(f, "llama.context_length"));
  HEXIR_ASSIGN_OR_RETURN(c.rms_eps, Float(f, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
  HEXIR_ASSIGN_OR_RETURN(c.rope_theta, Float(f, "llama.rope.freq_base", 10000.0f));
  if (c.dim % c.n_heads)
    return InvalidArgument("GGUF: llama.embedding_length ", c.dim, " is not divisible by llama.attention.head_count ",
                           c.n_heads);
  if (c.n_heads % c.n_kv_heads)
    return InvalidArgument("GGUF: llama.attention.head_count ", c.n_heads,
                           " is not divisible by llama.attention.head_count_kv ", c.n_kv_heads);
  if (c.head_size() % 2)
    return InvalidArgument("GGUF: head size ", c.head_size(), " is odd; rotary embeddings need pairs");
  if (const GgufValue* rd = f.Find("llama.rope.dimension_count"); rd && (!rd->is_integer() || rd->i != c.head_size()))
    return InvalidArgument("GGUF: metadata 'llama.rope.dimension_count' at offset ", rd->offset, " is ",
                           rd->is_integer() ? std::to_string(rd->i) : GgufValueTypeName(rd->type),
                           "; only rotary over the whole head (", c.head_size(), ") is supported");
  if (const GgufValue* st = f.Find("llama.rope.scaling.type");
      st && !(st->type == GgufValueType::kString && st->s == "none"))
    return InvalidArgument("GGUF: metadata 'llama.rope.scaling.type' at offset ", st->offset,
                           ": rope scaling is not supported");
  if (const GgufValue* sl = f.Find("llama.rope.scale_linear"); sl && !(sl->is_float() && sl->f == 1.0))
    return InvalidArgument("GGUF: metadata 'llama.rope.scale_linear' at offset ", sl->offset,
                           ": rope scaling is not supported");
  const GgufTensorInfo* emb = f.FindTensor("token_embd.weight");
  if (!emb) return InvalidArgument("GGUF: tensor 'token_embd.weight' is missing");
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens")) {
    if (tokens->type != GgufValueType::kArray || tokens->array.empty() || tokens->array.size() > 0x7fffffff)
      return InvalidArgument("GGUF: metadata 'tokenizer.ggml.tokens' at offset ", tokens->offset,
                             " must be a non-empty array");
    c.vocab_size = int64_t(tokens->array.size());
  } else {
    if (emb->ne.size() != 2 || emb->ne[1] > 0x7fffffff)
      return InvalidArgument("GGUF: tensor 'token_embd.weight' (info at offset ", emb->info_offset,
                             ") must be 2-D [vocab][dim]");
    c.vocab_size = int64_t(emb->ne[1]);
  }
  c.shared_classifier = f.FindTensor("output.weight") == nullptr;
  // The program stops at the file's BOS/EOS ids (llama.cpp's defaults for a "llama"
  // vocabulary are 1 and 2; a "gpt2" vocabulary names its own).
  const struct { const char* key; int64_t* id; } kStops[] = {{"tokenizer.ggml.bos_token_id", &c.bos_id},
                                                            {"tokenizer.ggml.eos_token_id", &c.eos_id}};
  for (const auto& s : kStops)
    if (const GgufValue* v = f.Find(s.key)) {
      if (!v->is_integer() || v->i < 0 || v->i >= c.vocab_size)
        return InvalidArgument("GGUF: metadata '", s.key, "' at offset ", v->offset, " is ",
                               v->is_integer() ? std::to_string(v->i) : GgufValueTypeName(v->type),
                               "; it must be a token id in 0..", c.vocab_size - 1);
      *s.id = v->i;
    }

  // Counts from the metadata are checked against what the file holds before anything is
  // sized by them: each block has 9 weight tensors in the file, so a block count the tensor
  // count cannot cover is refused here (a 1 MB file claiming 10^6 blocks fails without
  // allocating); smaller mismatches get the missing tensor's name below.
  if (9 * uint64_t(c.n_layers) > f.tensors.size()) {
    const GgufValue* blocks = f.Find("llama.block_count");
    return InvalidArgument("GGUF: metadata 'llama.block_count' at offset ", blocks->offset, " is ",
                           c.n_layers, ", which needs at least ", 9 * uint64_t(c.n_layers),
                           " weight tensors, but the file has ", f.tensors.size());
  }
  if (LlamaFileBytes(c) < 0)
    return InvalidArgument("GGUF: the metadata (embedding_length ", c.dim, ", feed_forward_length ",
                           c.hidden_dim, ", block_count ", c.n_layers, ", vocab ", c.vocab_size,
                           ", context_length ", c.seq_len, ") implies more than 2^63 bytes of weights");
  // The llama2.c weight table gives order, names and shapes; only the offsets/types differ.
  std::vector<WeightTensor> table = LlamaWeights(c);
  std::set<std::string> used;
  for (WeightTensor& w : table) {
    const std::string gguf_name = GgufTensorName(w.name);
    const GgufTensorInfo* t = f.FindTensor(gguf_name);
    if (!t) return InvalidArgument("GGUF: tensor '", gguf_name, "' is missing");
    std::string what = StrCat("GGUF: tensor '", gguf_name, "' (info at offset ", t->info_offset, ")");
    // Matrices in a block format or bf16 are kept as stored (the kernels decode them); 1-D
    // norms are f32/f16/bf16 (converted at upload), as llama.cpp writes them.
    const GgmlBlockInfo* block = FindGgmlBlockType(t->type);
    const bool matrix = w.dims.size() == 2;
    if (t->type != kGgmlF32 && t->type != kGgmlF16 && !(block && (matrix || block->is_bf16())))
      return InvalidArgument(what, " has type ", GgmlTypeName(t->type), " (", t->type, "); only f32, f16",
                             SupportedBlockTypes(), " are supported", block ? " for 1-D tensors" : "");
    std::vector<uint64_t> want(w.dims.rbegin(), w.dims.rend());
    if (t->ne != want) {
      std::string got, expected;
      for (uint64_t d : t->ne) got += (got.empty() ? "" : ", ") + std::to_string(d);
      for (uint64_t d : want) expected += (expected.empty() ? "" : ", ") + std::to_string(d);
      return InvalidArgument(what, " has ne [", got, "], expected [", expected, "] from the metadata");
    }
    w.type = t->type == kGgmlF16 ? hal::ElementType::kF16 : hal::ElementType::kF32;
    if (block) w.type = block->is_bf16() ? hal::ElementType::kBF16 : hal::ElementType::kI8;
    if (block && matrix) w.kept = block;
    w.offset = t->file_offset;
    used.insert(gguf_name);
  }
  for (const GgufTensorInfo& t : f.tensors)
    if (!used.count(t.name))
      return InvalidArgument("GGUF: tensor '", t.name, "' (info at offset ", t.info_offset,
                             ") is not part of the supported llama layout");
  m.weights = std::move(table);
  return m;
}

StatusOr<GgufLlama> ParseGgufLlama(const uint8_t* data, size_t size) {
  HEXIR_ASSIGN_OR_RETURN(GgufFile f, ParseGguf(data, size));
  return GgufLlamaModel(f);
}

StatusOr<std::string> ImportGgufFile(const std::string& path, const EmitOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound("cannot open GGUF file '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return InvalidArgument("'", path, "': GGUF file is empty or unreadable");
  }
  size_t size = size_t(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return Internal("cannot mmap '", path, "': ", std::strerror(errno));
  StatusOr<GgufLlama> model = ParseGgufLlama(static_cast<const uint8_t*>(p), size);
  munmap(p, size);
  if (!model.ok()) return std::move(model).status().WithContext(StrCat("'", path, "'"));
  const LlamaConfig& c = model->config;
  if (options.cache_len < 0 || options.cache_len > c.seq_len)
    return InvalidArgument("'", path, "': cache length ", options.cache_len, " is outside 1..llama.context_length (",
                           c.seq_len, ")");
  HEXIR_RETURN_IF_ERROR(CheckElementTypes(options));
  if (options.decode_chunk < 1 || options.decode_chunk > 4096)
    return InvalidArgument("decode chunk ", options.decode_chunk, " is outside 1..4096");
  if (options.tensor_parallel > 1) {
    Status split = TensorParallelWeights(c, model->weights, options.tensor_parallel, 0).status();
    if (!split.ok()) return std::move(split).WithContext(StrCat("'", path, "'"));
  }
  HEXIR_RETURN_IF_ERROR(ResolvePlacement(options.placement, c.n_layers).status());
  return EmitLlamaModule(c, model->weights, options);
}

}  // namespace hexir::compiler::llama
