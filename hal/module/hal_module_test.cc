#include "hal/module/hal_module.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_kernels.h"
#include "vm/api.h"
#include "vm/byte_buffer.h"

namespace hexir::hal {
namespace {

using cpu::testing::TestKernelView;

constexpr int64_t kF32 = static_cast<int64_t>(ElementType::kF32);
constexpr int64_t kI32 = static_cast<int64_t>(ElementType::kI32);
constexpr int64_t kI64 = static_cast<int64_t>(ElementType::kI64);

// The HAL module never touches its Context; this one only has to exist.
class NullContext final : public vm::Context {
 public:
  Status RegisterNativeModule(std::shared_ptr<vm::NativeModule>) override { return Unimplemented("x"); }
  Status LoadModule(const vm::Module&) override { return Unimplemented("x"); }
  StatusOr<vm::Function> LookupFunction(std::string_view) const override { return Unimplemented("x"); }
  Status Invoke(const vm::Function&, Span<vm::Variant>, std::vector<vm::Variant>*,
                const vm::InvokeOptions&) override {
    return Unimplemented("x");
  }
  void Cancel() override {}
  void SetFuel(uint64_t) override {}
  const vm::ContextStats& stats() const override { return stats_; }
  vm::NativeModuleState* native_state(std::string_view) override { return nullptr; }

 private:
  vm::ContextStats stats_;
};

// A calling module with test_kernels.so as executable 0 (entries add_f32, fail_at) and a
// second executable whose entry does not exist.
class FakeCaller final : public vm::CallerModule {
 public:
  explicit FakeCaller(uint64_t id) : id_(id) {}
  std::string_view name() const override { return "fake"; }
  uint64_t instance_id() const override { return id_; }
  size_t executable_count() const override { return 2; }
  StatusOr<vm::ExecutableView> executable(size_t ordinal) const override {
    if (ordinal == 0) return TestKernelView({"add_f32", "fail_at"});
    return TestKernelView({"missing_entry"});
  }

 private:
  uint64_t id_;
};

struct Harness {
  vm::Ref<Device> device;
  std::shared_ptr<vm::NativeModule> module;
  std::unique_ptr<vm::NativeModuleState> state;
  FakeCaller caller{1};

  explicit Harness(bool inl = false) {
    DeviceOptions o;
    o.cpu_inline = inl;
    o.cpu_worker_count = 2;
    device = *CreateDevice("cpu", o);
    module = CreateHalModule(device);
    NullContext ctx;
    auto s = module->CreateState(ctx);
    REQUIRE(s.ok());
    state = std::move(s).value();
  }

  const vm::NativeFunction& Find(std::string_view name) {
    for (const auto& f : module->functions()) {
      if (f.name == name) return f;
    }
    FAIL("no function " << name);
    return module->functions()[0];
  }

  // Calls `name` with `args`; `sig` is the exact signature (results sized from it).
  Status Call(std::string_view name, std::string_view sig, std::vector<vm::Variant> args,
              std::vector<vm::Variant>* results = nullptr, const vm::CallerModule* from = nullptr,
              const Interrupt& interrupt = kNoInterrupt) {
    const vm::NativeFunction& f = Find(name);
    std::vector<vm::Variant> local;
    if (!results) results = &local;
    size_t us = sig.find('_');
    results->assign(us == std::string_view::npos ? 0 : sig.size() - us - 1, vm::Variant{});
    vm::NativeCall call;
    call.caller = from ? from : &caller;
    call.signature = sig;
    call.args = Span<vm::Variant>(args.data(), args.size());
    call.results = Span<vm::Variant>(results->data(), results->size());
    call.interrupt = &interrupt;
    // Named like the interpreter names a failing import (what a caller of the module reads).
    return f.call(*state, call).WithContext(name);
  }

  vm::Ref<vm::RefObject> CallRef(std::string_view name, std::string_view sig,
                                 std::vector<vm::Variant> args) {
    std::vector<vm::Variant> r;
    Status s = Call(name, sig, std::move(args), &r);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(r.size() == 1);
    return r[0].ref;
  }
};

vm::Variant R(vm::Ref<vm::RefObject> r) { return vm::Variant{0, std::move(r)}; }
vm::Variant I(int64_t v) { return vm::Variant{v, nullptr}; }

TEST_CASE("hal module: exports every hal_imports.def function with its pattern") {
  Harness h;
  REQUIRE(h.module->name() == "hal");
  std::vector<std::pair<std::string, std::string>> expected = {
#define HAL_IMPORT(Id, name, sig, meaning) {name, sig},
#include "hal/module/hal_imports.def"
#undef HAL_IMPORT
  };
  REQUIRE(expected.size() == 49);
  REQUIRE(h.module->functions().size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    REQUIRE(h.module->functions()[i].name == expected[i].first);
    REQUIRE(h.module->functions()[i].signature == expected[i].second);
    REQUIRE(h.module->functions()[i].call != nullptr);
  }
  REQUIRE(std::string(h.Find("hal.command_buffer.dispatch").signature) == "rriiiii*");
}

TEST_CASE("hal module: an add dispatch end to end through the import functions") {
  for (bool inl : {false, true}) {
    Harness h(inl);
    auto dev = h.CallRef("hal.device.default", "_r", {});
    REQUIRE(dev.get() == h.device.get());

    const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
    auto rodata = vm::MakeRef<vm::ByteBuffer>(reinterpret_cast<const uint8_t*>(a), sizeof(a), nullptr);
    auto buf_a = h.CallRef("hal.allocator.allocate_initialized", "rr_r", {R(dev), R(rodata)});
    auto view_a = h.CallRef("hal.buffer_view.create", "riii_r", {R(buf_a), I(kF32), I(2), I(3)});
    REQUIRE(h.Call("hal.buffer_view.assert", "riiii", {R(view_a), I(0), I(kF32), I(2), I(3)}).ok());
    auto view_b = BufferViewFromHost(*h.device, kF32, std::vector<int64_t>{2, 3}, b, sizeof(b));
    REQUIRE(view_b.ok());
    auto buf_b = h.CallRef("hal.buffer_view.buffer", "r_r", {R(*view_b)});
    std::vector<vm::Variant> dim;
    REQUIRE(h.Call("hal.buffer_view.dim", "ri_i", {R(view_a), I(1)}, &dim).ok());
    REQUIRE(dim[0].bits == 3);
    auto out = h.CallRef("hal.allocator.allocate", "ri_r", {R(dev), I(24)});

    auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
    auto exe_again = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
    REQUIRE(exe.get() == exe_again.get());
    REQUIRE(h.device->stats().executables_loaded == 1);

    auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
    REQUIRE(h.Call("hal.command_buffer.dispatch", "rriiiiirrrii",
                   {R(cb), R(exe), I(0), I(1), I(1), I(1), I(3), R(buf_a), R(buf_b), R(out),
                    I(6), I(8)})
                .ok());
    REQUIRE(h.Call("hal.command_buffer.barrier", "r", {R(cb)}).ok());
    REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
    auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
    for (int64_t round = 1; round <= 3; ++round) {
      vm::Variant wait = round == 1 ? R(nullptr) : R(sem);
      REQUIRE(h.Call("hal.device.queue.execute", "rrriri",
                     {R(dev), R(cb), wait, I(round - 1), R(sem), I(round)})
                  .ok());
    }
    REQUIRE(h.Call("hal.semaphore.wait", "ri", {R(sem), I(3)}).ok());
    float got[6];
    REQUIRE(h.device->ReadBuffer(*vm::RefCast<Buffer>(out.get()), 0, got, 24).ok());
    for (int i = 0; i < 6; ++i) REQUIRE(got[i] == a[i] + b[i]);
    DeviceStats st = h.device->stats();
    REQUIRE(st.command_buffers_recorded == 1);
    REQUIRE(st.queue_submissions == 3);
    REQUIRE(st.dispatches_executed == 3);
  }
}

TEST_CASE("hal module: buffer_view.assert messages") {
  Harness h;
  auto buf = *h.device->AllocateBuffer(64);
  auto view = *BufferView::Create(buf, kF32, {2, 4});
  auto check = [&](std::vector<vm::Variant> args) {
    return h.Call("hal.buffer_view.assert", "rii*", std::move(args));
  };
  REQUIRE(check({R(view), I(0), I(kF32), I(2), I(4)}).ok());
  REQUIRE(check({R(view), I(0), I(kF32), I(-1), I(4)}).ok());
  REQUIRE(check({R(view), I(0), I(kF32), I(-1), I(-1)}).ok());
  REQUIRE(check({R(view), I(0), I(kF32), I(INT64_MIN), I(4)}).ok());  // MLIR's kDynamic
  Status s = check({R(view), I(0), I(kF32), I(2), I(3)});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "hal.buffer_view.assert: input 0: expected 2x3xf32, got 2x4xf32");
  s = check({R(view), I(1), I(kI32), I(2), I(4)});
  REQUIRE(s.message() == "hal.buffer_view.assert: input 1: expected element type i32, got f32");
  s = check({R(view), I(2), I(kF32), I(-1), I(4), I(1)});
  REQUIRE(s.message() == "hal.buffer_view.assert: input 2: expected rank 3 (?x4x1xf32), got rank 2 (2x4xf32)");
  s = check({R(view), I(0), I(kI32), I(3), I(4)});
  REQUIRE(s.message() == "hal.buffer_view.assert: input 0: expected 3x4xi32, got 2x4xf32");
  s = check({R(buf), I(0), I(kF32)});
  REQUIRE(s.message() == "hal.buffer_view.assert: argument 0: expected hal.buffer_view, got hal.buffer");
}

TEST_CASE("hal module: ref arguments are type-checked, naming import and index") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto buf = *h.device->AllocateBuffer(64);
  Status s = h.Call("hal.buffer_view.dim", "ri_i", {R(nullptr), I(0)});
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "hal.buffer_view.dim: argument 0: expected hal.buffer_view, got null");
  s = h.Call("hal.command_buffer.create", "r_r", {R(buf)});
  REQUIRE(s.message() == "hal.command_buffer.create: argument 0: expected hal.device, got hal.buffer");
  s = h.Call("hal.allocator.allocate_initialized", "rr_r", {R(dev), R(buf)});
  REQUIRE(s.message() == "hal.allocator.allocate_initialized: argument 1: expected vm.buffer, got hal.buffer");
  auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  s = h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(buf), I(0), R(nullptr), I(1)});
  REQUIRE(s.message() == "hal.device.queue.execute: argument 2: expected hal.semaphore, got hal.buffer");
  s = h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(nullptr), I(0), R(dev), I(1)});
  REQUIRE(s.message() == "hal.device.queue.execute: argument 4: expected hal.semaphore, got hal.device");
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  s = h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(nullptr), I(0), R(sem), I(1)});
  REQUIRE(s.code() == StatusCode::kFailedPrecondition);
  REQUIRE(s.message() == "hal.device.queue.execute: queue execute: the command buffer is still "
                         "recording; finalize it before submitting");
  s = h.Call("hal.semaphore.wait", "ri", {R(cb), I(1)});
  REQUIRE(s.message() == "hal.semaphore.wait: argument 0: expected hal.semaphore, got hal.command_buffer");
  s = h.Call("hal.allocator.allocate", "ri_r", {R(dev), I(-5)});
  REQUIRE(s.message() == "hal.allocator.allocate: argument 1: byte size must be >= 0, got -5");
  s = h.Call("hal.buffer_view.dim", "ri_i", {R(*BufferView::Create(buf, kF32, {2, 2})), I(2)});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "hal.buffer_view.dim: dim index 2 is out of range for 2x2xf32 (rank 2)");
  s = h.Call("hal.buffer_view.create", "rii_r", {R(buf), I((int64_t{1} << 32) + 1), I(4)});
  REQUIRE(s.message() == "hal.buffer_view.create: argument 1: unknown element type code 4294967297");
  s = h.Call("hal.buffer_view.create", "riii_r", {R(buf), I(kF32), I(4), I(5)});
  REQUIRE(s.message() == "hal.buffer_view.create: buffer view 4x5xf32 needs 80 bytes but the buffer holds 64");
  auto other = *CreateDevice("cpu", {});
  s = h.Call("hal.allocator.allocate", "ri_r", {R(other), I(4)});
  REQUIRE(s.message() == "hal.allocator.allocate: argument 0: is not one of this context's devices");
  s = h.Call("hal.device.at", "i_r", {I(1)});
  REQUIRE(s.message() == "hal.device.at: argument 0: device ordinal 1 is not bound (this context has 1 device(s))");
}

TEST_CASE("hal module: a context of two devices hands out each by ordinal and transfers between them") {
  vm::Ref<Device> first = *CreateDevice("cpu", {}), second = *CreateDevice("cpu:threads=1", {});
  auto module = CreateHalModule(std::vector<vm::Ref<Device>>{first, second});
  NullContext ctx;
  auto state = module->CreateState(ctx);
  REQUIRE(state.ok());
  auto call = [&](std::string_view name, std::string_view sig, std::vector<vm::Variant> args,
                  std::vector<vm::Variant>* results) {
    for (const auto& f : module->functions())
      if (f.name == name) {
        results->assign(4, vm::Variant());
        vm::NativeCall c;
        c.signature = sig;
        c.args = Span<vm::Variant>(args.data(), args.size());
        c.results = Span<vm::Variant>(results->data(), results->size());
        c.interrupt = &kNoInterrupt;
        return f.call(**state, c);
      }
    return NotFound(name);
  };
  std::vector<vm::Variant> r;
  REQUIRE(call("hal.device.at", "i_r", {I(1)}, &r).ok());
  REQUIRE(r[0].ref.get() == second.get());
  REQUIRE(call("hal.device.default", "_r", {}, &r).ok());
  REQUIRE(r[0].ref.get() == first.get());

  auto source = *first->AllocateBuffer(16), target = *second->AllocateBuffer(16);
  const float data[4] = {1, 2, 3, 4};
  REQUIRE(first->WriteBuffer(*source, 0, data, 16).ok());
  Status st = call("hal.device.queue.transfer", "rririrrri",
                   {R(first), R(nullptr), I(0), R(nullptr), I(0), R(source), R(second), R(target), I(16)}, &r);
  REQUIRE(st.ok());
  REQUIRE(second->WaitIdle().ok());
  float back[4] = {};
  REQUIRE(second->ReadBuffer(*target, 0, back, 16).ok());
  REQUIRE(std::memcmp(back, data, 16) == 0);
  REQUIRE(second->stats().transfers_queued == 1);
  REQUIRE(call("hal.device.queue.fence", "rr", {R(first), R(second)}, &r).ok());
}

TEST_CASE("hal module: dispatch argument errors") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto buf = *h.device->AllocateBuffer(64);
  auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
  auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  Status s = h.Call("hal.command_buffer.dispatch", "rriiiiir",
                    {R(cb), R(exe), I(0), I(1), I(1), I(1), I(2), R(buf)});
  REQUIRE(s.message() == "hal.command_buffer.dispatch: argument 6: binding count 2 does not fit the 1 trailing argument(s)");
  s = h.Call("hal.command_buffer.dispatch", "rriiiiii",
             {R(cb), R(exe), I(0), I(1), I(1), I(1), I(1), I(7)});
  REQUIRE(s.message() == "hal.command_buffer.dispatch: argument 7: expected hal.buffer, got null");
  s = h.Call("hal.command_buffer.dispatch", "rriiiiiri",
             {R(cb), R(exe), I(5), I(1), I(1), I(1), I(1), R(buf), I(3)});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "hal.command_buffer.dispatch: dispatch: entry ordinal 5 is out of range; "
                         "the executable has 2 entry point(s): add_f32, fail_at");
  s = h.Call("hal.command_buffer.dispatch", "rriiiiiir",
             {R(cb), R(exe), I(0), I(1), I(1), I(1), I(0), I(3), R(buf)});
  REQUIRE(s.message() == "hal.command_buffer.dispatch: argument 8: push constants must be 'i' values, got 'r'");
  s = h.Call("hal.command_buffer.dispatch", "rriiiii",
             {R(cb), R(exe), I(0), I(-1), I(1), I(1), I(0)});
  REQUIRE(s.message() == "hal.command_buffer.dispatch: argument 3: workgroup count -1 is outside [0, 2^32)");
}

TEST_CASE("hal module: reuse_uniform hands back the previous buffer only when it holds the same words") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto words = [](vm::RefObject* b) {
    auto* buffer = static_cast<Buffer*>(b);
    std::vector<int64_t> w(buffer->byte_size() / 8);
    std::memcpy(w.data(), buffer->host_data(), buffer->byte_size());
    return w;
  };
  auto first = h.CallRef("hal.allocator.reuse_uniform", "rrii_r", {R(dev), R(nullptr), I(7), I(-3)});
  REQUIRE(words(first.get()) == std::vector<int64_t>{7, -3});
  REQUIRE((static_cast<Buffer*>(first.get())->memory_types() & kMemoryUniform) != 0);
  const uint64_t allocated = h.device->stats().buffers_allocated;
  auto same = h.CallRef("hal.allocator.reuse_uniform", "rrii_r", {R(dev), R(first), I(7), I(-3)});
  CHECK(same.get() == first.get());
  CHECK(h.device->stats().buffers_allocated == allocated);
  // Other words, fewer words, or a buffer that is not uniform: a new buffer, the old one unchanged.
  auto other = h.CallRef("hal.allocator.reuse_uniform", "rrii_r", {R(dev), R(first), I(7), I(4)});
  CHECK(other.get() != first.get());
  CHECK(words(other.get()) == std::vector<int64_t>{7, 4});
  CHECK(words(first.get()) == std::vector<int64_t>{7, -3});
  auto shorter = h.CallRef("hal.allocator.reuse_uniform", "rri_r", {R(dev), R(first), I(7)});
  CHECK(shorter.get() != first.get());
  auto host = h.CallRef("hal.allocator.allocate_host", "ri_r", {R(dev), I(16)});
  std::memcpy(static_cast<Buffer*>(host.get())->host_data(), words(first.get()).data(), 16);
  auto fresh = h.CallRef("hal.allocator.reuse_uniform", "rrii_r", {R(dev), R(host), I(7), I(-3)});
  CHECK(fresh.get() != host.get());
  Status s = h.Call("hal.allocator.reuse_uniform", "rrfi_r", {R(dev), R(nullptr), vm::Variant{0, nullptr}, I(1)});
  CHECK_FALSE(s.ok());
  // A non-i word beside a previous buffer of the right size: the same error, not a reuse.
  s = h.Call("hal.allocator.reuse_uniform", "rrfi_r", {R(dev), R(first), vm::Variant{0, nullptr}, I(1)});
  CHECK_FALSE(s.ok());
}

TEST_CASE("hal module: executables are cached per (module instance, ordinal) per context") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  FakeCaller other(2);
  std::vector<vm::Variant> r1, r2, r3;
  REQUIRE(h.Call("hal.executable.lookup", "ri_r", {R(dev), I(0)}, &r1).ok());
  REQUIRE(h.Call("hal.executable.lookup", "ri_r", {R(dev), I(0)}, &r2).ok());
  REQUIRE(h.Call("hal.executable.lookup", "ri_r", {R(dev), I(0)}, &r3, &other).ok());
  REQUIRE(r1[0].ref.get() == r2[0].ref.get());
  REQUIRE(r1[0].ref.get() != r3[0].ref.get());
  REQUIRE(h.device->stats().executables_loaded == 2);
  REQUIRE(static_cast<HalModuleState&>(*h.state).cached_executable_count() == 2);

  // A second context has its own cache.
  NullContext ctx;
  auto state2 = h.module->CreateState(ctx);
  REQUIRE(state2.ok());
  REQUIRE(static_cast<HalModuleState&>(**state2).LookupExecutable(h.caller, 0, 0).ok());
  REQUIRE(h.device->stats().executables_loaded == 3);

  Status s = h.Call("hal.executable.lookup", "ri_r", {R(dev), I(2)});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "hal.executable.lookup: executable ordinal 2 is out of range; module 'fake' has 2 executable(s)");
  s = h.Call("hal.executable.lookup", "ri_r", {R(dev), I(1)});
  REQUIRE(s.code() == StatusCode::kNotFound);
  REQUIRE(s.message() == "hal.executable.lookup: module 'fake' executable 1: cpu driver: entry point "
                         "'missing_entry' (ordinal 0) is not exported by the executable");
}

TEST_CASE("hal module: a failing dispatch surfaces at semaphore.wait naming the entry") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
  auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  REQUIRE(h.Call("hal.command_buffer.dispatch", "rriiiiii",
                 {R(cb), R(exe), I(1), I(4), I(1), I(1), I(0), I(2)})
              .ok());
  REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  REQUIRE(h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(nullptr), I(0), R(sem), I(1)}).ok());
  Status s = h.Call("hal.semaphore.wait", "ri", {R(sem), I(1)});
  REQUIRE(s.code() == StatusCode::kAborted);
  REQUIRE(s.message() == "hal.semaphore.wait: dispatch of entry 'fail_at' failed: workgroup (2, 0, 0) returned 7");
  std::vector<vm::Variant> r;
  s = h.Call("hal.semaphore.query", "r_i", {R(sem)}, &r);
  REQUIRE(s.code() == StatusCode::kAborted);
  s = h.Call("hal.semaphore.wait_timeout", "rii_i", {R(sem), I(1), I(0)}, &r);
  REQUIRE(s.code() == StatusCode::kAborted);  // a failure is not a timeout
  // Without a signal semaphore the failure is reported once by wait_idle.
  REQUIRE(h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(nullptr), I(0), R(nullptr), I(0)}).ok());
  s = h.Call("hal.device.wait_idle", "r", {R(dev)});
  REQUIRE(s.code() == StatusCode::kAborted);
  REQUIRE(s.message() == "hal.device.wait_idle: dispatch of entry 'fail_at' failed: workgroup (2, 0, 0) returned 7");
  REQUIRE(h.Call("hal.device.wait_idle", "r", {R(dev)}).ok());
}

TEST_CASE("hal module: dispatch_slots recorded once, execute_bound with new tables") {
  for (bool inl : {false, true}) {
    Harness h(inl);
    auto dev = vm::Ref<vm::RefObject>(h.device);
    auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
    auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
    // out(slot 2) = a(slot 0) + b(slot 1), n = 4 elements in one workgroup.
    REQUIRE(h.Call("hal.command_buffer.dispatch_slots", "rriiiiiiiiii",
                   {R(cb), R(exe), I(0), I(1), I(1), I(1), I(3), I(0), I(1), I(2), I(4), I(4)})
                .ok());
    REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
    auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
    std::vector<vm::Ref<vm::RefObject>> outs;
    for (int round = 1; round <= 3; ++round) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = float(round * 10 + i), b[i] = float(i * round);
      auto ba = *h.device->AllocateBuffer(16);
      auto bb = *h.device->AllocateBuffer(16);
      REQUIRE(h.device->WriteBuffer(*ba, 0, a, 16).ok());
      REQUIRE(h.device->WriteBuffer(*bb, 0, b, 16).ok());
      std::vector<vm::Variant> r;
      REQUIRE(h.Call("hal.buffer.length", "r_i", {R(ba)}, &r).ok());
      REQUIRE(r[0].bits == 16);
      auto out = *h.device->AllocateBuffer(16);
      outs.push_back(out);
      REQUIRE(h.Call("hal.device.queue.execute_bound", "rrririrrr",
                     {R(dev), R(cb), round == 1 ? R(nullptr) : R(sem), I(round - 1), R(sem),
                      I(round), R(ba), R(bb), R(out)})
                  .ok());
      std::vector<vm::Variant> ok;
      REQUIRE(h.Call("hal.semaphore.wait_timeout", "rii_i", {R(sem), I(round), I(int64_t{5} * 1000000000)}, &ok).ok());
      REQUIRE(ok[0].bits == 1);
      float got[4];
      REQUIRE(h.device->ReadBuffer(*vm::RefCast<Buffer>(out.get()), 0, got, 16).ok());
      for (int i = 0; i < 4; ++i) REQUIRE(got[i] == a[i] + b[i]);
    }
    REQUIRE(h.device->stats().command_buffers_recorded == 1);
    // A table too small for the recording is rejected at submission.
    auto one = *h.device->AllocateBuffer(16);
    Status s = h.Call("hal.device.queue.execute_bound", "rrririr",
                      {R(dev), R(cb), R(nullptr), I(0), R(sem), I(9), R(one)});
    REQUIRE(s.message() == "hal.device.queue.execute_bound: queue execute: the command buffer uses 3 "
                           "binding table slot(s) but 1 were supplied");
    s = h.Call("hal.command_buffer.dispatch_slots", "rriiiiiir",
               {R(cb), R(exe), I(0), I(1), I(1), I(1), I(1), I(-2), R(one)});
    REQUIRE(s.message() == "hal.command_buffer.dispatch_slots: argument 7: binding table slot -2 is "
                           "outside [0, 2^32-1)");
  }
}

TEST_CASE("hal module: dispatch_slots_at binds slots at byte offsets into their buffers") {
  for (bool inl : {false, true}) {
    Harness h(inl);
    auto dev = vm::Ref<vm::RefObject>(h.device);
    auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
    // One buffer (slot 0) holds a at byte 0 and b at byte 64, and the indirect count at 192;
    // out is slot 1 at byte 64. out = a + b over 4 elements, then again indirectly: 2
    // workgroups of tile 2.
    auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
    REQUIRE(h.Call("hal.command_buffer.dispatch_slots_at", "rriiiiiiiiiiiiii",
                   {R(cb), R(exe), I(0), I(1), I(1), I(1), I(3), I(0), I(0), I(0), I(64), I(1),
                    I(64), I(4), I(4)})
                .ok());
    REQUIRE(h.Call("hal.command_buffer.barrier", "r", {R(cb)}).ok());
    REQUIRE(h.Call("hal.command_buffer.dispatch_indirect_slots_at", "rriiiiiiiiiiiii",
                   {R(cb), R(exe), I(0), I(0), I(192), I(3), I(0), I(64), I(0), I(64), I(1),
                    I(128), I(4), I(2)})
                .ok());
    REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
    float packed[64] = {};
    for (int i = 0; i < 4; ++i) packed[i] = float(10 + i), packed[16 + i] = float(i);
    const uint32_t count[3] = {2, 1, 1};
    auto in = *h.device->AllocateBuffer(256);
    REQUIRE(h.device->WriteBuffer(*in, 0, packed, 192).ok());
    REQUIRE(h.device->WriteBuffer(*in, 192, count, 12).ok());
    auto out = *h.device->AllocateBuffer(256);
    auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
    REQUIRE(h.Call("hal.device.queue.execute_bound", "rrririrr",
                   {R(dev), R(cb), R(nullptr), I(0), R(sem), I(1), R(in), R(out)})
                .ok());
    REQUIRE(h.Call("hal.semaphore.wait", "ri", {R(sem), I(1)}).ok());
    float got[64];
    REQUIRE(h.device->ReadBuffer(*out, 0, got, 256).ok());
    for (int i = 0; i < 4; ++i) {
      REQUIRE(got[16 + i] == float(10 + 2 * i));  // a + b at out + 64
      REQUIRE(got[32 + i] == float(2 * i));       // b + b at out + 128 (the indirect one)
    }
    // Offsets must keep the 64-byte binding alignment; a binding is a (slot, offset) pair.
    Status s = h.Call("hal.command_buffer.dispatch_slots_at", "rriiiiiii",
                      {R(cb), R(exe), I(0), I(1), I(1), I(1), I(1), I(0), I(8)});
    REQUIRE(s.message() == "hal.command_buffer.dispatch_slots_at: command buffer dispatch: the "
                           "command buffer is finalized; record a new one");
    auto fresh = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
    s = h.Call("hal.command_buffer.dispatch_slots_at", "rriiiiiii",
               {R(fresh), R(exe), I(0), I(1), I(1), I(1), I(1), I(0), I(8)});
    REQUIRE(s.message() == "hal.command_buffer.dispatch_slots_at: dispatch of 'add_f32': binding 0: "
                           "offset 8 is not a multiple of 64");
    s = h.Call("hal.command_buffer.dispatch_slots_at", "rriiiiiii",
               {R(fresh), R(exe), I(0), I(1), I(1), I(1), I(2), I(0), I(0)});
    REQUIRE(s.message() == "hal.command_buffer.dispatch_slots_at: argument 6: binding count 2 does "
                           "not fit the 2 trailing argument(s)");
  }
}

TEST_CASE("hal module: channel.default is one channel per context; collectives record through both forms") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto channel = h.CallRef("hal.channel.default", "r_r", {R(dev)});
  REQUIRE(h.CallRef("hal.channel.default", "r_r", {R(dev)}).get() == channel.get());
  std::vector<vm::Variant> r;
  REQUIRE(h.Call("hal.channel.rank", "r_i", {R(channel)}, &r).ok());
  REQUIRE(r[0].bits == 0);
  REQUIRE(h.Call("hal.channel.count", "r_i", {R(channel)}, &r).ok());
  REQUIRE(r[0].bits == 1);  // not under mpirun: the local channel of one rank
  // all_reduce (sum) of 4 x i32 from a buffer at offset 64 into slot 0; then an all_gather
  // of that result from slot 0 into slot 1 (one rank: both copy).
  auto src = *h.device->AllocateBuffer(128);
  int32_t values[4] = {3, -1, 7, 2};
  REQUIRE(h.device->WriteBuffer(*src, 64, values, 16).ok());
  auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  REQUIRE(h.Call("hal.command_buffer.collective", "rriiiiiriri",
                 {R(cb), R(channel), I(0), I(0), I(kI32), I(4), I(0), R(src), I(64), R(src), I(0)})
              .ok());
  REQUIRE(h.Call("hal.command_buffer.barrier", "r", {R(cb)}).ok());
  REQUIRE(h.Call("hal.command_buffer.collective_slots", "rriiiiiiiii",
                 {R(cb), R(channel), I(1), I(0), I(kI32), I(4), I(0), I(0), I(0), I(1), I(0)})
              .ok());
  REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
  auto out = *h.device->AllocateBuffer(16);
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  // The first collective wrote src[0..16); the second reads slot 0 = src.
  REQUIRE(h.Call("hal.device.queue.execute_bound", "rrririrr",
                 {R(dev), R(cb), R(nullptr), I(0), R(sem), I(1), R(src), R(out)})
              .ok());
  REQUIRE(h.Call("hal.semaphore.wait", "ri", {R(sem), I(1)}).ok());
  int32_t got[4];
  REQUIRE(h.device->ReadBuffer(*out, 0, got, 16).ok());
  for (int i = 0; i < 4; ++i) REQUIRE(got[i] == values[i]);
  REQUIRE(h.device->stats().collectives_executed == 2);
  // Argument errors name the import and the argument.
  Status s = h.Call("hal.command_buffer.collective", "rriiiiiriri",
                    {R(cb), R(channel), I(9), I(0), I(kI32), I(4), I(0), R(src), I(0), R(src), I(0)});
  REQUIRE(s.message() == "hal.command_buffer.collective: argument 2: unknown collective kind 9");
  auto cb2 = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  s = h.Call("hal.command_buffer.collective", "rriiiiiriri",
             {R(cb2), R(channel), I(0), I(0), I(kF32), I(64), I(0), R(src), I(0), R(src), I(0)});
  REQUIRE(s.message() == "hal.command_buffer.collective: all_reduce send buffer: 256 bytes needed "
                         "(64 x f32 on 1 ranks) but the range holds 128");
  s = h.Call("hal.command_buffer.collective_slots", "rriiiiiiiii",
             {R(cb2), R(channel), I(0), I(0), I(kF32), I(4), I(0), I(-3), I(0), I(1), I(0)});
  REQUIRE(s.message() == "hal.command_buffer.collective_slots: argument 7: binding table slot -3 "
                         "is outside [0, 2^32-1)");
  s = h.Call("hal.channel.rank", "r_i", {R(dev)}, &r);
  REQUIRE(s.message() == "hal.channel.rank: argument 0: expected hal.channel, got hal.device");
}

TEST_CASE("hal module: indirect dispatch reads the workgroup count at execution") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
  const float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  auto ba = *h.device->AllocateBuffer(32), bb = *h.device->AllocateBuffer(32);
  auto out = *h.device->AllocateBuffer(32);
  REQUIRE(h.device->WriteBuffer(*ba, 0, a, 32).ok());
  REQUIRE(h.device->WriteBuffer(*bb, 0, a, 32).ok());
  auto counts = *h.device->AllocateBuffer(64);
  auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  // Tile 2: 3 workgroups cover elements [0, 6); the count lives at byte 16 and is written
  // after recording, by a queue fill ordered before the execute.
  REQUIRE(h.Call("hal.command_buffer.dispatch_indirect", "rririirrrii",
                 {R(cb), R(exe), I(0), R(counts), I(16), I(3), R(ba), R(bb), R(out), I(8), I(2)})
              .ok());
  REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  REQUIRE(h.Call("hal.device.queue.fill", "rriririiii",
                 {R(dev), R(nullptr), I(0), R(sem), I(1), R(counts), I(16), I(4), I(3), I(4)}).ok());
  REQUIRE(h.Call("hal.device.queue.fill", "rriririiii",
                 {R(dev), R(sem), I(1), R(sem), I(2), R(counts), I(20), I(8), I(1), I(4)}).ok());
  REQUIRE(h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(sem), I(2), R(sem), I(3)}).ok());
  REQUIRE(h.Call("hal.semaphore.wait", "ri", {R(sem), I(3)}).ok());
  float got[8];
  REQUIRE(h.device->ReadBuffer(*out, 0, got, 32).ok());
  for (int i = 0; i < 8; ++i) REQUIRE(got[i] == (i < 6 ? 2 * a[i] : 0.0f));
  std::vector<vm::Variant> q;
  REQUIRE(h.Call("hal.semaphore.query", "r_i", {R(sem)}, &q).ok());
  REQUIRE(q[0].bits == 3);
  Status s = h.Call("hal.command_buffer.dispatch_indirect", "rririi",
                    {R(h.CallRef("hal.command_buffer.create", "r_r", {R(dev)})), R(exe), I(0),
                     R(counts), I(6), I(0)});
  REQUIRE(s.message() == "hal.command_buffer.dispatch_indirect: dispatch_indirect of 'add_f32': "
                         "workgroup count buffer: offset 6 is not a multiple of 4");
}

TEST_CASE("hal module: repeat_while_slot repeats a body while the condition in a slot is nonzero") {
  for (bool inl : {false, true}) {
    Harness h(inl);
    auto dev = vm::Ref<vm::RefObject>(h.device);
    auto exe = h.CallRef("hal.executable.lookup", "ri_r", {R(dev), I(0)});
    // The body: x(slot 0) = x + step(slot 1), 2 elements. x[0]'s float bits are the condition:
    // 3.0 - 1.0 three times reaches 0.0 (all bits zero), so the body runs 3 times.
    auto body = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
    REQUIRE(h.Call("hal.command_buffer.dispatch_slots", "rriiiiiiiiii",
                   {R(body), R(exe), I(0), I(1), I(1), I(1), I(3), I(0), I(1), I(0), I(2), I(2)})
                .ok());
    REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(body)}).ok());
    auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
    REQUIRE(h.Call("hal.command_buffer.repeat_while_slot", "rriii",
                   {R(cb), R(body), I(0), I(0), I(100)})
                .ok());
    REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
    const float x0[2] = {3.0f, 10.0f}, step[2] = {-1.0f, -1.0f};
    auto x = *h.device->AllocateBuffer(64), s = *h.device->AllocateBuffer(64);
    REQUIRE(h.device->WriteBuffer(*x, 0, x0, 8).ok());
    REQUIRE(h.device->WriteBuffer(*s, 0, step, 8).ok());
    auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
    REQUIRE(h.Call("hal.device.queue.execute_bound", "rrririrr",
                   {R(dev), R(cb), R(nullptr), I(0), R(sem), I(1), R(x), R(s)})
                .ok());
    REQUIRE(h.Call("hal.semaphore.wait", "ri", {R(sem), I(1)}).ok());
    float got[2];
    REQUIRE(h.device->ReadBuffer(*x, 0, got, 8).ok());
    REQUIRE(got[0] == 0.0f);
    REQUIRE(got[1] == 7.0f);
    Status st = h.Call("hal.command_buffer.repeat_while_slot", "rriii",
                       {R(h.CallRef("hal.command_buffer.create", "r_r", {R(dev)})), R(body), I(0),
                        I(0), I(int64_t{1} << 32)});
    REQUIRE(st.message() == "hal.command_buffer.repeat_while_slot: argument 4: max iterations "
                            "4294967296 is outside [0, 2^32)");
    st = h.Call("hal.command_buffer.repeat_while_slot", "rriii",
                {R(h.CallRef("hal.command_buffer.create", "r_r", {R(dev)})), R(body), I(0), I(6),
                 I(1)});
    REQUIRE(st.message() == "hal.command_buffer.repeat_while_slot: repeat_while: condition: "
                            "offset 6 is not a multiple of 4");
  }
}

TEST_CASE("hal module: device.transient reuses a large enough buffer and grows geometrically") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  std::vector<vm::Variant> r;
  REQUIRE(h.Call("hal.device.transient", "rri_r", {R(dev), R(nullptr), I(100)}, &r).ok());
  auto first = r[0].ref;
  REQUIRE(vm::RefCast<Buffer>(first.get())->byte_size() == 100);
  // Smaller or equal: the same buffer (no allocation, a recorded binding stays valid).
  REQUIRE(h.Call("hal.device.transient", "rri_r", {R(dev), R(first), I(64)}, &r).ok());
  CHECK(r[0].ref.get() == first.get());
  REQUIRE(h.Call("hal.device.transient", "rri_r", {R(dev), R(first), I(100)}, &r).ok());
  CHECK(r[0].ref.get() == first.get());
  // Larger: a new buffer of at least twice the old size.
  REQUIRE(h.Call("hal.device.transient", "rri_r", {R(dev), R(first), I(101)}, &r).ok());
  CHECK(r[0].ref.get() != first.get());
  CHECK(vm::RefCast<Buffer>(r[0].ref.get())->byte_size() == 200);
  REQUIRE(h.Call("hal.device.transient", "rri_r", {R(dev), R(first), I(1000)}, &r).ok());
  CHECK(vm::RefCast<Buffer>(r[0].ref.get())->byte_size() == 1000);
  Status s = h.Call("hal.device.transient", "rri_r", {R(dev), R(nullptr), I(-1)}, &r);
  CHECK(s.message().find("byte size must be >= 0, got -1") != std::string::npos);
  s = h.Call("hal.device.transient", "rri_r", {R(dev), R(dev), I(8)}, &r);
  CHECK(s.message().find("expected hal.buffer, got hal.device") != std::string::npos);
}

TEST_CASE("hal module: queue alloca/copy/dealloca, command buffer copy/fill, rank-0 views") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  std::vector<vm::Variant> r;
  REQUIRE(h.Call("hal.device.queue.alloca", "rririi_r",
                 {R(dev), R(nullptr), I(0), R(sem), I(1), I(256)}, &r).ok());
  auto buf = r[0].ref;
  REQUIRE(vm::RefCast<Buffer>(buf.get())->byte_size() == 256);
  auto host = h.CallRef("hal.allocator.allocate_host", "ri_r", {R(dev), I(256)});
  REQUIRE(vm::RefCast<Buffer>(host.get())->host_data() != nullptr);
  REQUIRE(h.Call("hal.device.queue.fill", "rriririiii",
                 {R(dev), R(sem), I(1), R(sem), I(2), R(buf), I(0), I(256), I(0xAB), I(1)}).ok());
  REQUIRE(h.Call("hal.device.queue.copy", "rririririi",
                 {R(dev), R(sem), I(2), R(sem), I(3), R(buf), I(8), R(host), I(0), I(16)}).ok());
  REQUIRE(h.Call("hal.device.queue.dealloca", "rririr",
                 {R(dev), R(sem), I(3), R(nullptr), I(0), R(buf)}).ok());
  REQUIRE(h.Call("hal.device.wait_idle", "r", {R(dev)}).ok());
  uint8_t got[32];
  REQUIRE(h.device->ReadBuffer(*vm::RefCast<Buffer>(host.get()), 0, got, 32).ok());
  for (int i = 0; i < 32; ++i) REQUIRE(got[i] == (i < 16 ? 0xAB : 0));

  auto cb = h.CallRef("hal.command_buffer.create", "r_r", {R(dev)});
  REQUIRE(h.Call("hal.command_buffer.fill", "rriiii", {R(cb), R(host), I(0), I(8), I(0x01020304), I(4)}).ok());
  REQUIRE(h.Call("hal.command_buffer.copy", "rririi", {R(cb), R(host), I(0), R(host), I(64), I(8)}).ok());
  Status s = h.Call("hal.command_buffer.copy", "rririi", {R(cb), R(host), I(0), R(host), I(250), I(8)});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "hal.command_buffer.copy: copy_buffer target: range [250, 258) exceeds the buffer size 256");
  s = h.Call("hal.device.queue.copy", "rririririi",
             {R(dev), R(nullptr), I(0), R(nullptr), I(0), R(host), I(0), R(host), I(0), I(300)});
  REQUIRE(s.message() == "hal.device.queue.copy: queue copy: copy_buffer source: range [0, 300) exceeds the buffer size 256");
  REQUIRE(h.Call("hal.command_buffer.finalize", "r", {R(cb)}).ok());
  REQUIRE(h.Call("hal.device.queue.execute", "rrriri", {R(dev), R(cb), R(nullptr), I(0), R(nullptr), I(0)}).ok());
  REQUIRE(h.Call("hal.device.wait_idle", "r", {R(dev)}).ok());
  uint32_t words[2];
  REQUIRE(h.device->ReadBuffer(*vm::RefCast<Buffer>(host.get()), 64, words, 8).ok());
  REQUIRE(words[0] == 0x01020304u);
  REQUIRE(words[1] == 0x01020304u);

  auto scalar = h.CallRef("hal.buffer_view.create", "ri_r", {R(host), I(kF32)});
  REQUIRE(h.Call("hal.buffer_view.rank", "r_i", {R(scalar)}, &r).ok());
  REQUIRE(r[0].bits == 0);
  REQUIRE(h.Call("hal.buffer_view.element_type", "r_i", {R(scalar)}, &r).ok());
  REQUIRE(r[0].bits == kF32);

  // A timeout reports 0 instead of failing.
  REQUIRE(h.Call("hal.semaphore.wait_timeout", "rii_i", {R(sem), I(100), I(1000000)}, &r).ok());
  REQUIRE(r[0].bits == 0);
  // The internal command buffers of queue operations are not counted as recordings.
  REQUIRE(h.device->stats().command_buffers_recorded == 1);
}

TEST_CASE("hal module: host waits stop at the call's deadline or cancel; wait_timeout's own timeout is a result") {
  constexpr int64_t kMs = 1'000'000;
  Harness h;
  auto dev = h.CallRef("hal.device.default", "_r", {});
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  auto after = [](int64_t ns) { return Interrupt(Interrupt::NowNs() + ns, nullptr, Interrupt::NowNs()); };
  Status s = h.Call("hal.semaphore.wait", "ri", {R(sem), I(1)}, nullptr, nullptr, after(50 * kMs));
  REQUIRE(s.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(s.message() == "hal.semaphore.wait: deadline exceeded after 0.050 s");
  std::vector<vm::Variant> r;
  REQUIRE(h.Call("hal.semaphore.wait_timeout", "rii_i", {R(sem), I(1), I(10 * kMs)}, &r, nullptr,
                 after(5000 * kMs)).ok());
  REQUIRE(r[0].bits == 0);
  s = h.Call("hal.semaphore.wait_timeout", "rii_i", {R(sem), I(1), I(5000 * kMs)}, &r, nullptr,
             after(50 * kMs));
  REQUIRE(s.message() == "hal.semaphore.wait_timeout: deadline exceeded after 0.050 s");

  // A fill queued behind `sem`: wait_idle and read_i64 stop on cancel / at the deadline, the
  // fill stays queued and lands once `sem` is signalled.
  auto buf = h.CallRef("hal.allocator.allocate", "ri_r", {R(dev), I(8)});
  REQUIRE(h.Call("hal.device.queue.fill", "rriririiii",
                 {R(dev), R(sem), I(1), R(nullptr), I(0), R(buf), I(0), I(8), I(7), I(1)}).ok());
  std::atomic<bool> cancelled{false};
  Interrupt cancellable(Interrupt::kNoDeadline, &cancelled, Interrupt::NowNs());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    cancelled = true;
  });
  s = h.Call("hal.device.wait_idle", "r", {R(dev)}, nullptr, nullptr, cancellable);
  canceller.join();
  REQUIRE(s.code() == StatusCode::kAborted);
  REQUIRE(s.message() == "hal.device.wait_idle: call cancelled");
  s = h.Call("hal.device.read_i64", "rrii_i", {R(dev), R(buf), I(0), I(kI64)}, &r, nullptr,
             after(30 * kMs));
  REQUIRE(s.message() == "hal.device.read_i64: deadline exceeded after 0.030 s");
  REQUIRE(vm::RefCast<Semaphore>(sem.get())->Signal(1).ok());
  REQUIRE(h.Call("hal.device.read_i64", "rrii_i", {R(dev), R(buf), I(0), I(kI64)}, &r).ok());
  REQUIRE(r[0].bits == 0x0707070707070707);
}

TEST_CASE("hal module: store_i64 writes parameters, read_i64/read_f64 wait and read one element") {
  Harness h;
  auto dev = vm::Ref<vm::RefObject>(h.device);
  auto host = h.CallRef("hal.allocator.allocate_host", "ri_r", {R(dev), I(32)});
  REQUIRE(h.Call("hal.buffer.store_i64", "riii", {R(host), I(8), I(-2), I(0x0102030405060708)}).ok());
  int64_t words[3];
  REQUIRE(h.device->ReadBuffer(*vm::RefCast<Buffer>(host.get()), 0, words, 24).ok());
  REQUIRE(words[0] == 0);
  REQUIRE(words[1] == -2);
  REQUIRE(words[2] == 0x0102030405060708);
  Status s = h.Call("hal.buffer.store_i64", "rii", {R(host), I(30), I(1)});
  REQUIRE_FALSE(s.ok());
  REQUIRE(s.message().find("hal.buffer.store_i64") == 0);

  // Queued work fills the buffer; the read waits for it (one host wait), then reads.
  auto sem = h.CallRef("hal.semaphore.create", "ri_r", {R(dev), I(0)});
  REQUIRE(h.Call("hal.device.queue.fill", "rriririiii",
                 {R(dev), R(nullptr), I(0), R(nullptr), I(0), R(host), I(0), I(8), I(0xFFFFFFFE), I(4)}).ok());
  uint64_t waits = h.device->stats().host_waits;
  std::vector<vm::Variant> r;
  REQUIRE(h.Call("hal.device.read_i64", "rrii_i", {R(dev), R(host), I(4), I(kI32)}, &r).ok());
  REQUIRE(r[0].bits == -2);
  REQUIRE(h.device->stats().host_waits == waits + 1);
  float f = 2.5f;
  REQUIRE(h.device->WriteBuffer(*vm::RefCast<Buffer>(host.get()), 16, &f, 4).ok());
  REQUIRE(h.Call("hal.device.read_f64", "rrii_f", {R(dev), R(host), I(16), I(kF32)}, &r).ok());
  double d;
  std::memcpy(&d, &r[0].bits, 8);
  REQUIRE(d == 2.5);
  s = h.Call("hal.device.read_f64", "rrii_f", {R(dev), R(host), I(0), I(kI32)}, &r);
  REQUIRE(s.message() == "hal.device.read_f64: argument 3: unsupported element type 18");
  s = h.Call("hal.device.read_i64", "rrii_i", {R(dev), R(host), I(30), I(kI32)}, &r);
  REQUIRE_FALSE(s.ok());
}

}  // namespace
}  // namespace hexir::hal

namespace hexir::hal {
namespace {

TEST_CASE("hal module: a context of two cpu devices makes one group, device i being rank i") {
  std::vector<vm::Ref<Device>> devices = {*CreateDevice("cpu", {}), *CreateDevice("cpu", {})};
  auto module = CreateHalModule(devices);
  NullContext ctx;
  auto made = module->CreateState(ctx);
  REQUIRE(made.ok());
  auto* state = static_cast<HalModuleState*>(made->get());
  auto second = state->DefaultChannel(*devices[1]);
  INFO(second.status().ToString());
  REQUIRE(second.ok());
  auto first = state->DefaultChannel(*devices[0]);
  REQUIRE(first.ok());
  REQUIRE((*first)->rank() == 0);
  REQUIRE((*second)->rank() == 1);
  REQUIRE((*first)->count() == 2);
  REQUIRE((*second)->backend() == "gloo");
  REQUIRE(state->DefaultChannel(*devices[1])->get() == second->get());
  // The group works: an all_reduce recorded on each device sums both ranks' values.
  std::vector<vm::Ref<Buffer>> buffers;
  std::vector<vm::Ref<Semaphore>> sems;
  for (int rank = 0; rank < 2; ++rank) {
    Device& d = *devices[rank];
    auto buffer = *d.AllocateBuffer(8);
    int32_t values[2] = {rank + 1, 10 * (rank + 1)};
    REQUIRE(d.WriteBuffer(*buffer, 0, values, 8).ok());
    auto cb = *d.CreateCommandBuffer();
    REQUIRE(cb->Collective(rank == 0 ? *first : *second, CollectiveKind::kAllReduce,
                           ReductionOp::kSum, int32_t(ElementType::kI32), 2, 0,
                           BufferRef::Whole(buffer), BufferRef::Whole(buffer))
                .ok());
    REQUIRE(cb->Finalize().ok());
    auto sem = *d.CreateSemaphore(0);
    REQUIRE(d.QueueExecute({}, cb, {{sem, 1}}).ok());
    buffers.push_back(buffer);
    sems.push_back(sem);
  }
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(sems[rank]->Wait(1).ok());
    int32_t got[2];
    REQUIRE(devices[rank]->ReadBuffer(*buffers[rank], 0, got, 8).ok());
    REQUIRE(got[0] == 3);
    REQUIRE(got[1] == 30);
  }
}

}  // namespace
}  // namespace hexir::hal
