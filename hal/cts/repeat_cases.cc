// CommandBuffer::RepeatWhile: a body repeated on the device while an int32 condition that the
// body itself updates is nonzero, at most N times (CUDA: a conditional WHILE node; CPU: a
// host loop over the recorded body). affine_i32 (x[i] = x[i]*k + c) writes every value.
#include <chrono>

#include "hal/cts/cts.h"

namespace hexir::hal::cts {
namespace {

using namespace std::chrono_literals;

std::vector<int32_t> Download(Device& d, Buffer& b, size_t n) {
  std::vector<int32_t> v(n);
  REQUIRE(d.ReadBuffer(b, 0, v.data(), n * 4).ok());
  return v;
}

Status Run(Device& d, vm::Ref<CommandBuffer> cb, std::vector<BufferRef> table = {}) {
  auto sem = d.CreateSemaphore(0);
  REQUIRE(sem.ok());
  Status s = d.QueueExecute({}, cb, {{*sem, 1}}, table);
  if (!s.ok()) return s;
  return (*sem)->Wait(1, 30s);
}

// x[i] after `iterations` of x = 2x + 1 from x[i] = i: (i + 1) * 2^iterations - 1.
int32_t Doubled(int32_t i, int iterations) { return (i + 1) * (1 << iterations) - 1; }

}  // namespace

void RepeatWhileCase(const DriverConfig& c, Device& d) {
  auto exe_or = d.CreateExecutable(c.kernels({"affine_i32"}));
  REQUIRE(exe_or.ok());
  vm::Ref<Executable> exe = *exe_or;
  const uint32_t n = 8;
  std::vector<int32_t> start(n);
  for (uint32_t i = 0; i < n; ++i) start[i] = static_cast<int32_t>(i);

  // The body: condition -= 1 and x = 2x + 1 (independent: no barrier between them).
  auto flag = Alloc(d, 64), x = Alloc(d, 64);
  auto body = NewCb(d);
  REQUIRE(body->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flag)}, {1, 1, uint32_t(-1)}).ok());
  REQUIRE(body->Dispatch(exe, 0, {n, 1, 1}, {BufferRef::Whole(x)}, {n, 2, 1}).ok());
  REQUIRE(body->Finalize().ok());

  // 1. The condition is computed on the device by the command before the loop (flag = 0 + 5),
  //    the loop runs 5 times, and the command after it sees the loop's result (x += 1000).
  {
    auto cb = NewCb(d);
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flag)}, {1, 1, 5}).ok());
    REQUIRE(cb->RepeatWhile(body, BufferRef::Range(flag, 0, 4), 100).ok());
    REQUIRE(cb->Dispatch(exe, 0, {n, 1, 1}, {BufferRef::Whole(x)}, {n, 1, 1000}).ok());
    REQUIRE(cb->Finalize().ok());
    for (int round = 0; round < 2; ++round) {  // replayed: the same loop runs again
      REQUIRE(d.WriteBuffer(*x, 0, start.data(), n * 4).ok());
      Status s = Run(d, cb);
      INFO(s.ToString());
      REQUIRE(s.ok());
      REQUIRE(Download(d, *flag, 1)[0] == 0);
      auto got = Download(d, *x, n);
      for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == Doubled(i, 5) + 1000);
    }
  }

  // 2. At most max_iterations: a condition of 5 with a limit of 3 stops after 3 iterations.
  //    A zero condition runs the body no time.
  for (int32_t initial : {5, 0}) {
    auto cb = NewCb(d);
    REQUIRE(cb->RepeatWhile(body, BufferRef::Whole(flag), 3).ok());
    REQUIRE(cb->Finalize().ok());
    REQUIRE(d.WriteBuffer(*flag, 0, &initial, 4).ok());
    REQUIRE(d.WriteBuffer(*x, 0, start.data(), n * 4).ok());
    REQUIRE(Run(d, cb).ok());
    const int iterations = initial == 0 ? 0 : 3;
    REQUIRE(Download(d, *flag, 1)[0] == initial - iterations);
    auto got = Download(d, *x, n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == Doubled(i, iterations));
  }

  // 3. Everything through the binding table: the body's buffers in slots 0 and 1, the
  //    condition at byte 4 of slot 1; replayed with new buffers and conditions 2 and 4.
  {
    auto slot_body = NewCb(d);
    REQUIRE(slot_body->Dispatch(exe, 0, {2, 1, 1}, {BufferRef::Slot(1)}, {2, 1, uint32_t(-1)}).ok());
    REQUIRE(slot_body->Dispatch(exe, 0, {n, 1, 1}, {BufferRef::Slot(0)}, {n, 2, 1}).ok());
    REQUIRE(slot_body->Finalize().ok());
    auto cb = NewCb(d);
    BufferRef condition = BufferRef::Slot(1);
    condition.offset = 4;
    REQUIRE(cb->RepeatWhile(slot_body, condition, 1000).ok());
    REQUIRE(cb->Finalize().ok());
    REQUIRE(cb->binding_table_size() == 2);
    for (int32_t iterations : {2, 4}) {
      auto xs = Alloc(d, 64), flags = Alloc(d, 64);
      REQUIRE(d.WriteBuffer(*xs, 0, start.data(), n * 4).ok());
      const int32_t words[2] = {100, iterations};  // word 0 is decremented too, never read
      REQUIRE(d.WriteBuffer(*flags, 0, words, 8).ok());
      Status s = Run(d, cb, {BufferRef::Whole(xs), BufferRef::Whole(flags)});
      INFO(s.ToString());
      REQUIRE(s.ok());
      REQUIRE(Download(d, *flags, 2) == std::vector<int32_t>{100 - iterations, 0});
      auto got = Download(d, *xs, n);
      for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == Doubled(i, iterations));
    }
    // A condition outside its slot's range fails the submission, naming it.
    Status s = Run(d, cb, {BufferRef::Whole(x), BufferRef::Range(flag, 0, 4)});
    REQUIRE(s.code() == StatusCode::kOutOfRange);
    REQUIRE(s.message() == "repeat_while: the condition at byte 4 of binding table slot 1 lies "
                           "outside its 4-byte range");
  }

  // Record-time errors.
  auto cb = NewCb(d);
  Status s = cb->RepeatWhile(nullptr, BufferRef::Whole(flag), 1);
  REQUIRE(s.message() == "repeat_while: body is null");
  auto open = NewCb(d);
  s = cb->RepeatWhile(open, BufferRef::Whole(flag), 1);
  REQUIRE(s.code() == StatusCode::kFailedPrecondition);
  REQUIRE(s.message() == "repeat_while: the body is still recording; finalize it first");
  s = cb->RepeatWhile(body, BufferRef::Range(flag, 2, 4), 1);
  REQUIRE(s.message() == "repeat_while: condition: offset 2 is not a multiple of 4");
  s = cb->RepeatWhile(body, BufferRef::Range(flag, 64, 4), 1);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "repeat_while: condition: range [64, 68) exceeds the buffer size 64");
  auto outer = NewCb(d);
  REQUIRE(outer->RepeatWhile(body, BufferRef::Whole(flag), 1).ok());
  REQUIRE(outer->Finalize().ok());
  s = cb->RepeatWhile(outer, BufferRef::Whole(flag), 1);
  REQUIRE(s.message() == "repeat_while: the body holds a repeat_while (loops do not nest)");
}

}  // namespace hexir::hal::cts
