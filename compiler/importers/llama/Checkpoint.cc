#include "compiler/importers/llama/Checkpoint.h"

#include <cstring>

namespace hexir::compiler::llama {
namespace {

const char* const kFields[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                "n_kv_heads", "vocab_size", "seq_len"};

// File order of the arrays (differs from the argument order: llama2.c stores each weight
// kind for all layers together).
struct Walker {
  const LlamaConfig& c;
  int64_t offset = kHeaderBytes;
  WeightTensor Take(std::string name, std::vector<int64_t> dims) {
    WeightTensor w{std::move(name), std::move(dims), offset};
    offset += w.byte_size();
    return w;
  }
};

// int64 arithmetic that remembers an overflow: a corrupt header's size products can exceed
// 2^63 (every field is up to 2^31 - 1), and a wrapped product could pass the file-size check.
struct Checked {
  int64_t value = 0;
  bool overflow = false;
  Checked(int64_t v) : value(v) {}  // NOLINT: implicit from plain counts
  Checked(int64_t v, bool o) : value(v), overflow(o) {}
  friend Checked operator*(Checked a, Checked b) {
    int64_t r;
    bool o = __builtin_mul_overflow(a.value, b.value, &r);
    return {r, a.overflow || b.overflow || o};
  }
  friend Checked operator+(Checked a, Checked b) {
    int64_t r;
    bool o = __builtin_add_overflow(a.value, b.value, &r);
    return {r, a.overflow || b.overflow || o};
  }
};

// The first array of the file order that ends past `file_size`, as "'layer7.w1' (offset O, B
// bytes)", found by arithmetic over the kinds rather than by listing every layer's arrays (a
// corrupt n_layers of 2^31 - 1 would allocate gigabytes before failing). The header's total
// size is known not to overflow.
std::string FirstArrayPastEnd(const LlamaConfig& c, int64_t file_size) {
  const int64_t L = c.n_layers, D = c.dim, F = c.hidden_dim, KV = c.kv_dim(), V = c.vocab_size;
  const struct { const char* name; int64_t floats; } kinds[9] = {
      {"rms_att", D}, {"wq", D * D}, {"wk", KV * D}, {"wv", KV * D}, {"wo", D * D},
      {"rms_ffn", D}, {"w1", F * D}, {"w2", D * F}, {"w3", F * D}};
  auto named = [](const std::string& name, int64_t offset, int64_t bytes) {
    return "'" + name + "' (offset " + std::to_string(offset) + ", " + std::to_string(bytes) + " bytes)";
  };
  int64_t offset = kHeaderBytes;
  if (offset + 4 * V * D > file_size) return named("token_embedding", offset, 4 * V * D);
  offset += 4 * V * D;
  for (const auto& k : kinds) {
    int64_t bytes = 4 * k.floats;
    if (offset + L * bytes > file_size) {
      int64_t l = (file_size - offset) / bytes;
      return named("layer" + std::to_string(l) + "." + k.name, offset + l * bytes, bytes);
    }
    offset += L * bytes;
  }
  if (offset + 4 * D > file_size) return named("rms_final", offset, 4 * D);
  offset += 4 * D + 4 * c.seq_len * c.head_size();  // two unused rotary tables
  if (!c.shared_classifier && offset + 4 * V * D > file_size) return named("classifier", offset, 4 * V * D);
  return "the arrays";
}

}  // namespace

int64_t WeightTensor::byte_size() const {
  if (kept) return dims[0] * kept->RowBytes(dims[1]);
  int64_t n = hal::ElementTypeByteSize(static_cast<int64_t>(type));
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t WeightTensor::RowBytes(int64_t columns) const {
  return kept ? kept->RowBytes(columns) : columns * hal::ElementTypeByteSize(static_cast<int64_t>(type));
}

std::vector<int64_t> WeightTensor::ArgumentDims() const {
  return kept ? kept->ArgumentDims(dims[0], dims[1]) : dims;
}

StatusOr<LlamaConfig> ParseLlamaHeader(const uint8_t* data, size_t file_size) {
  if (file_size < kHeaderBytes)
    return InvalidArgument("llama2.c checkpoint: file has ", file_size,
                           " bytes, shorter than the 28-byte header");
  int32_t h[7];
  std::memcpy(h, data, sizeof(h));
  for (int i = 0; i < 7; ++i) {
    if (h[i] == 0 || (h[i] < 0 && i != 5))
      return InvalidArgument("llama2.c checkpoint: header field '", kFields[i], "' at offset ",
                             i * 4, " is ", h[i], " (must be positive)");
  }
  LlamaConfig c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] > 0 ? h[5] : -int64_t(h[5]);
  c.seq_len = h[6];
  if (c.dim % c.n_heads)
    return InvalidArgument("llama2.c checkpoint: dim (offset 0) = ", c.dim,
                           " is not divisible by n_heads (offset 12) = ", c.n_heads);
  if (c.n_heads % c.n_kv_heads)
    return InvalidArgument("llama2.c checkpoint: n_heads (offset 12) = ", c.n_heads,
                           " is not divisible by n_kv_heads (offset 16) = ", c.n_kv_heads);
  if (c.head_size() % 2)
    return InvalidArgument("llama2.c checkpoint: head size dim/n_heads = ", c.head_size(),
                           " is odd; rotary embeddings need pairs");
  int64_t need = LlamaFileBytes(c);
  if (need < 0)
    return InvalidArgument("llama2.c checkpoint: the header (dim ", c.dim, ", hidden_dim ",
                           c.hidden_dim, ", n_layers ", c.n_layers, ", n_kv_heads ",
                           c.n_kv_heads, ", vocab_size ", h[5], ", seq_len ", c.seq_len,
                           ") implies more than 2^63 bytes of arrays (the size overflows 64 "
                           "bits): the header is corrupt");
  if (int64_t(file_size) < need) {
    std::string what = FirstArrayPastEnd(c, int64_t(file_size));
    return InvalidArgument("llama2.c checkpoint: file has ", file_size, " bytes but the header (dim ",
                           c.dim, ", hidden_dim ", c.hidden_dim, ", n_layers ", c.n_layers,
                           ", n_kv_heads ", c.n_kv_heads, ", vocab_size ", h[5], ", seq_len ",
                           c.seq_len, ") implies ", need, "; ", what, " does not fit");
  }
  return c;
}

int64_t LlamaFileBytes(const LlamaConfig& c) {
  Checked L = c.n_layers, D = c.dim, F = c.hidden_dim, KV = c.kv_dim(), V = c.vocab_size;
  Checked floats = V * D + L * (D + D * D + 2 * (KV * D) + D * D + D + 3 * (F * D)) + D +
                   Checked(c.seq_len) * c.head_size() + (c.shared_classifier ? Checked(0) : V * D);
  Checked bytes = Checked(kHeaderBytes) + 4 * floats;
  return bytes.overflow ? -1 : bytes.value;
}

std::vector<WeightTensor> LlamaWeights(const LlamaConfig& c) {
  int64_t L = c.n_layers, D = c.dim, F = c.hidden_dim, KV = c.kv_dim(), V = c.vocab_size;
  Walker w{c};
  WeightTensor emb = w.Take("token_embedding", {V, D});
  // kinds[k][l]: file order is kind-major.
  const struct { const char* name; std::vector<int64_t> dims; } kinds[9] = {
      {"rms_att", {D}},   {"wq", {D, D}},      {"wk", {KV, D}}, {"wv", {KV, D}}, {"wo", {D, D}},
      {"rms_ffn", {D}},   {"w1", {F, D}},      {"w2", {D, F}},  {"w3", {F, D}}};
  std::vector<std::vector<WeightTensor>> per_layer(L);
  for (const auto& k : kinds)
    for (int64_t l = 0; l < L; ++l)
      per_layer[l].push_back(w.Take("layer" + std::to_string(l) + "." + k.name, k.dims));
  WeightTensor rms_final = w.Take("rms_final", {D});
  w.offset += 4 * c.seq_len * c.head_size();  // two unused rotary tables
  std::vector<WeightTensor> out = {emb};
  for (auto& layer : per_layer)
    for (auto& t : layer) out.push_back(std::move(t));
  out.push_back(rms_final);
  if (!c.shared_classifier) out.push_back(w.Take("classifier", {V, D}));
  return out;
}

}  // namespace hexir::compiler::llama
