// hexir-bench: where the time of one function call goes. See README.md.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "hal/device.h"
#include "tools/common/flag_checks.h"
#include "tools/common/tool_main.h"
#include "tools/hexir-bench/bench.h"

namespace hexir::tools::bench {
namespace {

Status Run(const BenchOptions& o, const std::string& trace, const std::string& roofline) {
  HEXIR_ASSIGN_OR_RETURN(BenchReport report, RunBench(o));
  std::fputs(FormatReport(report).c_str(), stdout);
  if (!trace.empty()) {
    Status st = WriteTrace(report, trace);
    if (!st.ok()) return std::move(st).WithContext("--trace");
    std::printf("trace: %s (%zu dispatch events)\n", trace.c_str(), report.dispatch_events.size());
  }
  if (!roofline.empty()) {
    Status st = WriteRoofline(report, roofline);
    if (!st.ok()) return std::move(st).WithContext("--roofline");
    std::printf("roofline: %s\n", roofline.c_str());
  }
  return Status::Ok();
}

}  // namespace
}  // namespace hexir::tools::bench

int main(int argc, char** argv) {
  hexir::tools::bench::BenchOptions o;
  std::string trace, roofline;
  CLI::App app{"hexir-bench: per-dispatch timing, roofline and vendor baselines of one call"};
  app.add_option("--module", o.module_path, "Compiled module (.vmfb)")->required();
  app.add_option("--device", o.device, "cpu, cuda, cuda:N")->capture_default_str();
  app.add_option("--function", o.function, "Exported function")->capture_default_str();
  app.add_option("--input", o.inputs, "Arguments in order (hexir-run syntax)");
  app.add_option("--fill-inputs", o.fill_inputs,
                 "Fill the arguments after the --input ones with this value (static reflected types)");
  app.add_option("--parameters", o.parameters,
                 "Parameter file of hexir-import --parameters (GGUF): uploaded once, the function's last arguments");
  app.add_option("--iterations", o.iterations, "Timed calls, and as many profiled calls")
      ->capture_default_str();
  app.add_option("--cpu-threads", o.cpu_threads, "CPU driver workers (default: all; 0 = inline)")
      ->check(hexir::tools::CpuThreads(hexir::hal::kMaxCpuWorkers));
  app.add_option("--peak-gbps", o.peak_gbps, "Memory roof in GB/s (default: measured)");
  app.add_option("--peak-gflops", o.peak_gflops, "Compute roof in GFLOP/s (default: measured)");
  app.add_flag("!--no-baselines", o.baselines, "Skip the vendor GEMM baselines");
  app.add_option("--timeout", o.timeout_seconds,
                 "Seconds each call (invoke + wait idle) may take; past it the bench stops with "
                 "deadline_exceeded (default: no limit)")
      ->check(hexir::tools::FiniteRange(1e-3, 1e9));
  std::string cuda_profile = "graph";
  app.add_option("--cuda-profile", cuda_profile,
                 "How profiled calls time CUDA kernels: graph (inside a replay of each graph, "
                 "event nodes around every kernel) or stream (stream launches, an event pair "
                 "around every kernel)")
      ->check(CLI::IsMember({"graph", "stream"}))
      ->capture_default_str();
  app.add_option("--trace", trace, "Write a Chrome/Perfetto trace (JSON)");
  app.add_option("--roofline", roofline, "Write a roofline plot (SVG)");
  if (int exit = hexir::tools::ParseFlags("hexir-bench", app, argc, argv); exit >= 0) return exit;
  o.cuda_profile = cuda_profile == "stream" ? hexir::hal::CudaProfileMode::kStreamLaunches
                                            : hexir::hal::CudaProfileMode::kGraphReplay;
  return hexir::tools::RunTool("hexir-bench",
                               [&] { return hexir::tools::bench::Run(o, trace, roofline); });
}
