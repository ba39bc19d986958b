// A hal::Profiler that keeps every dispatch timing and host span it is given, plus the spans
// hexir-bench adds itself (VM invocations), for the per-dispatch table and the trace.
// Thread-safety: all methods are thread-safe (driver threads call in).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
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
  void set_call(int call);

  std::vector<DispatchEvent> dispatches() const;
  std::vector<HostSpan> host_spans() const;

 private:
  const hal::CudaProfileMode cuda_mode_;
  mutable std::mutex mu_;
  int call_ = -1;
  std::vector<DispatchEvent> dispatches_;
  std::vector<HostSpan> spans_;
};

}  // namespace hexir::tools::bench
