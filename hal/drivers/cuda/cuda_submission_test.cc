// The containers of the CUDA submission path (cuda_submission.h). Host-only: no GPU needed.
#include "hal/drivers/cuda/cuda_submission.h"

#include <catch2/catch.hpp>

namespace hexir::hal::cuda {
namespace {

std::unique_ptr<Submission> WithSeq(uint64_t seq) {
  auto s = std::make_unique<Submission>();
  s->seq = seq;
  return s;
}

TEST_CASE("a submission fifo pops submissions in push order across wrap-around and growth",
          "[cuda][submission]") {
  SubmissionFifo fifo;
  uint64_t pushed = 0, popped = 0;
  // Interleave pushes and pops so the head moves before the ring grows (16 -> 32 -> 64).
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 5 + 7 * round; ++i) fifo.push_back(WithSeq(++pushed));
    REQUIRE(fifo.back().seq == pushed);
    for (int i = 0; i < 3 + round; ++i) {
      REQUIRE(fifo.front().seq == popped + 1);
      REQUIRE(fifo.pop_front()->seq == ++popped);
    }
    REQUIRE(fifo.size() == pushed - popped);
  }
  while (!fifo.empty()) REQUIRE(fifo.pop_front()->seq == ++popped);
  REQUIRE(popped == pushed);
  REQUIRE(pushed > 64);
}

TEST_CASE("a recycled submission comes back cleared, its references dropped, its storage kept",
          "[cuda][submission]") {
  SubmissionPool pool(4);
  auto semaphore = vm::MakeRef<Semaphore>(0, nullptr);
  std::unique_ptr<Submission> s = pool.Take();
  Submission* const address = s.get();
  for (int i = 0; i < 8; ++i) s->signals.push_back({semaphore, uint64_t(i + 1)});
  s->waits.push_back({semaphore, 1});
  s->seq = 7;
  s->pooled_event = false;
  const size_t capacity = s->signals.capacity();
  REQUIRE(semaphore->ref_count() == 10);

  s->Clear();
  REQUIRE(semaphore->ref_count() == 1);  // only the test's own reference is left
  pool.Give(std::move(s));
  REQUIRE(pool.kept() == 1);

  std::unique_ptr<Submission> again = pool.Take();
  REQUIRE(again.get() == address);  // the same object: no allocation
  REQUIRE(again->signals.empty());
  REQUIRE(again->waits.empty());
  REQUIRE(again->signals.capacity() == capacity);
  REQUIRE(again->seq == 0);
  REQUIRE(again->pooled_event);
  REQUIRE(again->event == nullptr);
  REQUIRE(!again->command_buffer);
}

TEST_CASE("a submission pool keeps at most its limit and then allocates new submissions",
          "[cuda][submission]") {
  SubmissionPool pool(2);
  for (int i = 0; i < 5; ++i) pool.Give(std::make_unique<Submission>());
  REQUIRE(pool.kept() == 2);
  std::unique_ptr<Submission> a = pool.Take(), b = pool.Take();
  REQUIRE(pool.kept() == 0);
  std::unique_ptr<Submission> c = pool.Take();  // empty pool: a fresh one
  REQUIRE(c != nullptr);
  REQUIRE(c.get() != a.get());
  REQUIRE(c.get() != b.get());
}

}  // namespace
}  // namespace hexir::hal::cuda
