#include <charconv>

#include "hal/api.h"
#include "hal/drivers/cpu/cpu_device.h"
#include "hal/drivers/cuda/cuda_device.h"

namespace hexir::hal {

std::vector<std::string> KnownDrivers() { return {"cpu", "cuda"}; }

StatusOr<vm::Ref<Device>> CreateDevice(std::string_view uri, const DeviceOptions& options) {
  std::string_view driver = uri.substr(0, uri.find(':'));
  std::string_view rest =
      driver.size() < uri.size() ? uri.substr(driver.size() + 1) : std::string_view();
  bool has_suffix = driver.size() < uri.size();
  if (driver == "cpu") {
    DeviceOptions cpu_options = options;
    if (has_suffix) {
      // "cpu:threads=N": this device's worker count (0 = inline), e.g. two CPU devices of one
      // module with different worker counts.
      constexpr std::string_view kThreads = "threads=";
      int threads = -1;
      const char* end = rest.data() + rest.size();
      auto [ptr, ec] = rest.substr(0, kThreads.size()) == kThreads
                           ? std::from_chars(rest.data() + kThreads.size(), end, threads)
                           : std::from_chars_result{rest.data(), std::errc::invalid_argument};
      if (ec != std::errc() || ptr != end || threads < 0 || threads > kMaxCpuWorkers) {
        return InvalidArgument("device uri '", uri, "': expected cpu or cpu:threads=N (N in 0..",
                               kMaxCpuWorkers, ")");
      }
      cpu_options.cpu_worker_count = threads;
      cpu_options.cpu_inline = threads == 0;
    }
    if (cpu_options.cpu_worker_count < -1 || cpu_options.cpu_worker_count > kMaxCpuWorkers) {
      return InvalidArgument("cpu device: worker thread count ", cpu_options.cpu_worker_count,
                             " is outside -1..", kMaxCpuWorkers);
    }
    return cpu::CreateCpuDevice(cpu_options);
  }
  if (driver == "cuda") {
    int ordinal = 0;
    if (has_suffix) {
      auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), ordinal);
      if (ec != std::errc() || end != rest.data() + rest.size() || ordinal < 0) {
        return InvalidArgument("device uri '", uri, "': expected cuda:<ordinal>, e.g. cuda:0");
      }
    }
    return cuda::CreateCudaDevice(ordinal, options);
  }
  std::string known;
  for (const std::string& d : KnownDrivers()) known += (known.empty() ? "" : ", ") + d;
  return NotFound("no HAL driver for device uri '", uri, "' (known drivers: ", known, ")");
}

std::vector<std::string> EnumerateDevices() {
  std::vector<std::string> uris;
  DeviceOptions probe;
  probe.cpu_worker_count = 0;
  probe.cpu_inline = true;
  if (CreateDevice("cpu", probe).ok()) uris.push_back("cpu");
  for (int i = 0; i < 16; ++i) {
    std::string uri = StrCat("cuda:", i);
    if (!CreateDevice(uri, probe).ok()) break;
    uris.push_back(std::move(uri));
  }
  return uris;
}

}  // namespace hexir::hal
