// Deadlines and cancellation in the interpreter (vm/api.h: InvokeOptions, Context::Cancel):
// infinite loops and recursion stop with a trap naming the function, offset and call stack;
// import calls see the invocation's interrupt; the context runs the next call normally.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "vm/testing/harness.h"

namespace hexir::vm {
namespace {

using testing::Harness;
using testing::I;
using testing::Label;
using testing::ModuleBuilder;
using testing::V;

constexpr int64_t kMs = 1'000'000;

// spin(): an infinite loop; outer(): calls spin; sum(n) = 1 + ... + n; add(a, b) = a + b
// (no branch, call or import); recurse(): calls itself forever, in a loop.
void AddFunctions(ModuleBuilder& mb) {
  auto& spin = mb.AddFunction("spin", "_");
  Label top = spin.NewLabel();
  spin.Bind(top);
  spin.Op(Op::AddImmI64).V(0).V(0).J(1);
  spin.Op(Op::Br).T(top).P({});
  mb.AddExport("spin", spin.ordinal());

  auto& outer = mb.AddFunction("outer", "_");
  outer.Op(Op::Nop);
  outer.Op(Op::Call).F(spin.ordinal()).L({}).L({});
  outer.Op(Op::Return).L({});
  mb.AddExport("outer", outer.ordinal());

  auto& sum = mb.AddFunction("sum", "i_i");
  Label body = sum.NewLabel(), exit = sum.NewLabel();
  sum.Op(Op::ConstI64).V(1).K(0);
  sum.Op(Op::ConstI64).V(2).K(0);  // i
  sum.Op(Op::ConstI64).V(3).K(1);  // step
  sum.Op(Op::AddImmI64).V(0).V(0).J(1);  // bound n + 1
  sum.Op(Op::AddImmI64).V(2).V(2).J(1);  // i = 1
  sum.Op(Op::BrLeSI64).V(0).V(2).T(exit).P({});
  sum.Bind(body);
  sum.Op(Op::AddI64).V(1).V(1).V(2);
  sum.Op(Op::ForI64).V(2).V(3).V(0).T(body).P({});
  sum.Bind(exit);
  sum.Op(Op::Return).L({V(1)});
  mb.AddExport("sum", sum.ordinal());

  auto& add = mb.AddFunction("add", "ii_i");
  add.Op(Op::AddI64).V(2).V(0).V(1);
  add.Op(Op::Return).L({V(2)});
  mb.AddExport("add", add.ordinal());

  auto& recurse = mb.AddFunction("recurse", "_");
  recurse.Op(Op::Call).F(recurse.ordinal()).L({}).L({});
  recurse.Op(Op::Return).L({});
  mb.AddExport("recurse", recurse.ordinal());
}

Status InvokeWithDeadline(Harness& h, std::string_view name, std::vector<Variant> args,
                          int64_t deadline_ns, std::vector<Variant>* results) {
  HEXIR_ASSIGN_OR_RETURN(Function fn, h.context->LookupFunction(name));
  InvokeOptions options;
  options.deadline_ns = deadline_ns;
  return h.context->Invoke(fn, args, results, options);
}

TEST_CASE("a deadline stops an infinite loop with the function, offset and call stack") {
  ModuleBuilder mb;
  AddFunctions(mb);
  Harness h(mb);
  const int64_t start = Interrupt::NowNs();
  std::vector<Variant> results;
  Status st = InvokeWithDeadline(h, "outer", {}, start + 200 * kMs, &results);
  const int64_t took = Interrupt::NowNs() - start;
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  // The deadline is checked at the back-edge `br` (@4) of spin; outer's call is at @1.
  // The message names the budget left at the call's entry: 0.200 s less the moments before it.
  CHECK_THAT(std::string(st.message()),
             Catch::Matches("function 'spin' @4: deadline exceeded after 0\\.(1[5-9][0-9]|200) s; "
                            "called from 'outer' @1"));
  CHECK(took >= 200 * kMs);
  CHECK(took < 3000 * kMs);
  CHECK(results.empty());
  // The context stays usable, and calls without a deadline run to the end.
  CHECK(h.CallI("sum", {I(100000)}) == 5000050000LL);
}

TEST_CASE("unbounded recursion under a deadline ends with a trap naming the function") {
  ModuleBuilder mb;
  AddFunctions(mb);
  Harness h(mb);
  std::vector<Variant> results;
  // 2^20 nested calls take longer than 1 ms on any machine this runs on, so the deadline
  // comes first or the stack limit does; either way the call returns.
  Status st = InvokeWithDeadline(h, "recurse", {}, Interrupt::NowNs() + 1 * kMs, &results);
  REQUIRE(!st.ok());
  CHECK((st.code() == StatusCode::kDeadlineExceeded ||
         st.code() == StatusCode::kResourceExhausted));
  CHECK(st.message().rfind("function 'recurse' @0: ", 0) == 0);
  CHECK(h.CallI("add", {I(2), I(40)}) == 42);
}

TEST_CASE("a passed deadline fails at the first back-edge; loop-free code still finishes") {
  ModuleBuilder mb;
  AddFunctions(mb);
  Harness h(mb);
  std::vector<Variant> results;
  const int64_t past = Interrupt::NowNs() - 1;
  Status st = InvokeWithDeadline(h, "sum", {I(10)}, past, &results);
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  CHECK(st.message().rfind("function 'sum' @", 0) == 0);
  REQUIRE(InvokeWithDeadline(h, "add", {I(1), I(2)}, past, &results).ok());
  CHECK(results[0].bits == 3);
  // A far deadline changes nothing about the result.
  REQUIRE(InvokeWithDeadline(h, "sum", {I(1000)}, Interrupt::DeadlineAfter(60), &results).ok());
  CHECK(results[0].bits == 500500);
}

TEST_CASE("Cancel from another thread stops a running loop with call cancelled") {
  ModuleBuilder mb;
  AddFunctions(mb);
  Harness h(mb);
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    while (!done) {
      h.context->Cancel();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const int64_t start = Interrupt::NowNs();
  auto r = h.Call("outer");
  done = true;
  canceller.join();
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kAborted);
  CHECK(r.status().message() == "function 'spin' @4: call cancelled; called from 'outer' @1");
  CHECK(Interrupt::NowNs() - start < 3000 * kMs);
  // A cancel that arrives between calls does not cancel the next one.
  h.context->Cancel();
  CHECK(h.CallI("sum", {I(1000)}) == 500500);
}

// "wait.block": blocks until the invocation's interrupt fires (a stand-in for a host wait).
class BlockingModule final : public NativeModule {
 public:
  std::string_view name() const override { return "wait"; }
  Span<const NativeFunction> functions() const override {
    static const NativeFunction kFunctions[] = {{"wait.block", "_", &Block}};
    return Span<const NativeFunction>(kFunctions, 1);
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context&) override {
    return std::make_unique<NativeModuleState>();
  }

 private:
  static Status Block(NativeModuleState&, NativeCall& call) {
    return WaitInterruptibly(*call.interrupt, [](std::chrono::nanoseconds slice) {
      std::this_thread::sleep_for(std::min(slice, std::chrono::nanoseconds(50 * kMs)));
      return DeadlineExceeded("slice");
    });
  }
};

TEST_CASE("an import call receives the invocation's deadline and cancellation") {
  ModuleBuilder mb;
  uint32_t block = mb.AddImport("wait.block", "_");
  auto& f = mb.AddFunction("main", "_");
  f.Op(Op::CallImport).M(block).L({}).L({});
  f.Op(Op::Return).L({});
  mb.AddExport("main", f.ordinal());
  auto module = testing::BuildAndLoad(mb);
  REQUIRE(module.ok());
  auto context = Context::Create();
  REQUIRE(context->RegisterNativeModule(std::make_shared<BlockingModule>()).ok());
  REQUIRE(context->LoadModule(**module).ok());
  auto fn = context->LookupFunction("main");
  REQUIRE(fn.ok());
  std::vector<Variant> results;

  InvokeOptions options;
  options.deadline_ns = Interrupt::NowNs() + 100 * kMs;
  Status st = context->Invoke(*fn, {}, &results, options);
  CHECK(st.code() == StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(st.message()),
             Catch::Matches("function 'main' @0: wait.block: deadline exceeded after 0\\.(0[5-9][0-9]|100) s"));

  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    context->Cancel();
  });
  st = context->Invoke(*fn, {}, &results);
  canceller.join();
  CHECK(st.code() == StatusCode::kAborted);
  CHECK(st.message() == "function 'main' @0: wait.block: call cancelled");
}

}  // namespace
}  // namespace hexir::vm
