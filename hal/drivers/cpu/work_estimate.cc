#include "hal/drivers/cpu/work_estimate.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_map>

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

std::vector<double> EstimateEntryWorkNs(const vm::ExecutableView& view) {
  struct Cost {
    double flops = -1, read = -1, written = -1;
  };
  std::unordered_map<std::string_view, Cost> by_entry;
  for (std::string_view entry : view.entry_points) by_entry[entry];
  for (const auto& [key, value] : view.attrs) {
    // "cost.<entry>.<field>"; the ".formula" variants (dynamic) are not numbers.
    if (key.substr(0, 5) != "cost.") continue;
    const size_t dot = key.rfind('.');
    if (dot <= 5) continue;
    auto it = by_entry.find(key.substr(5, dot - 5));
    if (it == by_entry.end()) continue;
    const std::string_view field = key.substr(dot + 1);
    if (field == "flops") it->second.flops = ParseCost(value);
    else if (field == "bytes_read") it->second.read = ParseCost(value);
    else if (field == "bytes_written") it->second.written = ParseCost(value);
  }
  std::vector<double> work;
  work.reserve(view.entry_points.size());
  for (std::string_view entry : view.entry_points) {
    const Cost& c = by_entry[entry];
    const bool known = c.flops >= 0 && c.read >= 0 && c.written >= 0;
    work.push_back(known ? c.flops / kFlopsPerNs + (c.read + c.written) / kBytesPerNs
                         : kUnknownWorkNs);
  }
  return work;
}

double CommandsWorkNs(const Command* begin, const Command* end) {
  double work = 0;
  for (const Command* it = begin; it != end; ++it) {
    const Command& c = *it;
    if (auto* d = std::get_if<DispatchCommand>(&c)) {
      const double w = static_cast<const CpuExecutable*>(d->executable.get())->work_ns(d->entry);
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
