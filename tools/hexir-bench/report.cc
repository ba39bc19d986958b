// Text report, Chrome trace JSON and roofline SVG of a BenchReport.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>

#include "tools/hexir-bench/bench.h"

namespace hexir::tools::bench {
namespace {

std::string Fmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return buf;
}

std::string Num(double v, const char* format = "%.3g") { return v < 0 ? "?" : Fmt(format, v); }

std::string Us(double s) { return Fmt("%.1f us", s * 1e6); }

std::string Escape(const std::string& s, bool json) {
  std::string out;
  for (char c : s) {
    if (json && (c == '"' || c == '\\')) out += '\\', out += c;
    else if (json && static_cast<unsigned char>(c) < 0x20) out += Fmt("\\u%04x", c);
    else if (!json && c == '<') out += "&lt;";
    else if (!json && c == '>') out += "&gt;";
    else if (!json && c == '&') out += "&amp;";
    else if (!json && c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return InvalidArgument("cannot open '", path, "' for writing");
  f << text;
  if (!f.good()) return DataLoss("writing '", path, "' failed");
  return Status::Ok();
}

}  // namespace

std::string FormatReport(const BenchReport& r) {
  std::string s;
  s += Fmt("hexir-bench: function '%s' on %s, %d timed + %d profiled calls after one first call\n",
           r.function.c_str(), r.device.c_str(), r.iterations, r.iterations);
  s += Fmt("peaks: %s GB/s (%s); %s GFLOP/s (%s)\n", Num(r.peak_gbps, "%.1f").c_str(),
           r.peak_gbps_source.c_str(), Num(r.peak_gflops > 0 ? r.peak_gflops : -1, "%.1f").c_str(),
           r.peak_gflops_source.c_str());
  s += "baseline library: " + r.baseline_name + "\n";
  s += "profiling mode: " + r.profiling_mode + "\n\n";

  s += "[1] per-dispatch breakdown (device time = mean per occurrence over the profiled calls)\n";
  s += Fmt("  %-28s %4s %11s %6s %11s %11s %10s %9s %9s %8s %8s  %s\n", "executable = entry", "n",
           "time", "busy%", "read B", "written B", "GFLOP", "GB/s", "GFLOP/s", "FLOP/B", "roof%",
           "baseline");
  for (const DispatchRow& row : r.rows) {
    const DispatchCost& c = row.cost;
    std::string base = "-";
    if (row.cost.has_matmul) {
      base = c.matmul.ToString() + ": ";
      base += row.baseline_s > 0
                  ? Fmt("%s, Hexir/baseline = %.2fx", Us(row.baseline_s).c_str(), row.mean_s / row.baseline_s)
                  : "n/a";
      if (!row.baseline_note.empty()) base += " (" + row.baseline_note + ")";
    }
    s += Fmt("  %-28s %4d %11s %6.1f %11s %11s %10s %9s %9s %8s %8s  %s\n",
             row.entry.substr(0, 28).c_str(), row.per_call,
             Us(row.mean_s).c_str(),
             r.device_busy_s > 0 ? 100.0 * row.total_s / r.device_busy_s : 0.0,
             Num(row.has_cost ? c.bytes_read : -1, "%.0f").c_str(),
             Num(row.has_cost ? c.bytes_written : -1, "%.0f").c_str(),
             Num(row.has_cost && c.flops >= 0 ? c.flops / 1e9 : -1, "%.4g").c_str(),
             Num(row.gbps, "%.2f").c_str(), Num(row.gflops, "%.2f").c_str(),
             Num(row.intensity, "%.3g").c_str(),
             Num(row.roofline_fraction >= 0 ? 100 * row.roofline_fraction : -1, "%.1f").c_str(),
             base.c_str());
    if (row.has_cost && !c.formula.empty()) s += "      dynamic: " + c.formula + "\n";
    if (row.has_cost) s += "      ops: " + c.ops + "\n";
  }
  s += Fmt("  dispatches per call: %d; device busy per call: %s\n\n", r.dispatches_per_call,
           Us(r.device_busy_s).c_str());

  s += "[2] where wall time goes (median per steady-state call, unprofiled)\n";
  s += Fmt("  wall (invoke + wait idle): %s\n", Us(r.wall_s).c_str());
  s += Fmt("  host (VM invoke until it returns; submissions are asynchronous): %s (%.1f%% of wall)\n",
           Us(r.host_s).c_str(), r.wall_s > 0 ? 100 * r.host_s / r.wall_s : 0.0);
  s += Fmt("  device busy (sum of dispatch times, profiled calls): %s (%.1f%% of wall)\n",
           Us(r.device_busy_s).c_str(), r.wall_s > 0 ? 100 * r.device_busy_s / r.wall_s : 0.0);
  double overhead = std::max(0.0, r.wall_s - r.device_busy_s);
  s += Fmt("  launch/host overhead (wall - device busy): %s = %.1f%% of wall\n", Us(overhead).c_str(),
           r.wall_s > 0 ? 100 * overhead / r.wall_s : 0.0);
  s += Fmt("  profiled calls: wall %s (%+.1f%% vs unprofiled), overhead within the same calls "
           "(wall - their dispatch time) %s = %.1f%% of their wall\n",
           Us(r.profiled_wall_s).c_str(), r.wall_s > 0 ? 100 * (r.profiled_wall_s / r.wall_s - 1) : 0.0,
           Us(r.profiled_overhead_s).c_str(),
           r.profiled_wall_s > 0 ? 100 * r.profiled_overhead_s / r.profiled_wall_s : 0.0);
  auto counters = [&](const char* label, const CallCounters& c) {
    s += Fmt("  %s: driver calls %.1f (queue submissions %.1f", label, c.driver_calls(), c.queue_submissions);
    if (c.cuda) {
      s += Fmt(", graph launches %.1f, stream launches %.1f, node updates %.1f, instantiations %.1f, "
               "module loads %.1f", c.graph_launches, c.stream_launches, c.kernel_node_updates,
               c.graph_instantiations, c.module_loads);
    }
    s += Fmt("), dispatches %.1f, synchronizations %.1f, allocations %.1f (pool hits %.1f, misses %.1f), "
             "recordings %.1f, executable loads %.1f; VM instructions %.1f, import calls %.1f\n",
             c.dispatches, c.cuda ? c.host_synchronizations : c.host_waits, c.buffers_allocated,
             c.pool_hits, c.pool_misses, c.command_buffers_recorded, c.executables_loaded, c.vm_instructions,
             c.vm_import_calls);
  };
  counters("per steady call", r.steady);
  counters("first call     ", r.first_call);
  s += Fmt("  first call wall: %s = %.2fx steady state\n\n", Us(r.first_call_wall_s).c_str(),
           r.wall_s > 0 ? r.first_call_wall_s / r.wall_s : 0.0);
  for (const std::string& n : r.notes) s += "note: " + n + "\n";
  return s;
}

Status WriteTrace(const BenchReport& r, const std::string& path) {
  int64_t t0 = INT64_MAX;
  for (const auto& e : r.dispatch_events) t0 = std::min(t0, e.begin_ns);
  for (const auto& h : r.host_spans) t0 = std::min(t0, h.begin_ns);
  if (t0 == INT64_MAX) t0 = 0;
  auto us = [&](int64_t ns) { return Fmt("%.3f", (ns - t0) / 1e3); };
  std::string s = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  auto meta = [&](int pid, int tid, const char* what, const std::string& name) {
    s += Fmt("{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":\"%s\"}},\n", pid,
             tid, what, Escape(name, true).c_str());
  };
  meta(1, 0, "process_name", "host");
  meta(1, 1, "thread_name", "VM invocation");
  meta(1, 2, "thread_name", "HAL submissions");
  meta(2, 0, "process_name", "device " + r.device);
  meta(2, 1, "thread_name", "dispatches");
  for (const HostSpan& h : r.host_spans) {
    s += Fmt("{\"ph\":\"X\",\"cat\":\"host\",\"pid\":1,\"tid\":%d,\"name\":\"%s\",\"ts\":%s,\"dur\":%.3f,"
             "\"args\":{\"call\":%d}},\n",
             h.track == "VM" ? 1 : 2, Escape(h.name, true).c_str(), us(h.begin_ns).c_str(),
             (h.end_ns - h.begin_ns) / 1e3, h.call);
  }
  std::map<std::string, const DispatchRow*> rows;
  for (const DispatchRow& row : r.rows) rows[row.entry] = &row;
  for (const DispatchEvent& e : r.dispatch_events) {
    std::string args = Fmt("\"call\":%d", e.call);
    auto it = rows.find(e.entry);
    if (it != rows.end() && it->second->has_cost) {
      const DispatchCost& c = it->second->cost;
      args += Fmt(",\"bytes_read\":%.0f,\"bytes_written\":%.0f,\"flops\":%.0f", c.bytes_read,
                  c.bytes_written, c.flops);
    }
    s += Fmt("{\"ph\":\"X\",\"cat\":\"dispatch\",\"pid\":2,\"tid\":1,\"name\":\"%s\",\"ts\":%s,\"dur\":%.3f,"
             "\"args\":{%s}},\n",
             Escape(e.entry, true).c_str(), us(e.begin_ns).c_str(), (e.end_ns - e.begin_ns) / 1e3,
             args.c_str());
  }
  s += Fmt("{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":1,\"name\":\"end\",\"ts\":0,\"cat\":\"meta\","
           "\"args\":{\"profiling\":\"%s\"}}\n]}\n",
           Escape(r.profiling_mode, true).c_str());
  return WriteFile(path, s);
}

Status WriteRoofline(const BenchReport& r, const std::string& path) {
  if (r.peak_gbps <= 0 || r.peak_gflops <= 0) {
    return FailedPrecondition("roofline needs both peaks (measured or --peak-gbps/--peak-gflops)");
  }
  // Axes: arithmetic intensity (FLOP/byte) and GFLOP/s, decades around the ridge and points.
  double xmin = 1e-2, xmax = 1e3, ymin = r.peak_gflops * 1e-4, ymax = r.peak_gflops * 4;
  for (const DispatchRow& row : r.rows) {
    if (row.intensity > 0 && row.gflops > 0) {
      xmin = std::min(xmin, row.intensity / 2), xmax = std::max(xmax, row.intensity * 2);
      ymin = std::min(ymin, row.gflops / 2);
    }
  }
  xmin = std::pow(10, std::floor(std::log10(xmin))), xmax = std::pow(10, std::ceil(std::log10(xmax)));
  ymin = std::pow(10, std::floor(std::log10(ymin))), ymax = std::pow(10, std::ceil(std::log10(ymax)));
  const double W = 900, H = 600, L = 90, R = 260, T = 50, B = 70;
  auto px = [&](double x) { return L + (W - L - R) * (std::log10(x) - std::log10(xmin)) / (std::log10(xmax) - std::log10(xmin)); };
  auto py = [&](double y) { return H - B - (H - T - B) * (std::log10(y) - std::log10(ymin)) / (std::log10(ymax) - std::log10(ymin)); };
  std::string s = Fmt("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  s += Fmt("<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
  s += Fmt("<text x=\"%.0f\" y=\"25\" font-size=\"15\">Roofline: %s, function %s (%.1f GB/s, %.1f GFLOP/s)</text>\n",
           L, Escape(r.device, false).c_str(), Escape(r.function, false).c_str(), r.peak_gbps, r.peak_gflops);
  for (double x = xmin; x <= xmax * 1.001; x *= 10) {
    s += Fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", px(x), T, px(x), H - B);
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", px(x), H - B + 18, x);
  }
  for (double y = ymin; y <= ymax * 1.001; y *= 10) {
    s += Fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, py(y), W - R, py(y));
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, py(y) + 4, y);
  }
  s += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n", L, T,
           W - L - R, H - T - B);
  s += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte, log scale)</text>\n",
           (L + W - R) / 2, H - 25);
  s += Fmt("<text transform=\"translate(25,%.1f) rotate(-90)\" text-anchor=\"middle\">GFLOP/s (log scale)</text>\n",
           (T + H - B) / 2);
  // The roof: bandwidth slope up to the ridge, then flat.
  double ridge = r.peak_gflops / r.peak_gbps;
  double x0 = std::max(xmin, ymin / r.peak_gbps);
  s += Fmt("<polyline fill=\"none\" stroke=\"#c00\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
           px(x0), py(x0 * r.peak_gbps), px(ridge), py(r.peak_gflops), px(xmax), py(r.peak_gflops));
  s += Fmt("<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">%.1f GFLOP/s</text>\n", px(ridge) + 5, py(r.peak_gflops) - 6, r.peak_gflops);
  s += Fmt("<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">%.1f GB/s</text>\n", px(x0) + 5, py(x0 * r.peak_gbps) - 6, r.peak_gbps);
  int i = 0;
  for (const DispatchRow& row : r.rows) {
    if (!(row.intensity > 0 && row.gflops > 0)) continue;
    ++i;
    s += Fmt("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#06c\"><title>%s</title></circle>\n", px(row.intensity),
             py(row.gflops), Escape(row.entry, false).c_str());
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%d</text>\n", px(row.intensity) + 7, py(row.gflops) - 5, i);
    s += Fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%d: %s (%.1f%% of roof)</text>\n", W - R + 10,
             T + 16.0 * i, i, Escape(row.entry, false).c_str(), 100 * row.roofline_fraction);
  }
  s += "</svg>\n";
  return WriteFile(path, s);
}

}  // namespace hexir::tools::bench
