#include "compiler/importers/llama/TensorParallel.h"

#include <string>

namespace hexir::compiler::llama {
namespace {

enum class Split { kReplicated, kRows, kColumns };

// The split of a weight by its LlamaWeights name ("layer3.wo" -> columns).
Split SplitOf(const std::string& name) {
  const size_t dot = name.find('.');
  const std::string field = dot == std::string::npos ? name : name.substr(dot + 1);
  if (field == "wq" || field == "wk" || field == "wv" || field == "w1" || field == "w3" ||
      field == "classifier")
    return Split::kRows;
  if (field == "wo" || field == "w2") return Split::kColumns;
  return Split::kReplicated;
}


}  // namespace

Status CheckTensorParallel(const LlamaConfig& config, int64_t ranks) {
  if (ranks < 1) return InvalidArgument("tensor parallelism needs at least 1 rank, got ", ranks);
  std::string bad;
  int misfits = 0;
  auto check = [&](const char* name, int64_t count) {
    if (count % ranks != 0) bad += StrCat(misfits++ ? ", " : "", name, " = ", count);
  };
  check("n_heads", config.n_heads);
  check("n_kv_heads", config.n_kv_heads);
  check("hidden_dim", config.hidden_dim);
  check("vocab_size", config.vocab_size);
  if (!bad.empty())
    return InvalidArgument("tensor parallelism over ", ranks, " ranks splits heads, KV heads, hidden "
                           "units and the vocabulary evenly, but ", bad, misfits > 1 ? " are" : " is",
                           " not divisible by ", ranks);
  return Status::Ok();
}

StatusOr<std::vector<WeightTensor>> TensorParallelWeights(const LlamaConfig& config,
                                                          const std::vector<WeightTensor>& full,
                                                          int64_t ranks, int64_t rank) {
  HEXIR_RETURN_IF_ERROR(CheckTensorParallel(config, ranks));
  if (rank < 0 || rank >= ranks) return InvalidArgument("rank ", rank, " is outside 0..", ranks - 1);
  std::vector<WeightTensor> parts = full;
  bool has_classifier = false;
  for (const WeightTensor& w : full) has_classifier |= w.name == "classifier";
  if (!has_classifier) {
    for (const WeightTensor& w : full)
      if (w.name == "token_embedding") {
        parts.push_back(w);
        parts.back().name = "classifier";  // the shared classifier's rows, as a tensor of its own
      }
  }
  if (ranks == 1) return parts;
  for (WeightTensor& w : parts) {
    Split split = SplitOf(w.name);
    if (split == Split::kReplicated) continue;
    const int64_t rows = w.dims[0], cols = w.dims[1];
    if (split == Split::kRows) {
      w.dims[0] = rows / ranks;
      w.offset += rank * w.dims[0] * w.RowBytes(cols);
      if (w.rotate_half_heads > 0) w.rotate_half_heads /= ranks;  // whole heads per rank
    } else {
      // A kept block format cuts each row between blocks: a part's columns are whole blocks.
      const int64_t part = cols / ranks;
      if (w.kept && part % w.kept->block_elements != 0)
        return InvalidArgument("tensor parallelism: tensor '", w.name, "' (", w.kept->name, ", ", cols,
                               " columns) splits into ", ranks, " parts of ", part,
                               " columns, not a multiple of its block size ", w.kept->block_elements,
                               " (import with fewer ranks, or from a file with another block type)");
      w.dims[1] = part;
      w.offset += rank * w.RowBytes(part);
      w.stored_columns = cols;
    }
  }
  return parts;
}

}  // namespace hexir::compiler::llama
