#include "tools/hexir-bench/collector.h"

#include "hal/executable.h"

namespace hexir::tools::bench {

void Collector::OnDispatch(const hal::DispatchTiming& t) {
  DispatchEvent e;
  e.entry = t.executable ? t.executable->entry_name(t.entry) : "?";
  e.begin_ns = t.begin_ns;
  e.end_ns = t.end_ns;
  e.device_events = t.device_events;
  e.in_graph = t.in_graph;
  if (t.parameter_words) e.words.assign(t.parameter_words, t.parameter_words + t.parameter_word_count);
  std::lock_guard<std::mutex> lock(mu_);
  e.call = call_;
  dispatches_.push_back(std::move(e));
}

void Collector::OnHostSpan(const char* name, int64_t begin_ns, int64_t end_ns) {
  HostSpan s;
  s.name = std::string("hal.") + name;
  s.track = "HAL";
  s.begin_ns = begin_ns;
  s.end_ns = end_ns;
  AddHostSpan(std::move(s));
}

void Collector::AddHostSpan(HostSpan span) {
  std::lock_guard<std::mutex> lock(mu_);
  span.call = call_;
  spans_.push_back(std::move(span));
}

void Collector::set_call(int call) {
  std::lock_guard<std::mutex> lock(mu_);
  call_ = call;
}

std::vector<DispatchEvent> Collector::dispatches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dispatches_;
}

std::vector<HostSpan> Collector::host_spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spans_;
}

}  // namespace hexir::tools::bench
