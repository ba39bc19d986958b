// hexir-bench: where the time of one function call goes. See README.md.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tools/hexir-bench/bench.h"

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
  app.add_option("--iterations", o.iterations, "Timed calls, and as many profiled calls")
      ->capture_default_str();
  app.add_option("--cpu-threads", o.cpu_threads, "CPU driver workers (default: all; 0 = inline)");
  app.add_option("--peak-gbps", o.peak_gbps, "Memory roof in GB/s (default: measured)");
  app.add_option("--peak-gflops", o.peak_gflops, "Compute roof in GFLOP/s (default: measured)");
  app.add_flag("!--no-baselines", o.baselines, "Skip the vendor GEMM baselines");
  app.add_option("--trace", trace, "Write a Chrome/Perfetto trace (JSON)");
  app.add_option("--roofline", roofline, "Write a roofline plot (SVG)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto report = hexir::tools::bench::RunBench(o);
  if (!report.ok()) {
    std::fprintf(stderr, "hexir-bench: error: %s\n", report.status().ToString().c_str());
    return 1;
  }
  std::fputs(hexir::tools::bench::FormatReport(*report).c_str(), stdout);
  if (!trace.empty()) {
    hexir::Status st = hexir::tools::bench::WriteTrace(*report, trace);
    if (!st.ok()) {
      std::fprintf(stderr, "hexir-bench: error: --trace: %s\n", st.ToString().c_str());
      return 1;
    }
    std::printf("trace: %s (%zu dispatch events)\n", trace.c_str(), report->dispatch_events.size());
  }
  if (!roofline.empty()) {
    hexir::Status st = hexir::tools::bench::WriteRoofline(*report, roofline);
    if (!st.ok()) {
      std::fprintf(stderr, "hexir-bench: error: --roofline: %s\n", st.ToString().c_str());
      return 1;
    }
    std::printf("roofline: %s\n", roofline.c_str());
  }
  return 0;
}
