#include <catch2/catch.hpp>

#include "hal/api.h"

namespace hexir::hal {
namespace {

TEST_CASE("registry: cpu creates a device, with any worker count and inline") {
  for (int32_t workers : {-1, 0, 1, 3}) {
    for (bool inl : {false, true}) {
      DeviceOptions o;
      o.cpu_worker_count = workers;
      o.cpu_inline = inl;
      auto d = CreateDevice("cpu", o);
      REQUIRE(d.ok());
      REQUIRE((*d)->uri() == "cpu");
      REQUIRE(vm::RefCast<Device>(d->get()) == d->get());
      REQUIRE(std::string((*d)->type_name()) == "hal.device");
    }
  }
}

TEST_CASE("registry: cuda is registered but unavailable") {
  auto d = CreateDevice("cuda", {});
  REQUIRE(d.status().code() == StatusCode::kUnavailable);
  REQUIRE(d.status().message() == "cuda:0: the CUDA driver is not built yet");
  auto d1 = CreateDevice("cuda:1", {});
  REQUIRE(d1.status().code() == StatusCode::kUnavailable);
  REQUIRE(d1.status().message() == "cuda:1: the CUDA driver is not built yet");
  auto bad = CreateDevice("cuda:x", {});
  REQUIRE(bad.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(bad.status().message() == "device uri 'cuda:x': expected cuda:<ordinal>, e.g. cuda:0");
  REQUIRE(CreateDevice("cpu:0", {}).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("registry: unknown uri lists the known drivers") {
  auto d = CreateDevice("tpu", {});
  REQUIRE(d.status().code() == StatusCode::kNotFound);
  REQUIRE(d.status().message() == "no HAL driver for device uri 'tpu' (known drivers: cpu, cuda)");
  REQUIRE(CreateDevice("", {}).status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace hexir::hal
