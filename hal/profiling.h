// Dispatch profiling: an optional observer a device reports per-dispatch timings to.
//
// Off by default and zero-cost when off: drivers load one relaxed atomic pointer per dispatch
// (Device::profiler()) and do nothing else. With a profiler installed:
//   - CPU: each dispatch is timed on the executing thread (steady clock around the workgroup
//     loop), reported when it ends; each QueueExecute call is reported as a host span.
//   - CUDA (Profiler::cuda_mode()): a command buffer replayed as a graph is replayed as a copy
//     of its graph with an event record node before each kernel node (after the kernel's
//     prerequisites) and one after it (kGraphReplay, the default: the kernels run as in an
//     unprofiled replay, programmatic launches included, and each dispatch's interval is what
//     it adds inside the graph); what a graph cannot express there (a device loop, a
//     collective, an indirect count only the device knows), stream-mode command buffers and
//     kStreamLaunches run as stream launches with an event before and after every kernel.
//     The submitting thread waits for the submission's last event and reports each
//     dispatch's event interval mapped onto the host steady clock. This serializes
//     submissions: profile separately from wall-time measurements.
// Timestamps: nanoseconds of std::chrono::steady_clock (ProfileClockNs()).
//
// Ownership: the device does not own the profiler; the caller keeps it alive until it is
// uninstalled (SetProfiler(nullptr)) and the device is idle.
// Thread-safety: callbacks arrive on driver threads (queue thread, submitting thread), one
// at a time per device; implementations synchronize what they share with other threads.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace hexir::hal {

class Executable;

inline int64_t ProfileClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct DispatchTiming {
  const Executable* executable = nullptr;  // valid during the callback only
  uint32_t entry = 0;
  std::array<uint32_t, 3> workgroup_count = {0, 0, 0};  // indirect: the count read at execution
  int64_t begin_ns = 0;  // device execution interval on the host steady clock
  int64_t end_ns = 0;
  bool device_events = false;  // true: measured with device events (CUDA), false: host clock
  bool in_graph = false;       // CUDA: measured inside a graph replay (else stream launches)
  // CPU: the dispatch's parameter words that its entry's cost formulas read
  // ("cost.<entry>.<field>.words", hal/cost_formula.h), valid during the callback, so a
  // profiler can evaluate bytes and FLOPs of a run-time shape; none on CUDA (its words stay
  // on the device).
  const int64_t* parameter_words = nullptr;
  uint32_t parameter_word_count = 0;
};

// How a CUDA device times the command buffers it replays as graphs (see above).
enum class CudaProfileMode { kGraphReplay, kStreamLaunches };

class Profiler {
 public:
  virtual ~Profiler() = default;
  virtual void OnDispatch(const DispatchTiming& timing) = 0;
  // Read by the CUDA driver at each profiled submission.
  virtual CudaProfileMode cuda_mode() const { return CudaProfileMode::kGraphReplay; }
  // A host call into the driver (e.g. "queue_execute") from begin_ns to end_ns.
  virtual void OnHostSpan(const char* name, int64_t begin_ns, int64_t end_ns) {
    (void)name, (void)begin_ns, (void)end_ns;
  }
  // A collective ("all_reduce", ...) ran from begin_ns to end_ns (CPU: on the thread that
  // ran it, while its wave's other commands ran on the others).
  virtual void OnCollective(const char* name, int64_t begin_ns, int64_t end_ns) {
    (void)name, (void)begin_ns, (void)end_ns;
  }
};

}  // namespace hexir::hal
