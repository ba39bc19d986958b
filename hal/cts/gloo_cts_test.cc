// The CTS channel cases on in-process Gloo groups (hal/channel.h CreateInProcessChannels) of 2
// and 4 CPU devices, one rank per device, the collectives running on the devices' queue
// threads; and what a group does when a rank times out or disappears.
#include <chrono>
#include <cstdlib>
#include <string>

#include "hal/cts/cts.h"

namespace hexir::hal::cts {
namespace {

void RequireOk(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// `count` queued CPU devices (one worker each) and one in-process channel per device.
struct InProcessGroup {
  std::vector<vm::Ref<Device>> owned;
  ChannelGroup group;

  explicit InProcessGroup(int32_t count) {
    DeviceOptions options;
    options.cpu_worker_count = 1;
    for (int32_t i = 0; i < count; ++i) {
      auto device = CreateDevice("cpu", options);
      RequireOk(device.status());
      owned.push_back(*device);
      group.devices.push_back(device->get());
    }
    auto channels = CreateInProcessChannels(count);
    RequireOk(channels.status());
    for (int32_t i = 0; i < count; ++i) {
      REQUIRE((*channels)[i]->rank() == i);
      REQUIRE((*channels)[i]->count() == count);
      REQUIRE((*channels)[i]->backend() == "gloo");
      group.channels.push_back((*channels)[i]);
    }
  }
};

// Submits an all_reduce of 4 x f32 on each of `devices` (through `channels`) and returns the
// signal semaphores.
std::vector<vm::Ref<Semaphore>> SubmitAllReduce(const std::vector<Device*>& devices,
                                                const std::vector<vm::Ref<Channel>>& channels) {
  std::vector<vm::Ref<Semaphore>> sems;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto buffer = devices[i]->AllocateBuffer(16);
    RequireOk(buffer.status());
    auto cb = devices[i]->CreateCommandBuffer();
    RequireOk(cb.status());
    RequireOk((*cb)->Collective(channels[i], CollectiveKind::kAllReduce, ReductionOp::kSum,
                                int32_t(ElementType::kF32), 4, 0, BufferRef::Whole(*buffer),
                                BufferRef::Whole(*buffer)));
    RequireOk((*cb)->Finalize());
    auto sem = devices[i]->CreateSemaphore(0);
    RequireOk(sem.status());
    RequireOk(devices[i]->QueueExecute({}, *cb, {{*sem, 1}}));
    sems.push_back(*sem);
  }
  return sems;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("an in-process gloo group of 2 passes every channel case") {
  InProcessGroup g(2);
  ChannelAllReduce(g.group);
  ChannelReduceScatter(g.group);
  ChannelDataMovement(g.group);
  ChannelReplay(g.group);
  ChannelMisuse(g.group);
  ChannelOverlap(g.group);
}

TEST_CASE("an in-process gloo group of 4 passes every channel case") {
  InProcessGroup g(4);
  ChannelAllReduce(g.group);
  ChannelReduceScatter(g.group);
  ChannelDataMovement(g.group);
  ChannelReplay(g.group);
  ChannelMisuse(g.group);
  ChannelOverlap(g.group);
}

TEST_CASE("a group of one through gloo passes every channel case") {
  InProcessGroup g(1);
  ChannelAllReduce(g.group);
  ChannelDataMovement(g.group);
  ChannelReplay(g.group);
}

TEST_CASE("ranks whose peer never joins time out naming the collective and their rank") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "1", 1);
  InProcessGroup g(3);
  unsetenv("HEXIR_COLLECTIVE_TIMEOUT");
  // Ranks 0 and 1 all_reduce; rank 2 never records anything.
  const auto start = std::chrono::steady_clock::now();
  auto sems = SubmitAllReduce({g.group.devices[0], g.group.devices[1]},
                              {g.group.channels[0], g.group.channels[1]});
  for (int rank = 0; rank < 2; ++rank) {
    Status st = sems[rank]->Wait(1, std::chrono::seconds(60));  // a hang fails, not blocks
    INFO(st.ToString());
    REQUIRE((st.code() == StatusCode::kDeadlineExceeded || st.code() == StatusCode::kAborted));
    REQUIRE_THAT(st.message(), Catch::Contains("all_reduce (collective #1 on the gloo channel rank " +
                                               std::to_string(rank) + " of 3)"));
    REQUIRE_THAT(st.message(), Catch::Contains("timed out after"));
    if (st.code() == StatusCode::kAborted) {
      REQUIRE_THAT(st.message(), Catch::Contains("failed because rank"));
    }
  }
  REQUIRE(SecondsSince(start) < 20);
  // The channel stays failed: the next collective fails at once, naming its number.
  const auto again = std::chrono::steady_clock::now();
  auto later = SubmitAllReduce({g.group.devices[0]}, {g.group.channels[0]});
  Status st = later[0]->Wait(1);
  REQUIRE_FALSE(st.ok());
  REQUIRE_THAT(st.message(), Catch::Contains("all_reduce (collective #2 on the gloo channel rank 0"));
  REQUIRE(SecondsSince(again) < 1);
}

TEST_CASE("a rank that disappears fails its peers' collective at once, not at the timeout") {
  InProcessGroup g(3);  // the default timeout: 300 s
  // Rank 2 goes away (its channel is destroyed: its connections close) while ranks 0 and 1
  // wait for it in an all_reduce.
  auto sems = SubmitAllReduce({g.group.devices[0], g.group.devices[1]},
                              {g.group.channels[0], g.group.channels[1]});
  const auto start = std::chrono::steady_clock::now();
  g.group.channels[2] = nullptr;
  for (int rank = 0; rank < 2; ++rank) {
    Status st = sems[rank]->Wait(1, std::chrono::seconds(60));  // a hang fails, not blocks
    INFO(st.ToString());
    REQUIRE(st.code() == StatusCode::kAborted);
    REQUIRE_THAT(st.message(), Catch::Contains("all_reduce (collective #1 on the gloo channel rank " +
                                               std::to_string(rank) + " of 3)"));
  }
  REQUIRE(SecondsSince(start) < 20);
}

TEST_CASE("in-process channels refuse a group of no ranks") {
  auto none = CreateInProcessChannels(0);
  REQUIRE(none.status().code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(none.status().message(), Catch::Contains("0 ranks requested"));
}

}  // namespace hexir::hal::cts
