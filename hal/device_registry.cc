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
    if (has_suffix) return InvalidArgument("device uri '", uri, "': the cpu driver takes no ordinal");
    if (options.cpu_worker_count < -1 || options.cpu_worker_count > kMaxCpuWorkers) {
      return InvalidArgument("cpu device: worker thread count ", options.cpu_worker_count,
                             " is outside -1..", kMaxCpuWorkers);
    }
    return cpu::CreateCpuDevice(options);
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
