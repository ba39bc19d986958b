// The CPU device and buffers the HAL's unit tests build on: each helper fails the calling
// Catch2 test (REQUIRE) when the HAL refuses, so a test body reads as what it checks.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "hal/api.h"

namespace hexir::hal::testing {

// A CPU device; `workers` < 0 keeps the driver's default worker count.
inline vm::Ref<Device> CpuDevice(int32_t workers = -1, bool inline_execution = false) {
  DeviceOptions o;
  o.cpu_worker_count = workers;
  o.cpu_inline = inline_execution;
  auto d = CreateDevice("cpu", o);
  REQUIRE(d.ok());
  return *d;
}

// `bytes` of device memory (contents unspecified).
inline vm::Ref<Buffer> DeviceBuffer(Device& d, uint64_t bytes) {
  auto b = d.AllocateBuffer(bytes);
  REQUIRE(b.ok());
  return *b;
}

// A device buffer holding `values`.
template <typename T>
vm::Ref<Buffer> DeviceBuffer(Device& d, const std::vector<T>& values) {
  vm::Ref<Buffer> b = DeviceBuffer(d, values.size() * sizeof(T));
  REQUIRE(d.WriteBuffer(*b, 0, values.data(), values.size() * sizeof(T)).ok());
  return b;
}

}  // namespace hexir::hal::testing
