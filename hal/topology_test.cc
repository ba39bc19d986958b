// Topology and cross-device queue operations between two CPU devices (different worker
// counts), and links between GPUs described from what stand-in drivers report: the link
// description, transfers that move the bytes and count one transfer on the
// device that runs them, fences that order one queue after another, a measured bandwidth.
#include "hal/topology.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "hal/api.h"
#include "hal/device_transfer.h"

namespace hexir::hal {
namespace {

vm::Ref<Device> Cpu(const char* uri) {
  auto d = CreateDevice(uri);
  REQUIRE(d.ok());
  return *d;
}

TEST_CASE("two CPU devices share host memory; a device shares memory with itself") {
  vm::Ref<Device> a = Cpu("cpu"), b = Cpu("cpu:threads=1");
  DeviceLink link = DescribeLink(*a, *b);
  CHECK(link.shared_memory);
  CHECK_FALSE(link.peer_access);
  CHECK(LinkKindName(link.link) == "host memory");
  CHECK(a->memory_space().kind == Device::MemorySpace::Kind::kHost);
  CHECK(LinkKindName(LinkKind::kPcie) == "PCIe");
  CHECK(LinkKindName(LinkKind::kNvlink) == "NVLink");
  CHECK(LinkKindName(LinkKind::kSameDevice) == "same device");
}

TEST_CASE("a queued transfer between CPU devices copies the bytes and counts one transfer on the target") {
  vm::Ref<Device> from = Cpu("cpu"), to = Cpu("cpu:threads=1");
  std::vector<float> data = {1, 2, 3, 4, 5, 6, 7, 8};
  auto source = from->AllocateBuffer(32);
  auto target = to->AllocateBuffer(32);
  REQUIRE(source.ok());
  REQUIRE(target.ok());
  REQUIRE(from->WriteBuffer(**source, 0, data.data(), 32).ok());
  auto done = to->CreateSemaphore(0);
  REQUIRE(done.ok());
  DeviceStats before = to->stats(), before_source = from->stats();
  bool by_pointer = true;
  REQUIRE(QueueDeviceTransfer(*from, *to, {}, {{*done, 1}}, *source, *target, 32, &by_pointer).ok());
  CHECK_FALSE(by_pointer);
  REQUIRE((*done)->Wait(1, kInfiniteTimeout).ok());
  std::vector<float> back(8);
  REQUIRE(to->ReadBuffer(**target, 0, back.data(), 32).ok());
  CHECK(back == data);
  CHECK(to->stats().transfers_queued - before.transfers_queued == 1);
  CHECK(to->stats().transfer_bytes_queued - before.transfer_bytes_queued == 32);
  CHECK(from->stats().transfers_queued == before_source.transfers_queued);

  Status too_long = QueueDeviceTransfer(*from, *to, {}, {}, *source, *target, 64, &by_pointer);
  CHECK(too_long.code() == StatusCode::kOutOfRange);
  CHECK(too_long.message() ==
        "transfer cpu -> cpu: 64 bytes do not fit the 32-byte source and the 32-byte target");
}

TEST_CASE("a fence makes the target's later work wait for the source's earlier work") {
  vm::Ref<Device> from = Cpu("cpu"), to = Cpu("cpu:threads=1");
  auto gate = from->CreateSemaphore(0);
  auto ran = to->CreateSemaphore(0);
  REQUIRE(gate.ok());
  REQUIRE(ran.ok());
  // The source's queue is held by a wait on `gate`; the target's work after the fence must not
  // run before the gate opens.
  REQUIRE(from->QueueBarrier({{*gate, 1}}, {}).ok());
  REQUIRE(QueueFence(*from, *to).ok());
  REQUIRE(to->QueueBarrier({}, {{*ran, 1}}).ok());
  CHECK((*ran)->Wait(1, Timeout(std::chrono::milliseconds(50))).code() == StatusCode::kDeadlineExceeded);
  REQUIRE((*gate)->Signal(1).ok());
  REQUIRE((*ran)->Wait(1, kInfiniteTimeout).ok());
}

// A device that only describes itself: a GPU memory space and what its driver reports about
// other devices (PeerLinkTo). Nothing else is called by DescribeLink.
class LinkStandIn final : public Device {
 public:
  LinkStandIn(int32_t gpu, PeerLink reported) : gpu_(gpu), reported_(reported) {}
  std::string_view uri() const override { return "link-stand-in"; }
  MemorySpace memory_space() const override { return {MemorySpace::Kind::kGpu, gpu_}; }
  PeerLink PeerLinkTo(const Device&) const override { return reported_; }
  StatusOr<vm::Ref<Buffer>> AllocateBuffer(uint64_t, uint32_t) override { return Unimplemented("stand-in"); }
  StatusOr<vm::Ref<Executable>> CreateExecutable(const vm::ExecutableView&) override {
    return Unimplemented("stand-in");
  }
  Status WriteBuffer(Buffer&, uint64_t, const void*, uint64_t) override { return Unimplemented("stand-in"); }
  Status ReadBuffer(const Buffer&, uint64_t, void*, uint64_t) override { return Unimplemented("stand-in"); }

 protected:
  Status AwaitIdle(Timeout) override { return Status::Ok(); }
  Status Submit(const std::vector<SemaphoreValue>&, const vm::Ref<CommandBuffer>&,
                const std::vector<SemaphoreValue>&, const std::vector<BufferRef>&) override {
    return Unimplemented("stand-in");
  }

 private:
  int32_t gpu_;
  PeerLink reported_;
};

vm::Ref<Device> Gpu(int32_t ordinal, bool access, bool nvlink) {
  Device::PeerLink link;
  link.access = access;
  link.nvlink = nvlink;
  return vm::Ref<Device>::Adopt(new LinkStandIn(ordinal, link));
}

TEST_CASE("two logical devices of one GPU are the same device, sharing memory with peer access") {
  vm::Ref<Device> a = Gpu(0, false, false), b = Gpu(0, false, false);
  DeviceLink link = DescribeLink(*a, *b);
  CHECK(link.shared_memory);
  CHECK(link.peer_access);
  CHECK(LinkKindName(link.link) == "same device");
}

TEST_CASE("two GPUs are NVLink peers only when both drivers report NVLink") {
  DeviceLink nvlink = DescribeLink(*Gpu(0, true, true), *Gpu(1, true, true));
  CHECK_FALSE(nvlink.shared_memory);
  CHECK(nvlink.peer_access);
  CHECK(LinkKindName(nvlink.link) == "NVLink");

  DeviceLink pcie_peers = DescribeLink(*Gpu(0, true, false), *Gpu(1, true, false));
  CHECK(pcie_peers.peer_access);
  CHECK(LinkKindName(pcie_peers.link) == "PCIe");

  DeviceLink one_sided = DescribeLink(*Gpu(0, true, true), *Gpu(1, false, false));
  CHECK_FALSE(one_sided.peer_access);
  CHECK(LinkKindName(one_sided.link) == "PCIe");
}

TEST_CASE("a CPU and a GPU are linked by PCIe without peer access, whatever the GPU reports") {
  vm::Ref<Device> cpu = Cpu("cpu"), gpu = Gpu(0, true, true);
  for (DeviceLink link : {DescribeLink(*cpu, *gpu), DescribeLink(*gpu, *cpu)}) {
    CHECK_FALSE(link.shared_memory);
    CHECK_FALSE(link.peer_access);
    CHECK(LinkKindName(link.link) == "PCIe");
  }
}

TEST_CASE("the copy bandwidth between two CPU devices is measured and positive") {
  vm::Ref<Device> a = Cpu("cpu"), b = Cpu("cpu:threads=1");
  auto gbps = MeasureCopyBandwidth(*a, *b, 1 << 20);
  REQUIRE(gbps.ok());
  CHECK(*gbps > 0);
}

}  // namespace
}  // namespace hexir::hal
