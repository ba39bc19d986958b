#include "tools/hexir-bench/bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/interrupt.h"
#include "hal/api.h"
#include "hal/element_type.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "tools/common/invocation.h"
#include "tools/common/parameter_file.h"
#include "tools/hexir-bench/baselines.h"
#include "tools/hexir-bench/timing.h"

namespace hexir::tools::bench {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Snapshot {
  hal::DeviceStats hal;
  hal::cuda::CudaStats cuda;
  bool is_cuda = false;
  vm::ContextStats vm;
};

Snapshot Take(hal::Device& device, const vm::ContextStats& vm) {
  Snapshot s;
  s.hal = device.stats();
  s.vm = vm;
  auto cs = hal::cuda::GetCudaStats(device);
  if (cs.ok()) {
    s.cuda = *cs;
    s.is_cuda = true;
  }
  return s;
}

CallCounters Delta(const Snapshot& a, const Snapshot& b, double calls) {
  CallCounters c;
  auto d = [&](uint64_t x, uint64_t y) { return (double(y) - double(x)) / calls; };
  c.queue_submissions = d(a.hal.queue_submissions, b.hal.queue_submissions);
  c.dispatches = d(a.hal.dispatches_executed, b.hal.dispatches_executed);
  c.host_waits = d(a.hal.host_waits, b.hal.host_waits);
  c.buffers_allocated = d(a.hal.buffers_allocated, b.hal.buffers_allocated);
  c.pool_hits = d(a.hal.pool_hits, b.hal.pool_hits);
  c.pool_misses = d(a.hal.pool_misses, b.hal.pool_misses);
  c.command_buffers_recorded = d(a.hal.command_buffers_recorded, b.hal.command_buffers_recorded);
  c.executables_loaded = d(a.hal.executables_loaded, b.hal.executables_loaded);
  c.vm_instructions = d(a.vm.instructions, b.vm.instructions);
  c.vm_import_calls = d(a.vm.import_calls, b.vm.import_calls);
  c.cuda = a.is_cuda;
  if (c.cuda) {
    c.graph_launches = d(a.cuda.graph_launches, b.cuda.graph_launches);
    c.stream_launches = d(a.cuda.stream_launches, b.cuda.stream_launches);
    c.kernel_node_updates = d(a.cuda.kernel_node_updates, b.cuda.kernel_node_updates);
    c.graph_instantiations = d(a.cuda.graph_instantiations, b.cuda.graph_instantiations);
    c.module_loads = d(a.cuda.module_loads, b.cuda.module_loads);
    c.host_synchronizations = d(a.cuda.host_synchronizations, b.cuda.host_synchronizations);
  }
  return c;
}

// Arguments as VM values: tensors uploaded once (the call measures the program, not uploads),
// then `parameters` (a parameter file's, uploaded once) as the last ones.
StatusOr<std::vector<vm::Variant>> MakeArgs(hal::Device& device, const vm::Function& fn,
                                            std::vector<std::string> specs,
                                            const std::string& fill,
                                            const std::vector<vm::Ref<hal::BufferView>>& parameters) {
  size_t us = fn.signature.find('_');
  std::string kinds = fn.signature.substr(0, us);
  kinds.resize(kinds.size() - std::min(kinds.size(), parameters.size()));
  if (!fill.empty() && specs.size() < kinds.size()) {
    // The arguments not given: constant tensors of the reflected static types.
    HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> types, ParseAbiTypes(std::string(fn.attr("abi.args"))));
    for (size_t i = specs.size(); i < kinds.size(); ++i) {
      if (i >= types.size()) return InvalidArgument("--fill-inputs: function '", fn.name, "' reflects no type for argument ", i);
      const AbiType& t = types[i];
      for (int64_t d : t.dims) {
        if (d < 0) return InvalidArgument("--fill-inputs: argument ", i, " of '", fn.name, "' has a dynamic shape (", t.text, "); give it with --input");
      }
      std::string elem(hal::ElementTypeName(t.element_type));
      std::string spec;
      for (int64_t d : t.dims) spec += std::to_string(d) + "x";
      bool integer = elem[0] == 'i';
      specs.push_back(spec + elem + "=" + (integer ? std::to_string(std::atoll(fill.c_str())) : fill));
    }
  }
  if (specs.size() != kinds.size()) {
    return InvalidArgument("function '", fn.name, "' takes ", kinds.size(), " arguments",
                           parameters.empty() ? "" : StrCat(" before its ", parameters.size(), " parameters"),
                           " (", fn.attr("abi.args"), "), got ", specs.size(), " --input");
  }
  std::vector<vm::Variant> args(specs.size() + parameters.size());
  for (size_t j = 0; j < parameters.size(); ++j) args[specs.size() + j].ref = parameters[j];
  for (size_t i = 0; i < specs.size(); ++i) {
    auto v = ParseValue(specs[i]);
    if (!v.ok()) return std::move(v).status().WithContext(StrCat("--input #", i));
    const bool tensor = v->kind == HostValue::Kind::kTensor;
    if (tensor != (kinds[i] == 'r')) {
      return InvalidArgument("--input #", i, ": function '", fn.name, "' expects ",
                             kinds[i] == 'r' ? "a tensor" : "a scalar", " (", fn.attr("abi.args"), ")");
    }
    if (tensor) {
      HEXIR_ASSIGN_OR_RETURN(
          auto view, hal::BufferViewFromHost(device, v->tensor.element_type,
                                             Span<const int64_t>(v->tensor.dims.data(), v->tensor.dims.size()),
                                             v->tensor.bytes.data(), v->tensor.bytes.size()));
      args[i].ref = std::move(view);
    } else if (kinds[i] == 'i') {
      if (v->kind != HostValue::Kind::kInt) return InvalidArgument("--input #", i, ": expected an integer");
      args[i].bits = v->i;
    } else {
      double f = v->kind == HostValue::Kind::kFloat ? v->f : double(v->i);
      std::memcpy(&args[i].bits, &f, 8);
    }
  }
  return args;
}

int CudaOrdinal(const std::string& uri) {
  size_t colon = uri.find(':');
  return colon == std::string::npos ? 0 : std::atoi(uri.c_str() + colon + 1);
}

// The profiled calls' dispatch events (r->dispatch_events, calls 0..iterations-1) as one row
// per entry (dispatches per call, mean and total time per call), the device's busy time per
// call, and the overhead of each call beyond its dispatches (median over `profiled_walls`).
void SummarizeDispatches(int iterations, const std::vector<double>& profiled_walls, BenchReport* r) {
  std::map<std::string, size_t> row_of;
  std::map<std::string, double> sum;
  std::map<std::string, int> count;
  double busy = 0;
  for (const DispatchEvent& e : r->dispatch_events) {
    double d = (e.end_ns - e.begin_ns) * 1e-9;
    busy += d;
    sum[e.entry] += d;
    count[e.entry]++;
    if (!row_of.count(e.entry)) {
      row_of[e.entry] = r->rows.size();
      DispatchRow row;
      row.entry = e.entry;
      r->rows.push_back(row);
    }
    if (e.call == 0) {
      r->rows[row_of[e.entry]].per_call++;
      r->dispatches_per_call++;
    }
  }
  r->device_busy_s = busy / iterations;
  // Overhead inside the same calls (robust to load changing between phases).
  std::vector<double> busy_of(iterations, 0.0), overheads;
  for (const DispatchEvent& e : r->dispatch_events)
    if (e.call >= 0 && e.call < iterations) busy_of[e.call] += (e.end_ns - e.begin_ns) * 1e-9;
  for (int i = 0; i < iterations && i < static_cast<int>(profiled_walls.size()); ++i)
    overheads.push_back(profiled_walls[i] - busy_of[i]);
  r->profiled_overhead_s = Median(overheads);
  for (DispatchRow& row : r->rows) {
    row.mean_s = sum[row.entry] / std::max(1, count[row.entry]);
    row.total_s = row.mean_s * row.per_call;
  }
}

// The baseline of the device (null with a note when a CUDA one cannot be created) and the
// peaks the roofline uses: --peak-gbps / --peak-gflops, else measured by the baseline.
std::unique_ptr<Baseline> MeasurePeaks(const BenchOptions& o, bool cuda, BenchReport* r) {
  std::unique_ptr<Baseline> baseline;
  if (cuda) {
    auto b = CreateCudaBaseline(CudaOrdinal(o.device));
    if (b.ok()) baseline = std::move(*b);
    else r->notes.push_back("no CUDA baseline: " + b.status().ToString());
  } else {
    baseline = CreateCpuBaseline();
  }
  r->baseline_name = baseline ? baseline->name() : "none";
  r->peak_gbps = o.peak_gbps;
  r->peak_gflops = o.peak_gflops;
  r->peak_gbps_source = r->peak_gflops_source = "--peak flag";
  if (r->peak_gbps <= 0 && baseline) {
    auto g = baseline->MeasureCopyGbps(&r->peak_gbps_source);
    if (g.ok()) r->peak_gbps = *g;
    else r->notes.push_back("copy bandwidth not measured: " + g.status().ToString());
  }
  if (r->peak_gflops <= 0 && baseline) {
    auto g = baseline->MeasurePeakGflops(&r->peak_gflops_source);
    if (g.ok()) r->peak_gflops = *g;
    else r->notes.push_back("GEMM peak not measured: " + g.status().ToString() +
                            " (pass --peak-gflops)");
  }
  return baseline;
}

// A row's achieved GB/s and GFLOP/s from its cost (row->cost) and mean time, its arithmetic
// intensity, and the fraction of the roofline min(peak GFLOP/s, peak GB/s x intensity) (of the
// bandwidth alone for a dispatch without flops) it reaches.
void RateAgainstRoofline(double peak_gbps, double peak_gflops, DispatchRow* row) {
  const DispatchCost& c = row->cost;
  if (!c.bytes_known() || row->mean_s <= 0) return;
  double bytes = c.bytes_read + c.bytes_written;
  row->gbps = bytes / row->mean_s / 1e9;
  if (c.flops >= 0) {
    row->gflops = c.flops / row->mean_s / 1e9;
    row->intensity = bytes > 0 ? c.flops / bytes : -1;
  }
  if (c.flops > 0 && row->intensity > 0 && peak_gbps > 0 && peak_gflops > 0) {
    double roof = std::min(peak_gflops, peak_gbps * row->intensity);
    row->roofline_fraction = row->gflops / roof;
  } else if (c.flops == 0 && peak_gbps > 0) {
    row->roofline_fraction = row->gbps / peak_gbps;
  }
}

}  // namespace

double CallCounters::driver_calls() const {
  return queue_submissions + graph_launches + stream_launches + kernel_node_updates +
         graph_instantiations + module_loads;
}

// What the profiled calls measured on CUDA, from how their dispatches were timed.
static std::string CudaProfilingMode(hal::CudaProfileMode mode, const std::vector<DispatchEvent>& events) {
  size_t in_graph = 0;
  for (const DispatchEvent& e : events) in_graph += e.in_graph ? 1 : 0;
  const char* stream = "stream launches with an event before and after every kernel (launch "
                       "gaps outside the intervals, no programmatic overlap)";
  if (in_graph == 0) {
    return StrCat("CUDA: profiled calls run command buffers as ", stream,
                  mode == hal::CudaProfileMode::kStreamLaunches
                      ? " (--cuda-profile=stream)"
                      : " (no submission was timed inside a graph replay; "
                        "HEXIR_CUDA_PROFILE_VERBOSE=1 prints why)");
  }
  std::string s = "CUDA: profiled calls replay each graph with an event record node after a "
                  "kernel's prerequisites and one after the kernel: a dispatch's time is what it "
                  "adds inside the graph (graphs with programmatic launches are timed as stream launches)";
  if (in_graph < events.size()) {
    s += StrCat("; ", events.size() - in_graph, " of ", events.size(), " timings from ", stream,
                " (HEXIR_CUDA_PROFILE_VERBOSE=1 prints why: a device loop, a collective, a "
                "gated submission, ...)");
  }
  return s;
}

StatusOr<BenchReport> RunBench(const BenchOptions& o) {
  if (o.iterations < 1) return InvalidArgument("--iterations must be >= 1, got ", o.iterations);
  BenchReport r;
  r.device = o.device;
  r.function = o.function;
  r.iterations = o.iterations;
  const bool cuda = o.device.rfind("cuda", 0) == 0;
  if (!cuda) {
    r.profiling_mode = "CPU: the driver reads the host steady clock around each dispatch on the "
                       "executing thread (all workgroups of the dispatch inside)";
  }
  InvocationOptions io;
  io.device_uri = o.device;
  io.cpu_threads = o.cpu_threads;
  HEXIR_ASSIGN_OR_RETURN(auto session, Session::Open(o.module_path, io));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<vm::Module> module, vm::Module::LoadFromFile(o.module_path));
  std::map<std::string, DispatchCost> costs = ReadDispatchCosts(*module);
  if (costs.empty()) r.notes.push_back("the module carries no cost metadata (compiled before hexir-annotate-dispatch-costs?)");
  HEXIR_ASSIGN_OR_RETURN(vm::Function fn, session->LookupFunction(o.function));
  hal::Device& device = session->device();
  std::vector<vm::Ref<hal::BufferView>> parameters;
  if (!o.parameters.empty()) {
    HEXIR_ASSIGN_OR_RETURN(auto file, ParameterFile::Open(o.parameters));
    HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> types, file->CheckFunction(fn));
    HEXIR_ASSIGN_OR_RETURN(parameters, file->Upload(device, types));
  }
  HEXIR_ASSIGN_OR_RETURN(std::vector<vm::Variant> args, MakeArgs(device, fn, o.inputs, o.fill_inputs, parameters));

  // One call: invoke (host issues the program) + wait idle (device drains).
  const std::string invoke_span = "vm.invoke " + o.function;
  auto call = [&](double* host_s, double* wall_s, Collector* trace, int index) -> Status {
    std::vector<vm::Variant> a = args;
    std::vector<vm::Variant> outs;
    if (trace) trace->set_call(index);
    vm::InvokeOptions options;
    if (o.timeout_seconds > 0) options.deadline_ns = Interrupt::DeadlineAfter(o.timeout_seconds);
    int64_t t0 = hal::ProfileClockNs();
    HEXIR_RETURN_IF_ERROR(
        session->context().Invoke(fn, Span<vm::Variant>(a.data(), a.size()), &outs, options));
    int64_t t1 = hal::ProfileClockNs();
    if (o.timeout_seconds > 0) {
      Status idle = device.WaitIdle(Interrupt(options.deadline_ns, nullptr, Interrupt::NowNs()));
      if (!idle.ok()) return std::move(idle).WithContext(StrCat("function '", o.function, "'"));
    } else {
      HEXIR_RETURN_IF_ERROR(device.WaitIdle());
    }
    int64_t t2 = hal::ProfileClockNs();
    if (trace) {
      trace->AddHostSpan(invoke_span, "VM", t0, t1);
      trace->AddHostSpan("hal.wait_idle", "HAL", t1, t2);
    }
    *host_s = (t1 - t0) * 1e-9;
    *wall_s = (t2 - t0) * 1e-9;
    return Status::Ok();
  };

  // 1. first call.
  double host = 0, wall = 0;
  Snapshot s0 = Take(device, session->context().stats());
  HEXIR_RETURN_IF_ERROR(call(&host, &wall, nullptr, -1).WithContext("first call"));
  Snapshot s1 = Take(device, session->context().stats());
  r.first_call_wall_s = wall;
  r.first_call = Delta(s0, s1, 1);

  // 2. steady state, unprofiled.
  std::vector<double> walls, hosts;
  Snapshot s2 = Take(device, session->context().stats());
  for (int i = 0; i < o.iterations; ++i) {
    HEXIR_RETURN_IF_ERROR(call(&host, &wall, nullptr, -1));
    walls.push_back(wall);
    hosts.push_back(host);
  }
  Snapshot s3 = Take(device, session->context().stats());
  r.steady = Delta(s2, s3, o.iterations);
  r.wall_s = Median(walls);
  r.host_s = Median(hosts);

  // 3. profiled calls.
  // Room for the profiled calls' events (a steady call's dispatches, with up to 16 words
  // each, and 16 host spans a call), so that recording them allocates nothing (collector.h).
  Collector collector(o.cuda_profile);
  const size_t calls = static_cast<size_t>(std::max(o.iterations, 0));
  const size_t events = static_cast<size_t>(r.steady.dispatches + 1) * calls;
  collector.Reserve(events, 16 * events, 16 * calls + 16);
  device.SetProfiler(&collector);
  std::vector<double> pwalls;
  Status st;
  for (int i = 0; i < o.iterations && st.ok(); ++i) {
    st = call(&host, &wall, &collector, i);
    pwalls.push_back(wall);
  }
  device.SetProfiler(nullptr);
  HEXIR_RETURN_IF_ERROR(st);
  r.profiled_wall_s = Median(pwalls);
  r.dispatch_events = collector.dispatches();
  if (cuda) r.profiling_mode = CudaProfilingMode(o.cuda_profile, r.dispatch_events);
  r.host_spans = collector.host_spans();
  SummarizeDispatches(o.iterations, pwalls, &r);

  // 4. peaks and baselines (after the timed calls: OpenBLAS's threads keep spinning for a
  // while after a call and would share the cores with the calls being measured).
  std::unique_ptr<Baseline> baseline = MeasurePeaks(o, cuda, &r);
  std::map<std::string, std::pair<double, std::string>> baseline_cache;
  std::map<std::string, std::vector<const DispatchEvent*>> events_of;
  for (const DispatchEvent& e : r.dispatch_events) events_of[e.entry].push_back(&e);
  for (DispatchRow& row : r.rows) {
    auto it = costs.find(row.entry);
    if (it == costs.end()) continue;
    row.has_cost = true;
    row.cost = it->second;
    EvaluateRunTimeCosts(events_of[row.entry], &row.cost);
    const DispatchCost& c = row.cost;
    RateAgainstRoofline(r.peak_gbps, r.peak_gflops, &row);
    if (c.has_matmul && baseline && o.baselines) {
      std::string key = c.matmul.ToString();
      auto cached = baseline_cache.find(key);
      if (cached == baseline_cache.end()) {
        std::string note;
        auto t = baseline->TimeGemm(c.matmul, &note);
        if (!t.ok()) note = t.status().message();
        cached = baseline_cache.emplace(key, std::make_pair(t.ok() ? *t : -1.0, note)).first;
      }
      row.baseline_s = cached->second.first;
      row.baseline_note = cached->second.second;
    }
  }
  return r;
}

}  // namespace hexir::tools::bench
