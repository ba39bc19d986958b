// The profiler hexir-bench installs for its profiled calls (collector.h): it keeps every
// dispatch and host span in order, with their entry names, parameter words and call, and,
// once reserved and once a name has been seen, records them without a heap allocation
// (counted here by replacing the global operator new), so that the kernels it times see the
// heap as unprofiled calls do.
#include <catch2/catch.hpp>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "hal/executable.h"
#include "tools/hexir-bench/collector.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};
}  // namespace

void* operator new(size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace hexir::tools::bench {
namespace {

class TestExecutable final : public hal::Executable {
 public:
  explicit TestExecutable(std::vector<std::string> entries) : Executable("test", "test", std::move(entries)) {}
};

hal::DispatchTiming Timing(const hal::Executable* exe, uint32_t entry, int64_t begin, const std::vector<int64_t>& words) {
  hal::DispatchTiming t;
  t.executable = exe;
  t.entry = entry;
  t.begin_ns = begin;
  t.end_ns = begin + 10;
  t.parameter_words = words.empty() ? nullptr : words.data();
  t.parameter_word_count = static_cast<uint32_t>(words.size());
  return t;
}

TEST_CASE("recorded dispatches keep their entry names, words and calls, in order") {
  TestExecutable a({"main_dispatch_with_a_long_name_0", "main_dispatch_with_a_long_name_1"});
  Collector c;
  c.set_call(0);
  c.OnDispatch(Timing(&a, 1, 100, {7, 8, 9}));
  c.OnHostSpan("queue_execute", 90, 95);
  c.set_call(1);
  c.OnDispatch(Timing(&a, 0, 200, {}));
  c.OnDispatch(Timing(nullptr, 0, 300, {4}));
  c.AddHostSpan("vm.invoke main", "VM", 80, 310);
  std::vector<DispatchEvent> events = c.dispatches();
  REQUIRE(events.size() == 3);
  CHECK(events[0].entry == "main_dispatch_with_a_long_name_1");
  CHECK(events[0].words == std::vector<int64_t>{7, 8, 9});
  CHECK(events[0].call == 0);
  CHECK(events[0].begin_ns == 100);
  CHECK(events[0].end_ns == 110);
  CHECK(events[1].entry == "main_dispatch_with_a_long_name_0");
  CHECK(events[1].words.empty());
  CHECK(events[1].call == 1);
  CHECK(events[2].entry == "?");
  CHECK(events[2].words == std::vector<int64_t>{4});
  std::vector<HostSpan> spans = c.host_spans();
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].name == "hal.queue_execute");
  CHECK(spans[0].track == "HAL");
  CHECK(spans[0].call == 0);
  CHECK(spans[1].name == "vm.invoke main");
  CHECK(spans[1].track == "VM");
  CHECK(spans[1].call == 1);
}

TEST_CASE("an executable at the address of a freed one is recorded under its own entry names") {
  Collector c;
  auto* first = new TestExecutable({"first_executable_entry_name"});
  const hal::Executable* address = first;
  c.OnDispatch(Timing(first, 0, 0, {}));
  first->~TestExecutable();
  auto* second = new (first) TestExecutable({"second_executable_entry_name"});
  REQUIRE(static_cast<const hal::Executable*>(second) == address);
  c.OnDispatch(Timing(second, 0, 10, {}));
  second->~TestExecutable();
  ::operator delete(static_cast<void*>(second));
  std::vector<DispatchEvent> events = c.dispatches();
  REQUIRE(events.size() == 2);
  CHECK(events[0].entry == "first_executable_entry_name");
  CHECK(events[1].entry == "second_executable_entry_name");
}

TEST_CASE("after Reserve, recording dispatches and driver spans of seen names allocates nothing") {
  TestExecutable a({"main_dispatch_with_a_long_name_0", "main_dispatch_with_a_long_name_1"});
  const std::vector<int64_t> words = {1, 2, 3, 4};
  Collector c;
  c.Reserve(/*dispatches=*/2000, /*words=*/8000, /*spans=*/2000);
  c.OnDispatch(Timing(&a, 0, 0, words));  // the names, seen once
  c.OnDispatch(Timing(&a, 1, 0, words));
  c.OnHostSpan("queue_execute", 0, 1);
  c.AddHostSpan("hal.wait_idle", "HAL", 0, 2);
  allocations = 0;
  counting = true;
  for (int i = 0; i < 500; ++i) {
    c.set_call(i);
    c.OnDispatch(Timing(&a, i % 2, i, words));
    c.OnHostSpan("queue_execute", i, i + 1);
    c.AddHostSpan("hal.wait_idle", "HAL", i, i + 2);
  }
  counting = false;
  CHECK(allocations.load() == 0);
  std::vector<DispatchEvent> events = c.dispatches();
  REQUIRE(events.size() == 502);
  CHECK(c.host_spans().size() == 1002);
  CHECK(events.back().entry == "main_dispatch_with_a_long_name_1");
  CHECK(events.back().words == words);
  CHECK(events.back().call == 499);
}

}  // namespace
}  // namespace hexir::tools::bench
