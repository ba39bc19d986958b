#include "compiler/importers/llama/HfLlama.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "compiler/importers/llama/Json.h"
#include "compiler/importers/llama/Safetensors.h"
#include "compiler/importers/llama/TensorParallel.h"

namespace hexir::compiler::llama {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

StatusOr<JsonValue> ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open '", path, "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StatusOr<JsonValue> v = ParseJson(text);
  if (!v.ok()) return std::move(v).status().WithContext(StrCat("'", path, "'"));
  if (v->kind != JsonValue::Kind::kObject) return InvalidArgument("'", path, "' is a JSON ", v->KindName(), ", not an object");
  return v;
}

// Maps `path`, parses its safetensors header and unmaps it again.
StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound("cannot open safetensors file '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return InvalidArgument("cannot stat '", path, "'");
  }
  size_t size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return ParseSafetensors(nullptr, 0, path);
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return Internal("cannot mmap '", path, "': ", std::strerror(errno));
  StatusOr<SafetensorsFile> f = ParseSafetensors(static_cast<const uint8_t*>(p), size, path);
  munmap(p, size);
  return f;
}

// A positive integer member of config.json below 2^31 (`fallback` > 0 when optional).
StatusOr<int64_t> Positive(const JsonValue& c, const std::string& path, const char* key, int64_t fallback = -1) {
  const JsonValue* v = c.Find(key);
  if (!v || v->kind == JsonValue::Kind::kNull) {
    if (fallback > 0) return fallback;
    return InvalidArgument("'", path, "': \"", key, "\" is missing");
  }
  if (!v->is_integer || v->integer <= 0 || v->integer > 0x7fffffff)
    return InvalidArgument("'", path, "': \"", key, "\" must be a positive integer (is a ", v->KindName(), ")");
  return v->integer;
}

StatusOr<float> PositiveFloat(const JsonValue& c, const std::string& path, const char* key, float fallback) {
  const JsonValue* v = c.Find(key);
  if (!v || v->kind == JsonValue::Kind::kNull) return fallback;
  if (v->kind != JsonValue::Kind::kNumber || !(v->number > 0))
    return InvalidArgument("'", path, "': \"", key, "\" must be a positive number");
  return float(v->number);
}

// A token id member: an integer, or a list whose first element is one.
StatusOr<int64_t> TokenId(const JsonValue& c, const std::string& path, const char* key, int64_t fallback) {
  const JsonValue* v = c.Find(key);
  if (!v || v->kind == JsonValue::Kind::kNull) return fallback;
  if (v->kind == JsonValue::Kind::kArray && !v->items.empty()) v = &v->items[0];
  if (!v->is_integer || v->integer < 0)
    return InvalidArgument("'", path, "': \"", key, "\" must be a token id (or a list of them)");
  return v->integer;
}

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Our weight name ("layer3.wq") -> the HF tensor name.
std::string HfName(const std::string& ours) {
  if (ours == "token_embedding") return "model.embed_tokens.weight";
  if (ours == "rms_final") return "model.norm.weight";
  if (ours == "classifier") return "lm_head.weight";
  static const struct { const char* ours; const char* theirs; } kLayer[] = {
      {"rms_att", "input_layernorm"}, {"wq", "self_attn.q_proj"}, {"wk", "self_attn.k_proj"},
      {"wv", "self_attn.v_proj"}, {"wo", "self_attn.o_proj"}, {"rms_ffn", "post_attention_layernorm"},
      {"w1", "mlp.gate_proj"}, {"w2", "mlp.down_proj"}, {"w3", "mlp.up_proj"}};
  size_t dot = ours.find('.');
  std::string layer = ours.substr(5, dot - 5), kind = ours.substr(dot + 1);  // "layer<l>.<kind>"
  for (const auto& k : kLayer)
    if (kind == k.ours) return "model.layers." + layer + "." + k.theirs + ".weight";
  return ours;
}

}  // namespace

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

StatusOr<HfLlama> LoadHfLlama(const std::string& dir) {
  const std::string config_path = dir + "/config.json";
  if (!Exists(config_path))
    return NotFound("'", dir, "' has no config.json (a Hugging Face model folder needs config.json and safetensors)");
  HEXIR_ASSIGN_OR_RETURN(JsonValue cj, ReadJson(config_path));
  const JsonValue* arch = cj.Find("architectures");
  bool llama = false;
  std::string names;
  if (arch && arch->kind == JsonValue::Kind::kArray)
    for (const JsonValue& a : arch->items) {
      names += (names.empty() ? "" : ", ") + a.string;
      llama |= a.kind == JsonValue::Kind::kString && a.string == "LlamaForCausalLM";
    }
  if (!llama)
    return InvalidArgument("'", config_path, "': \"architectures\" is [", names,
                           "]; only LlamaForCausalLM is supported");

  HfLlama m;
  LlamaConfig& c = m.config;
  HEXIR_ASSIGN_OR_RETURN(c.dim, Positive(cj, config_path, "hidden_size"));
  HEXIR_ASSIGN_OR_RETURN(c.hidden_dim, Positive(cj, config_path, "intermediate_size"));
  HEXIR_ASSIGN_OR_RETURN(c.n_layers, Positive(cj, config_path, "num_hidden_layers"));
  HEXIR_ASSIGN_OR_RETURN(c.n_heads, Positive(cj, config_path, "num_attention_heads"));
  HEXIR_ASSIGN_OR_RETURN(c.n_kv_heads, Positive(cj, config_path, "num_key_value_heads", c.n_heads));
  HEXIR_ASSIGN_OR_RETURN(c.seq_len, Positive(cj, config_path, "max_position_embeddings"));
  HEXIR_ASSIGN_OR_RETURN(c.vocab_size, Positive(cj, config_path, "vocab_size"));
  HEXIR_ASSIGN_OR_RETURN(c.rms_eps, PositiveFloat(cj, config_path, "rms_norm_eps", 1e-6f));
  HEXIR_ASSIGN_OR_RETURN(c.rope_theta, PositiveFloat(cj, config_path, "rope_theta", 10000.0f));
  HEXIR_ASSIGN_OR_RETURN(c.bos_id, TokenId(cj, config_path, "bos_token_id", 1));
  HEXIR_ASSIGN_OR_RETURN(c.eos_id, TokenId(cj, config_path, "eos_token_id", 2));
  if (c.dim % c.n_heads || c.n_heads % c.n_kv_heads || c.head_size() % 2)
    return InvalidArgument("'", config_path, "': hidden_size ", c.dim, ", num_attention_heads ", c.n_heads,
                           " and num_key_value_heads ", c.n_kv_heads,
                           " must divide evenly into an even head size and whole KV groups");
  if (const JsonValue* hd = cj.Find("head_dim"); hd && hd->kind != JsonValue::Kind::kNull &&
                                                 (!hd->is_integer || hd->integer != c.head_size()))
    return InvalidArgument("'", config_path, "': \"head_dim\" must equal hidden_size / num_attention_heads (",
                           c.head_size(), ")");
  if (c.bos_id >= c.vocab_size || c.eos_id >= c.vocab_size)
    return InvalidArgument("'", config_path, "': bos_token_id ", c.bos_id, " / eos_token_id ", c.eos_id,
                           " must be below vocab_size ", c.vocab_size);
  if (const JsonValue* rs = cj.Find("rope_scaling"); rs && rs->kind != JsonValue::Kind::kNull) {
    const JsonValue* type = rs->Find("rope_type");
    if (!type) type = rs->Find("type");
    std::string kind = type && type->kind == JsonValue::Kind::kString ? type->string : "";
    if (kind == "linear") {
      HEXIR_ASSIGN_OR_RETURN(c.rope_scale, PositiveFloat(*rs, config_path + "\" rope_scaling \"", "factor", 1.0f));
    } else if (kind != "default") {
      return InvalidArgument("'", config_path, "': rope_scaling type '", kind,
                             "' is not supported (only \"linear\" and \"default\")");
    }
  }
  const JsonValue* tie = cj.Find("tie_word_embeddings");
  const bool tied = tie && tie->kind == JsonValue::Kind::kBool && tie->boolean;

  // Where each tensor lives: one file, or shards named by the index.
  std::map<std::string, std::string> shard_of;  // tensor -> shard file name
  std::string single = dir + "/model.safetensors";
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::map<std::string, SafetensorsFile> shards;  // file name -> header
  if (Exists(single)) {
    HEXIR_ASSIGN_OR_RETURN(shards["model.safetensors"], ReadSafetensors(single));
    for (const auto& t : shards["model.safetensors"].tensors) shard_of[t.first] = "model.safetensors";
  } else if (Exists(index_path)) {
    HEXIR_ASSIGN_OR_RETURN(JsonValue index, ReadJson(index_path));
    const JsonValue* map = index.Find("weight_map");
    if (!map || map->kind != JsonValue::Kind::kObject)
      return InvalidArgument("'", index_path, "' has no \"weight_map\" object");
    for (const auto& [tensor, file] : map->members) {
      if (file.kind != JsonValue::Kind::kString || file.string.empty() || file.string.find('/') != std::string::npos ||
          file.string == "." || file.string == "..")
        return InvalidArgument("'", index_path, "': weight_map[\"", tensor, "\"] must be a file name in the folder");
      shard_of[tensor] = file.string;
      if (!shards.count(file.string)) {
        HEXIR_ASSIGN_OR_RETURN(shards[file.string], ReadSafetensors(dir + "/" + file.string));
      }
    }
  } else {
    return NotFound("'", dir, "' has neither model.safetensors nor model.safetensors.index.json");
  }
  c.shared_classifier = tied || !shard_of.count("lm_head.weight");
  if (!tied && c.shared_classifier)
    return InvalidArgument("'", dir, "': tensor 'lm_head.weight' is missing (tie_word_embeddings is false)");

  std::vector<WeightTensor> table = LlamaWeights(c);
  std::set<std::string> used = {"lm_head.weight"};  // ignored when tied
  for (WeightTensor& w : table) {
    std::string name = HfName(w.name);
    auto where = shard_of.find(name);
    if (where == shard_of.end()) return InvalidArgument("'", dir, "': tensor '", name, "' is missing");
    const SafetensorsFile& shard = shards[where->second];
    auto t = shard.tensors.find(name);
    if (t == shard.tensors.end())
      return InvalidArgument("'", dir, "/", where->second, "': tensor '", name, "' (named by the index) is missing");
    if (t->second.shape != w.dims)
      return InvalidArgument("'", dir, "/", where->second, "': tensor '", name, "' has shape ", Dims(t->second.shape),
                             ", expected ", Dims(w.dims), " from config.json");
    w.offset = t->second.file_offset;
    w.type = t->second.type;
    w.file = dir + "/" + where->second;
    if (w.name.find(".wq") != std::string::npos) w.rotate_half_heads = c.n_heads;
    if (w.name.find(".wk") != std::string::npos) w.rotate_half_heads = c.n_kv_heads;
    used.insert(name);
  }
  for (const auto& [tensor, file] : shard_of) {
    const std::string kInvFreq = ".rotary_emb.inv_freq";  // a buffer older exports saved; recomputed here
    bool inv_freq = tensor.size() > kInvFreq.size() &&
                    tensor.compare(tensor.size() - kInvFreq.size(), kInvFreq.size(), kInvFreq) == 0;
    if (!used.count(tensor) && !inv_freq)
      return InvalidArgument("'", dir, "/", file, "': tensor '", tensor, "' is not part of the LlamaForCausalLM layout");
  }
  m.weights = std::move(table);
  if (Exists(dir + "/tokenizer.json")) m.tokenizer_json = dir + "/tokenizer.json";
  return m;
}

StatusOr<std::string> ImportHfFolder(const std::string& dir, const EmitOptions& options) {
  HEXIR_ASSIGN_OR_RETURN(HfLlama m, LoadHfLlama(dir));
  const LlamaConfig& c = m.config;
  if (options.cache_len < 0 || options.cache_len > c.seq_len)
    return InvalidArgument("'", dir, "': cache length ", options.cache_len,
                           " is outside 1..max_position_embeddings (", c.seq_len, ")");
  HEXIR_RETURN_IF_ERROR(CheckElementTypes(options));
  if (options.decode_chunk < 1 || options.decode_chunk > 4096)
    return InvalidArgument("decode chunk ", options.decode_chunk, " is outside 1..4096");
  if (options.tensor_parallel > 1) {
    Status split = TensorParallelWeights(c, LlamaWeights(c), options.tensor_parallel, 0).status();
    if (!split.ok()) return std::move(split).WithContext(StrCat("'", dir, "'"));
  }
  HEXIR_RETURN_IF_ERROR(ResolvePlacement(options.placement, c.n_layers).status());
  return EmitLlamaModule(c, options);
}

}  // namespace hexir::compiler::llama
