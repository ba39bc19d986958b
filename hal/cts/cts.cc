#include "hal/cts/cts.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstring>

namespace hexir::hal::cts {

vm::Ref<Buffer> Alloc(Device& d, uint64_t n) {
  auto b = d.AllocateBuffer(n);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  return *b;
}

vm::Ref<CommandBuffer> NewCb(Device& d) {
  auto cb = d.CreateCommandBuffer();
  INFO(cb.status().ToString());
  REQUIRE(cb.ok());
  return *cb;
}

vm::Ref<Semaphore> NewSem(Device& d, uint64_t initial) {
  auto s = d.CreateSemaphore(initial);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return *s;
}

namespace {

using namespace std::chrono_literals;

vm::Ref<Executable> Kernels(const DriverConfig& c, Device& d, std::vector<std::string_view> e) {
  auto exe = d.CreateExecutable(c.kernels(std::move(e)));
  INFO(exe.status().ToString());
  REQUIRE(exe.ok());
  return *exe;
}

template <typename T>
void Upload(Device& d, Buffer& b, const std::vector<T>& v) {
  REQUIRE(d.WriteBuffer(b, 0, v.data(), v.size() * sizeof(T)).ok());
}

template <typename T>
std::vector<T> Download(Device& d, Buffer& b, size_t n, uint64_t offset = 0) {
  std::vector<T> v(n);
  REQUIRE(d.ReadBuffer(b, offset, v.data(), n * sizeof(T)).ok());
  return v;
}

void Submit(Device& d, vm::Ref<CommandBuffer> cb, std::vector<BufferRef> table = {}) {
  auto sem = NewSem(d, 0);
  Status s = d.QueueExecute({}, cb, {{sem, 1}}, table);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Status w = sem->Wait(1, 30s);
  INFO(w.ToString());
  REQUIRE(w.ok());
}

}  // namespace

void RunCase(const DriverConfig& config, const char* case_name, CaseFn fn) {
  auto missing = config.unsupported.find(case_name);
  if (missing != config.unsupported.end()) {
    std::printf("HEXIR_SKIPPED: cts/%s/%s: %s\n", config.name.c_str(), case_name,
                missing->second.c_str());
    std::fflush(stdout);
    return;
  }
  auto device = config.create_device(DeviceOptions{});
  if (device.status().code() == StatusCode::kUnavailable) {
    std::printf("HEXIR_SKIPPED: cts/%s/%s: %s\n", config.name.c_str(), case_name,
                device.status().message().c_str());
    std::fflush(stdout);
    return;
  }
  INFO(device.status().ToString());
  REQUIRE(device.ok());
  fn(config, **device);
}

void BuffersCase(const DriverConfig&, Device& d) {
  DeviceStats before = d.stats();
  {
    auto empty = Alloc(d, 0);
    REQUIRE(empty->byte_size() == 0);
    auto b = Alloc(d, 1000);
    REQUIRE(b->byte_size() == 1000);
    REQUIRE(std::string(b->type_name()) == "hal.buffer");
    REQUIRE(Download<uint8_t>(d, *b, 1000) == std::vector<uint8_t>(1000, 0));
    std::vector<uint8_t> bytes(1000);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
    Upload(d, *b, bytes);
    REQUIRE(Download<uint8_t>(d, *b, 1000) == bytes);
    REQUIRE(Download<uint8_t>(d, *b, 10, 990) == std::vector<uint8_t>(bytes.end() - 10, bytes.end()));
    REQUIRE(d.ReadBuffer(*b, 995, bytes.data(), 10).code() == StatusCode::kOutOfRange);
    REQUIRE(d.stats().buffers_live == before.buffers_live + 2);
    REQUIRE(d.stats().buffer_bytes_live == before.buffer_bytes_live + 1000);

    const float data[6] = {1, 2, 3, 4, 5, 6};
    auto view = BufferViewFromHost(d, static_cast<int32_t>(ElementType::kF32),
                                   std::vector<int64_t>{3, 2}, data, sizeof(data));
    REQUIRE(view.ok());
    std::vector<uint8_t> out;
    REQUIRE(BufferViewToHost(d, **view, &out).ok());
    REQUIRE(std::memcmp(out.data(), data, sizeof(data)) == 0);
  }
  REQUIRE(d.stats().buffers_live == before.buffers_live);
}

void CopyFillCase(const DriverConfig&, Device& d) {
  auto a = Alloc(d, 256), b = Alloc(d, 256);
  std::vector<uint8_t> src(256);
  for (int i = 0; i < 256; ++i) src[i] = static_cast<uint8_t>(255 - i);
  Upload(d, *a, src);
  auto cb = NewCb(d);
  REQUIRE(cb->FillBuffer(b, 0, 256, 0x11, 1).ok());
  REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->CopyBuffer(a, 64, b, 128, 64).ok());
  REQUIRE(cb->FillBuffer(b, 4, 8, 0xDEADBEEF, 4).ok());
  REQUIRE(cb->FillBuffer(b, 20, 4, 0x1234, 2).ok());
  REQUIRE(cb->Finalize().ok());
  Submit(d, cb);
  std::vector<uint8_t> expect(256, 0x11);
  std::memcpy(&expect[128], &src[64], 64);
  const uint8_t beef[4] = {0xEF, 0xBE, 0xAD, 0xDE};
  for (int i = 4; i < 12; ++i) expect[i] = beef[(i - 4) % 4];
  expect[20] = expect[22] = 0x34;
  expect[21] = expect[23] = 0x12;
  REQUIRE(Download<uint8_t>(d, *b, 256) == expect);
}

void DispatchCase(const DriverConfig& c, Device& d) {
  auto exe = Kernels(c, d, {"add_f32", "affine_i32"});
  const uint32_t n = 777, tile = 32;
  std::vector<float> ha(n), hb(n), expect(n);
  for (uint32_t i = 0; i < n; ++i) {
    ha[i] = static_cast<float>(i) * 0.25f;
    hb[i] = 3.0f - static_cast<float>(i);
    expect[i] = ha[i] + hb[i];
  }
  auto a = Alloc(d, n * 4), b = Alloc(d, n * 4), out = Alloc(d, n * 4);
  Upload(d, *a, ha);
  Upload(d, *b, hb);
  std::vector<int32_t> hx(60);
  for (int i = 0; i < 60; ++i) hx[i] = i - 30;
  auto x = Alloc(d, 60 * 4);
  Upload(d, *x, hx);
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 0, {(n + tile - 1) / tile, 1, 1},
                       {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)}, {n, tile})
              .ok());
  REQUIRE(cb->Dispatch(exe, 1, {3, 4, 5}, {BufferRef::Whole(x)}, {60, 2, 1}).ok());
  REQUIRE(cb->Finalize().ok());
  uint64_t dispatches = d.stats().dispatches_executed;
  Submit(d, cb);
  REQUIRE(Download<float>(d, *out, n) == expect);
  auto gx = Download<int32_t>(d, *x, 60);
  for (int i = 0; i < 60; ++i) REQUIRE(gx[i] == (i - 30) * 2 + 1);
  REQUIRE(d.stats().dispatches_executed == dispatches + 2);
}

void ReplayCase(const DriverConfig& c, Device& d) {
  auto exe = Kernels(c, d, {"add_f32"});
  const uint32_t n = 64;
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 0, {2, 1, 1}, {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)},
                       {n, n / 2})
              .ok());
  REQUIRE(cb->Finalize().ok());
  uint64_t recorded = d.stats().command_buffers_recorded;
  for (int round = 0; round < 4; ++round) {
    std::vector<float> ha(n), hb(n), expect(n);
    for (uint32_t i = 0; i < n; ++i) {
      ha[i] = static_cast<float>(round * 1000 + i);
      hb[i] = static_cast<float>(round);
      expect[i] = ha[i] + hb[i];
    }
    auto a = Alloc(d, n * 4), b = Alloc(d, n * 4), out = Alloc(d, n * 4);
    Upload(d, *a, ha);
    Upload(d, *b, hb);
    Submit(d, cb, {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)});
    REQUIRE(Download<float>(d, *out, n) == expect);
  }
  REQUIRE(d.stats().command_buffers_recorded == recorded);
}

void SemaphoreOrderingCase(const DriverConfig&, Device& d) {
  // A chain of submissions, each waiting for the previous one's signal and appending to a
  // buffer; submitted in reverse dependency order of release (the gate opens last).
  auto buf = Alloc(d, 64);
  auto gate = NewSem(d, 0);
  auto chain = NewSem(d, 0);
  for (uint32_t i = 1; i <= 8; ++i) {
    auto cb = NewCb(d);
    // word i-1 := i, then copy word i-1 to word 8+i-1 (reads what this submission wrote).
    REQUIRE(cb->FillBuffer(buf, (i - 1) * 4, 4, i, 4).ok());
    REQUIRE(cb->Barrier().ok());
    REQUIRE(cb->CopyBuffer(buf, (i - 1) * 4, buf, 32 + (i - 1) * 4, 4).ok());
    REQUIRE(cb->Finalize().ok());
    std::vector<SemaphoreValue> waits = {{i == 1 ? gate : chain, i == 1 ? 1u : i - 1}};
    REQUIRE(d.QueueExecute(waits, cb, {{chain, i}}).ok());
  }
  REQUIRE(chain->Wait(1, 20ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(Download<uint32_t>(d, *buf, 16) == std::vector<uint32_t>(16, 0));
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(chain->Wait(8, 30s).ok());
  auto words = Download<uint32_t>(d, *buf, 16);
  for (uint32_t i = 0; i < 8; ++i) {
    REQUIRE(words[i] == i + 1);
    REQUIRE(words[8 + i] == i + 1);
  }
}

void TimeoutCase(const DriverConfig&, Device& d) {
  auto sem = NewSem(d, 5);
  REQUIRE(sem->Wait(5, 0ns).ok());
  REQUIRE(sem->Wait(6, 0ns).code() == StatusCode::kDeadlineExceeded);
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(sem->Wait(6, 25ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(std::chrono::steady_clock::now() - t0 >= 25ms);
  // A submission blocked on `sem` keeps the queue busy until it is released.
  auto buf = Alloc(d, 4);
  auto cb = NewCb(d);
  REQUIRE(cb->FillBuffer(buf, 0, 4, 3, 4).ok());
  REQUIRE(cb->Finalize().ok());
  auto done = NewSem(d, 0);
  REQUIRE(d.QueueExecute({{sem, 6}}, cb, {{done, 1}}).ok());
  REQUIRE(done->Wait(1, 20ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(d.WaitIdle(20ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(sem->Signal(6).ok());
  REQUIRE(done->Wait(1, 30s).ok());
  REQUIRE(d.WaitIdle(30s).ok());
  REQUIRE(Download<uint32_t>(d, *buf, 1)[0] == 3);
  // A read after pending work needs neither a semaphore nor WaitIdle: it follows the fill.
  auto cb2 = NewCb(d);
  REQUIRE(cb2->FillBuffer(buf, 0, 4, 11, 4).ok());
  REQUIRE(cb2->Finalize().ok());
  REQUIRE(d.QueueExecute({}, cb2, {}).ok());
  uint32_t word = 0;
  REQUIRE(d.ReadBufferAfterPendingWork(*buf, 0, &word, 4).ok());
  REQUIRE(word == 11);
}

void InterruptCase(const DriverConfig&, Device& d) {
  constexpr int64_t kMs = 1'000'000;
  auto sem = NewSem(d, 5);
  // A semaphore that is never signalled: the deadline ends the wait, once counted.
  uint64_t waits_before = d.stats().host_waits;
  int64_t start = Interrupt::NowNs();
  Status st = sem->Wait(6, kInfiniteTimeout, Interrupt(start + 50 * kMs, nullptr, start));
  int64_t took = Interrupt::NowNs() - start;
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(st.message() == "deadline exceeded after 0.050 s");
  REQUIRE(took >= 50 * kMs);
  REQUIRE(took < 5000 * kMs);
  REQUIRE(d.stats().host_waits == waits_before + 1);
  // A cancel from another thread ends it within a slice; a shorter own timeout still wins.
  std::atomic<bool> cancelled{false};
  Interrupt cancellable(Interrupt::kNoDeadline, &cancelled, Interrupt::NowNs());
  std::thread canceller([&] {
    std::this_thread::sleep_for(30ms);
    cancelled = true;
  });
  st = sem->Wait(6, kInfiniteTimeout, cancellable);
  canceller.join();
  REQUIRE(st.code() == StatusCode::kAborted);
  REQUIRE(st.message() == "call cancelled");
  cancelled = false;
  st = sem->Wait(6, 20ms, cancellable);
  REQUIRE(st.message() == "semaphore wait for value 6 timed out after 20000 us (current value 5)");
  // Queued work blocked on `sem`: WaitIdle and a read after it stop at the deadline, the
  // work stays queued, and the device completes it once released.
  auto buf = Alloc(d, 4);
  auto cb = NewCb(d);
  REQUIRE(cb->FillBuffer(buf, 0, 4, 9, 4).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(d.QueueExecute({{sem, 6}}, cb, {}).ok());
  start = Interrupt::NowNs();
  st = d.WaitIdle(Interrupt(start + 40 * kMs, &cancelled, start));
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(st.message() == "deadline exceeded after 0.040 s");
  uint32_t word = 0;
  start = Interrupt::NowNs();
  st = d.ReadBufferAfterPendingWork(*buf, 0, &word, 4, Interrupt(start + 40 * kMs, nullptr, start));
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(sem->Signal(6).ok());
  REQUIRE(d.ReadBufferAfterPendingWork(*buf, 0, &word, 4, cancellable).ok());
  REQUIRE(word == 9);
  REQUIRE(d.WaitIdle(30s).ok());
}

void MisuseCase(const DriverConfig& c, Device& d) {
  auto exe = Kernels(c, d, {"add_f32", "fail_at"});
  auto buf = Alloc(d, 64);
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 2, {1, 1, 1}, {}).code() == StatusCode::kOutOfRange);
  REQUIRE(cb->CopyBuffer(buf, 0, buf, 32, 64).code() == StatusCode::kOutOfRange);
  REQUIRE(cb->FillBuffer(buf, 60, 8, 0, 1).code() == StatusCode::kOutOfRange);
  REQUIRE(d.QueueExecute({}, cb, {}).code() == StatusCode::kFailedPrecondition);
  REQUIRE(cb->Dispatch(exe, 1, {4, 1, 1}, {}, {3}).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(cb->Barrier().code() == StatusCode::kFailedPrecondition);
  auto sem = NewSem(d, 0);
  REQUIRE(d.QueueExecute({}, cb, {{sem, 1}}).ok());
  Status w = sem->Wait(1, 30s);
  REQUIRE(w.code() == StatusCode::kAborted);
  REQUIRE(w.message().find("'fail_at'") != std::string::npos);
  REQUIRE(d.WaitIdle(30s).ok());  // reported through `sem`
  // Without a signal semaphore the failure is returned (inline) or kept for WaitIdle.
  Status submit = d.QueueExecute({}, cb, {});
  Status idle = d.WaitIdle(30s);
  REQUIRE((submit.ok() ? idle : submit).code() == StatusCode::kAborted);
  REQUIRE(d.WaitIdle(30s).ok());
  // ReadBufferAfterPendingWork reports (and clears) such a failure the same way.
  submit = d.QueueExecute({}, cb, {});
  uint32_t word = 7;
  Status read = d.ReadBufferAfterPendingWork(*buf, 0, &word, 4);
  REQUIRE((submit.ok() ? read : submit).code() == StatusCode::kAborted);
  REQUIRE(d.ReadBufferAfterPendingWork(*buf, 0, &word, 4).ok());
  REQUIRE(d.ReadBufferAfterPendingWork(*buf, 62, &word, 4).code() == StatusCode::kOutOfRange);
  auto missing = d.CreateExecutable(c.kernels({"not_a_kernel"}));
  REQUIRE(missing.status().code() == StatusCode::kNotFound);
  REQUIRE(missing.status().message().find("not_a_kernel") != std::string::npos);

  // Binding tables are checked at submission (shared ResolveBindingTable messages).
  auto slots = NewCb(d);
  REQUIRE(slots->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)},
                          {16, 16})
              .ok());
  REQUIRE(slots->Finalize().ok());
  REQUIRE(slots->Finalize().code() == StatusCode::kFailedPrecondition);
  Status s = d.QueueExecute({}, slots, {}, {BufferRef::Whole(buf)});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "queue execute: the command buffer uses 3 binding table slot(s) but 1 were supplied");
  s = d.QueueExecute({}, slots, {}, {BufferRef::Whole(buf), BufferRef::Slot(0), BufferRef::Whole(buf)});
  REQUIRE(s.message() == "queue execute: binding table slot 1: must name a buffer, not another slot");
  s = d.QueueExecute({}, slots, {},
                     {BufferRef::Whole(buf), BufferRef::Range(buf, 32, 32), BufferRef::Whole(buf)});
  REQUIRE(s.message() == "queue execute: binding table slot 1: offset 32 is not a multiple of 64");
  s = d.QueueExecute({}, slots, {},
                     {BufferRef::Whole(buf), BufferRef::Range(buf, 0, 65), BufferRef::Whole(buf)});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  s = d.QueueExecute({}, vm::Ref<CommandBuffer>(), {});
  REQUIRE(s.message() == "queue execute: command buffer is null");
  // Misaligned or out-of-range direct bindings are refused at record time.
  auto rec = NewCb(d);
  REQUIRE(rec->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Range(buf, 8, 8)}).code() == StatusCode::kInvalidArgument);
  REQUIRE(rec->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Range(buf, 0, 128)}).code() == StatusCode::kOutOfRange);
  REQUIRE(rec->Dispatch(exe, 0, {1, 1, 1}, {BufferRef()}).code() == StatusCode::kInvalidArgument);
  REQUIRE(rec->FillBuffer(buf, 0, 4, 0, 3).code() == StatusCode::kInvalidArgument);

  // An indirect count beyond 2^40 workgroups fails the submission when it executes.
  auto counts = Alloc(d, 64);
  Upload(d, *counts, std::vector<uint32_t>{1u << 20, 1u << 20, 2});
  auto ind = NewCb(d);
  REQUIRE(ind->DispatchIndirect(exe, 1, BufferRef::Range(counts, 0, 12), {}, {0}).ok());
  REQUIRE(ind->Finalize().ok());
  auto isem = NewSem(d, 0);
  Status submit2 = d.QueueExecute({}, ind, {{isem, 1}});
  Status failed = submit2.ok() ? isem->Wait(1, 30s) : submit2;
  REQUIRE(failed.code() == StatusCode::kInvalidArgument);
  REQUIRE(failed.message().find("exceeds 2^40 workgroups") != std::string::npos);
  REQUIRE(isem->Query().status().code() == StatusCode::kInvalidArgument);

  // Timelines only move forward; a failed semaphore stays failed.
  auto t = NewSem(d, 5);
  REQUIRE(t->Signal(5).code() == StatusCode::kInvalidArgument);
  REQUIRE(t->Signal(6).ok());
  t->Fail(Aborted("broken"));
  REQUIRE(t->Wait(1, 0ns).message() == "broken");
  REQUIRE(t->Signal(7).message() == "broken");
  REQUIRE(d.WaitIdle(30s).ok());
}

void MappingCase(const DriverConfig& c, Device& d) {
  auto exe = Kernels(c, d, {"affine_i32"});
  auto mapped = d.AllocateBuffer(64 * 4, kMemoryHostVisible);
  REQUIRE(mapped.ok());
  auto b = *mapped;
  REQUIRE((b->memory_types() & kMemoryHostVisible) != 0);
  REQUIRE(b->host_data() != nullptr);
  // Written through the mapping, updated by the device, read through the mapping.
  auto* words = reinterpret_cast<int32_t*>(b->host_data());
  for (int i = 0; i < 64; ++i) REQUIRE(words[i] == 0);
  for (int i = 0; i < 64; ++i) words[i] = i;
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 0, {64, 1, 1}, {BufferRef::Whole(b)}, {64, 5, static_cast<uint32_t>(-3)}).ok());
  REQUIRE(cb->Finalize().ok());
  Submit(d, cb);
  for (int i = 0; i < 64; ++i) REQUIRE(words[i] == i * 5 - 3);
  // The device view of the same bytes agrees.
  REQUIRE(Download<int32_t>(d, *b, 2, 8)[1] == 3 * 5 - 3);
}

void ViewsCase(const DriverConfig&, Device& d) {
  struct TypeCase {
    ElementType type;
    size_t size;
    const char* name;
  };
  const TypeCase types[] = {{ElementType::kF32, 4, "f32"}, {ElementType::kF16, 2, "f16"},
                            {ElementType::kBF16, 2, "bf16"}, {ElementType::kF64, 8, "f64"},
                            {ElementType::kI8, 1, "i8"},   {ElementType::kI16, 2, "i16"},
                            {ElementType::kI32, 4, "i32"}, {ElementType::kI64, 8, "i64"},
                            {ElementType::kI1, 1, "i1"}};
  for (const TypeCase& t : types) {
    INFO(t.name);
    const int32_t code = static_cast<int32_t>(t.type);
    std::vector<uint8_t> bytes(6 * t.size);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = t.type == ElementType::kI1 ? i % 2 : uint8_t(i * 13 + 1);
    auto view = BufferViewFromHost(d, code, std::vector<int64_t>{2, 3}, bytes.data(), bytes.size());
    INFO(view.status().ToString());
    REQUIRE(view.ok());
    REQUIRE((*view)->ShapeString() == std::string("2x3x") + t.name);
    REQUIRE((*view)->byte_size() == bytes.size());
    std::vector<uint8_t> back;
    REQUIRE(BufferViewToHost(d, **view, &back).ok());
    REQUIRE(back == bytes);
    // Wrong byte counts are refused, naming the shape.
    auto bad = BufferViewFromHost(d, code, std::vector<int64_t>{2, 3}, bytes.data(), bytes.size() - 1);
    REQUIRE(bad.status().code() == StatusCode::kInvalidArgument);
    REQUIRE(bad.status().message().find(std::string("2x3x") + t.name) != std::string::npos);
  }
  // Rank 0 (a scalar) and zero-sized views.
  const double pi = 3.25;
  auto scalar = BufferViewFromHost(d, static_cast<int32_t>(ElementType::kF64), std::vector<int64_t>{},
                                   &pi, sizeof(pi));
  REQUIRE(scalar.ok());
  REQUIRE((*scalar)->rank() == 0);
  REQUIRE((*scalar)->ShapeString() == "f64");
  std::vector<uint8_t> back;
  REQUIRE(BufferViewToHost(d, **scalar, &back).ok());
  REQUIRE(std::memcmp(back.data(), &pi, sizeof(pi)) == 0);
  auto empty = BufferViewFromHost(d, static_cast<int32_t>(ElementType::kI32), std::vector<int64_t>{0, 7},
                                  nullptr, 0);
  REQUIRE(empty.ok());
  REQUIRE((*empty)->byte_size() == 0);
}

void IndirectDispatchCase(const DriverConfig& c, Device& d) {
  auto exe = Kernels(c, d, {"add_f32", "affine_i32"});
  const uint32_t n = 128, tile = 32;
  std::vector<float> ha(n), hb(n);
  for (uint32_t i = 0; i < n; ++i) ha[i] = float(i), hb[i] = 0.5f;
  auto a = Alloc(d, n * 4), b = Alloc(d, n * 4), out = Alloc(d, n * 4);
  Upload(d, *a, ha);
  Upload(d, *b, hb);
  auto expect_prefix = [&](Buffer& o, uint32_t groups) {
    auto got = Download<float>(d, o, n);
    for (uint32_t i = 0; i < n; ++i) {
      INFO("element " << i << ", " << groups << " workgroups");
      REQUIRE(got[i] == (i < groups * tile ? ha[i] + hb[i] : 0.0f));
    }
  };

  // 1. The count is produced on the device by an earlier dispatch of the same command
  //    buffer: counts = {1,1,1}, then affine_i32 makes counts[0] = 1*3 + 0 = 3.
  auto counts = Alloc(d, 64);
  Upload(d, *counts, std::vector<uint32_t>{1, 1, 1});
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 1, {1, 1, 1}, {BufferRef::Whole(counts)}, {1, 3, 0}).ok());
  REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->DispatchIndirect(exe, 0, BufferRef::Range(counts, 0, kIndirectParamsSize),
                               {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)}, {n, tile})
              .ok());
  REQUIRE(cb->Finalize().ok());
  Submit(d, cb);
  expect_prefix(*out, 3);

  // 2. Everything through the binding table (count at byte 16 of slot 3), replayed with
  //    different counts: the count is read at execution, not at record or submit time.
  auto cb2 = NewCb(d);
  BufferRef count_slot = BufferRef::Slot(3);
  count_slot.offset = 16;
  REQUIRE(cb2->DispatchIndirect(exe, 0, count_slot,
                                {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)}, {n, tile})
              .ok());
  REQUIRE(cb2->Finalize().ok());
  REQUIRE(cb2->binding_table_size() == 4);
  for (uint32_t groups : {2u, 4u, 0u}) {
    auto o = Alloc(d, n * 4);
    auto cnt = Alloc(d, 64);
    Upload(d, *cnt, std::vector<uint32_t>{9, 9, 9, 9, groups, 1, 1});
    Submit(d, cb2, {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(o), BufferRef::Whole(cnt)});
    expect_prefix(*o, groups);
  }

  // 2b. The same recording with the count in a uniform buffer the host writes before each
  //     submission (as a compiled program's parameter buffer): each replay runs its count.
  for (uint32_t groups : {3u, 1u, 4u}) {
    auto o = Alloc(d, n * 4);
    auto u = d.AllocateBuffer(64, kMemoryHostVisible | kMemoryUniform);
    REQUIRE(u.ok());
    const uint32_t words[] = {9, 9, 9, 9, groups, 1, 1};
    std::memcpy((*u)->host_data(), words, sizeof(words));
    Submit(d, cb2, {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(o), BufferRef::Whole(*u)});
    expect_prefix(*o, groups);
  }

  // 3. A count that is written by a queue operation ordered before the execute.
  auto cnt = Alloc(d, 64);
  auto o = Alloc(d, n * 4);
  auto sem = NewSem(d, 0);
  REQUIRE(d.QueueFill({}, {{sem, 1}}, cnt, 16, 12, 1, 4).ok());
  REQUIRE(d.QueueFill({{sem, 1}}, {{sem, 2}}, cnt, 16, 4, 2, 4).ok());  // ordered after: {2,1,1}
  REQUIRE(d.QueueExecute({{sem, 2}}, cb2, {{sem, 3}},
                         {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(o), BufferRef::Whole(cnt)})
              .ok());
  REQUIRE(sem->Wait(3, 30s).ok());
  expect_prefix(*o, 2);

  // Record-time checks: alignment and range of a direct count buffer.
  auto bad = NewCb(d);
  Status s = bad->DispatchIndirect(exe, 0, BufferRef::Range(counts, 2, 12), {});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "dispatch_indirect of 'add_f32': workgroup count buffer: offset 2 is not a multiple of 4");
  s = bad->DispatchIndirect(exe, 0, BufferRef::Range(counts, 56, 12), {});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "dispatch_indirect of 'add_f32': workgroup count buffer: range [56, 68) exceeds the buffer size 64");
}

void QueueOpsCase(const DriverConfig&, Device& d) {
  // alloca -> fill -> copy -> dealloca, chained through one timeline.
  auto sem = NewSem(d, 0);
  auto t = d.QueueAlloca({}, {{sem, 1}}, 1000);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  vm::Ref<Buffer> transient = *t;
  REQUIRE(transient->byte_size() == 1000);
  auto result = Alloc(d, 1000);
  REQUIRE(d.QueueFill({{sem, 1}}, {{sem, 2}}, transient, 0, 1000, 0x77, 1).ok());
  REQUIRE(d.QueueFill({{sem, 2}}, {{sem, 3}}, transient, 100, 8, 0xA0B0C0D0u, 4).ok());
  REQUIRE(d.QueueCopy({{sem, 3}}, {{sem, 4}}, transient, 96, result, 0, 904).ok());
  REQUIRE(d.QueueDealloca({{sem, 4}}, {{sem, 5}}, std::move(transient)).ok());
  REQUIRE(sem->Wait(5, 30s).ok());
  auto got = Download<uint8_t>(d, *result, 904);
  for (size_t i = 0; i < 904; ++i) {
    INFO("byte " << i);
    uint8_t want = 0x77;
    if (i >= 4 && i < 12) want = (0xA0B0C0D0u >> (8 * ((i - 4) % 4))) & 0xff;
    REQUIRE(got[i] == want);
  }
  REQUIRE(Download<uint8_t>(d, *result, 96, 904) == std::vector<uint8_t>(96, 0));
  // Errors are returned at the call and name the operation.
  Status s = d.QueueCopy({}, {}, result, 0, result, 500, 600);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "queue copy: copy_buffer target: range [500, 1100) exceeds the buffer size 1000");
  s = d.QueueFill({}, {}, result, 1, 4, 0, 2);
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  s = d.QueueDealloca({}, {}, nullptr);
  REQUIRE(s.message() == "queue dealloca: buffer is null");
  s = d.QueueFill({{nullptr, 1}}, {}, result, 0, 4, 0, 1);
  REQUIRE(s.message() == "queue fill: wait semaphore 0 is null");
  REQUIRE(d.WaitIdle(30s).ok());
}

void PoolCase(const DriverConfig&, Device& d) {
  DeviceStats before = d.stats();
  void* first = nullptr;
  {
    auto b = Alloc(d, 100000);
    first = b->host_data();
    REQUIRE(d.stats().buffer_bytes_peak >= before.buffer_bytes_live + 100000);
  }
  DeviceStats mid = d.stats();
  REQUIRE(mid.buffer_bytes_live == before.buffer_bytes_live);
  REQUIRE(mid.pool_bytes_cached > before.pool_bytes_cached);
  auto again = Alloc(d, 90000);  // same size class: the freed block is reused
  DeviceStats after = d.stats();
  REQUIRE(after.pool_hits == mid.pool_hits + 1);
  if (first != nullptr) REQUIRE(again->host_data() == first);
  REQUIRE(Download<uint8_t>(d, *again, 90000) == std::vector<uint8_t>(90000, 0));
}

void CrossQueueOrderingCase(const DriverConfig& c, Device& d) {
  // Two devices = two queues; a ping-pong chain over one timeline, submitted before the
  // host opens the gate, alternating queues: 1 on A, 2 on B, 3 on A, ...
  auto other = c.create_device(DeviceOptions{});
  REQUIRE(other.ok());
  Device& e = **other;
  auto gate = NewSem(d, 0);
  auto chain = NewSem(d, 0);
  auto ba = Alloc(d, 64), bb = Alloc(e, 64);
  for (uint32_t i = 1; i <= 6; ++i) {
    Device& q = i % 2 ? d : e;
    auto& buf = i % 2 ? ba : bb;
    std::vector<SemaphoreValue> waits = {{i == 1 ? gate : chain, i == 1 ? 1u : i - 1}};
    REQUIRE(q.QueueFill(waits, {{chain, i}}, buf, (i - 1) / 2 * 4, 4, i, 4).ok());
  }
  REQUIRE(chain->Wait(1, 20ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(chain->Query().value() == 0);
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(chain->Wait(6, 30s).ok());
  REQUIRE(Download<uint32_t>(d, *ba, 3) == std::vector<uint32_t>{1, 3, 5});
  REQUIRE(Download<uint32_t>(e, *bb, 3) == std::vector<uint32_t>{2, 4, 6});

  // A failure on one queue propagates to work waiting on it from the other queue.
  auto exe = Kernels(c, d, {"fail_at"});
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 0, {2, 1, 1}, {}, {1}).ok());
  REQUIRE(cb->Finalize().ok());
  auto s1 = NewSem(d, 0), s2 = NewSem(d, 0);
  REQUIRE(d.QueueExecute({}, cb, {{s1, 1}}).ok());
  REQUIRE(e.QueueFill({{s1, 1}}, {{s2, 1}}, bb, 0, 4, 9, 4).ok());
  Status w = s2->Wait(1, 30s);
  REQUIRE(w.code() == StatusCode::kAborted);
  REQUIRE(w.message().find("'fail_at'") != std::string::npos);
  // Held back on the host, the fill did not run; ordered on the device, it ran (its signal
  // failed all the same).
  if (!c.orders_cross_device_waits_on_device) REQUIRE(Download<uint32_t>(e, *bb, 1)[0] == 2);
}

void QueueWaitElisionCase(const DriverConfig& c, Device& d) {
  // Each wait of a queue operation is counted once at submission: elided when its value is
  // already reached or an earlier submission of this queue signals it, otherwise ordered.
  auto buf = Alloc(d, 64);
  auto reached = NewSem(d, 5), gate = NewSem(d, 0), host = NewSem(d, 0), chain = NewSem(d, 0);
  DeviceStats s0 = d.stats();
  REQUIRE(d.QueueFill({{reached, 5}}, {{chain, 1}}, buf, 0, 4, 1, 4).ok());       // reached
  REQUIRE(chain->Wait(1, 30s).ok());
  DeviceStats s1 = d.stats();
  REQUIRE(s1.queue_waits_elided == s0.queue_waits_elided + 1);
  REQUIRE(s1.queue_waits == s0.queue_waits);
  REQUIRE(d.QueueFill({{gate, 1}}, {{chain, 2}}, buf, 4, 4, 2, 4).ok());          // ordered
  REQUIRE(d.QueueFill({{chain, 2}}, {{chain, 3}}, buf, 8, 4, 3, 4).ok());         // queue order
  REQUIRE(d.QueueFill({{chain, 3}, {host, 1}}, {{chain, 4}}, buf, 12, 4, 4, 4).ok());  // both
  DeviceStats s2 = d.stats();
  REQUIRE(s2.queue_waits == s1.queue_waits + 2);               // gate, host
  REQUIRE(s2.queue_waits_elided == s1.queue_waits_elided + 2);  // chain 2, chain 3
  REQUIRE(chain->Wait(2, 20ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(gate->Signal(1).ok());
  REQUIRE(chain->Wait(3, 30s).ok());
  REQUIRE(chain->Wait(4, 20ms).code() == StatusCode::kDeadlineExceeded);  // host still holds it
  REQUIRE(host->Signal(1).ok());
  REQUIRE(chain->Wait(4, 30s).ok());
  REQUIRE(Download<uint32_t>(d, *buf, 4) == std::vector<uint32_t>{1, 2, 3, 4});
  REQUIRE(d.stats().queue_waits == s2.queue_waits);  // counted at submission only

  // A wait elided by queue order still sees its producer's failure: the dependent
  // submission's signal fails with the producer's error.
  auto exe = Kernels(c, d, {"fail_at"});
  auto cb = NewCb(d);
  REQUIRE(cb->Dispatch(exe, 0, {2, 1, 1}, {}, {1}).ok());
  REQUIRE(cb->Finalize().ok());
  auto gate2 = NewSem(d, 0), failed = NewSem(d, 0), after = NewSem(d, 0);
  REQUIRE(d.QueueExecute({{gate2, 1}}, cb, {{failed, 1}}).ok());
  DeviceStats s3 = d.stats();
  REQUIRE(d.QueueFill({{failed, 1}}, {{after, 1}}, buf, 16, 4, 5, 4).ok());
  REQUIRE(d.stats().queue_waits_elided == s3.queue_waits_elided + 1);
  REQUIRE(gate2->Signal(1).ok());
  Status w = after->Wait(1, 30s);
  REQUIRE(w.code() == StatusCode::kAborted);
  REQUIRE(w.message().find("'fail_at'") != std::string::npos);
  REQUIRE(d.WaitIdle(30s).ok());
}

}  // namespace hexir::hal::cts
