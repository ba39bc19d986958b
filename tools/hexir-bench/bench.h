// hexir-bench's engine: calls one function of a module many times and reports where the time
// goes (per dispatch, host vs device), against measured device peaks and vendor baselines.
//
// Phases of RunBench, each on the same session:
//   1. first call (executables loaded, command buffers recorded), timed alone;
//   2. `iterations` steady-state calls without profiling: wall (invoke + wait idle), host
//      (invoke returns; submissions are asynchronous), driver counters per call;
//   3. `iterations` profiled calls (hal::Device::SetProfiler): per-dispatch device times
//      (CPU: host clock around each dispatch in the driver; CUDA: events around each kernel,
//      command buffers run as stream launches) and the trace;
//   4. peaks (unless given) and one baseline per distinct static matmul shape.
// Ownership: results are plain values. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/hexir-bench/collector.h"
#include "tools/hexir-bench/costs.h"

namespace hexir::tools::bench {

struct BenchOptions {
  std::string module_path;
  std::string device = "cpu";
  std::string function = "main";
  std::vector<std::string> inputs;  // hexir-run --input syntax
  // Non-empty: arguments after the given inputs are constant tensors/scalars of their
  // reflected (static) types filled with this value (e.g. model weights).
  std::string fill_inputs;
  // Non-empty: a hexir-import --parameters file, uploaded once, passed as the last arguments.
  std::string parameters;
  int iterations = 20;
  int cpu_threads = -1;
  double peak_gbps = 0;    // 0: measure
  double peak_gflops = 0;  // 0: measure
  bool baselines = true;
  // CUDA: how profiled calls time the kernels of graph-mode command buffers (hal/profiling.h).
  hal::CudaProfileMode cuda_profile = hal::CudaProfileMode::kGraphReplay;
  // > 0: each call (invoke + wait idle) is bounded like hexir-run --timeout; past it the
  // bench stops with DeadlineExceeded naming the function and the phase.
  double timeout_seconds = 0;
};

struct DispatchRow {
  std::string entry;
  int per_call = 0;          // occurrences in one call
  double mean_s = 0;         // device time per occurrence (mean over profiled calls)
  double total_s = 0;        // per call: mean_s * per_call
  DispatchCost cost;
  bool has_cost = false;
  double gbps = -1, gflops = -1, intensity = -1, roofline_fraction = -1;
  double baseline_s = -1;    // vendor GEMM of the same shape, or -1
  std::string baseline_note;
};

struct CallCounters {  // per steady-state call (deltas / iterations)
  double queue_submissions = 0, dispatches = 0, host_waits = 0, buffers_allocated = 0,
         pool_hits = 0, pool_misses = 0, command_buffers_recorded = 0, executables_loaded = 0;
  double vm_instructions = 0, vm_import_calls = 0;  // the VM context's (vm::ContextStats)
  bool cuda = false;
  double graph_launches = 0, stream_launches = 0, kernel_node_updates = 0,
         graph_instantiations = 0, module_loads = 0, host_synchronizations = 0;
  double driver_calls() const;  // submissions + launches + node updates (+ CUDA syncs)
};

struct BenchReport {
  std::string device, function, profiling_mode;
  int iterations = 0;
  double peak_gbps = 0, peak_gflops = 0;
  std::string peak_gbps_source, peak_gflops_source, baseline_name;
  double first_call_wall_s = 0;
  CallCounters first_call;
  double wall_s = 0, host_s = 0;  // steady state, median per call
  double device_busy_s = 0;       // sum of dispatch times per call (profiled)
  double profiled_wall_s = 0;     // median wall of profiled calls
  double profiled_overhead_s = 0; // median over profiled calls of (wall - its dispatch time)
  CallCounters steady;
  std::vector<DispatchRow> rows;  // in first-seen order
  int dispatches_per_call = 0;
  std::vector<DispatchEvent> dispatch_events;  // profiled calls, for the trace
  std::vector<HostSpan> host_spans;
  std::vector<std::string> notes;
};

StatusOr<BenchReport> RunBench(const BenchOptions& options);
std::string FormatReport(const BenchReport& report);
// Chrome/Perfetto trace (JSON object form): host tracks "VM invocation" and "HAL
// submissions", device track "dispatches" with exactly one event per profiled dispatch.
Status WriteTrace(const BenchReport& report, const std::string& path);
// SVG: log-log roofline (GB/s slope, GFLOP/s roof) with one labelled point per dispatch row.
Status WriteRoofline(const BenchReport& report, const std::string& path);

}  // namespace hexir::tools::bench
