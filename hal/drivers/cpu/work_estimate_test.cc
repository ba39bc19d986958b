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
      {"cost.b.flops.formula", "2*a0d0"},  // a formula for people, no words: unknown
      {"cost.c.flops", "0"}, {"cost.c.bytes_read", "5e4"},  // no bytes_written
      {"cost.x.flops", "1"}, {"note", "cost.d.flops"},  // another entry; not a cost attr
  };
  std::vector<EntryWork> work = EstimateEntryWork(view);
  REQUIRE(work.size() == 4);
  CHECK(work[0].known);
  CHECK(work[0].ns.words_read == 0);
  CHECK(work[0].profile_words == 0);
  CHECK(work[0].Evaluate(nullptr, 0) == Approx(1000000 / kFlopsPerNs + 50000 / kBytesPerNs));
  for (int i = 1; i < 4; ++i) {
    INFO("entry " << i);
    CHECK(!work[i].known);
    CHECK(work[i].Evaluate(nullptr, 0) == kUnknownWorkNs);
  }
}

TEST_CASE("work estimate: run-time shapes as polynomials over the parameter words") {
  vm::ExecutableView view;
  view.entry_points = {"dyn", "no_params", "bad_symbol", "bad_coefficient", "one_unknown"};
  view.attrs = {
      {"cost.dyn.flops", "?"}, {"cost.dyn.flops.words", "100*w0*w2 + 50"},
      {"cost.dyn.bytes_read", "1000"}, {"cost.dyn.bytes_written", "?"},
      {"cost.dyn.bytes_written.words", "8*w1"}, {"cost.dyn.params", "3"},
      {"cost.no_params.flops", "?"}, {"cost.no_params.flops.words", "2*w0"},
      {"cost.no_params.bytes_read", "0"}, {"cost.no_params.bytes_written", "0"},
      {"cost.bad_symbol.flops", "?"}, {"cost.bad_symbol.flops.words", "2*a0d0"},
      {"cost.bad_symbol.bytes_read", "0"}, {"cost.bad_symbol.bytes_written", "0"},
      {"cost.bad_symbol.params", "1"},
      {"cost.bad_coefficient.flops", "?"}, {"cost.bad_coefficient.flops.words", "x*w0"},
      {"cost.bad_coefficient.bytes_read", "0"}, {"cost.bad_coefficient.bytes_written", "0"},
      {"cost.bad_coefficient.params", "1"},
      // Words for the bytes but none for the flops: unknown as a whole.
      {"cost.one_unknown.flops", "?"}, {"cost.one_unknown.bytes_read", "?"},
      {"cost.one_unknown.bytes_read.words", "4*w0"}, {"cost.one_unknown.bytes_written", "0"},
      {"cost.one_unknown.params", "1"},
  };
  std::vector<EntryWork> work = EstimateEntryWork(view);
  REQUIRE(work.size() == 5);
  const EntryWork& dyn = work[0];
  REQUIRE(dyn.known);
  CHECK(dyn.param_binding == 3);
  CHECK(dyn.ns.words_read == 3);
  CHECK(dyn.profile_words == 3);
  const int64_t words[] = {7, 11, 13};
  CHECK(dyn.Evaluate(words, 3) ==
        Approx((100.0 * 7 * 13 + 50) / kFlopsPerNs + (1000.0 + 8 * 11) / kBytesPerNs));
  CHECK(dyn.Evaluate(words, 2) == kUnknownWorkNs);  // too few words
  const int64_t negative[] = {7, -1, 13};
  CHECK(dyn.Evaluate(negative, 3) == kUnknownWorkNs);
  for (int i = 1; i < 5; ++i) {
    INFO("entry " << view.entry_points[i]);
    CHECK(!work[i].known);
  }
  // A profiler still gets the words of a formula that parses where the work is unknown as a
  // whole (hexir-bench evaluates the bytes); none without a binding or a parsable formula.
  CHECK(work[4].profile_words == 1);
  CHECK(work[4].param_binding == 1);
  CHECK(work[1].profile_words == 0);
  CHECK(work[2].profile_words == 0);
  CHECK(work[3].profile_words == 0);
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
