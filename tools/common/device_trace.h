// --trace for hexir-run: the dispatches and collectives each device ran, as a Chrome/Perfetto
// trace (chrome://tracing, ui.perfetto.dev): one process per device ("rank 0 (cpu)"), with a
// "dispatches" track (each dispatch from its first workgroup's start to its last one's end)
// and a "collectives" track (each collective's run). A collective whose span intersects a
// dispatch span of its device ran while that compute proceeded (hal/drivers/cpu/collective_lane.h).
// Two more tracks: "uploads" (AddUpload: hexir-generate's weights, each
// from its conversion's start to its write's signal) and "argument waits" (the driver's host
// waits for an argument's readiness before a command: hal/README.md, Argument readiness).
//
// Ownership: a DeviceTrace installs itself as the devices' profiler (hal/profiling.h) until it
// is destroyed; the devices must outlive it and be idle when it is. Thread-safety: the
// callbacks may come from several devices' threads at once (a mutex guards the events).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "hal/api.h"
#include "hal/profiling.h"

namespace hexir::tools {

class DeviceTrace {
 public:
  enum class Track { kDispatches, kCollectives, kUploads, kArgumentWaits };
  struct Event {
    size_t device = 0;
    Track track = Track::kDispatches;
    std::string name;  // the dispatch's entry point, the collective's kind, the tensor
    int64_t begin_ns = 0, end_ns = 0;
  };

  // `names[i]` labels devices[i] in the trace ("rank 1 (cpu:threads=2)").
  DeviceTrace(std::vector<hal::Device*> devices, std::vector<std::string> names);
  ~DeviceTrace();
  DeviceTrace(const DeviceTrace&) = delete;
  DeviceTrace& operator=(const DeviceTrace&) = delete;

  std::vector<Event> events() const;
  // A span of the "uploads" track of device `device` (steady clock ns, hal::ProfileClockNs).
  void AddUpload(size_t device, std::string name, int64_t begin_ns, int64_t end_ns);
  // Collectives whose span intersects the span of a dispatch of the same device.
  size_t OverlappedCollectives() const;
  // Writes the trace (timestamps in microseconds from the first event).
  Status Write(const std::string& path) const;

 private:
  class DeviceProfiler final : public hal::Profiler {
   public:
    DeviceProfiler(DeviceTrace* trace, size_t device) : trace_(trace), device_(device) {}
    void OnDispatch(const hal::DispatchTiming& t) override;
    void OnCollective(const char* name, int64_t begin_ns, int64_t end_ns) override;
    void OnHostSpan(const char* name, int64_t begin_ns, int64_t end_ns) override;

   private:
    DeviceTrace* trace_;
    size_t device_;
  };
  void Add(Event e);

  std::vector<hal::Device*> devices_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<DeviceProfiler>> profilers_;
  mutable std::mutex mu_;
  std::vector<Event> events_;  // guarded by mu_
};

// A tool's --trace: runs `calls` with a DeviceTrace over `devices` installed when `path` is
// not empty, writes it to `path`, and says on stderr ("<tool>: trace ...") how many dispatches
// and collectives it holds, how many collectives ran while dispatches of their device ran
// (spans that intersect) and how many the devices counted in collectives_overlapped
// meanwhile. With an empty `path` it only runs `calls`.
Status TraceCalls(const char* tool, const std::string& path, std::vector<hal::Device*> devices,
                  std::vector<std::string> names, const std::function<Status()>& calls);

}  // namespace hexir::tools
