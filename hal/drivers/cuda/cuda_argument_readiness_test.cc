// Argument readiness on the CUDA driver, awaited per command (cuda_argument_gate.h): a chain
// of dispatches whose weights are written by a host thread through the transfer queue after
// the submission, each weight marked ready at its own timeline value. The first dispatch
// writes into mapped host memory, and the writer issues the last weight's write only once it
// sees that result there: a driver that held the submission back until every write was
// issued would never get there (the writer gives up after 20 s and the case fails). The
// results equal a host loop; the launch waited on the host for the last weight's write to be
// issued (an issue wait); a replay after everything landed waits for nothing and launches
// the graph. A write that fails, or one never issued, fails the submission with that error
// (or, never issued, after HEXIR_CUDA_ARGUMENT_STALL_MS), no hang.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/testing/device_helpers.h"
#include "hal/drivers/cuda/testing/open_or_skip.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace hexir::hal::cuda {
namespace {

using testing::Alloc;
using testing::CubinView;
using testing::OpenOrSkip;
using testing::RequireOk;
using testing::Stats;

constexpr uint32_t kN = 1003, kTile = 16, kWeights = 6;

struct Chain {
  vm::Ref<Executable> exe;
  vm::Ref<Buffer> x, y0;  // y0: host-visible (the writer watches it)
  std::vector<vm::Ref<Buffer>> w, y;
  vm::Ref<CommandBuffer> cb;
  std::vector<float> hx, expect0, expect;
  std::vector<std::vector<float>> hw;
};

// y[k] = y[k-1] + w[k] (y[-1] = x), one add_f32 dispatch per weight, barriers between them,
// every weight pending at timeline value k + 1.
Chain MakeChain(Device& d, const vm::Ref<Semaphore>& timeline) {
  Chain c;
  auto exe = d.CreateExecutable(CubinView({"add_f32"}));
  RequireOk(exe.status());
  c.exe = *exe;
  c.hx.resize(kN);
  c.expect.resize(kN);
  c.hw.assign(kWeights, std::vector<float>(kN));
  for (uint32_t i = 0; i < kN; ++i) {
    c.hx[i] = 0.25f * float(i % 97) - 3;
    c.expect[i] = c.hx[i];
    for (uint32_t k = 0; k < kWeights; ++k) {
      c.hw[k][i] = float((i * (k + 3)) % 11) - 5.5f;
      c.expect[i] += c.hw[k][i];
    }
  }
  c.expect0.resize(kN);
  for (uint32_t i = 0; i < kN; ++i) c.expect0[i] = c.hx[i] + c.hw[0][i];
  c.x = Alloc(d, kN * 4);
  RequireOk(d.WriteBuffer(*c.x, 0, c.hx.data(), kN * 4));
  c.y0 = Alloc(d, kN * 4, kMemoryHostVisible);
  for (uint32_t k = 0; k < kWeights; ++k) {
    c.w.push_back(Alloc(d, kN * 4));
    c.w.back()->SetReadyAfter({timeline, k + 1});
    c.y.push_back(k == 0 ? c.y0 : Alloc(d, kN * 4));
  }
  auto cb = d.CreateCommandBuffer();
  RequireOk(cb.status());
  c.cb = *cb;
  for (uint32_t k = 0; k < kWeights; ++k) {
    auto in = k == 0 ? c.x : c.y[k - 1];
    RequireOk(c.cb->Dispatch(c.exe, 0, {(kN + kTile - 1) / kTile, 1, 1},
                             {BufferRef::Whole(in), BufferRef::Whole(c.w[k]), BufferRef::Whole(c.y[k])},
                             {kN, kTile}));
    if (k + 1 < kWeights) RequireOk(c.cb->Barrier());
  }
  RequireOk(c.cb->Finalize());
  return c;
}

bool HostSees(const Buffer& b, const std::vector<float>& want) {
  std::vector<float> now(want.size());
  std::memcpy(now.data(), const_cast<const uint8_t*>(b.host_data()), now.size() * 4);
  return now == want;
}

TEST_CASE("cuda argument readiness: the first dispatch completes before the last write is issued") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  REQUIRE(d.AwaitsArgumentsPerCommand());  // the default (HEXIR_CUDA_GATED_ARGUMENTS unset)
  auto timeline = *d.CreateSemaphore(0);
  Chain c = MakeChain(d, timeline);
  const DeviceStats s0 = d.stats();
  const CudaStats c0 = Stats(d);

  // The "upload": every weight but the last at once, the last only after the first
  // dispatch's result is visible in host memory.
  std::atomic<bool> first_done_before_last{false};
  std::thread writer([&] {
    for (uint32_t k = 0; k < kWeights; ++k) {
      if (k + 1 == kWeights) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!HostSees(*c.y0, c.expect0) && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        first_done_before_last = HostSees(*c.y0, c.expect0);
      }
      if (!d.QueueWrite({}, {{timeline, k + 1}}, c.hw[k].data(), kN * 4, c.w[k], 0).ok())
        timeline->Fail(Internal("queue write failed"));
    }
  });
  auto done = *d.CreateSemaphore(0);
  RequireOk(d.QueueExecute({}, c.cb, {{done, 1}}));
  RequireOk(done->Wait(1));
  writer.join();
  CHECK(first_done_before_last);
  const DeviceStats s1 = d.stats();
  const CudaStats c1 = Stats(d);
  // Per command: the last weight's write was awaited on the host until issued (an issue
  // wait), then on the GPU (event waits); no submission waits were added.
  CHECK(s1.argument_waits > s0.argument_waits);
  CHECK(c1.argument_issue_waits > c0.argument_issue_waits);
  CHECK(c1.submissions_held_back == c0.submissions_held_back);
  std::vector<float> got(kN);
  RequireOk(d.ReadBuffer(*c.y.back(), 0, got.data(), kN * 4));
  CHECK(got == c.expect);

  // A replay: every readiness is reached and cleared; no wait, the graph is launched.
  RequireOk(d.QueueExecute({}, c.cb, {{done, 2}}));
  RequireOk(done->Wait(2));
  const DeviceStats s2 = d.stats();
  const CudaStats c2 = Stats(d);
  CHECK(s2.argument_waits == s1.argument_waits);
  CHECK(c2.argument_issue_waits == c1.argument_issue_waits);
  CHECK(c2.graph_launches == c1.graph_launches + 1);
  RequireOk(d.ReadBuffer(*c.y.back(), 0, got.data(), kN * 4));
  CHECK(got == c.expect);
}

TEST_CASE("cuda argument readiness: a failed readiness releases the stream and fails the submission") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  if (!d.AwaitsArgumentsPerCommand()) return;
  auto timeline = *d.CreateSemaphore(0);
  Chain c = MakeChain(d, timeline);
  auto done = *d.CreateSemaphore(0);
  RequireOk(d.QueueExecute({}, c.cb, {{done, 1}}));
  RequireOk(d.QueueWrite({}, {{timeline, 1}}, c.hw[0].data(), kN * 4, c.w[0], 0));
  timeline->Fail(DataLoss("the upload of tensor 'w1' failed"));
  Status st = done->Wait(1);
  REQUIRE(!st.ok());
  CHECK(st.message().find("the upload of tensor 'w1' failed") != std::string::npos);
  CHECK(st.message().find("argument's readiness") != std::string::npos);
  // Nothing on the stream waits for the failed write: the device goes idle.
  (void)d.WaitIdle();
}

TEST_CASE("cuda argument readiness: a write that fails in the transfer queue fails the call") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto timeline = *d.CreateSemaphore(0);
  Chain c = MakeChain(d, timeline);
  auto done = *d.CreateSemaphore(0);
  RequireOk(d.QueueExecute({}, c.cb, {{done, 1}}));
  // Weight 0 lands; weight 1's write waits for a semaphore that fails: the transfer fails and
  // fails the timeline with its error (what an upload worker's failed write does).
  RequireOk(d.QueueWrite({}, {{timeline, 1}}, c.hw[0].data(), kN * 4, c.w[0], 0));
  auto source = *d.CreateSemaphore(0);
  RequireOk(d.QueueWrite({{source, 1}}, {{timeline, 2}}, c.hw[1].data(), kN * 4, c.w[1], 0));
  source->Fail(DataLoss("reading tensor 'w2' from the checkpoint failed"));
  Status st = done->Wait(1);
  REQUIRE(!st.ok());
  CHECK(st.message().find("reading tensor 'w2' from the checkpoint failed") != std::string::npos);
  (void)d.WaitIdle();
}

TEST_CASE("cuda argument readiness: a write never issued fails the call after the stall limit") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  setenv("HEXIR_CUDA_ARGUMENT_STALL_MS", "300", 1);
  auto timeline = *d.CreateSemaphore(0);
  Chain c = MakeChain(d, timeline);
  auto done = *d.CreateSemaphore(0);
  RequireOk(d.QueueWrite({}, {{timeline, 1}}, c.hw[0].data(), kN * 4, c.w[0], 0));
  RequireOk(d.QueueExecute({}, c.cb, {{done, 1}}));  // returns: the deferred thread waits
  Status st = done->Wait(1, std::chrono::seconds(60));  // the gate's error, well before that
  unsetenv("HEXIR_CUDA_ARGUMENT_STALL_MS");
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  INFO(st.message());
  CHECK(st.message().find("timeline value 2") != std::string::npos);
  CHECK(st.message().find("add_f32") != std::string::npos);
  CHECK(st.message().find("HEXIR_CUDA_ARGUMENT_STALL_MS") != std::string::npos);
  (void)d.WaitIdle();
}

}  // namespace
}  // namespace hexir::hal::cuda
