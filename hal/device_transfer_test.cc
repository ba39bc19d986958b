// Cross-device transfers on the paths a GPU takes, checked without a GPU: a stand-in device
// that forwards everything to a CPU device but reports GPU memory makes QueueDeviceTransfer
// pick the GPU paths (a queue read on the GPU into the CPU buffer's mapping, a queue write
// on the GPU from the CPU buffer's mapping). The orderings checked are the ones a CPU+CUDA
// module relies on: a result read back through the CPU waits for the GPU's copy.
#include "hal/device_transfer.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "hal/api.h"

namespace hexir::hal {
namespace {

using namespace std::chrono_literals;

// Every call goes to `inner` (a CPU device); only the memory space says "GPU".
class GpuStandIn final : public Device {
 public:
  explicit GpuStandIn(vm::Ref<Device> inner) : inner_(std::move(inner)) {}
  std::string_view uri() const override { return "gpu-stand-in"; }
  MemorySpace memory_space() const override { return {MemorySpace::Kind::kGpu, 0}; }
  StatusOr<vm::Ref<Buffer>> AllocateBuffer(uint64_t byte_size, uint32_t memory_types) override {
    return inner_->AllocateBuffer(byte_size, memory_types);
  }
  StatusOr<vm::Ref<Executable>> CreateExecutable(const vm::ExecutableView& view) override {
    return inner_->CreateExecutable(view);
  }
  Status WriteBuffer(Buffer& buffer, uint64_t offset, const void* data, uint64_t size) override {
    return inner_->WriteBuffer(buffer, offset, data, size);
  }
  Status ReadBuffer(const Buffer& buffer, uint64_t offset, void* data, uint64_t size) override {
    return inner_->ReadBuffer(buffer, offset, data, size);
  }

 protected:
  Status AwaitIdle(Timeout timeout) override { return inner_->WaitIdle(timeout); }
  Status Submit(const std::vector<SemaphoreValue>& waits, const vm::Ref<CommandBuffer>& cb,
                const std::vector<SemaphoreValue>& signals,
                const std::vector<BufferRef>& binding_table) override {
    return inner_->QueueExecute(waits, cb, signals, binding_table);
  }

 private:
  vm::Ref<Device> inner_;
};

vm::Ref<Device> Cpu(const char* uri) {
  auto d = CreateDevice(uri);
  REQUIRE(d.ok());
  return *d;
}

vm::Ref<Buffer> BufferWith(Device& device, const std::vector<float>& data) {
  auto b = device.AllocateBuffer(data.size() * sizeof(float));
  REQUIRE(b.ok());
  REQUIRE(device.WriteBuffer(**b, 0, data.data(), data.size() * sizeof(float)).ok());
  return *b;
}

vm::Ref<Semaphore> NewSemaphore(Device& device) {
  auto s = device.CreateSemaphore(0);
  REQUIRE(s.ok());
  return *s;
}

const std::vector<float> kData = {1, 2, 3, 4, 5, 6, 7, 8};

TEST_CASE("a GPU's value copied into a CPU buffer is read back through the CPU only after it lands") {
  vm::Ref<Device> cpu = Cpu("cpu");
  vm::Ref<Device> gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"));
  vm::Ref<Buffer> source = BufferWith(*gpu, kData);
  vm::Ref<Buffer> target = BufferWith(*cpu, std::vector<float>(8, 0.0f));
  // The GPU's queue is still busy (held by a gate): the copy runs after that work.
  vm::Ref<Semaphore> gate = NewSemaphore(*gpu), done = NewSemaphore(*cpu);
  REQUIRE(gpu->QueueBarrier({{gate, 1}}, {}).ok());
  DeviceStats before = gpu->stats();
  bool by_pointer = false;
  REQUIRE(QueueDeviceTransfer(*gpu, *cpu, {}, {{done, 1}}, source, target, 32, &by_pointer).ok());
  CHECK(by_pointer);  // the GPU's queue read into the CPU buffer's memory
  CHECK(gpu->stats().transfers_queued - before.transfers_queued == 1);
  // Nothing else runs on the CPU, yet its queue is not idle: it waits for the copy.
  CHECK(cpu->WaitIdle(Timeout(50ms)).code() == StatusCode::kDeadlineExceeded);
  std::thread opener([&] {
    std::this_thread::sleep_for(30ms);
    REQUIRE(gate->Signal(1).ok());
  });
  std::vector<float> back(8, -1.0f);
  Status read = cpu->ReadBufferAfterPendingWork(*target, 0, back.data(), 32);
  opener.join();
  REQUIRE(read.ok());
  CHECK(back == kData);
  CHECK(done->Query().value() == 1);
}

TEST_CASE("a CPU value copied to a GPU is written by the GPU's queue after the CPU's earlier work") {
  vm::Ref<Device> cpu = Cpu("cpu");
  vm::Ref<Device> gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"));
  vm::Ref<Buffer> source = BufferWith(*cpu, std::vector<float>(8, 0.0f));
  vm::Ref<Buffer> target = BufferWith(*gpu, std::vector<float>(8, 0.0f));
  // The CPU's queue holds the producer: a queue write of the data into the source.
  vm::Ref<Semaphore> gate = NewSemaphore(*cpu), done = NewSemaphore(*gpu);
  REQUIRE(cpu->QueueWrite({{gate, 1}}, {}, kData.data(), 32, source, 0).ok());
  DeviceStats before = gpu->stats();
  bool by_pointer = false;
  REQUIRE(QueueDeviceTransfer(*cpu, *gpu, {}, {{done, 1}}, source, target, 32, &by_pointer).ok());
  CHECK(by_pointer);  // the GPU's queue write from the CPU buffer's memory
  CHECK(gpu->stats().transfers_queued - before.transfers_queued == 1);
  CHECK(done->Wait(1, Timeout(50ms)).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(done->Wait(1, kInfiniteTimeout).ok());
  std::vector<float> back(8, -1.0f);
  REQUIRE(gpu->ReadBuffer(*target, 0, back.data(), 32).ok());
  CHECK(back == kData);
}

}  // namespace
}  // namespace hexir::hal
