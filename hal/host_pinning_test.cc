// hal/host_pinning.h with a CPU device: while a pinner is installed the device pins its large
// blocks (page-aligned) and unpins them before freeing; small blocks and blocks allocated with
// no pinner installed are left alone.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>

#include "hal/api.h"
#include "hal/host_pinning.h"

namespace hexir::hal {
namespace {

class RecordingPinner final : public HostPinner {
 public:
  bool Pin(void* p, uint64_t bytes) override {
    pinned.insert(p);
    last_bytes = bytes;
    return true;
  }
  void Unpin(void* p) override { unpinned.insert(p); }
  std::set<void*> pinned, unpinned;
  uint64_t last_bytes = 0;
};

TEST_CASE("host pinning: a CPU device pins its blocks of 1 MiB and more while a pinner is installed, and unpins them before freeing") {
  RecordingPinner pinner;
  DeviceOptions options;
  options.pool_max_cached_bytes = 0;  // every release frees
  auto device = CreateDevice("cpu", options);
  REQUIRE(device.ok());
  InstallHostPinner(&pinner);
  const uint64_t before = PinnedHostBlocks();
  auto large = (*device)->AllocateBuffer((3 << 20) + 5, kMemoryHostVisible);
  auto small = (*device)->AllocateBuffer(1000, kMemoryHostVisible);
  REQUIRE(large.ok());
  REQUIRE(small.ok());
  InstallHostPinner(nullptr);
  void* block = (*large)->host_data();
  REQUIRE(pinner.pinned == std::set<void*>{block});
  REQUIRE(reinterpret_cast<uintptr_t>(block) % 4096 == 0);
  REQUIRE(pinner.last_bytes >= (3u << 20) + 5);
  REQUIRE(pinner.last_bytes % 4096 == 0);
  REQUIRE(PinnedHostBlocks() == before + 1);
  REQUIRE((*large)->host_data()[(3 << 20) + 4] == 0);  // still zero-filled
  large->reset();  // freed (no cache): unpinned by the pinner that pinned it, though removed since
  REQUIRE(pinner.unpinned == std::set<void*>{block});
  REQUIRE(PinnedHostBlocks() == before);
  small->reset();
  REQUIRE(pinner.unpinned.size() == 1);
}

TEST_CASE("host pinning: with no pinner installed nothing is pinned") {
  auto device = CreateDevice("cpu", {});
  REQUIRE(device.ok());
  const uint64_t before = PinnedHostBlocks();
  auto large = (*device)->AllocateBuffer(4 << 20, kMemoryHostVisible);
  REQUIRE(large.ok());
  REQUIRE(PinnedHostBlocks() == before);
}

}  // namespace
}  // namespace hexir::hal
