#include "hal/drivers/cpu/work_estimate.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace hexir::hal::cpu {
namespace {

TEST_CASE("work estimate: flops and bytes from the cost attrs, unknown where one is missing or '?'") {
  vm::ExecutableView view;
  view.entry_points = {"a", "b", "c", "d"};
  view.attrs = {
      {"cost.a.flops", "1000000"}, {"cost.a.bytes_read", "40000"}, {"cost.a.bytes_written", "10000"},
      {"cost.b.flops", "?"}, {"cost.b.bytes_read", "8"}, {"cost.b.bytes_written", "8"},
      {"cost.b.flops.formula", "a0d0 * 2"},
      {"cost.c.flops", "0"}, {"cost.c.bytes_read", "5e4"},  // no bytes_written
      {"cost.x.flops", "1"}, {"note", "cost.d.flops"},  // another entry; not a cost attr
  };
  std::vector<double> work = EstimateEntryWorkNs(view);
  REQUIRE(work.size() == 4);
  CHECK(work[0] == Approx(1000000 / kFlopsPerNs + 50000 / kBytesPerNs));
  CHECK(work[1] == kUnknownWorkNs);
  CHECK(work[2] == kUnknownWorkNs);
  CHECK(work[3] == kUnknownWorkNs);
}

TEST_CASE("work estimate: one thread per minimum work, at most the pool and the indices") {
  const double min = 20000;
  CHECK(ThreadsForWork(19999, 64, 2, min) == 1);
  CHECK(ThreadsForWork(40000, 64, 2, min) == 2);
  CHECK(ThreadsForWork(1e9, 64, 2, min) == 2);
  CHECK(ThreadsForWork(1e9, 3, 16, min) == 3);
  CHECK(ThreadsForWork(100000, 64, 16, min) == 5);
  CHECK(ThreadsForWork(kUnknownWorkNs, 64, 16, min) == 16);  // unknown: every thread
  CHECK(ThreadsForWork(10, 64, 16, 0) == 16);                // 0: the policy is off
  CHECK(ThreadsForWork(1e9, 0, 4, min) == 1);
  CHECK(ThreadsForWork(1e9, 64, 1, min) == 1);
}

TEST_CASE("work estimate: HEXIR_CPU_MIN_WORK_PER_THREAD_NS overrides the default") {
  unsetenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
  CHECK(MinWorkPerThreadNs() == kDefaultMinWorkPerThreadNs);
  setenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS", "0", 1);
  CHECK(MinWorkPerThreadNs() == 0);
  setenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS", "5000", 1);
  CHECK(MinWorkPerThreadNs() == 5000);
  setenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS", "fast", 1);  // not a number: the default
  CHECK(MinWorkPerThreadNs() == kDefaultMinWorkPerThreadNs);
  unsetenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
}

}  // namespace
}  // namespace hexir::hal::cpu
