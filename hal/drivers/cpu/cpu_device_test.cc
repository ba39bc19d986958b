#include <dirent.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hal/api.h"
#include "hal/drivers/cpu/dispatch_abi.h"
#include "hal/drivers/cpu/testing/test_device.h"
#include "hal/drivers/cpu/testing/test_kernels.h"

namespace hexir::hal {
namespace {

using cpu::testing::TestKernelBytes;
using cpu::testing::TestKernelView;
using testing::CpuDevice;
using testing::DeviceBuffer;

vm::Ref<Executable> Load(Device& dev, std::vector<std::string_view> entries) {
  REQUIRE(!TestKernelBytes().empty());
  auto exe = dev.CreateExecutable(TestKernelView(std::move(entries)));
  REQUIRE(exe.ok());
  return *exe;
}

int OpenFdCount() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}

TEST_CASE("cpu executable: entry points resolve; the memfd is released with it") {
  auto dev = CpuDevice(1);
  int fds = OpenFdCount();
  uint64_t loaded = dev->stats().executables_loaded;
  {
    auto exe = Load(*dev, {"add_f32", "fail_at"});
    REQUIRE(exe->entry_count() == 2);
    REQUIRE(exe->entry_name(1) == "fail_at");
    REQUIRE(exe->format() == "cpu-elf-x86_64");
    REQUIRE(exe->driver() == "cpu");
    REQUIRE(std::string(exe->type_name()) == "hal.executable");
    REQUIRE(dev->stats().executables_loaded == loaded + 1);
  }
  REQUIRE(OpenFdCount() == fds);
}

TEST_CASE("cpu executable: load errors name the problem") {
  auto dev = CpuDevice(1);
  auto missing = dev->CreateExecutable(TestKernelView({"add_f32", "no_such_kernel"}));
  REQUIRE(missing.status().code() == StatusCode::kNotFound);
  REQUIRE(missing.status().message() ==
          "cpu driver: entry point 'no_such_kernel' (ordinal 1) is not exported by the executable");

  vm::ExecutableView wrong = TestKernelView({"add_f32"});
  wrong.format = "cuda-cubin-sm_90";
  REQUIRE(dev->CreateExecutable(wrong).status().message() ==
          "cpu driver: executable format 'cuda-cubin-sm_90' is not supported (expected 'cpu-elf-x86_64')");

  const uint8_t junk[16] = {'n', 'o', 't', ' ', 'e', 'l', 'f'};
  vm::ExecutableView bad = TestKernelView({"add_f32"});
  bad.data = junk;
  bad.size = sizeof(junk);
  REQUIRE(dev->CreateExecutable(bad).status().message() ==
          "cpu driver: executable data (16 bytes) is not an ELF shared object");

  std::vector<uint8_t> truncated(TestKernelBytes().begin(), TestKernelBytes().begin() + 200);
  vm::ExecutableView cut = TestKernelView({"add_f32"});
  cut.data = truncated.data();
  cut.size = truncated.size();
  auto t = dev->CreateExecutable(cut);
  REQUIRE(t.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(t.status().message().rfind("cpu driver: dlopen of the executable failed: ", 0) == 0);
}

// Runs add_f32 over n elements with tile 16 and a 2D grid and checks against a plain loop.
void CheckAdd(Device& dev, uint32_t n) {
  auto exe = Load(dev, {"add_f32"});
  auto a = DeviceBuffer(dev, n * 4), b = DeviceBuffer(dev, n * 4), out = DeviceBuffer(dev, n * 4);
  std::vector<float> ha(n), hb(n), expect(n);
  for (uint32_t i = 0; i < n; ++i) {
    ha[i] = 0.5f * i - 3;
    hb[i] = 1.0f / (i + 1);
    expect[i] = ha[i] + hb[i];
  }
  REQUIRE(dev.WriteBuffer(*a, 0, ha.data(), n * 4).ok());
  REQUIRE(dev.WriteBuffer(*b, 0, hb.data(), n * 4).ok());
  const uint32_t tile = 16;
  uint32_t groups = (n + tile - 1) / tile;
  uint32_t gx = 4, gy = (groups + gx - 1) / gx;  // a 2D grid; the tail groups do nothing
  auto cb = *dev.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {gx, gy, 1},
                       {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)},
                       {n, tile})
              .ok());
  REQUIRE(cb->Finalize().ok());
  auto sem = *dev.CreateSemaphore(0);
  REQUIRE(dev.QueueExecute({}, cb, {{sem, 1}}).ok());
  REQUIRE(sem->Wait(1).ok());
  std::vector<float> got(n);
  REQUIRE(dev.ReadBuffer(*out, 0, got.data(), n * 4).ok());
  REQUIRE(got == expect);
}

TEST_CASE("cpu dispatch: elementwise add matches a plain loop for 1, 2, 4 workers and inline") {
  for (int32_t workers : {0, 1, 2, 4}) {
    for (bool inl : {false, true}) {
      INFO("workers " << workers << " inline " << inl);
      auto dev = CpuDevice(workers, inl);
      CheckAdd(*dev, 1000);
      CheckAdd(*dev, 1);
      REQUIRE(dev->stats().dispatches_executed == 2);
    }
  }
}

TEST_CASE("cpu dispatch: workgroup ids cover a 3D grid; push constants arrive in order") {
  auto dev = CpuDevice(3);
  auto exe = Load(*dev, {"affine_i32"});
  const uint32_t n = 2 * 3 * 5;
  auto x = DeviceBuffer(*dev, n * 4);
  std::vector<int32_t> hx(n);
  for (uint32_t i = 0; i < n; ++i) hx[i] = static_cast<int32_t>(i);
  REQUIRE(dev->WriteBuffer(*x, 0, hx.data(), n * 4).ok());
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {2, 3, 5}, {BufferRef::Whole(x)}, {n, 3, static_cast<uint32_t>(-4)}).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(dev->QueueExecute({}, cb, {}).ok());
  REQUIRE(dev->WaitIdle().ok());
  std::vector<int32_t> got(n);
  REQUIRE(dev->ReadBuffer(*x, 0, got.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == static_cast<int32_t>(i) * 3 - 4);
}

TEST_CASE("cpu dispatch: thread indices stay below the worker count, several workers used") {
  auto dev = CpuDevice(4);
  auto exe = Load(*dev, {"record_thread"});
  const uint32_t groups = 4096;
  auto out = DeviceBuffer(*dev, groups * 4);
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {groups, 1, 1}, {BufferRef::Whole(out)}).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(dev->QueueExecute({}, cb, {}).ok());
  REQUIRE(dev->WaitIdle().ok());
  std::vector<uint32_t> got(groups);
  REQUIRE(dev->ReadBuffer(*out, 0, got.data(), groups * 4).ok());
  for (uint32_t t : got) {
    REQUIRE(t >= 1);
    REQUIRE(t <= 4);
  }
}

TEST_CASE("cpu dispatch: a kernel's check failure is named with the values it stored") {
  struct Case {
    uint32_t code;
    StatusCode status;
    std::string message;
  };
  const Case cases[] = {
      {HEXIR_CPU_KERNEL_INDEX_OUT_OF_RANGE, StatusCode::kOutOfRange,
       "kernel 'report_at': index 5 out of range [0, 10)"},
      {HEXIR_CPU_KERNEL_DIVISION_BY_ZERO, StatusCode::kInvalidArgument,
       "kernel 'report_at': integer division by zero (5 / 10)"},
      {HEXIR_CPU_KERNEL_DIVISION_OVERFLOW, StatusCode::kInvalidArgument,
       "kernel 'report_at': integer division overflow (5 / 10)"},
      {9, StatusCode::kAborted, "dispatch of entry 'report_at' failed: workgroup (5, 0, 0) returned 9"},
  };
  for (int32_t threads : {1, 3}) {
    for (const Case& c : cases) {
      auto dev = CpuDevice(threads, /*inl=*/true);
      auto exe = Load(*dev, {"report_at"});
      auto cb = *dev->CreateCommandBuffer();
      REQUIRE(cb->Dispatch(exe, 0, {8, 1, 1}, {}, {5, c.code}).ok());
      REQUIRE(cb->Finalize().ok());
      Status s = dev->QueueExecute({}, cb, {});
      CHECK(s.code() == c.status);
      CHECK(s.message() == c.message);
    }
  }
}

TEST_CASE("cpu dispatch: a failing kernel fails the signal semaphore naming the entry") {
  for (bool inl : {false, true}) {
    auto dev = CpuDevice(2, inl);
    auto exe = Load(*dev, {"add_f32", "fail_at"});
    auto cb = *dev->CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 1, {8, 1, 1}, {}, {5}).ok());
    REQUIRE(cb->Finalize().ok());
    auto sem = *dev->CreateSemaphore(0);
    Status submit = dev->QueueExecute({}, cb, {{sem, 1}});
    const std::string expect = "dispatch of entry 'fail_at' failed: workgroup (5, 0, 0) returned 7";
    if (inl) {
      REQUIRE(submit.message() == expect);
    } else {
      REQUIRE(submit.ok());
    }
    Status w = sem->Wait(1);
    REQUIRE(w.code() == StatusCode::kAborted);
    REQUIRE(w.message() == expect);
    REQUIRE(dev->WaitIdle().ok());  // delivered through `sem` only
    // Without signal semaphores the error is kept for WaitIdle (queued) or returned (inline).
    Status again = dev->QueueExecute({}, cb, {});
    Status idle = dev->WaitIdle();
    REQUIRE((inl ? again : idle).message() == expect);
    REQUIRE((inl ? idle : again).ok());
  }
}

TEST_CASE("cpu dispatch: entry ordinal and binding errors at record time") {
  auto dev = CpuDevice(1);
  auto exe = Load(*dev, {"add_f32", "fail_at"});
  auto buf = DeviceBuffer(*dev, 256);
  auto cb = *dev->CreateCommandBuffer();
  Status s = cb->Dispatch(exe, 2, {1, 1, 1}, {});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() ==
          "dispatch: entry ordinal 2 is out of range; the executable has 2 entry point(s): add_f32, fail_at");
  s = cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(buf), BufferRef::Range(buf, 128, 256)});
  REQUIRE(s.message() == "dispatch of 'add_f32': binding 1: range [128, 384) exceeds the buffer size 256");
  s = cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Range(buf, 4, 8)});
  REQUIRE(s.message() == "dispatch of 'add_f32': binding 0: offset 4 is not a multiple of 64");
  s = cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(nullptr)});
  REQUIRE(s.message() == "dispatch of 'add_f32': binding 0: buffer is null");
  s = cb->Dispatch(exe, 1, {UINT32_MAX, UINT32_MAX, 2}, {});
  REQUIRE(s.message() == "dispatch of 'fail_at': workgroup count 4294967295x4294967295x2 exceeds 2^40 workgroups");
  REQUIRE(cb->commands().empty());
}

TEST_CASE("cpu dispatch: offset bindings and binding-table replay without re-recording") {
  auto dev = CpuDevice(2);
  auto exe = Load(*dev, {"add_f32", "count_misaligned"});
  const uint32_t n = 16;
  // One buffer holds a at offset 0 and b at offset 64 (suballocation).
  auto ab = DeviceBuffer(*dev, 128);
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1},
                       {BufferRef::Range(ab, 0, n * 4), BufferRef::Range(ab, 64, n * 4),
                        BufferRef::Slot(0)},
                       {n, n})
              .ok());
  REQUIRE(cb->Dispatch(exe, 1, {1, 1, 1}, {BufferRef::Slot(1), BufferRef::Range(ab, 64, 4)}).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(cb->binding_table_size() == 2);
  float ha[n], hb[n];
  for (uint32_t i = 0; i < n; ++i) { ha[i] = i; hb[i] = 100 * i; }
  REQUIRE(dev->WriteBuffer(*ab, 0, ha, 64).ok());
  REQUIRE(dev->WriteBuffer(*ab, 64, hb, 64).ok());

  Status s = dev->QueueExecute({}, cb, {}, {BufferRef::Whole(DeviceBuffer(*dev, 64))});
  REQUIRE(s.message() == "queue execute: the command buffer uses 2 binding table slot(s) but 1 were supplied");
  s = dev->QueueExecute({}, cb, {}, {BufferRef::Whole(nullptr), BufferRef::Whole(nullptr)});
  REQUIRE(s.message() == "queue execute: binding table slot 0: buffer is null");

  DeviceStats before = dev->stats();
  for (int round = 0; round < 3; ++round) {
    auto out = DeviceBuffer(*dev, 128);
    auto flag = DeviceBuffer(*dev, 4);
    REQUIRE(dev->QueueExecute({}, cb, {}, {BufferRef::Range(out, 64, 64), BufferRef::Whole(flag)}).ok());
    REQUIRE(dev->WaitIdle().ok());
    float got[n];
    REQUIRE(dev->ReadBuffer(*out, 64, got, 64).ok());
    for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == ha[i] + hb[i]);
    uint32_t misaligned = 99;
    REQUIRE(dev->ReadBuffer(*flag, 0, &misaligned, 4).ok());
    REQUIRE(misaligned == 0);
  }
  REQUIRE(dev->stats().command_buffers_recorded == before.command_buffers_recorded);
  REQUIRE(dev->stats().dispatches_executed == before.dispatches_executed + 6);
}

TEST_CASE("cpu executable: the same bytes load twice as independent executables") {
  auto dev = CpuDevice(1);
  auto e1 = Load(*dev, {"add_f32"});
  auto e2 = Load(*dev, {"add_f32"});
  auto out = DeviceBuffer(*dev, 64);
  e1.reset();  // unloading one must not break the other
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(e2, 0, {1, 1, 1}, {BufferRef::Whole(out), BufferRef::Whole(out), BufferRef::Whole(out)}, {4, 4}).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(dev->QueueExecute({}, cb, {}).ok());
  REQUIRE(dev->WaitIdle().ok());
}

}  // namespace
}  // namespace hexir::hal

namespace hexir::hal {
namespace {

TEST_CASE("cpu dispatch: more bindings than the inline array (scratch path), slots mixed in") {
  for (int32_t workers : {1, 3}) {
    for (bool inl : {false, true}) {
      auto dev = CpuDevice(workers, inl);
      auto exe = Load(*dev, {"stamp_bindings"});
      constexpr int kBindings = 45;
      std::vector<vm::Ref<Buffer>> bufs;
      std::vector<BufferRef> bindings, table;
      for (int i = 0; i < kBindings; ++i) {
        bufs.push_back(DeviceBuffer(*dev, 128));
        if (i % 3 == 0) {
          bindings.push_back(BufferRef::Slot(static_cast<uint32_t>(table.size())));
          table.push_back(BufferRef::Range(bufs.back(), 64, 64));
        } else {
          bindings.push_back(BufferRef::Whole(bufs.back()));
        }
      }
      auto cb = *dev->CreateCommandBuffer();
      REQUIRE(cb->Dispatch(exe, 0, {4, 1, 1}, bindings, {100}).ok());
      REQUIRE(cb->Finalize().ok());
      for (int round = 0; round < 2; ++round) {
        auto sem = *dev->CreateSemaphore(0);
        REQUIRE(dev->QueueExecute({}, cb, {{sem, 1}}, table).ok());
        REQUIRE(sem->Wait(1).ok());
      }
      for (int i = 0; i < kBindings; ++i) {
        uint32_t word;
        REQUIRE(dev->ReadBuffer(*bufs[i], i % 3 == 0 ? 64 : 0, &word, 4).ok());
        REQUIRE(word == static_cast<uint32_t>(i + 101));
      }
    }
  }
}

TEST_CASE("cpu dispatch: indirect counts from a slot at an offset, checked at execution") {
  auto dev = CpuDevice(2);
  auto exe = Load(*dev, {"record_thread"});
  auto out = DeviceBuffer(*dev, 4 * 64);
  auto counts = DeviceBuffer(*dev, 64);
  const uint32_t c[3] = {4, 2, 3};
  REQUIRE(dev->WriteBuffer(*counts, 32, c, 12).ok());
  auto cb = *dev->CreateCommandBuffer();
  BufferRef slot = BufferRef::Slot(1);
  slot.offset = 32;
  REQUIRE(cb->DispatchIndirect(exe, 0, slot, {BufferRef::Slot(0)}).ok());
  REQUIRE(cb->Finalize().ok());
  auto sem = *dev->CreateSemaphore(0);
  REQUIRE(dev->QueueExecute({}, cb, {{sem, 1}}, {BufferRef::Whole(out), BufferRef::Whole(counts)}).ok());
  REQUIRE(sem->Wait(1).ok());
  std::vector<uint32_t> got(64);
  REQUIRE(dev->ReadBuffer(*out, 0, got.data(), 256).ok());
  for (int i = 0; i < 64; ++i) REQUIRE((got[i] != 0) == (i < 24));  // 4*2*3 workgroups ran
  // The table entry is too short for 12 bytes at offset 32: the submission fails, naming it.
  auto sem2 = *dev->CreateSemaphore(0);
  REQUIRE(dev->QueueExecute({}, cb, {{sem2, 1}},
                            {BufferRef::Whole(out), BufferRef::Range(counts, 0, 40)})
              .ok());
  Status s = sem2->Wait(1);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "dispatch_indirect of 'record_thread': workgroup count at offset 32 of "
                         "binding table slot 1 needs 12 bytes but the slot holds 40");
}

}  // namespace
}  // namespace hexir::hal

namespace hexir::hal {
namespace {

// A buffer of some other driver: no host memory.
class ForeignBuffer final : public Buffer {
 public:
  explicit ForeignBuffer(uint64_t n) : Buffer(n, kMemoryDeviceLocal, nullptr) {}
  uint8_t* host_data() const override { return nullptr; }
};

TEST_CASE("cpu device: buffers of 2 MiB and more start on a 2 MiB boundary (huge pages), zeroed") {
  auto dev = CpuDevice(1);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  for (uint64_t bytes : {2 * kMiB, 3 * kMiB - 100, 7 * kMiB + 5}) {
    auto buffer = DeviceBuffer(*dev, bytes);
    const uint8_t* p = buffer->host_data();
    REQUIRE(reinterpret_cast<uintptr_t>(p) % (2 * kMiB) == 0);
    REQUIRE(p[0] == 0);
    REQUIRE(p[bytes - 1] == 0);
  }
  auto small = DeviceBuffer(*dev, kMiB);  // a 1 MiB size class: page-aligned only
  REQUIRE(reinterpret_cast<uintptr_t>(small->host_data()) % 4096 == 0);
}

TEST_CASE("cpu device: buffers of another driver are refused, never dereferenced") {
  auto dev = CpuDevice(1);
  auto exe = Load(*dev, {"stamp_bindings"});
  auto foreign = vm::Ref<Buffer>::Adopt(new ForeignBuffer(64));
  auto mine = DeviceBuffer(*dev, 64);
  uint8_t bytes[4] = {};
  REQUIRE(dev->WriteBuffer(*foreign, 0, bytes, 4).message() ==
          "write_buffer: the buffer is not host memory (allocated by another driver?)");
  REQUIRE(dev->ReadBuffer(*foreign, 0, bytes, 4).code() == StatusCode::kInvalidArgument);

  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0)}, {0}).ok());
  REQUIRE(cb->Finalize().ok());
  Status s = dev->QueueExecute({}, cb, {}, {BufferRef::Whole(foreign)});
  REQUIRE(s.message() ==
          "queue execute: binding table slot 0: the buffer is not host memory (allocated by another driver?)");
  REQUIRE(dev->QueueExecute({}, cb, {}, {BufferRef::Whole(mine)}).ok());  // validated once, cached
  REQUIRE(dev->QueueExecute({}, cb, {}, {BufferRef::Whole(mine)}).ok());

  auto cb2 = *dev->CreateCommandBuffer();
  REQUIRE(cb2->FillBuffer(mine, 0, 4, 1, 4).ok());
  REQUIRE(cb2->CopyBuffer(foreign, 0, mine, 0, 4).ok());
  REQUIRE(cb2->Finalize().ok());
  s = dev->QueueExecute({}, cb2, {});
  REQUIRE(s.message() ==
          "queue execute: command 1 uses a buffer that is not host memory (allocated by another driver?)");
  s = dev->QueueExecute({}, cb2, {});  // a refused command buffer is never marked validated
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(dev->WaitIdle().ok());
}

}  // namespace
}  // namespace hexir::hal

namespace hexir::hal {
namespace {

// ---- back-pressure ---------------------------------------------------------------------------

// Every submission goes through the queue thread: these cases are about the queue, so the
// small-submission shortcut (the submitter runs one when the queue is idle) is off for them
// (HEXIR_CPU_MIN_WORK_PER_THREAD_NS=0, read when the device is created).
vm::Ref<Device> Queued(uint32_t max_in_flight) {
  DeviceOptions o;
  o.cpu_worker_count = 1;
  o.queue_max_in_flight = max_in_flight;
  setenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS", "0", 1);
  auto d = CreateDevice("cpu", o);
  unsetenv("HEXIR_CPU_MIN_WORK_PER_THREAD_NS");
  REQUIRE(d.ok());
  return *d;
}

// The host submits `count` submissions, each filling a fresh 1 MiB buffer 8 times with a
// 4-byte pattern (device work ~50x the host's), and drops its references at once: each
// buffer lives exactly as long as its submission is pending. Returns the peak live bytes.
uint64_t PeakWhileRunningAhead(Device& dev, int count) {
  constexpr uint64_t kSize = 1 << 20;
  vm::Ref<Buffer> last;
  for (int i = 0; i < count; ++i) {
    auto buf = DeviceBuffer(dev, kSize);
    auto cb = *dev.CreateCommandBuffer();
    for (uint32_t k = 0; k < 8; ++k) REQUIRE(cb->FillBuffer(buf, 0, kSize, 1000 * i + k, 4).ok());
    REQUIRE(cb->Finalize().ok());
    REQUIRE(dev.QueueExecute({}, cb, {}).ok());
    if (i + 1 == count) last = buf;
  }
  REQUIRE(dev.WaitIdle().ok());
  uint32_t word = 0;
  REQUIRE(dev.ReadBuffer(*last, kSize - 4, &word, 4).ok());
  CHECK(word == uint32_t(1000 * (count - 1) + 7));  // every fill ran, in order
  CHECK(dev.stats().buffers_live == 1);              // `last`; the others died with their work
  return dev.stats().buffer_bytes_peak;
}

TEST_CASE("cpu queue: at most queue_max_in_flight submissions pending; their buffers bounded") {
  constexpr uint64_t kMiB = 1 << 20;
  auto bounded = Queued(4);
  uint64_t peak = PeakWhileRunningAhead(*bounded, 40);
  INFO("peak " << peak / kMiB << " MiB");
  // 4 submissions in flight + the buffer the host is filling in a command.
  CHECK(peak <= 5 * kMiB);
  CHECK(bounded->stats().queue_submissions == 40);
  CHECK(bounded->stats().host_waits == 1);  // blocking for room is not a host wait

  // Control: without the cap the same host loop runs ahead and keeps far more alive, so the
  // check above measures the cap, not the machine's speed.
  auto unbounded = Queued(0);
  uint64_t free_peak = PeakWhileRunningAhead(*unbounded, 40);
  INFO("uncapped peak " << free_peak / kMiB << " MiB");
  CHECK(free_peak > 8 * kMiB);
}

TEST_CASE("cpu queue: the cap is lifted while the queue waits on a semaphore the host signals") {
  auto dev = Queued(2);
  auto gate = *dev->CreateSemaphore(0);
  auto done = *dev->CreateSemaphore(0);
  std::atomic<bool> submitted{false};
  // Ten submissions wait for `gate`; the host signals it only after submitting all of them.
  // A cap that held here would deadlock: the watchdog below opens the gate and fails.
  std::thread host([&] {
    for (uint64_t i = 1; i <= 10; ++i) {
      auto cb = *dev->CreateCommandBuffer();
      if (!cb->Finalize().ok()) return;
      if (!dev->QueueExecute({{gate, 1}}, cb, {{done, i}}).ok()) return;
    }
    submitted = true;
  });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!submitted && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bool ran_ahead = submitted;
  REQUIRE(gate->Signal(1).ok());
  host.join();
  CHECK(ran_ahead);
  REQUIRE(done->Wait(10).ok());
  REQUIRE(dev->WaitIdle().ok());
}

TEST_CASE("cpu queue: a read of a buffer no later submission uses waits for its last user only") {
  auto dev = Queued(2);
  auto x = DeviceBuffer(*dev, 64), y = DeviceBuffer(*dev, 64);
  auto gate = *dev->CreateSemaphore(0);
  auto done = *dev->CreateSemaphore(0);
  auto fill = [&](const vm::Ref<Buffer>& b, uint32_t pattern) {
    auto cb = *dev->CreateCommandBuffer();
    REQUIRE(cb->FillBuffer(b, 0, 64, pattern, 4).ok());
    REQUIRE(cb->Finalize().ok());
    return cb;
  };
  // x's last user runs at once; the submission after it (on y) waits for the host's gate.
  REQUIRE(dev->QueueExecute({}, fill(x, 7), {}).ok());
  REQUIRE(dev->QueueExecute({{gate, 1}}, fill(y, 9), {{done, 1}}).ok());
  // A read that drained the queue would wait for the gate: the watchdog opens it after 10 s,
  // and the check below fails.
  std::thread watchdog([&] {
    for (int i = 0; i < 1000 && *gate->Query() == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (*gate->Query() == 0) gate->Signal(1).IgnoreError();
  });
  const DeviceStats before = dev->stats();
  uint32_t v = 0;
  REQUIRE(dev->ReadBufferAfterPendingWork(*x, 60, &v, 4).ok());
  CHECK(*gate->Query() == 0);  // the read did not wait for the gated submission
  CHECK(v == 7);
  const DeviceStats ahead = dev->stats();
  CHECK(ahead.reads_ahead_of_queue - before.reads_ahead_of_queue == 1);
  CHECK(ahead.queue_drains == before.queue_drains);
  if (*gate->Query() == 0) REQUIRE(gate->Signal(1).ok());
  watchdog.join();
  // y's last user is the last submission: its read drains the queue.
  REQUIRE(dev->ReadBufferAfterPendingWork(*y, 0, &v, 4).ok());
  CHECK(v == 9);
  CHECK(*done->Query() == 1);
  CHECK(dev->stats().queue_drains - ahead.queue_drains == 1);
}

// ---- concurrent waves --------------------------------------------------------------------------

// Submits `cb` and waits for its signal; returns the semaphore wait's status.
Status SubmitAndWait(Device& dev, const vm::Ref<CommandBuffer>& cb) {
  auto sem = *dev.CreateSemaphore(0);
  HEXIR_RETURN_IF_ERROR(dev.QueueExecute({}, cb, {{sem, 1}}));
  return sem->Wait(1, std::chrono::seconds(60));
}

// Three waves over eight buffers: (fill x0..x3, four multi-workgroup adds out_k = a + b_k),
// barrier, (x_k = x_k*3 + k as 1-workgroup-per-element affine, copies out_k -> copy_k),
// barrier, (a 2-byte fill of the tail of every copy_k). Returns every buffer's bytes.
std::vector<std::vector<uint8_t>> RunThreeWaves(Device& dev) {
  constexpr uint32_t n = 1000, tile = 16;
  auto exe = Load(dev, {"add_f32", "affine_i32"});
  auto a = DeviceBuffer(dev, n * 4);
  std::vector<float> ha(n);
  for (uint32_t i = 0; i < n; ++i) ha[i] = 0.25f * i - 7;
  REQUIRE(dev.WriteBuffer(*a, 0, ha.data(), n * 4).ok());
  std::vector<vm::Ref<Buffer>> b, out, copy, x;
  for (uint32_t k = 0; k < 4; ++k) {
    b.push_back(DeviceBuffer(dev, n * 4));
    std::vector<float> hb(n);
    for (uint32_t i = 0; i < n; ++i) hb[i] = float(k + 1) / (i + 1);
    REQUIRE(dev.WriteBuffer(*b[k], 0, hb.data(), n * 4).ok());
    out.push_back(DeviceBuffer(dev, n * 4));
    copy.push_back(DeviceBuffer(dev, n * 4));
    x.push_back(DeviceBuffer(dev, 64 * 4));
  }
  auto cb = *dev.CreateCommandBuffer();
  for (uint32_t k = 0; k < 4; ++k) {
    REQUIRE(cb->FillBuffer(x[k], 0, 64 * 4, 10 + k, 4).ok());
    REQUIRE(cb->Dispatch(exe, 0, {(n + tile - 1) / tile, 1, 1},
                         {BufferRef::Whole(a), BufferRef::Whole(b[k]), BufferRef::Whole(out[k])},
                         {n, tile})
                .ok());
  }
  REQUIRE(cb->Barrier().ok());
  for (uint32_t k = 0; k < 4; ++k) {
    REQUIRE(cb->Dispatch(exe, 1, {64, 1, 1}, {BufferRef::Whole(x[k])}, {64, 3, k}).ok());
    REQUIRE(cb->CopyBuffer(out[k], 0, copy[k], 0, n * 4).ok());
  }
  REQUIRE(cb->Barrier().ok());
  for (uint32_t k = 0; k < 4; ++k) REQUIRE(cb->FillBuffer(copy[k], n * 4 - 8, 8, 0xbeef, 2).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(SubmitAndWait(dev, cb).ok());
  std::vector<std::vector<uint8_t>> bytes;
  for (auto* list : {&out, &copy, &x}) {
    for (auto& buf : *list) {
      std::vector<uint8_t> v(buf->byte_size());
      REQUIRE(dev.ReadBuffer(*buf, 0, v.data(), v.size()).ok());
      bytes.push_back(std::move(v));
    }
  }
  // The reference: what each buffer must hold, computed on the host.
  for (uint32_t k = 0; k < 4; ++k) {
    std::vector<float> got(n);
    std::memcpy(got.data(), bytes[k].data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == ha[i] + float(k + 1) / (i + 1));
    std::vector<uint16_t> tail(4);
    std::memcpy(tail.data(), bytes[4 + k].data() + n * 4 - 8, 8);
    REQUIRE(tail == std::vector<uint16_t>(4, 0xbeef));
    REQUIRE(std::memcmp(bytes[4 + k].data(), bytes[k].data(), n * 4 - 8) == 0);
    std::vector<int32_t> xs(64);
    std::memcpy(xs.data(), bytes[8 + k].data(), 64 * 4);
    REQUIRE(xs == std::vector<int32_t>(64, int32_t((10 + k) * 3 + k)));
  }
  return bytes;
}

TEST_CASE("cpu waves: a wave's results equal the sequential ones, and barriers order waves") {
  auto sequential = CpuDevice(1);
  auto expected = RunThreeWaves(*sequential);
  for (int32_t workers : {2, 4}) {
    auto dev = CpuDevice(workers);
    uint64_t before = dev->stats().dispatches_executed;
    REQUIRE(RunThreeWaves(*dev) == expected);
    REQUIRE(dev->stats().dispatches_executed == before + 8);
  }
  auto inline_device = CpuDevice(2, /*inl=*/true);
  REQUIRE(RunThreeWaves(*inline_device) == expected);
}

// Two single-workgroup rendezvous dispatches: each succeeds only if the other one runs while
// it waits (5 s at most), so a sequential execution fails with the first one's timeout.
vm::Ref<CommandBuffer> Rendezvous(Device& dev, const vm::Ref<Buffer>& flags, bool barrier) {
  auto exe = Load(dev, {"rendezvous"});
  auto cb = *dev.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {0, 1, 5000}).ok());
  if (barrier) REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {1, 0, 5000}).ok());
  REQUIRE(cb->Finalize().ok());
  return cb;
}

TEST_CASE("cpu waves: two single-workgroup dispatches of one wave run at the same time on 2 workers") {
  auto dev = CpuDevice(2);
  auto flags = DeviceBuffer(*dev, 64);
  auto cb = Rendezvous(*dev, flags, /*barrier=*/false);
  Status st = SubmitAndWait(*dev, cb);
  INFO(st.ToString());
  REQUIRE(st.ok());
  std::vector<uint32_t> words(2);
  REQUIRE(dev->ReadBuffer(*flags, 0, words.data(), 8).ok());
  REQUIRE(words == std::vector<uint32_t>{1, 1});
}

TEST_CASE("cpu waves: a barrier keeps dispatches apart (the rendezvous then times out)") {
  // Control for the case above: the same kernels separated by a barrier cannot meet, so the
  // rendezvous really measures concurrency. The first one gives up after its timeout.
  auto dev = CpuDevice(2);
  auto flags = DeviceBuffer(*dev, 64);
  auto exe = Load(*dev, {"rendezvous"});
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {0, 1, 50}).ok());
  REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {1, 0, 50}).ok());
  REQUIRE(cb->Finalize().ok());
  Status st = SubmitAndWait(*dev, cb);
  REQUIRE(st.code() == StatusCode::kAborted);
  REQUIRE(st.message() == "dispatch of entry 'rendezvous' failed: workgroup (0, 0, 0) returned 11");
}

TEST_CASE("cpu waves: a failing dispatch in a wave fails the submission with its name") {
  auto dev = CpuDevice(2);
  auto exe = Load(*dev, {"add_f32", "fail_at", "affine_i32"});
  auto x = DeviceBuffer(*dev, 256 * 4), y = DeviceBuffer(*dev, 256 * 4);
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 2, {256, 1, 1}, {BufferRef::Whole(x)}, {256, 1, 1}).ok());
  REQUIRE(cb->Dispatch(exe, 1, {8, 1, 1}, {}, {5}).ok());
  REQUIRE(cb->Dispatch(exe, 2, {256, 1, 1}, {BufferRef::Whole(y)}, {256, 1, 1}).ok());
  REQUIRE(cb->Finalize().ok());
  for (int replay = 0; replay < 3; ++replay) {
    Status st = SubmitAndWait(*dev, cb);
    REQUIRE(st.code() == StatusCode::kAborted);
    REQUIRE(st.message() == "dispatch of entry 'fail_at' failed: workgroup (5, 0, 0) returned 7");
  }
}

TEST_CASE("cpu waves: the profiler reports every dispatch of a wave, in command order") {
  struct Recorder : Profiler {
    std::vector<DispatchTiming> timings;
    void OnDispatch(const DispatchTiming& t) override { timings.push_back(t); }
  } rec;
  auto dev = CpuDevice(2);
  auto exe = Load(*dev, {"affine_i32", "add_f32"});
  auto x = DeviceBuffer(*dev, 64 * 4), y = DeviceBuffer(*dev, 64 * 4);
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {64, 1, 1}, {BufferRef::Whole(x)}, {64, 2, 1}).ok());
  REQUIRE(cb->Dispatch(exe, 0, {0, 1, 1}, {BufferRef::Whole(y)}, {64, 2, 1}).ok());
  REQUIRE(cb->Dispatch(exe, 0, {32, 2, 1}, {BufferRef::Whole(y)}, {64, 2, 1}).ok());
  REQUIRE(cb->Finalize().ok());
  dev->SetProfiler(&rec);
  int64_t before = ProfileClockNs();
  REQUIRE(SubmitAndWait(*dev, cb).ok());
  int64_t after = ProfileClockNs();
  dev->SetProfiler(nullptr);
  REQUIRE(rec.timings.size() == 3);
  REQUIRE(rec.timings[0].workgroup_count == std::array<uint32_t, 3>{64, 1, 1});
  REQUIRE(rec.timings[1].workgroup_count == std::array<uint32_t, 3>{0, 1, 1});
  REQUIRE(rec.timings[2].workgroup_count == std::array<uint32_t, 3>{32, 2, 1});
  for (const DispatchTiming& t : rec.timings) {
    REQUIRE(before <= t.begin_ns);
    REQUIRE(t.begin_ns <= t.end_ns);
    REQUIRE(t.end_ns <= after);
  }
  std::vector<int32_t> ys(64);
  REQUIRE(dev->ReadBuffer(*y, 0, ys.data(), 64 * 4).ok());
  REQUIRE(ys == std::vector<int32_t>(64, 1));  // 0 * 2 + 1, once per element
}

}  // namespace
}  // namespace hexir::hal
