// The CUDA tests' entry: a device, or nullopt after printing the skip marker
// "HEXIR_SKIPPED: <case>: <reason>" for the current Catch2 case (no GPU, no libcuda, or the
// nvcc-built test kernels missing). Any other failure to open the device fails the case.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <optional>
#include <string>

#include "hal/api.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace hexir::hal::cuda::testing {

inline std::optional<vm::Ref<Device>> OpenOrSkip(const char* uri = "cuda") {
  auto device = CreateDevice(uri);
  std::string reason;
  if (!device.ok() && device.status().code() == StatusCode::kUnavailable) {
    reason = device.status().message();
  } else if (device.ok() && !KernelsMissingReason().empty()) {
    reason = KernelsMissingReason();
  }
  if (!reason.empty()) {
    std::printf("HEXIR_SKIPPED: %s: %s\n",
                Catch::getResultCapture().getCurrentTestName().c_str(), reason.c_str());
    std::fflush(stdout);
    return std::nullopt;
  }
  INFO(device.status().ToString());
  REQUIRE(device.ok());
  return *device;
}

}  // namespace hexir::hal::cuda::testing
