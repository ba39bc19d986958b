// The C API's deadline and cancel on a builder-made infinite loop (no compiler, so it also
// runs under --config=asan / ubsan); tests/e2e/deadline_test.cc does the same on a compiled
// scf.while.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/hexir_runtime.h"
#include "vm/testing/builder.h"

namespace {

using hexir::vm::Op;
using hexir::vm::testing::Label;
using hexir::vm::testing::ModuleBuilder;
using hexir::vm::testing::R;
using hexir::vm::testing::V;

// spin(): loops forever; wait(): waits on a semaphore nothing signals; twice(x) = 2x.
std::vector<uint8_t> LoopModule() {
  ModuleBuilder mb("loops");
  uint32_t device = mb.AddImport("hal.device.default", "_r");
  uint32_t create = mb.AddImport("hal.semaphore.create", "ri_r");
  uint32_t wait = mb.AddImport("hal.semaphore.wait", "ri_");
  auto& spin = mb.AddFunction("spin", "_");
  Label top = spin.NewLabel();
  spin.Bind(top);
  spin.Op(Op::AddImmI64).V(0).V(0).J(1);
  spin.Op(Op::Br).T(top).P({});
  mb.AddExport("spin", spin.ordinal());
  auto& w = mb.AddFunction("wait", "_");
  w.Op(Op::CallImport).M(device).L({}).L({R(0)});
  w.Op(Op::ConstI64).V(0).K(0);
  w.Op(Op::CallImport).M(create).L({R(0), V(0)}).L({R(1)});
  w.Op(Op::ConstI64).V(1).K(1);
  w.Op(Op::CallImport).M(wait).L({R(1), V(1)}).L({});
  w.Op(Op::Return).L({});
  mb.AddExport("wait", w.ordinal());
  auto& twice = mb.AddFunction("twice", "i_i");
  twice.Op(Op::AddI64).V(1).V(0).V(0);
  twice.Op(Op::Return).L({V(1)});
  mb.AddExport("twice", twice.ordinal());
  auto bytes = mb.Build();
  REQUIRE(bytes.ok());
  return *bytes;
}

struct Loaded {
  Loaded() {
    REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
    REQUIRE(hexir_device_create(instance, "cpu", &device) == HEXIR_OK);
    REQUIRE(hexir_context_create(instance, device, &context) == HEXIR_OK);
    std::vector<uint8_t> bytes = LoopModule();
    hexir_module_t* module = nullptr;
    hexir_status_t loaded = hexir_module_load_memory(instance, bytes.data(), bytes.size(), &module);
    INFO(hexir_last_error());
    REQUIRE(loaded == HEXIR_OK);
    REQUIRE(hexir_context_load_module(context, module) == HEXIR_OK);
    hexir_module_release(module);
    REQUIRE(hexir_values_create(&args) == HEXIR_OK);
    REQUIRE(hexir_values_create(&results) == HEXIR_OK);
  }
  ~Loaded() {
    hexir_values_release(args);
    hexir_values_release(results);
    hexir_context_release(context);
    hexir_device_release(device);
    hexir_instance_release(instance);
  }
  hexir_function_t* Lookup(const char* name) {
    hexir_function_t* fn = nullptr;
    REQUIRE(hexir_context_lookup_function(context, name, &fn) == HEXIR_OK);
    return fn;
  }
  // twice(21) on the same context: it must still compute.
  void RequireUsable() {
    hexir_function_t* twice = Lookup("twice");
    hexir_values_clear(args);
    REQUIRE(hexir_values_push_i64(args, 21) == HEXIR_OK);
    REQUIRE(hexir_function_call(context, twice, args, results) == HEXIR_OK);
    int64_t value = 0;
    REQUIRE(hexir_values_get_i64(results, 0, &value) == HEXIR_OK);
    CHECK(value == 42);
    hexir_function_release(twice);
  }
  hexir_instance_t* instance = nullptr;
  hexir_device_t* device = nullptr;
  hexir_context_t* context = nullptr;
  hexir_values_t* args = nullptr;
  hexir_values_t* results = nullptr;
};

TEST_CASE("C API: a deadline stops an infinite loop and a never-signalled semaphore wait") {
  Loaded l;
  for (const char* name : {"spin", "wait"}) {
    hexir_function_t* fn = l.Lookup(name);
    const int64_t start = hexir_clock_now_ns();
    hexir_status_t st =
        hexir_function_call_with_deadline(l.context, fn, l.args, l.results, start + 150'000'000);
    const int64_t took = hexir_clock_now_ns() - start;
    std::string error = hexir_last_error();
    INFO(error);
    CHECK(st == HEXIR_DEADLINE_EXCEEDED);
    CHECK(error.rfind(std::string("function '") + name + "' @", 0) == 0);
    // The budget left when the call began: 0.150 s less the moments before its entry.
    CHECK_THAT(error, Catch::Matches(".*: deadline exceeded after 0\\.1([0-4][0-9]|50) s"));
    CHECK(took >= 150'000'000);
    CHECK(took < 10'000'000'000LL);
    hexir_function_release(fn);
  }
  CHECK(std::string(hexir_last_error()).find("hal.semaphore.wait: ") != std::string::npos);
  l.RequireUsable();
  CHECK(hexir_function_call_with_deadline(nullptr, nullptr, nullptr, nullptr, 0) ==
        HEXIR_INVALID_ARGUMENT);
}

TEST_CASE("C API: hexir_context_cancel from another thread stops a running call") {
  Loaded l;
  for (const char* name : {"spin", "wait"}) {
    hexir_function_t* fn = l.Lookup(name);
    std::atomic<bool> returned{false};
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      while (!returned) {
        hexir_context_cancel(l.context);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    hexir_status_t st = hexir_function_call(l.context, fn, l.args, l.results);
    returned = true;
    canceller.join();
    std::string error = hexir_last_error();
    INFO(error);
    CHECK(st == HEXIR_ABORTED);
    CHECK(error.rfind(std::string("function '") + name + "' @", 0) == 0);
    CHECK_THAT(error, Catch::EndsWith("call cancelled"));
    hexir_function_release(fn);
  }
  // A cancel between calls is dropped: the next call runs to the end.
  REQUIRE(hexir_context_cancel(l.context) == HEXIR_OK);
  l.RequireUsable();
  CHECK(hexir_context_cancel(nullptr) == HEXIR_INVALID_ARGUMENT);
}

}  // namespace
