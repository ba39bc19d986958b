// The queue machinery the CPU and CUDA drivers share (queue_submission.h).
#include "hal/queue_submission.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "hal/api.h"

namespace hexir::hal {
namespace {

vm::Ref<Semaphore> NewSemaphore(uint64_t value, std::shared_ptr<DeviceCounters> counters = nullptr) {
  return vm::MakeRef<Semaphore>(value, std::move(counters));
}

TEST_CASE("queue semaphore checks name the first null wait, then the first null signal") {
  auto s = NewSemaphore(0);
  REQUIRE(CheckQueueSemaphores("queue execute", {{s, 1}}, {{s, 2}}).ok());
  Status st = CheckQueueSemaphores("queue fill", {{s, 1}, {nullptr, 2}}, {{nullptr, 3}});
  REQUIRE(st.code() == StatusCode::kInvalidArgument);
  REQUIRE(st.message() == "queue fill: wait semaphore 1 is null");
  st = CheckQueueSemaphores("queue copy", {{s, 1}}, {{s, 2}, {s, 3}, {nullptr, 4}});
  REQUIRE(st.message() == "queue copy: signal semaphore 2 is null");
}

TEST_CASE("a binding table slot whose buffer the driver cannot use is named with the reason") {
  auto device = *CreateDevice("cpu", {});
  auto cb = vm::MakeRef<CommandBuffer>(nullptr);
  REQUIRE(cb->Finalize().ok());
  auto small = *device->AllocateBuffer(64), large = *device->AllocateBuffer(256);
  auto below_100_bytes = [](const Buffer& b) { return b.byte_size() < 100; };
  std::vector<BufferRef> resolved;
  REQUIRE(ResolveQueueBindingTable(cb.get(), {BufferRef::Whole(small)}, &resolved, below_100_bytes,
                                   "too large")
              .ok());
  REQUIRE(resolved.size() == 1);
  REQUIRE(resolved[0].length == 64);  // lengths are made concrete
  Status st = ResolveQueueBindingTable(cb.get(), {BufferRef::Whole(small), BufferRef::Whole(large)},
                                       &resolved, below_100_bytes, "too large");
  REQUIRE(st.code() == StatusCode::kInvalidArgument);
  REQUIRE(st.message() == "queue execute: binding table slot 1: too large");
  auto unfinished = vm::MakeRef<CommandBuffer>(nullptr);
  st = ResolveQueueBindingTable(unfinished.get(), {}, &resolved, below_100_bytes, "too large");
  REQUIRE(st.code() == StatusCode::kFailedPrecondition);  // ResolveBindingTable's own check
  // The drivers rely on it to refuse a null command buffer before they dereference one.
  st = ResolveQueueBindingTable(nullptr, {BufferRef::Whole(small)}, &resolved, below_100_bytes,
                                "too large");
  REQUIRE(st.code() == StatusCode::kInvalidArgument);
  REQUIRE(st.message() == "queue execute: command buffer is null");
}

TEST_CASE("reached waits are dropped, queue-ordered ones kept, unsignalled ones hold the submission") {
  auto counters = std::make_shared<DeviceCounters>();
  auto reached = NewSemaphore(5), queued = NewSemaphore(0), host = NewSemaphore(0);
  PendingSignals pending;
  pending.Add(queued.get(), 3);
  std::vector<SemaphoreValue> kept;
  REQUIRE_FALSE(KeepUnreachedWaits({{reached, 5}, {queued, 3}}, pending, *counters, &kept));
  REQUIRE(kept.size() == 1);
  REQUIRE(kept[0].semaphore.get() == queued.get());
  REQUIRE(KeepUnreachedWaits({{host, 1}, {reached, 2}}, pending, *counters, &kept));
  REQUIRE(kept.size() == 2);
  REQUIRE(kept[1].semaphore.get() == host.get());
  DeviceStats stats = counters->Snapshot();
  REQUIRE(stats.queue_waits_elided == 3);
  REQUIRE(stats.queue_waits == 1);
}

TEST_CASE("a held-back wait releases the queue lock while it sleeps and ends when the value is signalled") {
  auto s = NewSemaphore(0);
  Mutex mu;
  MutexLock lock(mu);
  bool took_lock = false, signalled = false;
  std::thread signaller([&] {
    // The waiter sleeps without the lock: another thread can take it (bounded: 2 s).
    for (int i = 0; i < 2000 && !took_lock; ++i) {
      if (mu.TryLock()) {
        took_lock = true;
        mu.Unlock();
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    signalled = s->Signal(4).ok();
  });
  int polls = 0;
  Status st = AwaitHeldBackWait(
      mu, {s, 4},
      [&] {
        ++polls;
        return *s->Query() >= 4;
      },
      [] { return false; });
  signaller.join();
  REQUIRE(took_lock);
  REQUIRE(signalled);
  REQUIRE(st.ok());
  REQUIRE(polls >= 2);
}

TEST_CASE("a held-back wait fails with the semaphore's failure or when the device stops") {
  auto s = NewSemaphore(0);
  Mutex mu;
  MutexLock lock(mu);
  auto not_reached = [&] { return *s->Query() >= 9; };
  Status st = AwaitHeldBackWait(mu, {s, 9}, not_reached, [] { return true; });
  REQUIRE(st.code() == StatusCode::kAborted);
  REQUIRE(st.message() ==
          "queue execute: the device was destroyed while a submission waited for a semaphore "
          "to reach 9");
  s->Fail(DataLoss("producer failed"));
  st = AwaitHeldBackWait(mu, {s, 9}, [] { return false; }, [] { return false; });
  REQUIRE(st.code() == StatusCode::kDataLoss);
  REQUIRE(st.message() == "producer failed");
}

TEST_CASE("only the first failure of a submission without signals is kept for WaitIdle") {
  auto s = NewSemaphore(0);
  UnsignalledFailure failure;
  failure.Keep(Internal("has signals"), {{s, 1}});
  failure.Keep(Status::Ok(), {});
  REQUIRE(failure.Take().ok());
  failure.Keep(Internal("first"), {});
  failure.Keep(Internal("second"), {});
  Status first = failure.Take();
  REQUIRE(first.message() == "first");
  REQUIRE(failure.Take().ok());  // taken once
}

}  // namespace
}  // namespace hexir::hal
