// Device::WrapExternalMemory on host memory (the path a NumPy array or a DLPack CPU tensor
// takes into a CPU device): the buffer is the caller's memory, queued work writes it in
// place, the owner is released once and only after the queued work holding the buffer has
// completed, and a device whose memory is not host memory refuses it by name.
#include <catch2/catch.hpp>

#include <vector>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_device.h"

namespace hexir::hal {
namespace {

TEST_CASE("wrapped host memory is the buffer itself and is not counted as the device's") {
  vm::Ref<Device> device = testing::CpuDevice();
  std::vector<float> owned = {1, 2, 3, 4};
  int releases = 0;
  const uint64_t live_before = device->stats().buffers_live;
  {
    auto buffer = device->WrapExternalMemory(reinterpret_cast<uintptr_t>(owned.data()), 16,
                                             [&] { ++releases; });
    REQUIRE(buffer.ok());
    CHECK((*buffer)->host_data() == reinterpret_cast<uint8_t*>(owned.data()));
    CHECK((*buffer)->device_address() == reinterpret_cast<uintptr_t>(owned.data()));
    CHECK((*buffer)->byte_size() == 16);
    CHECK(device->stats().buffers_live == live_before);
    CHECK(releases == 0);
  }
  CHECK(releases == 1);
}

TEST_CASE("the owner of wrapped memory is released after the queued work that writes it") {
  vm::Ref<Device> device = testing::CpuDevice();
  std::vector<float> owned(4, 0.0f);
  const std::vector<float> source_data = {5, 6, 7, 8};
  int releases = 0;
  auto gate = device->CreateSemaphore(0);
  REQUIRE(gate.ok());
  {
    auto target = device->WrapExternalMemory(reinterpret_cast<uintptr_t>(owned.data()), 16,
                                             [&] { ++releases; });
    REQUIRE(target.ok());
    auto source = device->AllocateBuffer(16);
    REQUIRE(source.ok());
    REQUIRE(device->WriteBuffer(**source, 0, source_data.data(), 16).ok());
    REQUIRE(device->QueueCopy({{*gate, 1}}, {}, *source, 0, *target, 0, 16).ok());
  }
  CHECK(releases == 0);  // the queued copy still holds the buffer
  REQUIRE((*gate)->Signal(1).ok());
  REQUIRE(device->WaitIdle().ok());
  CHECK(owned == source_data);
  CHECK(releases == 1);
}

// A device whose memory is not host memory (every pure virtual refuses).
class NotHostMemory final : public Device {
 public:
  std::string_view uri() const override { return "gpu-like"; }
  MemorySpace memory_space() const override { return {MemorySpace::Kind::kGpu, 0}; }
  StatusOr<vm::Ref<Buffer>> AllocateBuffer(uint64_t, uint32_t) override { return Unimplemented("x"); }
  StatusOr<vm::Ref<Executable>> CreateExecutable(const vm::ExecutableView&) override {
    return Unimplemented("x");
  }
  Status WriteBuffer(Buffer&, uint64_t, const void*, uint64_t) override { return Unimplemented("x"); }
  Status ReadBuffer(const Buffer&, uint64_t, void*, uint64_t) override { return Unimplemented("x"); }

 protected:
  Status AwaitIdle(Timeout) override { return Status::Ok(); }
  Status Submit(const std::vector<SemaphoreValue>&, const vm::Ref<CommandBuffer>&,
                const std::vector<SemaphoreValue>&, const std::vector<BufferRef>&) override {
    return Unimplemented("x");
  }
};

TEST_CASE("a device without host memory refuses to wrap memory it did not allocate") {
  vm::Ref<Device> device = vm::Ref<Device>::Adopt(new NotHostMemory());
  float x = 0;
  bool released = false;
  auto buffer = device->WrapExternalMemory(reinterpret_cast<uintptr_t>(&x), 4, [&] { released = true; });
  REQUIRE_FALSE(buffer.ok());
  CHECK(buffer.status().code() == StatusCode::kUnimplemented);
  CHECK(buffer.status().message() == "device 'gpu-like' cannot use memory it did not allocate");
  CHECK_FALSE(released);
  CHECK(device->NativeQueueHandle() == 0);
}

TEST_CASE("host memory at address 0 is refused") {
  vm::Ref<Device> device = testing::CpuDevice();
  auto buffer = device->WrapExternalMemory(0, 16, nullptr);
  REQUIRE_FALSE(buffer.ok());
  CHECK(buffer.status().message() == "external memory of 16 bytes at address 0 for device 'cpu'");
}

}  // namespace
}  // namespace hexir::hal
