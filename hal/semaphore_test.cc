#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_device.h"

namespace hexir::hal {
namespace {

using namespace std::chrono_literals;

vm::Ref<Semaphore> Sem(Device& d, uint64_t v) {
  auto s = d.CreateSemaphore(v);
  REQUIRE(s.ok());
  return *s;
}

uint64_t Value(Semaphore& s) {
  auto v = s.Query();
  REQUIRE(v.ok());
  return *v;
}

TEST_CASE("semaphore: signal moves forward only") {
  auto dev = testing::CpuDevice();
  auto s = Sem(*dev, 3);
  REQUIRE(Value(*s) == 3);
  REQUIRE(s->Signal(5).ok());
  REQUIRE(Value(*s) == 5);
  Status back = s->Signal(5);
  REQUIRE(back.code() == StatusCode::kInvalidArgument);
  REQUIRE(back.message() ==
          "semaphore signal: value 5 is not greater than the current value 5 (timelines only move forward)");
}

TEST_CASE("semaphore: waits time out with DeadlineExceeded and count as host waits") {
  auto dev = testing::CpuDevice();
  auto s = Sem(*dev, 0);
  uint64_t waits = dev->stats().host_waits;
  REQUIRE(s->Wait(0, 0ns).ok());
  Status poll = s->Wait(1, 0ns);
  REQUIRE(poll.code() == StatusCode::kDeadlineExceeded);
  auto t0 = std::chrono::steady_clock::now();
  Status timed = s->Wait(2, 30ms);
  REQUIRE(timed.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(std::chrono::steady_clock::now() - t0 >= 30ms);
  REQUIRE(timed.message() == "semaphore wait for value 2 timed out after 30000 us (current value 0)");
  REQUIRE(dev->stats().host_waits == waits + 3);
}

TEST_CASE("semaphore: a waiter wakes when another thread signals") {
  auto dev = testing::CpuDevice();
  auto s = Sem(*dev, 0);
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    REQUIRE(s->Signal(1).ok());
    std::this_thread::sleep_for(20ms);
    REQUIRE(s->Signal(7).ok());
  });
  REQUIRE(s->Wait(5, 10s).ok());
  REQUIRE(Value(*s) == 7);
  t.join();
}

TEST_CASE("semaphore: failure reaches every waiter and sticks") {
  auto dev = testing::CpuDevice();
  auto s = Sem(*dev, 0);
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    s->Fail(Aborted("kernel exploded"));
  });
  Status w = s->Wait(1, 10s);
  t.join();
  REQUIRE(w.code() == StatusCode::kAborted);
  REQUIRE(w.message() == "kernel exploded");
  REQUIRE(s->Query().status().message() == "kernel exploded");
  REQUIRE(s->Signal(2).code() == StatusCode::kAborted);
  s->Fail(Internal("second failure is ignored"));
  REQUIRE(s->Wait(0, 0ns).message() == "kernel exploded");
}

// A command buffer that fills `buf` (4 bytes) with `value`.
vm::Ref<CommandBuffer> FillCb(Device& dev, vm::Ref<Buffer> buf, uint32_t value) {
  auto cb = dev.CreateCommandBuffer();
  REQUIRE(cb.ok());
  REQUIRE((*cb)->FillBuffer(buf, 0, 4, value, 4).ok());
  REQUIRE((*cb)->Finalize().ok());
  return *cb;
}

uint32_t Word(Buffer& b) {
  uint32_t v;
  std::memcpy(&v, b.host_data(), 4);
  return v;
}

TEST_CASE("SignalOrFail signals every semaphore, or fails them all with the submission's error") {
  auto dev = testing::CpuDevice();
  auto a = Sem(*dev, 0), b = Sem(*dev, 7);
  // b cannot go back to 2: it fails with that reason, which is returned; a is still signalled.
  Status st = SignalOrFail({{a, 4}, {b, 2}}, Status::Ok());
  REQUIRE(st.code() == StatusCode::kInvalidArgument);
  REQUIRE(Value(*a) == 4);
  REQUIRE(b->Query().status().message() == st.message());

  auto c = Sem(*dev, 0), d = Sem(*dev, 0);
  Status failed = SignalOrFail({{c, 1}, {d, 1}}, Internal("kernel 3 failed"));
  REQUIRE(failed.message() == "kernel 3 failed");
  for (Semaphore* s : {c.get(), d.get()}) {
    REQUIRE(s->Query().status().code() == StatusCode::kInternal);
    REQUIRE(s->Query().status().message() == "kernel 3 failed");
  }
}

TEST_CASE("queue: submissions wait for their semaphores and run in submission order") {
  auto dev = testing::CpuDevice();
  auto buf = *dev->AllocateBuffer(4);
  auto gate = Sem(*dev, 0);
  auto done = Sem(*dev, 0);
  auto first = FillCb(*dev, buf, 11);
  auto second = FillCb(*dev, buf, 22);
  REQUIRE(dev->QueueExecute({{gate, 1}}, first, {{done, 1}}).ok());
  // No waits, but it is behind `first` in the queue.
  REQUIRE(dev->QueueExecute({}, second, {{done, 2}}).ok());
  REQUIRE(done->Wait(1, 50ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(Word(*buf) == 0);
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(done->Wait(2, 10s).ok());
  REQUIRE(Word(*buf) == 22);  // second ran after first
  REQUIRE(dev->WaitIdle().ok());
}

TEST_CASE("queue: a failed wait semaphore propagates to the signal semaphores") {
  auto dev = testing::CpuDevice();
  auto buf = *dev->AllocateBuffer(4);
  auto gate = Sem(*dev, 0);
  auto done = Sem(*dev, 0);
  REQUIRE(dev->QueueExecute({{gate, 1}}, FillCb(*dev, buf, 5), {{done, 1}}).ok());
  gate->Fail(Aborted("upstream failed"));
  Status w = done->Wait(1, 10s);
  REQUIRE(w.code() == StatusCode::kAborted);
  REQUIRE(w.message() == "upstream failed");
  REQUIRE(Word(*buf) == 0);  // never executed
  REQUIRE(dev->WaitIdle().ok());  // delivered through `done`, not again here
}

TEST_CASE("queue: a failed submission without signal semaphores is reported by WaitIdle once") {
  auto dev = testing::CpuDevice();
  auto buf = *dev->AllocateBuffer(4);
  auto gate = Sem(*dev, 0);
  REQUIRE(dev->QueueExecute({{gate, 1}}, FillCb(*dev, buf, 5), {}).ok());
  gate->Fail(Aborted("upstream failed"));
  Status idle = dev->WaitIdle();
  REQUIRE(idle.code() == StatusCode::kAborted);
  REQUIRE(idle.message() == "upstream failed");
  REQUIRE(dev->WaitIdle().ok());
}

TEST_CASE("queue: WaitIdle times out while a submission is blocked") {
  auto dev = testing::CpuDevice();
  auto buf = *dev->AllocateBuffer(4);
  auto gate = Sem(*dev, 0);
  REQUIRE(dev->QueueExecute({{gate, 1}}, FillCb(*dev, buf, 5), {}).ok());
  uint64_t waits = dev->stats().host_waits;
  Status idle = dev->WaitIdle(20ms);
  REQUIRE(dev->stats().host_waits == waits + 1);
  REQUIRE(idle.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(idle.message() == "device wait idle timed out with 1 submission(s) pending");
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(dev->WaitIdle().ok());
  REQUIRE(Word(*buf) == 5);
}

TEST_CASE("queue: destroying a device aborts a submission blocked on a semaphore") {
  auto gate_holder = vm::Ref<Semaphore>();
  auto done_holder = vm::Ref<Semaphore>();
  {
    auto dev = testing::CpuDevice();
    auto buf = *dev->AllocateBuffer(4);
    gate_holder = Sem(*dev, 0);
    done_holder = Sem(*dev, 0);
    REQUIRE(dev->QueueExecute({{gate_holder, 1}}, FillCb(*dev, buf, 5), {{done_holder, 1}}).ok());
  }
  Status w = done_holder->Wait(1, 10s);
  REQUIRE(w.code() == StatusCode::kAborted);
  REQUIRE(w.message().find("device was destroyed") != std::string::npos);
}

TEST_CASE("queue (inline): executes at submission; unsatisfied waits are an error") {
  auto dev = testing::CpuDevice(-1, /*inline_execution=*/true);
  auto buf = *dev->AllocateBuffer(4);
  auto gate = Sem(*dev, 0);
  auto done = Sem(*dev, 0);
  REQUIRE(dev->QueueExecute({}, FillCb(*dev, buf, 9), {{done, 1}}).ok());
  REQUIRE(Word(*buf) == 9);
  REQUIRE(Value(*done) == 1);
  Status s = dev->QueueExecute({{gate, 1}}, FillCb(*dev, buf, 10), {{done, 2}});
  REQUIRE(s.code() == StatusCode::kFailedPrecondition);
  REQUIRE(s.message().find("wait semaphore is at 0, needs 1") != std::string::npos);
  REQUIRE(done->Wait(2, 0ns).code() == StatusCode::kFailedPrecondition);  // failed, not pending
  REQUIRE(Word(*buf) == 9);
}

TEST_CASE("WaitSemaphores: all / any, deadlines, failures") {
  auto a = vm::MakeRef<Semaphore>(0, nullptr), b = vm::MakeRef<Semaphore>(0, nullptr);
  REQUIRE(WaitSemaphores({}, WaitMode::kAll, 0ns).ok());
  REQUIRE(WaitSemaphores({{a, 1}, {b, 1}}, WaitMode::kAny, 0ns).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(b->Signal(1).ok());
  REQUIRE(WaitSemaphores({{a, 1}, {b, 1}}, WaitMode::kAny, 0ns).ok());
  auto t0 = std::chrono::steady_clock::now();
  Status all = WaitSemaphores({{a, 1}, {b, 1}}, WaitMode::kAll, 30ms);
  REQUIRE(all.code() == StatusCode::kDeadlineExceeded);
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(took >= 30ms);
  REQUIRE(took < 5s);
  // Released from another thread while waiting (any: the second one of the list).
  auto c = vm::MakeRef<Semaphore>(0, nullptr);
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    REQUIRE(c->Signal(3).ok());
  });
  REQUIRE(WaitSemaphores({{a, 1}, {c, 2}}, WaitMode::kAny, 10s).ok());
  t.join();
  REQUIRE(a->Signal(1).ok());
  REQUIRE(WaitSemaphores({{a, 1}, {b, 1}, {c, 3}}, WaitMode::kAll, 10s).ok());
  // A failed semaphore: kAll fails; kAny fails only when nothing else can be reached.
  auto f = vm::MakeRef<Semaphore>(0, nullptr);
  f->Fail(Aborted("device lost"));
  REQUIRE(WaitSemaphores({{a, 1}, {f, 1}}, WaitMode::kAll).message() == "device lost");
  REQUIRE(WaitSemaphores({{f, 1}, {a, 1}}, WaitMode::kAny).ok());
  REQUIRE(WaitSemaphores({{f, 1}, {a, 9}}, WaitMode::kAny, 10ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(WaitSemaphores({{f, 1}}, WaitMode::kAny).message() == "device lost");
  REQUIRE(WaitSemaphores({{a, 1}, {nullptr, 1}}, WaitMode::kAll).message() ==
          "wait semaphores: semaphore 1 is null");
}

TEST_CASE("semaphore wait: the spin before sleeping is bounded and sees signals and failures") {
  auto dev = testing::CpuDevice();
  // A timeout shorter than the spin still times out, after about the timeout: the fastest of
  // five waits (one preempted wait on a loaded machine can take a whole time slice).
  auto s = Sem(*dev, 0);
  auto fastest = std::chrono::steady_clock::duration::max();
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = s->Wait(1, 2us);
    fastest = std::min(fastest, std::chrono::steady_clock::now() - t0);
    REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  }
  REQUIRE(fastest < 5ms);
  // A signal landing during the spin (another thread, a few microseconds later) is seen.
  for (int i = 0; i < 20; ++i) {
    auto sem = Sem(*dev, 0);
    std::thread t([&] { REQUIRE(sem->Signal(1).ok()); });
    REQUIRE(sem->Wait(1, 1s).ok());
    t.join();
  }
  // Signals long after the spin wake the sleeping waiter; failures end the spin too.
  auto late = Sem(*dev, 0);
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    REQUIRE(late->Signal(3).ok());
  });
  REQUIRE(late->Wait(2, 5s).ok());
  t.join();
  auto failing = Sem(*dev, 0);
  std::thread f([&] { failing->Fail(Aborted("boom in the spin test")); });
  Status failed = failing->Wait(1, 5s);
  f.join();
  REQUIRE(failed.code() == StatusCode::kAborted);
  REQUIRE(failed.message().find("boom in the spin test") != std::string::npos);
}

// A device's progress hook: signals the semaphore from inside the waiter's own spin after a
// number of polls (as the CUDA driver retires a finished submission on the waiting thread).
class SignalAfterPolls final : public WaitProgress {
 public:
  SignalAfterPolls(Semaphore* semaphore, int polls) : semaphore_(semaphore), polls_left_(polls) {}
  void Poll() override {
    ++polls_;
    poll_thread_ = std::this_thread::get_id();
    if (--polls_left_ == 0) (void)semaphore_->Signal(1);
  }
  int64_t spin_ns() const override { return 50'000'000; }  // long enough for any scheduler
  int polls_ = 0;
  std::thread::id poll_thread_;

 private:
  Semaphore* semaphore_;
  int polls_left_;
};

TEST_CASE("semaphore: a wait polls the device's WaitProgress and is satisfied on its own thread") {
  auto s = vm::MakeRef<Semaphore>(0, nullptr);
  auto progress = std::make_shared<SignalAfterPolls>(s.get(), 5);
  s->SetWaitProgress(progress);
  REQUIRE(s->Wait(1, std::chrono::seconds(10)).ok());
  REQUIRE(progress->polls_ == 5);
  REQUIRE(progress->poll_thread_ == std::this_thread::get_id());
  REQUIRE(*s->Query() == 1);
}

TEST_CASE("semaphore: a wait with a WaitProgress still times out when nothing signals") {
  auto s = vm::MakeRef<Semaphore>(0, nullptr);
  auto progress = std::make_shared<SignalAfterPolls>(s.get(), -1);  // never signals
  s->SetWaitProgress(progress);
  Status st = s->Wait(1, std::chrono::milliseconds(2));
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(progress->polls_ > 0);
}

}  // namespace
}  // namespace hexir::hal
