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

// Every call goes to `inner` (a CPU device); only the memory space says "GPU". With `peer`
// set it copies from other devices itself (QueuePeerCopy: a queue copy on `inner`), as a CUDA
// device with peer access does, and counts the calls.
class GpuStandIn final : public Device {
 public:
  explicit GpuStandIn(vm::Ref<Device> inner, int32_t ordinal = 0, bool peer = false)
      : inner_(std::move(inner)), ordinal_(ordinal), peer_(peer) {}
  std::string_view uri() const override { return "gpu-stand-in"; }
  MemorySpace memory_space() const override { return {MemorySpace::Kind::kGpu, ordinal_}; }
  StatusOr<bool> QueuePeerCopy(Device& from, const std::vector<SemaphoreValue>& waits,
                               const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                               vm::Ref<Buffer> target, uint64_t length) override {
    if (!peer_) return false;
    ++peer_copies;
    last_peer_waits = waits;
    HEXIR_RETURN_IF_ERROR(inner_->QueueCopy(waits, signals, source, 0, target, 0, length));
    return true;
  }
  int peer_copies = 0;
  std::vector<SemaphoreValue> last_peer_waits;
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
  int32_t ordinal_;
  bool peer_;
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

TEST_CASE("a copy between two GPUs goes to the target's peer copy, after the source's earlier work") {
  auto source_gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"), 0);
  auto target_gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"), 1, /*peer=*/true);
  vm::Ref<Buffer> source = BufferWith(*source_gpu, std::vector<float>(8, 0.0f));
  vm::Ref<Buffer> target = BufferWith(*target_gpu, std::vector<float>(8, 0.0f));
  // The source GPU's queue holds the producer: a queue write of the data into the source.
  vm::Ref<Semaphore> gate = NewSemaphore(*source_gpu), done = NewSemaphore(*target_gpu);
  REQUIRE(source_gpu->QueueWrite({{gate, 1}}, {}, kData.data(), 32, source, 0).ok());
  DeviceStats before = target_gpu->stats();
  bool by_pointer = true;
  REQUIRE(QueueDeviceTransfer(*source_gpu, *target_gpu, {}, {{done, 1}}, source, target, 32,
                              &by_pointer).ok());
  CHECK_FALSE(by_pointer);
  CHECK(target_gpu->peer_copies == 1);
  CHECK(target_gpu->last_peer_waits.size() == 1);  // the fence on the source GPU's queue
  CHECK(target_gpu->stats().transfers_queued == before.transfers_queued);  // the driver counts its own
  CHECK(done->Wait(1, Timeout(50ms)).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(done->Wait(1, kInfiniteTimeout).ok());
  std::vector<float> back(8, -1.0f);
  REQUIRE(target_gpu->ReadBuffer(*target, 0, back.data(), 32).ok());
  CHECK(back == kData);
}

TEST_CASE("a copy between two GPUs without a peer path takes the generic path on the target") {
  auto source_gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"), 0, /*peer=*/true);
  auto target_gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"), 1, /*peer=*/false);
  vm::Ref<Buffer> source = BufferWith(*source_gpu, kData);
  vm::Ref<Buffer> target = BufferWith(*target_gpu, std::vector<float>(8, 0.0f));
  vm::Ref<Semaphore> done = NewSemaphore(*target_gpu);
  DeviceStats before = target_gpu->stats();
  bool by_pointer = true;
  REQUIRE(QueueDeviceTransfer(*source_gpu, *target_gpu, {}, {{done, 1}}, source, target, 32,
                              &by_pointer).ok());
  CHECK(source_gpu->peer_copies == 0);  // only the target's driver is asked
  CHECK(target_gpu->stats().transfers_queued - before.transfers_queued == 1);
  REQUIRE(done->Wait(1, kInfiniteTimeout).ok());
  std::vector<float> back(8, -1.0f);
  REQUIRE(target_gpu->ReadBuffer(*target, 0, back.data(), 32).ok());
  CHECK(back == kData);
}

TEST_CASE("copies between a CPU and a GPU never take the peer path") {
  vm::Ref<Device> cpu = Cpu("cpu");
  auto gpu = vm::MakeRef<GpuStandIn>(Cpu("cpu:threads=1"), 0, /*peer=*/true);
  vm::Ref<Buffer> on_cpu = BufferWith(*cpu, kData);
  vm::Ref<Buffer> on_gpu = BufferWith(*gpu, std::vector<float>(8, 0.0f));
  vm::Ref<Semaphore> up = NewSemaphore(*gpu), down = NewSemaphore(*cpu);
  bool by_pointer = false;
  REQUIRE(QueueDeviceTransfer(*cpu, *gpu, {}, {{up, 1}}, on_cpu, on_gpu, 32, &by_pointer).ok());
  REQUIRE(up->Wait(1, kInfiniteTimeout).ok());
  REQUIRE(QueueDeviceTransfer(*gpu, *cpu, {{up, 1}}, {{down, 1}}, on_gpu, on_cpu, 32, &by_pointer).ok());
  REQUIRE(down->Wait(1, kInfiniteTimeout).ok());
  CHECK(gpu->peer_copies == 0);
}

}  // namespace
}  // namespace hexir::hal
