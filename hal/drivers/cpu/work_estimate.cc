#include "hal/drivers/cpu/work_estimate.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hal/drivers/cpu/cpu_dispatch.h"
#include "hal/drivers/cpu/cpu_executable.h"

namespace hexir::hal::cpu {
namespace {

// A cost attr's value: a non-negative number, else -1 ("?" or anything unparsable).
double ParseCost(std::string_view text) {
  double v = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0)) return -1;
  return v;
}

}  // namespace

double MinWorkPerThreadNs() {
  const char* env = std::getenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
  if (env == nullptr || *env == '\0') return kDefaultMinWorkPerThreadNs;
  double v = ParseCost(env);
  return v >= 0 ? v : kDefaultMinWorkPerThreadNs;
}

namespace {

// Parses "c + c*wK*wJ + ..." into `out`'s constant and terms, scaled by `per_ns`; false when
// malformed.
bool ParseWords(std::string_view text, double per_ns, EntryWork* out) {
  while (!text.empty()) {
    const size_t plus = text.find(" + ");
    std::string_view term = text.substr(0, plus);
    text = plus == std::string_view::npos ? std::string_view() : text.substr(plus + 3);
    EntryWork::Term t;
    const size_t star = term.find('*');
    const double coefficient = ParseCost(term.substr(0, star));
    if (coefficient < 0) return false;
    t.ns = coefficient / per_ns;
    std::string_view rest = star == std::string_view::npos ? std::string_view() : term.substr(star + 1);
    while (!rest.empty()) {
      const size_t next = rest.find('*');
      std::string_view symbol = rest.substr(0, next);
      rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
      uint32_t word = 0;
      if (symbol.size() < 2 || symbol[0] != 'w') return false;
      auto [ptr, ec] = std::from_chars(symbol.data() + 1, symbol.data() + symbol.size(), word);
      if (ec != std::errc() || ptr != symbol.data() + symbol.size() || word >= EntryWork::kMaxWords)
        return false;
      t.words.push_back(word);
      out->words_read = std::max(out->words_read, word + 1);
    }
    if (t.words.empty()) out->constant_ns += t.ns;
    else out->terms.push_back(std::move(t));
  }
  return true;
}

}  // namespace

double EntryWork::Evaluate(const int64_t* words, size_t count) const {
  if (!known || count < words_read) return kUnknownWorkNs;
  double work = constant_ns;
  for (const Term& t : terms) {
    double term = t.ns;
    for (uint32_t w : t.words) {
      if (words[w] < 0) return kUnknownWorkNs;
      term *= static_cast<double>(words[w]);
    }
    work += term;
  }
  return work;
}

std::vector<EntryWork> EstimateEntryWork(const vm::ExecutableView& view) {
  struct Field {
    std::string_view value, words;
  };
  struct Cost {
    Field flops, read, written;
    std::string_view params;
  };
  std::unordered_map<std::string_view, Cost> by_entry;
  for (std::string_view entry : view.entry_points) by_entry[entry];
  for (const auto& [key, value] : view.attrs) {
    // "cost.<entry>.<field>" or "cost.<entry>.<field>.words"; ".formula" is for people.
    if (key.substr(0, 5) != "cost.") continue;
    std::string_view rest = key.substr(5);
    bool words = false;
    if (rest.size() > 6 && rest.substr(rest.size() - 6) == ".words") {
      words = true;
      rest.remove_suffix(6);
    }
    const size_t dot = rest.rfind('.');
    if (dot == 0 || dot == std::string_view::npos) continue;
    auto it = by_entry.find(rest.substr(0, dot));
    if (it == by_entry.end()) continue;
    const std::string_view name = rest.substr(dot + 1);
    Field* field = name == "flops" ? &it->second.flops
                   : name == "bytes_read" ? &it->second.read
                   : name == "bytes_written" ? &it->second.written : nullptr;
    if (field) (words ? field->words : field->value) = value;
    else if (name == "params" && !words) it->second.params = value;
  }
  std::vector<EntryWork> work;
  work.reserve(view.entry_points.size());
  for (std::string_view entry : view.entry_points) {
    const Cost& c = by_entry[entry];
    EntryWork w;
    w.known = true;
    for (auto [field, per_ns] : {std::pair{&c.flops, kFlopsPerNs}, std::pair{&c.read, kBytesPerNs},
                                 std::pair{&c.written, kBytesPerNs}}) {
      const double value = ParseCost(field->value);
      if (value >= 0) w.constant_ns += value / per_ns;
      else if (field->words.empty() || !ParseWords(field->words, per_ns, &w)) w.known = false;
    }
    if (w.words_read > 0) {
      const double binding = ParseCost(c.params);
      if (binding < 0 || binding != static_cast<uint32_t>(binding)) w.known = false;
      else w.param_binding = static_cast<uint32_t>(binding);
    }
    if (!w.known) w = EntryWork();
    work.push_back(std::move(w));
  }
  return work;
}

double DispatchWorkNs(const DispatchCommand& cmd, const std::vector<BufferRef>& table) {
  const EntryWork& w = static_cast<const CpuExecutable*>(cmd.executable.get())->work(cmd.entry);
  if (!w.known) return kUnknownWorkNs;
  if (w.words_read == 0) return w.constant_ns;
  if (w.param_binding >= cmd.bindings.size()) return kUnknownWorkNs;
  int64_t words[EntryWork::kMaxWords];
  void* ptr = nullptr;
  uint64_t length = 0;
  ResolveBinding(cmd.bindings[w.param_binding], table, &ptr, &length);
  if (ptr == nullptr || length < 8ull * w.words_read) return kUnknownWorkNs;
  std::memcpy(words, ptr, 8ull * w.words_read);
  return w.Evaluate(words, w.words_read);
}

double CommandsWorkNs(const Command* begin, const Command* end, const std::vector<BufferRef>& table) {
  double work = 0;
  for (const Command* it = begin; it != end; ++it) {
    const Command& c = *it;
    if (auto* d = std::get_if<DispatchCommand>(&c)) {
      const double w = DispatchWorkNs(*d, table);
      if (w < 0) return kUnknownWorkNs;
      work += w;
    } else if (auto* copy = std::get_if<CopyCommand>(&c)) {
      work += TransferWorkNs(copy->length);
    } else if (auto* fill = std::get_if<FillCommand>(&c)) {
      work += TransferWorkNs(fill->length);
    } else if (!std::holds_alternative<BarrierCommand>(c)) {
      return kUnknownWorkNs;  // a repeat (its trip count) or a collective (its peers)
    }
  }
  return work;
}

uint32_t ThreadsForWork(double work_ns, uint64_t indices, uint32_t pool_threads,
                        double min_work_per_thread_ns) {
  const uint64_t most = std::max<uint64_t>(1, std::min<uint64_t>(pool_threads, indices));
  if (work_ns < 0 || min_work_per_thread_ns <= 0) return static_cast<uint32_t>(most);
  const double share = work_ns / min_work_per_thread_ns;
  if (share >= static_cast<double>(most)) return static_cast<uint32_t>(most);
  return static_cast<uint32_t>(std::max(1.0, share));
}

}  // namespace hexir::hal::cpu
