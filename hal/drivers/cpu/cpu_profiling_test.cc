// Dispatch profiling hooks of the CPU driver (hal/profiling.h).
#include <catch2/catch.hpp>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_kernels.h"

namespace hexir::hal {
namespace {

struct Recorder : Profiler {
  std::mutex mu;
  std::vector<std::string> names;
  std::vector<DispatchTiming> timings;
  std::vector<std::string> host_spans;
  void OnDispatch(const DispatchTiming& t) override {
    std::lock_guard<std::mutex> lock(mu);
    names.push_back(t.executable->entry_name(t.entry));
    timings.push_back(t);
  }
  void OnHostSpan(const char* name, int64_t begin, int64_t end) override {
    std::lock_guard<std::mutex> lock(mu);
    REQUIRE(begin <= end);
    host_spans.push_back(name);
  }
};

void RunAdds(Device& dev, int dispatches, bool inl) {
  (void)inl;
  auto exe = dev.CreateExecutable(cpu::testing::TestKernelView({"affine_i32", "add_f32"}));
  REQUIRE(exe.ok());
  const uint32_t n = 1 << 16;
  auto a = *dev.AllocateBuffer(n * 4), b = *dev.AllocateBuffer(n * 4), c = *dev.AllocateBuffer(n * 4);
  auto cb = *dev.CreateCommandBuffer();
  for (int i = 0; i < dispatches; ++i) {
    REQUIRE(cb->Dispatch(*exe, 1, {4, 1, 1},
                         {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(c)},
                         {n, n / 4})
                .ok());
    REQUIRE(cb->Barrier().ok());
  }
  REQUIRE(cb->Finalize().ok());
  REQUIRE(dev.QueueExecute({}, cb, {}, {}).ok());
  REQUIRE(dev.WaitIdle().ok());
}

TEST_CASE("cpu profiling: one timing per dispatch, in order, only while installed") {
  for (bool inl : {false, true}) {
    DeviceOptions o;
    o.cpu_worker_count = 2;
    o.cpu_inline = inl;
    auto dev = *CreateDevice("cpu", o);
    Recorder rec;
    RunAdds(*dev, 3, inl);
    REQUIRE(rec.timings.empty());
    dev->SetProfiler(&rec);
    REQUIRE(dev->profiler() == &rec);
    int64_t before = ProfileClockNs();
    RunAdds(*dev, 3, inl);
    int64_t after = ProfileClockNs();
    dev->SetProfiler(nullptr);
    RunAdds(*dev, 2, inl);
    REQUIRE(rec.timings.size() == 3);
    REQUIRE(rec.names == std::vector<std::string>{"add_f32", "add_f32", "add_f32"});
    REQUIRE(rec.host_spans == std::vector<std::string>{"queue_execute"});
    for (size_t i = 0; i < rec.timings.size(); ++i) {
      const DispatchTiming& t = rec.timings[i];
      REQUIRE(t.begin_ns >= before);
      REQUIRE(t.end_ns <= after);
      REQUIRE(t.begin_ns <= t.end_ns);
      REQUIRE(!t.device_events);
      REQUIRE(t.workgroup_count == std::array<uint32_t, 3>{4, 1, 1});
      if (i) REQUIRE(rec.timings[i - 1].end_ns <= t.begin_ns);
    }
  }
}

TEST_CASE("cpu profiling: an indirect dispatch reports the count it read at execution") {
  auto dev = *CreateDevice("cpu");
  auto exe = dev->CreateExecutable(cpu::testing::TestKernelView({"add_f32"}));
  REQUIRE(exe.ok());
  const uint32_t n = 64;
  auto a = *dev->AllocateBuffer(n * 4), b = *dev->AllocateBuffer(n * 4), c = *dev->AllocateBuffer(n * 4);
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->DispatchIndirect(*exe, 0, BufferRef::Slot(0),
                               {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(c)},
                               {n, 16})
              .ok());
  REQUIRE(cb->Finalize().ok());
  Recorder rec;
  dev->SetProfiler(&rec);
  for (uint32_t groups : {3u, 1u}) {
    auto count = *dev->AllocateBuffer(64, kMemoryHostVisible | kMemoryUniform);
    const uint32_t words[] = {groups, 1, 1};
    std::memcpy(count->host_data(), words, sizeof(words));
    REQUIRE(dev->QueueExecute({}, cb, {}, {BufferRef::Whole(count)}).ok());
    REQUIRE(dev->WaitIdle().ok());
  }
  dev->SetProfiler(nullptr);
  REQUIRE(rec.timings.size() == 2);
  CHECK(rec.timings[0].workgroup_count == std::array<uint32_t, 3>{3, 1, 1});
  CHECK(rec.timings[1].workgroup_count == std::array<uint32_t, 3>{1, 1, 1});
}

}  // namespace
}  // namespace hexir::hal
