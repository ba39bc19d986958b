#include "tools/common/device_trace.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string_view>

#include "hal/executable.h"

namespace hexir::tools {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

const char* const kTrackNames[] = {"dispatches", "collectives", "uploads", "argument waits"};
const char* const kTrackCategories[] = {"dispatch", "collective", "upload", "argument_wait"};

}  // namespace

DeviceTrace::DeviceTrace(std::vector<hal::Device*> devices, std::vector<std::string> names)
    : devices_(std::move(devices)), names_(std::move(names)) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    profilers_.push_back(std::make_unique<DeviceProfiler>(this, i));
    devices_[i]->SetProfiler(profilers_.back().get());
  }
}

DeviceTrace::~DeviceTrace() {
  for (hal::Device* d : devices_) d->SetProfiler(nullptr);
}

void DeviceTrace::DeviceProfiler::OnDispatch(const hal::DispatchTiming& t) {
  trace_->Add({device_, Track::kDispatches, t.executable ? t.executable->entry_name(t.entry) : "?", t.begin_ns, t.end_ns});
}

void DeviceTrace::DeviceProfiler::OnCollective(const char* name, int64_t begin_ns, int64_t end_ns) {
  trace_->Add({device_, Track::kCollectives, name, begin_ns, end_ns});
}

void DeviceTrace::DeviceProfiler::OnHostSpan(const char* name, int64_t begin_ns, int64_t end_ns) {
  if (std::string_view(name) == "argument_wait") trace_->Add({device_, Track::kArgumentWaits, name, begin_ns, end_ns});
}

void DeviceTrace::AddUpload(size_t device, std::string name, int64_t begin_ns, int64_t end_ns) {
  Add({device, Track::kUploads, std::move(name), begin_ns, end_ns});
}

void DeviceTrace::Add(Event e) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

std::vector<DeviceTrace::Event> DeviceTrace::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

size_t DeviceTrace::OverlappedCollectives() const {
  const std::vector<Event> all = events();
  size_t overlapped = 0;
  for (const Event& c : all) {
    if (c.track != Track::kCollectives) continue;
    for (const Event& d : all) {
      if (d.track != Track::kDispatches || d.device != c.device) continue;
      if (d.begin_ns <= c.end_ns && c.begin_ns <= d.end_ns) {  // the intervals intersect
        ++overlapped;
        break;
      }
    }
  }
  return overlapped;
}

Status DeviceTrace::Write(const std::string& path) const {
  const std::vector<Event> all = events();
  int64_t t0 = INT64_MAX;
  for (const Event& e : all) t0 = std::min(t0, e.begin_ns);
  if (t0 == INT64_MAX) t0 = 0;
  std::string s = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  char line[512];
  for (size_t i = 0; i < names_.size(); ++i) {
    s += "{\"ph\":\"M\",\"pid\":" + std::to_string(i + 1) + ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":" +
         JsonString(names_[i]) + "}},\n";
    for (int tid : {1, 2, 3, 4}) {
      s += "{\"ph\":\"M\",\"pid\":" + std::to_string(i + 1) + ",\"tid\":" + std::to_string(tid) +
           ",\"name\":\"thread_name\",\"args\":{\"name\":\"" + kTrackNames[tid - 1] + "\"}},\n";
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const Event& e = all[i];
    const int track = static_cast<int>(e.track);
    std::snprintf(line, sizeof(line), "{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%zu,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":",
                  kTrackCategories[track], e.device + 1, track + 1,
                  double(e.begin_ns - t0) / 1e3, double(e.end_ns - e.begin_ns) / 1e3);
    s += line + JsonString(e.name) + (i + 1 < all.size() ? "},\n" : "}\n");
  }
  s += "]}\n";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return InvalidArgument("--trace: cannot write '", path, "'");
  const bool ok = std::fwrite(s.data(), 1, s.size(), f) == s.size();
  if (std::fclose(f) != 0 || !ok) return Internal("--trace: writing '", path, "' failed");
  return Status::Ok();
}

Status TraceCalls(const char* tool, const std::string& path, std::vector<hal::Device*> devices,
                  std::vector<std::string> names, const std::function<Status()>& calls) {
  if (path.empty()) return calls();
  uint64_t overlapped_before = 0;
  for (hal::Device* d : devices) overlapped_before += d->stats().collectives_overlapped;
  const std::vector<hal::Device*> traced = devices;
  DeviceTrace trace(std::move(devices), std::move(names));
  HEXIR_RETURN_IF_ERROR(calls());
  size_t dispatches = 0, collectives = 0;
  for (const DeviceTrace::Event& e : trace.events()) {
    if (e.track == DeviceTrace::Track::kCollectives) ++collectives;
    if (e.track == DeviceTrace::Track::kDispatches) ++dispatches;
  }
  HEXIR_RETURN_IF_ERROR(trace.Write(path));
  uint64_t overlapped = 0;
  for (hal::Device* d : traced) overlapped += d->stats().collectives_overlapped;
  std::fprintf(stderr, "%s: trace '%s': %zu dispatches, %zu collectives (%zu ran while dispatches of their device ran)\n",
               tool, path.c_str(), dispatches, collectives, trace.OverlappedCollectives());
  std::fprintf(stderr, "%s: collectives_overlapped (device statistics): %llu\n", tool,
               static_cast<unsigned long long>(overlapped - overlapped_before));
  return Status::Ok();
}

}  // namespace hexir::tools
