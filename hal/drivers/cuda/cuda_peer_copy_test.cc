// Copies between two CUDA devices (cuda_peer_link.h, Device::QueuePeerCopy): which copy the
// driver answers make (no GPU needed), and on a GPU: two logical devices of one GPU copy
// device-to-device on the target's transfer stream, or with cuMemcpyPeerAsync under
// HEXIR_CUDA_PEER_COPY=force (the path of two peer GPUs), byte-equal, counted in
// DeviceStats::transfers_peer and CudaStats::peer_copies, ordered after the source device's
// running work on the GPU (no host thread holds them back). On a machine of several GPUs,
// every pair copies both ways: peer copies where DescribeLink reports peer access.
//
// Without a GPU (or without the nvcc-built kernels) the GPU cases print one
// "HEXIR_SKIPPED: <case>: <reason>" line and make no assertion.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/device_transfer.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/cuda_peer_link.h"
#include "hal/drivers/cuda/testing/device_helpers.h"
#include "hal/drivers/cuda/testing/open_or_skip.h"
#include "hal/drivers/cuda/testing/test_kernels.h"
#include "hal/topology.h"

namespace hexir::hal::cuda {
namespace {

using namespace std::chrono_literals;
using testing::Alloc;
using testing::CubinView;
using testing::OpenOrSkip;
using testing::RequireOk;
using testing::Stats;

std::vector<uint8_t> Pattern(uint64_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = uint8_t(x >> 24);
  }
  return v;
}

// HEXIR_CUDA_PEER_COPY for the devices created while it lives (read at device creation).
struct PeerCopyEnvironment {
  explicit PeerCopyEnvironment(const char* value) {
    if (value) {
      setenv("HEXIR_CUDA_PEER_COPY", value, 1);
    } else {
      unsetenv("HEXIR_CUDA_PEER_COPY");
    }
  }
  ~PeerCopyEnvironment() { unsetenv("HEXIR_CUDA_PEER_COPY"); }
};

TEST_CASE("cuda/peer copy kind from the driver answers (no GPU needed)") {
  const Device::PeerLink none, access{true, false}, nvlink{true, true};
  CHECK(ChoosePeerCopy(true, none, none, false) == PeerCopy::kDeviceToDevice);  // one GPU
  CHECK(ChoosePeerCopy(true, none, none, true) == PeerCopy::kPeer);             // forced
  CHECK(ChoosePeerCopy(false, access, access, false) == PeerCopy::kPeer);       // PCIe peers
  CHECK(ChoosePeerCopy(false, nvlink, nvlink, false) == PeerCopy::kPeer);
  CHECK(ChoosePeerCopy(false, access, none, false) == PeerCopy::kNone);         // one-sided
  CHECK(ChoosePeerCopy(false, none, access, false) == PeerCopy::kNone);
  CHECK(ChoosePeerCopy(false, none, none, true) == PeerCopy::kNone);  // force adds no access
  {
    PeerCopyEnvironment env("force");
    CHECK(PeerCopyForcedByEnvironment());
  }
  CHECK_FALSE(PeerCopyForcedByEnvironment());
}

// Two logical devices of one GPU with HEXIR_CUDA_PEER_COPY=`env`: device a holds a pattern
// and, after a 200 ms dispatch, a flag; both are transferred to device b while the dispatch
// runs; b must receive the pattern byte for byte and the flag the dispatch wrote.
void CopyBetweenLogicalDevices(const char* env, uint64_t expected_peer_copies) {
  PeerCopyEnvironment scoped(env);
  auto first = OpenOrSkip(), second = OpenOrSkip();
  if (!first || !second) return;
  Device &a = **first, &b = **second;
  auto exe = a.CreateExecutable(CubinView({"spin_us"}));
  RequireOk(exe.status());
  const uint64_t n = (3 << 20) + 333;
  const std::vector<uint8_t> pattern = Pattern(n, 7);
  auto source = Alloc(a, n), target = Alloc(b, n + 64), flag = Alloc(a, 64), flag_copy = Alloc(b, 64);
  RequireOk(a.WriteBuffer(*source, 0, pattern.data(), n));
  RequireOk(a.WaitIdle(30s));
  RequireOk(b.WaitIdle(30s));
  auto cb = *a.CreateCommandBuffer();
  RequireOk(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(flag)}, {200000}));  // 200 ms, then flag = 1
  RequireOk(cb->Finalize());
  auto spun = *a.CreateSemaphore(0), copied = *b.CreateSemaphore(0);
  const DeviceStats before = b.stats();
  const CudaStats cuda_before = Stats(b), cuda_before_a = Stats(a);
  RequireOk(a.QueueExecute({}, cb, {{spun, 1}}));
  bool by_pointer = true;
  RequireOk(QueueDeviceTransfer(a, b, {}, {{copied, 1}}, flag, flag_copy, 4, &by_pointer));
  CHECK_FALSE(by_pointer);
  RequireOk(QueueDeviceTransfer(a, b, {}, {{copied, 2}}, source, target, n, &by_pointer));
  CHECK(*spun->Query() == 0);  // both accepted while the dispatch still ran
  const CudaStats queued = Stats(b), queued_a = Stats(a);
  CHECK(queued.submissions_held_back == cuda_before.submissions_held_back);  // no host thread waits
  CHECK(queued_a.submissions_held_back == cuda_before_a.submissions_held_back);
  RequireOk(copied->Wait(2, 30s));
  const DeviceStats after = b.stats();
  CHECK(after.transfers_queued - before.transfers_queued == 2);
  CHECK(after.transfer_bytes_queued - before.transfer_bytes_queued == n + 4);
  CHECK(after.transfers_peer - before.transfers_peer == 2);
  CHECK(Stats(b).peer_copies - cuda_before.peer_copies == expected_peer_copies);
  uint32_t copied_flag = 0;
  RequireOk(b.ReadBuffer(*flag_copy, 0, &copied_flag, 4));
  CHECK(copied_flag == 1);  // the copy ran after the dispatch
  std::vector<uint8_t> back(n + 64, 0xee);
  RequireOk(b.ReadBuffer(*target, 0, back.data(), n + 64));
  CHECK(std::memcmp(back.data(), pattern.data(), n) == 0);
  CHECK(back[n] == 0);  // nothing past the copied bytes (new buffers are zero-filled)
}

TEST_CASE("cuda/two logical devices of one GPU copy device-to-device on the GPU, after the source's running work") {
  CopyBetweenLogicalDevices(nullptr, 0);
}

TEST_CASE("cuda/with HEXIR_CUDA_PEER_COPY=force two logical devices of one GPU copy with cuMemcpyPeerAsync") {
  CopyBetweenLogicalDevices("force", 2);
}

// What issue 23's machines run: every pair of GPUs, both ways.
TEST_CASE("cuda/every pair of GPUs copies both ways, with cuMemcpyPeerAsync where the pair has peer access") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  auto count = DeviceCount();
  RequireOk(count.status());
  std::vector<vm::Ref<Device>> gpus;
  for (int i = 0; i < *count; ++i) {
    auto d = CreateDevice("cuda:" + std::to_string(i));
    RequireOk(d.status());
    gpus.push_back(*d);
  }
  const uint64_t n = (1 << 20) + 7;
  for (int i = 0; i < *count; ++i) {
    for (int j = 0; j < *count; ++j) {
      if (i == j) continue;
      Device &from = *gpus[i], &to = *gpus[j];
      INFO("cuda:" << i << " -> cuda:" << j);
      const bool peer = DescribeLink(from, to).peer_access;
      const std::vector<uint8_t> pattern = Pattern(n, uint32_t(i * 31 + j));
      auto source = Alloc(from, n), target = Alloc(to, n);
      RequireOk(from.WriteBuffer(*source, 0, pattern.data(), n));
      auto done = *to.CreateSemaphore(0);
      const DeviceStats before = to.stats();
      const CudaStats cuda_before = Stats(to);
      bool by_pointer = false;
      RequireOk(QueueDeviceTransfer(from, to, {}, {{done, 1}}, source, target, n, &by_pointer));
      RequireOk(done->Wait(1, 30s));
      CHECK(to.stats().transfers_queued - before.transfers_queued == 1);
      CHECK(to.stats().transfers_peer - before.transfers_peer == (peer ? 1 : 0));
      CHECK(Stats(to).peer_copies - cuda_before.peer_copies == (peer ? 1 : 0));
      std::vector<uint8_t> back(n);
      RequireOk(to.ReadBuffer(*target, 0, back.data(), n));
      CHECK(back == pattern);
    }
  }
}

}  // namespace
}  // namespace hexir::hal::cuda
