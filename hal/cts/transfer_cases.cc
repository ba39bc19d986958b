// CTS cases for the queue transfers, Device::QueueWrite / QueueRead: every step is ordered by
// semaphores only (no WaitIdle, no synchronous ReadBuffer between steps).
#include <chrono>
#include <cstring>
#include <numeric>

#include "hal/cts/cts.h"

namespace hexir::hal::cts {
namespace {

using namespace std::chrono_literals;

void RequireOk(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

}  // namespace

void QueueTransfersCase(const DriverConfig& c, Device& d) {
  auto exe = d.CreateExecutable(c.kernels({"add_f32"}));
  RequireOk(exe.status());
  const uint32_t n = 1000, tile = 64;
  std::vector<float> ha(n), hb(n);
  for (uint32_t i = 0; i < n; ++i) {
    ha[i] = 0.5f * float(i);
    hb[i] = 7.0f - float(i);
  }
  auto a = Alloc(d, n * 4), b = Alloc(d, n * 4), out = Alloc(d, n * 4);
  auto cb = d.CreateCommandBuffer();
  RequireOk(cb.status());
  RequireOk((*cb)->Dispatch(*exe, 0, {(n + tile - 1) / tile, 1, 1},
                            {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)},
                            {n, tile}));
  RequireOk((*cb)->Finalize());
  const DeviceStats before = d.stats();

  // write a, write b (the caller's copy is reused at once) -> dispatch -> read out.
  auto t = NewSem(d, 0);
  RequireOk(d.QueueWrite({}, {{t, 1}}, ha.data(), n * 4, a, 0));
  std::vector<float> scratch = hb;
  RequireOk(d.QueueWrite({{t, 1}}, {{t, 2}}, scratch.data(), n * 4, b, 0,
                         Device::HostLifetime::kCopyAtCall));
  std::fill(scratch.begin(), scratch.end(), -1.0f);  // too late to change what was written
  RequireOk(d.QueueExecute({{t, 2}}, *cb, {{t, 3}}));
  std::vector<float> got(n, 0.0f);
  RequireOk(d.QueueRead({{t, 3}}, {{t, 4}}, out, 0, got.data(), n * 4));
  RequireOk(t->Wait(4, 30s));
  for (uint32_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == ha[i] + hb[i]);
  }

  // 64 writes in flight into disjoint ranges of one buffer, then one read of all of them.
  const uint32_t kWrites = 64, kChunk = 4096;
  std::vector<uint32_t> source(kWrites * kChunk / 4);
  std::iota(source.begin(), source.end(), 12345u);
  auto big = Alloc(d, kWrites * kChunk);
  auto w = NewSem(d, 0);
  for (uint32_t i = 0; i < kWrites; ++i) {
    // Every other write waits for the previous one; the rest only for the queue's order.
    std::vector<SemaphoreValue> waits;
    if (i % 2 == 1) waits.push_back({w, i});
    RequireOk(d.QueueWrite(waits, {{w, i + 1}}, reinterpret_cast<uint8_t*>(source.data()) + i * kChunk,
                           kChunk, big, uint64_t{i} * kChunk));
  }
  std::vector<uint32_t> back(source.size(), 0);
  RequireOk(d.QueueRead({{w, kWrites}}, {{w, kWrites + 1}}, big, 0, back.data(), kWrites * kChunk));
  RequireOk(w->Wait(kWrites + 1, 30s));
  REQUIRE(back == source);

  // A read of a sub-range, and empty transfers (they still order their signals).
  uint32_t word = 0;
  RequireOk(d.QueueRead({}, {{w, kWrites + 2}}, big, 4 * 77, &word, 4));
  RequireOk(d.QueueWrite({{w, kWrites + 2}}, {{w, kWrites + 3}}, nullptr, 0, big, 0));
  RequireOk(d.QueueRead({{w, kWrites + 3}}, {{w, kWrites + 4}}, big, 0, nullptr, 0));
  RequireOk(w->Wait(kWrites + 4, 30s));
  REQUIRE(word == 12345u + 77);

  const DeviceStats after = d.stats();
  REQUIRE(after.transfers_queued == before.transfers_queued + 2 + 1 + kWrites + 1 + 1 + 2);
  REQUIRE(after.transfer_bytes_queued ==
          before.transfer_bytes_queued + 3 * n * 4 + 2 * kWrites * kChunk + 4);

  // BufferViewFromHost sends a large tensor as one queue write and returns once it landed.
  std::vector<int32_t> large(kQueuedUploadBytes / 4 + 1);
  std::iota(large.begin(), large.end(), -7);
  const int64_t dims[] = {int64_t(large.size())};
  auto view = BufferViewFromHost(d, int32_t(ElementType::kI32), Span<const int64_t>(dims, 1),
                                 large.data(), large.size() * 4);
  RequireOk(view.status());
  REQUIRE(d.stats().transfers_queued == after.transfers_queued + 1);
  std::vector<uint8_t> large_back;
  RequireOk(BufferViewToHost(d, **view, &large_back));
  REQUIRE(large_back.size() == large.size() * 4);
  REQUIRE(std::memcmp(large_back.data(), large.data(), large_back.size()) == 0);
}

void QueueTransferOrderingCase(const DriverConfig& c, Device& d) {
  // A chain held back by a host gate: write -> dispatch -> read, all submitted first.
  auto exe = d.CreateExecutable(c.kernels({"affine_i32"}));
  RequireOk(exe.status());
  const uint32_t n = 256;
  std::vector<int32_t> hx(n);
  for (uint32_t i = 0; i < n; ++i) hx[i] = int32_t(i) - 100;
  auto x = Alloc(d, n * 4);
  auto cb = d.CreateCommandBuffer();
  RequireOk(cb.status());
  RequireOk((*cb)->Dispatch(*exe, 0, {n, 1, 1}, {BufferRef::Whole(x)}, {n, 3, 5}));
  RequireOk((*cb)->Finalize());
  auto gate = NewSem(d, 0), t = NewSem(d, 0);
  RequireOk(d.QueueWrite({{gate, 1}}, {{t, 1}}, hx.data(), n * 4, x, 0));
  RequireOk(d.QueueExecute({{t, 1}}, *cb, {{t, 2}}));
  std::vector<int32_t> got(n, 0);
  RequireOk(d.QueueRead({{t, 2}}, {{t, 3}}, x, 0, got.data(), n * 4));
  REQUIRE(t->Wait(1, 20ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(got == std::vector<int32_t>(n, 0));
  RequireOk(gate->Signal(1));
  RequireOk(t->Wait(3, 30s));
  for (uint32_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == hx[i] * 3 + 5);
  }

  // A write held back by a gate with kCopyAtCall took its copy at the call.
  std::vector<int32_t> source(n, 41);
  auto gate2 = NewSem(d, 0);
  RequireOk(d.QueueWrite({{gate2, 1}}, {{t, 4}}, source.data(), n * 4, x, 0,
                         Device::HostLifetime::kCopyAtCall));
  std::fill(source.begin(), source.end(), -1);
  RequireOk(d.QueueRead({{t, 4}}, {{t, 5}}, x, 0, got.data(), n * 4));
  RequireOk(gate2->Signal(1));
  RequireOk(t->Wait(5, 30s));
  REQUIRE(got == std::vector<int32_t>(n, 41));

  // A failed wait fails the transfer's signals with that error; the buffer is untouched.
  auto failed = NewSem(d, 0), s = NewSem(d, 0);
  failed->Fail(Aborted("upstream producer failed"));
  std::vector<int32_t> zeros(n, 0);
  RequireOk(d.QueueWrite({{failed, 1}}, {{s, 1}}, zeros.data(), n * 4, x, 0));
  Status st = s->Wait(1, 30s);
  REQUIRE(st.code() == StatusCode::kAborted);
  REQUIRE(st.message().find("upstream producer failed") != std::string::npos);
  int32_t first = 0;
  RequireOk(d.QueueRead({}, {{s, 2}}, x, 0, &first, 4));
  REQUIRE(s->Wait(2, 30s).code() == StatusCode::kAborted);  // sticky: s already failed
  auto r = NewSem(d, 0);
  RequireOk(d.QueueRead({}, {{r, 1}}, x, 0, &first, 4));
  RequireOk(r->Wait(1, 30s));
  REQUIRE(first == 41);
}

void QueueTransferErrorsCase(const DriverConfig&, Device& d) {
  auto b = Alloc(d, 1024);
  auto t = NewSem(d, 0);
  std::vector<uint8_t> host(64);
  const DeviceStats before = d.stats();
  Status s = d.QueueWrite({}, {{t, 1}}, host.data(), 16, b, 1020);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "queue write: bytes [1020, 1036) run past the end of a 1024-byte buffer");
  s = d.QueueRead({}, {{t, 1}}, b, 2000, host.data(), 1);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "queue read: bytes [2000, 2001) run past the end of a 1024-byte buffer");
  s = d.QueueRead({}, {}, b, 8, host.data(), ~uint64_t{0});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() ==
          "queue read: bytes [8, 8 + 18446744073709551615) run past the end of a 1024-byte buffer");
  s = d.QueueWrite({}, {}, nullptr, 4, b, 0);
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "queue write: host pointer is null for bytes [0, 4) of a 1024-byte buffer");
  s = d.QueueRead({}, {}, nullptr, 0, host.data(), 4);
  REQUIRE(s.message() == "queue read: buffer is null");
  s = d.QueueWrite({{nullptr, 1}}, {}, host.data(), 4, b, 0);
  REQUIRE(s.message() == "queue write: wait semaphore 0 is null");
  s = d.QueueRead({}, {{t, 1}, {nullptr, 2}}, b, 0, host.data(), 4);
  REQUIRE(s.message() == "queue read: signal semaphore 1 is null");
  // Rejected calls queue nothing and count nothing; the timeline never moved.
  REQUIRE(d.stats().transfers_queued == before.transfers_queued);
  REQUIRE(d.stats().transfer_bytes_queued == before.transfer_bytes_queued);
  REQUIRE(t->Query().value() == 0);
}

}  // namespace hexir::hal::cts
