// A hal::Profiler that keeps every dispatch timing and host span it is given, plus the spans
// hexir-bench adds itself (VM invocations), for the per-dispatch table and the trace.
// Thread-safety: all methods are thread-safe (driver threads call in).
//
// After Reserve, recording a dispatch or a driver's host span allocates nothing (an entry's
// or span's name is kept once, the first time it is seen): the profiled calls' kernels see
// the heap as the unprofiled calls' do. A kernel's temporary of run-time size is malloc'd
// and freed per call; the collector's own allocations between them (a name string, a words
// vector and the events' growth per dispatch) made glibc hand its pages back and fault them
// in again, so the per-dispatch table timed kernels the unprofiled calls did not see (the
// dynamic DenseNet's concatenation + batch norm at 24.8 us profiled, about 1.5 unprofiled).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hal/profiling.h"

namespace hexir::tools::bench {

struct DispatchEvent {
  std::string entry;
  int64_t begin_ns = 0, end_ns = 0;
  bool device_events = false;
  bool in_graph = false;  // CUDA: timed inside a graph replay
  int call = -1;  // the profiled call it belongs to
  std::vector<int64_t> words;  // CPU: the parameter words its cost formulas read (hal/profiling.h)
};

struct HostSpan {
  std::string name;  // "vm.invoke", "hal.queue_execute", "hal.wait_idle"
  std::string track; // "VM" or "HAL"
  int64_t begin_ns = 0, end_ns = 0;
  int call = -1;
};

class Collector final : public hal::Profiler {
 public:
  explicit Collector(hal::CudaProfileMode cuda_mode = hal::CudaProfileMode::kGraphReplay)
      : cuda_mode_(cuda_mode) {}
  hal::CudaProfileMode cuda_mode() const override { return cuda_mode_; }
  void OnDispatch(const hal::DispatchTiming& t) override;
  void OnHostSpan(const char* name, int64_t begin_ns, int64_t end_ns) override;
  void AddHostSpan(HostSpan span);
  void AddHostSpan(std::string_view name, std::string_view track, int64_t begin_ns, int64_t end_ns);
  void set_call(int call);
  // Room for `dispatches` dispatch events holding `words` parameter words in all and for
  // `spans` host spans (more still fit: the vectors grow).
  void Reserve(size_t dispatches, size_t words, size_t spans);

  std::vector<DispatchEvent> dispatches() const;
  std::vector<HostSpan> host_spans() const;

 private:
  struct Dispatch {  // DispatchEvent without its allocations
    const std::string* entry;
    int64_t begin_ns, end_ns;
    bool device_events, in_graph;
    int call;
    size_t words_at, word_count;  // into words_
  };
  struct Span {  // HostSpan likewise
    const std::string* name;
    const std::string* track;
    int64_t begin_ns, end_ns;
    int call;
  };
  const std::string* Intern(std::string_view s);  // callers hold mu_
  const std::string* EntryName(const hal::DispatchTiming& t);

  const hal::CudaProfileMode cuda_mode_;
  mutable std::mutex mu_;
  int call_ = -1;
  std::set<std::string, std::less<>> names_;  // node-stable: Dispatch and Span point into it
  // An executable's entries by (executable, ordinal), their names checked on each hit (an
  // executable is valid during its callback only: a later one may reuse its address).
  std::map<std::pair<const void*, uint32_t>, const std::string*> entries_;
  std::vector<Dispatch> dispatches_;
  std::vector<int64_t> words_;
  std::vector<Span> spans_;
  std::string scratch_;  // OnHostSpan's "hal." + name, for the lookup
};

}  // namespace hexir::tools::bench
