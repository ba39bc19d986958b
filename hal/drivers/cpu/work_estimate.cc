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
double MinWorkPerThreadNs() {
  const char* env = std::getenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
  if (env == nullptr || *env == '\0') return kDefaultMinWorkPerThreadNs;
  double v = ParseCostValue(env);
  return v >= 0 ? v : kDefaultMinWorkPerThreadNs;
}

double EntryWork::Evaluate(const int64_t* words, size_t count) const {
  if (!known) return kUnknownWorkNs;
  const double work = ns.Evaluate(words, count);
  return work < 0 ? kUnknownWorkNs : work;
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
    WordPolynomial all;  // every formula that parses: the words a profiler gets
    for (auto [field, per_ns] : {std::pair{&c.flops, kFlopsPerNs}, std::pair{&c.read, kBytesPerNs},
                                 std::pair{&c.written, kBytesPerNs}}) {
      const double value = ParseCostValue(field->value);
      if (!field->words.empty()) (void)all.Add(field->words, 1);
      if (value >= 0) w.ns.constant += value / per_ns;
      else if (field->words.empty() || !w.ns.Add(field->words, 1 / per_ns)) w.known = false;
    }
    const double binding = ParseCostValue(c.params);
    const bool has_binding = binding >= 0 && binding == static_cast<uint32_t>(binding);
    if (w.ns.words_read > 0) {
      if (!has_binding) w.known = false;
      else w.param_binding = static_cast<uint32_t>(binding);
    }
    if (!w.known) w = EntryWork();
    if (has_binding && all.words_read > 0) {
      w.profile_words = all.words_read;
      w.param_binding = static_cast<uint32_t>(binding);
    }
    work.push_back(std::move(w));
  }
  return work;
}

namespace {

// Copies `count` words of binding `binding` of `cmd` into `words`; false when unreadable.
bool CopyWords(const DispatchCommand& cmd, const std::vector<BufferRef>& table, uint32_t binding,
               uint32_t count, int64_t* words) {
  if (binding >= cmd.bindings.size()) return false;
  void* ptr = nullptr;
  uint64_t length = 0;
  ResolveBinding(cmd.bindings[binding], table, &ptr, &length);
  if (ptr == nullptr || length < 8ull * count) return false;
  std::memcpy(words, ptr, 8ull * count);
  return true;
}

}  // namespace

double DispatchWorkNs(const DispatchCommand& cmd, const std::vector<BufferRef>& table) {
  const EntryWork& w = static_cast<const CpuExecutable*>(cmd.executable.get())->work(cmd.entry);
  if (!w.known) return kUnknownWorkNs;
  if (w.ns.words_read == 0) return w.ns.constant;
  int64_t words[EntryWork::kMaxWords];
  if (!CopyWords(cmd, table, w.param_binding, w.ns.words_read, words)) return kUnknownWorkNs;
  return w.Evaluate(words, w.ns.words_read);
}

uint32_t ReadProfileWords(const DispatchCommand& cmd, const std::vector<BufferRef>& table, int64_t* words) {
  const EntryWork& w = static_cast<const CpuExecutable*>(cmd.executable.get())->work(cmd.entry);
  if (w.profile_words == 0 || !CopyWords(cmd, table, w.param_binding, w.profile_words, words)) return 0;
  return w.profile_words;
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
