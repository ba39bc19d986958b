// What the Catch2 CUDA device tests repeat around OpenOrSkip: an ok Status required (its
// message shown when not), a buffer allocated or the case failed, the driver's counters read.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_device.h"

namespace hexir::hal::cuda::testing {

inline void RequireOk(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

inline vm::Ref<Buffer> Alloc(Device& d, uint64_t bytes, uint32_t memory_types = kMemoryDeviceLocal) {
  auto b = d.AllocateBuffer(bytes, memory_types);
  RequireOk(b.status());
  return *b;
}

inline CudaStats Stats(const Device& d) {
  auto s = GetCudaStats(d);
  RequireOk(s.status());
  return *s;
}

}  // namespace hexir::hal::cuda::testing
