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

TEST_CASE("registry: cuda uris reach the cuda driver") {
  // Whether a GPU is present is the CUDA driver's business (its own tests cover it); here only
  // the routing: cuda and cuda:N reach it (ok, or Unavailable naming cuda), bad ordinals do not.
  for (const char* uri : {"cuda", "cuda:1"}) {
    auto d = CreateDevice(uri, {});
    if (!d.ok()) {
      INFO(d.status().ToString());
      REQUIRE(d.status().code() == StatusCode::kUnavailable);
      REQUIRE(d.status().message().find("cuda") != std::string::npos);
    }
  }
  auto bad = CreateDevice("cuda:x", {});
  REQUIRE(bad.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(bad.status().message() == "device uri 'cuda:x': expected cuda:<ordinal>, e.g. cuda:0");
  REQUIRE(CreateDevice("cuda:-1", {}).status().code() == StatusCode::kInvalidArgument);
  REQUIRE(CreateDevice("cpu:0", {}).status().code() == StatusCode::kInvalidArgument);
  REQUIRE(CreateDevice("cpu:threads=1025", {}).status().message() ==
          "device uri 'cpu:threads=1025': expected cpu or cpu:threads=N (N in 0..1024)");
  REQUIRE(CreateDevice("cpu:threads=", {}).status().code() == StatusCode::kInvalidArgument);
  REQUIRE(CreateDevice("cpu:threads=2", {}).ok());
  REQUIRE(CreateDevice("cpu:threads=0", {}).ok());
}

TEST_CASE("registry: enumeration lists cpu first, then openable cuda devices") {
  std::vector<std::string> uris = EnumerateDevices();
  REQUIRE(!uris.empty());
  REQUIRE(uris[0] == "cpu");
  for (size_t i = 1; i < uris.size(); ++i) {
    REQUIRE(uris[i] == "cuda:" + std::to_string(i - 1));
    REQUIRE(CreateDevice(uris[i], {}).ok());
  }
}

TEST_CASE("registry: unknown uri lists the known drivers") {
  auto d = CreateDevice("tpu", {});
  REQUIRE(d.status().code() == StatusCode::kNotFound);
  REQUIRE(d.status().message() == "no HAL driver for device uri 'tpu' (known drivers: cpu, cuda)");
  REQUIRE(CreateDevice("", {}).status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace hexir::hal
