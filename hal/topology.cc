#include "hal/topology.h"

#include <algorithm>
#include <chrono>

#include "hal/device_transfer.h"

namespace hexir::hal {

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kSameDevice: return "same device";
    case LinkKind::kHostMemory: return "host memory";
    case LinkKind::kPcie: return "PCIe";
    case LinkKind::kNvlink: return "NVLink";
  }
  return "unknown";
}

DeviceLink DescribeLink(const Device& a, const Device& b) {
  using Kind = Device::MemorySpace::Kind;
  const Device::MemorySpace sa = a.memory_space(), sb = b.memory_space();
  DeviceLink link;
  if (sa == sb) {
    link.shared_memory = true;
    link.link = sa.kind == Kind::kHost ? LinkKind::kHostMemory : LinkKind::kSameDevice;
    link.peer_access = sa.kind == Kind::kGpu;
    return link;
  }
  // Host <-> GPU: PCIe. Two GPUs: peers when each driver reports access to the other, NVLink
  // when both report the link as NVLink, else PCIe.
  if (sa.kind != Kind::kGpu || sb.kind != Kind::kGpu) return link;
  const Device::PeerLink ab = a.PeerLinkTo(b), ba = b.PeerLinkTo(a);
  link.peer_access = ab.access && ba.access;
  link.link = ab.nvlink && ba.nvlink ? LinkKind::kNvlink : LinkKind::kPcie;
  return link;
}

StatusOr<double> MeasureCopyBandwidth(Device& from, Device& to, uint64_t bytes) {
  auto context = [&] { return StrCat("copy bandwidth ", from.uri(), " -> ", to.uri()); };
  auto source = from.AllocateBuffer(bytes, kMemoryDeviceLocal | kMemoryHostVisible);
  if (!source.ok()) return std::move(source).status().WithContext(context());
  auto target = to.AllocateBuffer(bytes, kMemoryDeviceLocal | kMemoryHostVisible);
  if (!target.ok()) return std::move(target).status().WithContext(context());
  double best = 0;
  for (int round = 0; round < 4; ++round) {  // round 0 warms up (first touch, staging)
    auto done = to.CreateSemaphore(0);
    if (!done.ok()) return std::move(done).status().WithContext(context());
    const auto start = std::chrono::steady_clock::now();
    bool by_pointer = false;
    Status st = QueueDeviceTransfer(from, to, {}, {{*done, 1}}, *source, *target, bytes,
                                    &by_pointer);
    if (st.ok()) st = (*done)->Wait(1, kInfiniteTimeout);
    if (!st.ok()) return std::move(st).WithContext(context());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (round > 0 && seconds > 0) best = std::max(best, static_cast<double>(bytes) / seconds / 1e9);
  }
  return best;
}

}  // namespace hexir::hal
