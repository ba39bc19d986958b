// A collective does not hold back the commands that do not depend on it (collective_lane.h):
// checked by ordering, not time. Rank 1 joins rank 0's all_reduce only after it has seen
// the output of a dispatch recorded beside (or after) that all_reduce on rank 0; if the
// dispatch waited for the collective, rank 1 would never see it (the poll gives up after 20 s
// and rank 1 then joins anyway, so nothing hangs).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "hal/api.h"
#include "hal/channel.h"
#include "hal/drivers/cpu/testing/test_kernels.h"
#include "hal/drivers/cpu/testing/test_device.h"
#include "hal/element_type.h"

namespace hexir::hal {
namespace {

TEST_CASE("a dispatch in the wave of an all_reduce runs while the all_reduce waits for its peer") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  std::vector<vm::Ref<Device>> devices = {testing::CpuDevice(2), testing::CpuDevice(2)};
  auto channels = devices[0]->CreateGroupChannels({devices[0].get(), devices[1].get()});
  INFO(channels.status().ToString());
  REQUIRE(channels.ok());
  auto exe = devices[0]->CreateExecutable(cpu::testing::TestKernelView({"affine_i32"}));
  REQUIRE(exe.ok());
  const int32_t kI32 = static_cast<int32_t>(ElementType::kI32);
  std::vector<vm::Ref<Buffer>> sends, recvs;
  std::vector<vm::Ref<CommandBuffer>> cbs;
  for (int32_t r = 0; r < 2; ++r) {
    sends.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {r + 1, 10 * (r + 1)}));
    recvs.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {0, 0}));
    auto cb = devices[r]->CreateCommandBuffer();
    REQUIRE(cb.ok());
    REQUIRE((*cb)->Collective((*channels)[r], CollectiveKind::kAllReduce, ReductionOp::kSum, kI32, 2, 0,
                              BufferRef::Whole(sends[r]), BufferRef::Whole(recvs[r])).ok());
    cbs.push_back(*cb);
  }
  // Rank 0's wave: the all_reduce, then (no barrier) marker = marker * 1 + 42.
  vm::Ref<Buffer> marker = testing::DeviceBuffer<int32_t>(*devices[0], {0});
  REQUIRE(cbs[0]->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(marker)}, {1, 1, 42}).ok());
  for (auto& cb : cbs) REQUIRE(cb->Finalize().ok());
  std::vector<vm::Ref<Semaphore>> done = {*devices[0]->CreateSemaphore(0), *devices[1]->CreateSemaphore(0)};
  const DeviceStats before = devices[0]->stats();
  REQUIRE(devices[0]->QueueExecute({}, cbs[0], {{done[0], 1}}).ok());
  int32_t seen = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen != 42 && std::chrono::steady_clock::now() < give_up) {
    REQUIRE(devices[0]->ReadBuffer(*marker, 0, &seen, 4).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The all_reduce cannot have finished: rank 1 has not issued its part yet.
  CHECK(done[0]->Query().ok());
  CHECK(*done[0]->Query() == 0);
  REQUIRE(devices[1]->QueueExecute({}, cbs[1], {{done[1], 1}}).ok());
  for (int32_t r = 0; r < 2; ++r) REQUIRE(done[r]->Wait(1).ok());
  CHECK(seen == 42);  // the dispatch ran before rank 1 joined
  for (int32_t r = 0; r < 2; ++r) {
    std::vector<int32_t> sum(2);
    REQUIRE(devices[r]->ReadBuffer(*recvs[r], 0, sum.data(), 8).ok());
    CHECK(sum == std::vector<int32_t>{3, 30});
  }
  const DeviceStats after = devices[0]->stats();
  CHECK(after.collectives_executed - before.collectives_executed == 1);
  CHECK(after.collectives_overlapped - before.collectives_overlapped == 1);
  CHECK(devices[1]->stats().collectives_overlapped == 0);  // its wave held the all_reduce alone
}

// Polls `marker` until it holds `value` (at most 20 s); returns what it last read.
int32_t AwaitValue(Device& device, Buffer& marker, int32_t value) {
  int32_t seen = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen != value && std::chrono::steady_clock::now() < give_up) {
    REQUIRE(device.ReadBuffer(marker, 0, &seen, 4).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return seen;
}

// Rank 0 records: all_reduce(send -> recv); barrier; marker = 42 (touches neither buffer);
// barrier; recv = recv + 100 (reads the result). The marker must appear before rank 1 joins;
// the last dispatch must see the sum (103, 130), not run before the all_reduce wrote it.
void CheckOnlyDependentCommandsWait(int32_t workers) {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  std::vector<vm::Ref<Device>> devices = {testing::CpuDevice(workers), testing::CpuDevice(workers)};
  auto channels = devices[0]->CreateGroupChannels({devices[0].get(), devices[1].get()});
  REQUIRE(channels.ok());
  const int32_t kI32 = static_cast<int32_t>(ElementType::kI32);
  std::vector<vm::Ref<Buffer>> sends, recvs;
  std::vector<vm::Ref<CommandBuffer>> cbs;
  vm::Ref<Buffer> marker = testing::DeviceBuffer<int32_t>(*devices[0], {0});
  for (int32_t r = 0; r < 2; ++r) {
    auto exe = devices[r]->CreateExecutable(cpu::testing::TestKernelView({"affine_i32"}));
    REQUIRE(exe.ok());
    sends.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {r + 1, 10 * (r + 1)}));
    recvs.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {0, 0}));
    auto cb = *devices[r]->CreateCommandBuffer();
    REQUIRE(cb->Collective((*channels)[r], CollectiveKind::kAllReduce, ReductionOp::kSum, kI32, 2, 0,
                           BufferRef::Whole(sends[r]), BufferRef::Whole(recvs[r])).ok());
    REQUIRE(cb->Barrier().ok());
    if (r == 0) REQUIRE(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(marker)}, {1, 1, 42}).ok());
    REQUIRE(cb->Barrier().ok());
    REQUIRE(cb->Dispatch(*exe, 0, {2, 1, 1}, {BufferRef::Whole(recvs[r])}, {2, 1, 100}).ok());
    REQUIRE(cb->Finalize().ok());
    cbs.push_back(cb);
  }
  std::vector<vm::Ref<Semaphore>> done = {*devices[0]->CreateSemaphore(0), *devices[1]->CreateSemaphore(0)};
  REQUIRE(devices[0]->QueueExecute({}, cbs[0], {{done[0], 1}}).ok());
  const int32_t seen = AwaitValue(*devices[0], *marker, 42);
  CHECK(*done[0]->Query() == 0);  // the all_reduce waits for rank 1
  REQUIRE(devices[1]->QueueExecute({}, cbs[1], {{done[1], 1}}).ok());
  for (int32_t r = 0; r < 2; ++r) REQUIRE(done[r]->Wait(1).ok());
  CHECK(seen == 42);  // the independent dispatch ran before rank 1 joined
  for (int32_t r = 0; r < 2; ++r) {
    INFO("rank " << r);
    std::vector<int32_t> result(2);
    REQUIRE(devices[r]->ReadBuffer(*recvs[r], 0, result.data(), 8).ok());
    CHECK(result == std::vector<int32_t>{103, 130});  // the dependent dispatch waited
    CHECK(devices[r]->stats().collectives_executed == 1);
  }
  CHECK(devices[0]->stats().collectives_overlapped == 1);
}

TEST_CASE("a dispatch after a barrier runs while an all_reduce it does not touch waits, and one reading its result waits") {
  SECTION("two workers (waves)") { CheckOnlyDependentCommandsWait(2); }
  SECTION("one worker (commands in turn)") { CheckOnlyDependentCommandsWait(1); }
}

// Rank 0 records: all_reduce(send -> recv) of f32; barrier; out = send + send (add_f32, whose
// module table says it writes only binding 2: it reads the all_reduce's input, which the
// collective only reads too). It must run before rank 1 joins; the sums are still right.
void CheckReadOfTheInputDoesNotWait(int32_t workers) {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  std::vector<vm::Ref<Device>> devices = {testing::CpuDevice(workers), testing::CpuDevice(workers)};
  auto channels = devices[0]->CreateGroupChannels({devices[0].get(), devices[1].get()});
  REQUIRE(channels.ok());
  const int32_t kF32 = static_cast<int32_t>(ElementType::kF32);
  auto floats = [](Device& d, std::vector<float> v) {
    auto b = d.AllocateBuffer(v.size() * 4);
    REQUIRE(b.ok());
    REQUIRE(d.WriteBuffer(**b, 0, v.data(), v.size() * 4).ok());
    return *b;
  };
  vm::ExecutableView view = cpu::testing::TestKernelView({"add_f32"});
  view.entry_written_bindings = {uint64_t{1} << 2};
  auto exe = devices[0]->CreateExecutable(view);
  REQUIRE(exe.ok());
  REQUIRE_FALSE((*exe)->MayWriteBinding(0, 0));
  REQUIRE((*exe)->MayWriteBinding(0, 2));
  std::vector<vm::Ref<Buffer>> sends, recvs;
  std::vector<vm::Ref<CommandBuffer>> cbs;
  vm::Ref<Buffer> doubled = floats(*devices[0], {-1.0f, -1.0f});
  for (int32_t r = 0; r < 2; ++r) {
    sends.push_back(floats(*devices[r], {float(r + 1), float(10 * (r + 1))}));
    recvs.push_back(floats(*devices[r], {0.0f, 0.0f}));
    auto cb = *devices[r]->CreateCommandBuffer();
    REQUIRE(cb->Collective((*channels)[r], CollectiveKind::kAllReduce, ReductionOp::kSum, kF32, 2, 0,
                           BufferRef::Whole(sends[r]), BufferRef::Whole(recvs[r])).ok());
    REQUIRE(cb->Barrier().ok());
    if (r == 0) {
      REQUIRE(cb->Dispatch(*exe, 0, {1, 1, 1},
                           {BufferRef::Whole(sends[0]), BufferRef::Whole(sends[0]),
                            BufferRef::Whole(doubled)},
                           {2, 2})
                  .ok());
    }
    REQUIRE(cb->Finalize().ok());
    cbs.push_back(cb);
  }
  std::vector<vm::Ref<Semaphore>> done = {*devices[0]->CreateSemaphore(0), *devices[1]->CreateSemaphore(0)};
  REQUIRE(devices[0]->QueueExecute({}, cbs[0], {{done[0], 1}}).ok());
  float seen[2] = {0, 0};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen[1] != 20.0f && std::chrono::steady_clock::now() < give_up) {
    REQUIRE(devices[0]->ReadBuffer(*doubled, 0, seen, 8).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(*done[0]->Query() == 0);  // the all_reduce waits for rank 1
  REQUIRE(devices[1]->QueueExecute({}, cbs[1], {{done[1], 1}}).ok());
  for (int32_t r = 0; r < 2; ++r) REQUIRE(done[r]->Wait(1).ok());
  CHECK(seen[0] == 2.0f);  // the reading dispatch ran before rank 1 joined
  CHECK(seen[1] == 20.0f);
  for (int32_t r = 0; r < 2; ++r) {
    INFO("rank " << r);
    std::vector<float> sum(2);
    REQUIRE(devices[r]->ReadBuffer(*recvs[r], 0, sum.data(), 8).ok());
    CHECK(sum == std::vector<float>{3.0f, 30.0f});
  }
  CHECK(devices[0]->stats().collectives_overlapped == 1);
}

TEST_CASE("a dispatch after a barrier that only reads an all_reduce's input runs while it waits") {
  SECTION("two workers (waves)") { CheckReadOfTheInputDoesNotWait(2); }
  SECTION("one worker (commands in turn)") { CheckReadOfTheInputDoesNotWait(1); }
}

// Two collectives of one wave run one after the other in recording order on every rank (a
// broadcast from rank 1, then an all_reduce of what it delivered), with a dispatch beside them.
TEST_CASE("collectives sharing a wave run in recording order beside its dispatch") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  std::vector<vm::Ref<Device>> devices = {testing::CpuDevice(2), testing::CpuDevice(2)};
  auto channels = devices[0]->CreateGroupChannels({devices[0].get(), devices[1].get()});
  REQUIRE(channels.ok());
  const int32_t kI32 = static_cast<int32_t>(ElementType::kI32);
  std::vector<vm::Ref<Buffer>> values, delivered, sums, markers;
  std::vector<vm::Ref<Semaphore>> done;
  for (int32_t r = 0; r < 2; ++r) {
    auto exe = devices[r]->CreateExecutable(cpu::testing::TestKernelView({"affine_i32"}));
    REQUIRE(exe.ok());
    values.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {5 + r}));
    delivered.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {0}));
    sums.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {0}));
    markers.push_back(testing::DeviceBuffer<int32_t>(*devices[r], {1}));
    auto cb = *devices[r]->CreateCommandBuffer();
    REQUIRE(cb->Collective((*channels)[r], CollectiveKind::kBroadcast, ReductionOp::kSum, kI32, 1, 1,
                           BufferRef::Whole(values[r]), BufferRef::Whole(delivered[r])).ok());
    REQUIRE(cb->Collective((*channels)[r], CollectiveKind::kAllReduce, ReductionOp::kSum, kI32, 1, 0,
                           BufferRef::Whole(delivered[r]), BufferRef::Whole(sums[r])).ok());
    REQUIRE(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(markers[r])}, {1, 3, 0}).ok());
    REQUIRE(cb->Finalize().ok());
    done.push_back(*devices[r]->CreateSemaphore(0));
    REQUIRE(devices[r]->QueueExecute({}, cb, {{done[r], 1}}).ok());
  }
  for (int32_t r = 0; r < 2; ++r) {
    INFO("rank " << r);
    REQUIRE(done[r]->Wait(1).ok());
    int32_t sum = 0, mark = 0;
    REQUIRE(devices[r]->ReadBuffer(*sums[r], 0, &sum, 4).ok());
    REQUIRE(devices[r]->ReadBuffer(*markers[r], 0, &mark, 4).ok());
    CHECK(sum == 12);  // both ranks hold rank 1's 6 after the broadcast
    CHECK(mark == 3);
    CHECK(devices[r]->stats().collectives_overlapped == 2);
  }
}

// The overlap count follows from the recording alone (collective_lane.h), never from how
// fast the collective ran: on a channel of one rank an all_reduce is a copy that completes at
// once, yet an independent command recorded before the first dependent one counts it, every
// time, and one recorded after it never does. Replayed 24 times per order, each with one and
// two workers: exactly 24 and exactly 0.
void CheckOverlapCountIsFromTheRecording(int32_t workers, bool independent_first) {
  vm::Ref<Device> device = testing::CpuDevice(workers);
  auto channel = device->CreateChannel();
  REQUIRE(channel.ok());
  auto exe = device->CreateExecutable(cpu::testing::TestKernelView({"affine_i32"}));
  REQUIRE(exe.ok());
  const int32_t kI32 = static_cast<int32_t>(ElementType::kI32);
  vm::Ref<Buffer> send = testing::DeviceBuffer<int32_t>(*device, {7, 8});
  vm::Ref<Buffer> recv = testing::DeviceBuffer<int32_t>(*device, {0, 0});
  vm::Ref<Buffer> marker = testing::DeviceBuffer<int32_t>(*device, {0});
  auto cb = *device->CreateCommandBuffer();
  REQUIRE(cb->Collective(*channel, CollectiveKind::kAllReduce, ReductionOp::kSum, kI32, 2, 0,
                         BufferRef::Whole(send), BufferRef::Whole(recv)).ok());
  auto independent = [&] {  // marker = marker + 1: touches neither buffer
    REQUIRE(cb->Barrier().ok());
    REQUIRE(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(marker)}, {1, 1, 1}).ok());
  };
  auto dependent = [&] {  // recv = recv + 100: reads the result
    REQUIRE(cb->Barrier().ok());
    REQUIRE(cb->Dispatch(*exe, 0, {2, 1, 1}, {BufferRef::Whole(recv)}, {2, 1, 100}).ok());
  };
  if (independent_first) independent();
  dependent();
  if (!independent_first) independent();
  REQUIRE(cb->Finalize().ok());
  const int kRuns = 24;
  const DeviceStats before = device->stats();
  auto sem = *device->CreateSemaphore(0);
  for (int i = 1; i <= kRuns; ++i) REQUIRE(device->QueueExecute({}, cb, {{sem, uint64_t(i)}}).ok());
  REQUIRE(sem->Wait(kRuns).ok());
  std::vector<int32_t> result(2);
  int32_t marks = 0;
  REQUIRE(device->ReadBuffer(*recv, 0, result.data(), 8).ok());
  REQUIRE(device->ReadBuffer(*marker, 0, &marks, 4).ok());
  CHECK(result == std::vector<int32_t>{107, 108});  // each run: the copy, then + 100
  CHECK(marks == kRuns);
  const DeviceStats after = device->stats();
  CHECK(after.collectives_executed - before.collectives_executed == kRuns);
  CHECK(after.collectives_overlapped - before.collectives_overlapped ==
        (independent_first ? kRuns : 0));
}

TEST_CASE("the overlap count does not depend on how fast the collective completes") {
  SECTION("independent first, two workers") { CheckOverlapCountIsFromTheRecording(2, true); }
  SECTION("independent first, one worker") { CheckOverlapCountIsFromTheRecording(1, true); }
  SECTION("dependent first, two workers") { CheckOverlapCountIsFromTheRecording(2, false); }
  SECTION("dependent first, one worker") { CheckOverlapCountIsFromTheRecording(1, false); }
}

}  // namespace
}  // namespace hexir::hal
