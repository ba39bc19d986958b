#include "base/interrupt.h"

#include <catch2/catch.hpp>

#include <thread>

namespace hexir {
namespace {

using std::chrono::milliseconds;

TEST_CASE("an interrupt without deadline or flag never fires and waits without slicing") {
  Interrupt none;
  REQUIRE_FALSE(none.can_fire());
  REQUIRE_FALSE(none.Fired());
  REQUIRE(none.Check().ok());
  int calls = 0;
  Status st = WaitInterruptibly(none, [&](std::chrono::nanoseconds slice) {
    ++calls;
    REQUIRE(slice == std::chrono::nanoseconds::max());
    return Status::Ok();
  });
  REQUIRE(st.ok());
  REQUIRE(calls == 1);
}

TEST_CASE("a passed deadline reports the call's budget in seconds") {
  int64_t start = Interrupt::NowNs();
  Interrupt expired(start + 2'000'000'000 - 2'000'000'001, nullptr, start - 2'000'000'000);
  Status st = expired.Check();
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(st.message() == "deadline exceeded after 2.000 s");
  Interrupt later(start + 60'000'000'000, nullptr, start);
  REQUIRE(later.Check().ok());
  REQUIRE(later.NextWaitSlice() > std::chrono::seconds(50));
}

TEST_CASE("a set flag cancels, and cancellation wins over an expired deadline") {
  std::atomic<bool> flag{false};
  int64_t now = Interrupt::NowNs();
  Interrupt interrupt(now - 1, &flag, now - 1'500'000'000);
  REQUIRE(interrupt.Fired());
  REQUIRE(interrupt.Check().message() == "deadline exceeded after 1.500 s");
  Interrupt flag_only(Interrupt::kNoDeadline, &flag, now);
  REQUIRE_FALSE(flag_only.Fired());
  flag = true;
  REQUIRE(flag_only.Fired());
  Status st = interrupt.Check();
  REQUIRE(st.code() == StatusCode::kAborted);
  REQUIRE(st.message() == "call cancelled");
}

TEST_CASE("a flag bounds each wait slice so a cancel is seen within one slice") {
  std::atomic<bool> flag{false};
  Interrupt interrupt(Interrupt::kNoDeadline, &flag, Interrupt::NowNs());
  REQUIRE(interrupt.NextWaitSlice() == std::chrono::nanoseconds(Interrupt::kWaitSliceNs));
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(30));
    flag = true;
  });
  int slices = 0;
  Status st = WaitInterruptibly(interrupt, [&](std::chrono::nanoseconds slice) {
    ++slices;
    std::this_thread::sleep_for(slice);
    return DeadlineExceeded("slice passed");
  });
  canceller.join();
  REQUIRE(st.message() == "call cancelled");
  REQUIRE(slices >= 2);
}

TEST_CASE("a wait that ends before the deadline returns its own status") {
  Interrupt interrupt(Interrupt::DeadlineAfter(10.0), nullptr, Interrupt::NowNs());
  Status st = WaitInterruptibly(interrupt, [](std::chrono::nanoseconds) {
    return FailedPrecondition("the semaphore failed");
  });
  REQUIRE(st.message() == "the semaphore failed");
}

TEST_CASE("a wait past the deadline returns deadline exceeded within a bounded time") {
  int64_t start = Interrupt::NowNs();
  Interrupt interrupt(start + 50'000'000, nullptr, start);
  Status st = WaitInterruptibly(interrupt, [](std::chrono::nanoseconds slice) {
    std::this_thread::sleep_for(slice);
    return DeadlineExceeded("slice passed");
  });
  int64_t took = Interrupt::NowNs() - start;
  REQUIRE(st.message() == "deadline exceeded after 0.050 s");
  REQUIRE(took >= 50'000'000);
  REQUIRE(took < 2'000'000'000);
}

TEST_CASE("deadlines after a non-positive or huge number of seconds saturate") {
  int64_t before = Interrupt::NowNs();
  int64_t due = Interrupt::DeadlineAfter(-1);
  REQUIRE(due >= before);
  REQUIRE(due <= Interrupt::NowNs());
  REQUIRE(Interrupt::DeadlineAfter(1e30) == Interrupt::kNoDeadline);
}

}  // namespace
}  // namespace hexir
