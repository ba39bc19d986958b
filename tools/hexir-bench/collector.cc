#include "tools/hexir-bench/collector.h"

#include "hal/executable.h"

namespace hexir::tools::bench {

const std::string* Collector::Intern(std::string_view s) {
  auto it = names_.find(s);
  if (it == names_.end()) it = names_.emplace(s).first;
  return &*it;
}

const std::string* Collector::EntryName(const hal::DispatchTiming& t) {
  if (!t.executable) return Intern("?");
  const std::string& name = t.executable->entry_name(t.entry);
  auto [it, added] = entries_.try_emplace({t.executable, t.entry}, nullptr);
  if (added || *it->second != name) it->second = Intern(name);
  return it->second;
}

void Collector::OnDispatch(const hal::DispatchTiming& t) {
  std::lock_guard<std::mutex> lock(mu_);
  Dispatch d{EntryName(t), t.begin_ns, t.end_ns, t.device_events, t.in_graph, call_, words_.size(), 0};
  if (t.parameter_words) {
    words_.insert(words_.end(), t.parameter_words, t.parameter_words + t.parameter_word_count);
    d.word_count = t.parameter_word_count;
  }
  dispatches_.push_back(d);
}

void Collector::OnHostSpan(const char* name, int64_t begin_ns, int64_t end_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  scratch_.assign("hal.").append(name);  // its capacity stays: no allocation once grown
  spans_.push_back(Span{Intern(scratch_), Intern("HAL"), begin_ns, end_ns, call_});
}

void Collector::AddHostSpan(HostSpan span) {
  std::lock_guard<std::mutex> lock(mu_);
  spans_.push_back(Span{Intern(span.name), Intern(span.track), span.begin_ns, span.end_ns, call_});
}

void Collector::AddHostSpan(std::string_view name, std::string_view track, int64_t begin_ns, int64_t end_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  spans_.push_back(Span{Intern(name), Intern(track), begin_ns, end_ns, call_});
}

void Collector::set_call(int call) {
  std::lock_guard<std::mutex> lock(mu_);
  call_ = call;
}

void Collector::Reserve(size_t dispatches, size_t words, size_t spans) {
  std::lock_guard<std::mutex> lock(mu_);
  dispatches_.reserve(dispatches);
  words_.reserve(words);
  spans_.reserve(spans);
}

std::vector<DispatchEvent> Collector::dispatches() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DispatchEvent> events;
  events.reserve(dispatches_.size());
  for (const Dispatch& d : dispatches_) {
    DispatchEvent e;
    e.entry = *d.entry;
    e.begin_ns = d.begin_ns;
    e.end_ns = d.end_ns;
    e.device_events = d.device_events;
    e.in_graph = d.in_graph;
    e.call = d.call;
    e.words.assign(words_.begin() + d.words_at, words_.begin() + d.words_at + d.word_count);
    events.push_back(std::move(e));
  }
  return events;
}

std::vector<HostSpan> Collector::host_spans() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HostSpan> spans;
  spans.reserve(spans_.size());
  for (const Span& s : spans_) spans.push_back(HostSpan{*s.name, *s.track, s.begin_ns, s.end_ns, s.call});
  return spans;
}

}  // namespace hexir::tools::bench
