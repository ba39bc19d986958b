// Catch2 helpers shared by VM tests: build + load a module, link it with a small native
// "test" module, call exports. Test-only; not thread-safe.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "vm/api.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

namespace hexir::vm::testing {

// A refcounted object whose count and value tests can observe.
class Counter final : public RefObject {
  HEXIR_REF_TYPE(Counter, "test.counter")
 public:
  explicit Counter(int64_t v) : value(v) {}
  int64_t value;
};

// "test" native module: test.make (i_r: a Counter), test.value (r_i), test.identity (r_r).
class SmallTestModule final : public NativeModule {
 public:
  std::string_view name() const override { return "test"; }
  Span<const NativeFunction> functions() const override {
    static const NativeFunction kFunctions[] = {
        {"test.make", "i_r", &Make},
        {"test.value", "r_i", &Value},
        {"test.identity", "r_r", &Identity},
    };
    return Span<const NativeFunction>(kFunctions, 3);
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context&) override {
    return std::make_unique<NativeModuleState>();
  }

 private:
  static Status Make(NativeModuleState&, NativeCall& call) {
    call.results[0].ref = MakeRef<Counter>(call.args[0].bits);
    return Status::Ok();
  }
  static Status Value(NativeModuleState&, NativeCall& call) {
    Counter* c = RefCast<Counter>(call.args[0].ref.get());
    if (!c) return InvalidArgument("input 0: expected test.counter");
    call.results[0].bits = c->value;
    return Status::Ok();
  }
  static Status Identity(NativeModuleState&, NativeCall& call) {
    call.results[0].ref = std::move(call.args[0].ref);
    return Status::Ok();
  }
};

inline StatusOr<Ref<Module>> BuildAndLoad(const ModuleBuilder& mb) {
  HEXIR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, mb.Build());
  return Module::LoadFromMemory(bytes.data(), bytes.size());
}

struct Harness {
  explicit Harness(const ModuleBuilder& mb) : context(Context::Create()) {
    auto loaded = BuildAndLoad(mb);
    INFO(loaded.status().ToString());
    REQUIRE(loaded.ok());
    module = *loaded;
    REQUIRE(context->RegisterNativeModule(std::make_shared<SmallTestModule>()).ok());
    Status s = context->LoadModule(*module);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  StatusOr<std::vector<Variant>> Call(std::string_view name, std::vector<Variant> args = {}) {
    HEXIR_ASSIGN_OR_RETURN(Function fn, context->LookupFunction(name));
    std::vector<Variant> results;
    HEXIR_RETURN_IF_ERROR(context->Invoke(fn, args, &results));
    return results;
  }
  int64_t CallI(std::string_view name, std::vector<Variant> args = {}) {
    auto r = Call(name, std::move(args));
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    REQUIRE(r->size() >= 1);
    return (*r)[0].bits;
  }
  // The error message of a call that must fail.
  std::string CallError(std::string_view name, std::vector<Variant> args = {}) {
    auto r = Call(name, std::move(args));
    REQUIRE(!r.ok());
    return r.status().message();
  }
  Ref<Module> module;
  std::unique_ptr<Context> context;
};

inline Variant I(int64_t v) { return Variant{v, nullptr}; }
inline Variant F64(double d) {
  Variant v;
  std::memcpy(&v.bits, &d, 8);
  return v;
}
inline double AsF64(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

}  // namespace hexir::vm::testing
