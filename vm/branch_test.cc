// Fused compare-and-branch ops, the counted loop op for.i64 and decoded switch tables,
// against C++ references.
#include <catch2/catch.hpp>

#include <limits>

#include "vm/testing/harness.h"

namespace hexir::vm {
namespace {

using testing::Harness;
using testing::I;
using testing::Label;
using testing::ModuleBuilder;
using testing::V;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// f(a, b): V2 = 10; br.X a, b, @taken [a -> V2]; return V2 + 1000; taken: return V2.
// So a taken branch returns a (its copy ran), a fall-through returns 1010 (no copy ran).
int64_t RunBranch(Op op, int64_t a, int64_t b) {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "ii_i");
  Label taken = f.NewLabel();
  f.Op(Op::ConstI64).V(2).K(10);
  f.Op(op).V(0).V(1).T(taken).P({{V(0), V(2)}});
  f.Op(Op::AddImmI64).V(2).V(2).J(1000);
  f.Op(Op::Return).L({V(2)});
  f.Bind(taken);
  f.Op(Op::Return).L({V(2)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  return h.CallI("f", {I(a), I(b)});
}

TEST_CASE("br.<cmp>.i64 branch (copying P) exactly when the comparison holds") {
  const int64_t values[] = {kMin, kMin + 1, -7, -1, 0, 1, 7, kMax - 1, kMax};
  struct Case {
    Op op;
    bool (*ref)(int64_t, int64_t);
  };
  const Case cases[] = {
      {Op::BrEqI64, [](int64_t a, int64_t b) { return a == b; }},
      {Op::BrNeI64, [](int64_t a, int64_t b) { return a != b; }},
      {Op::BrLtSI64, [](int64_t a, int64_t b) { return a < b; }},
      {Op::BrLeSI64, [](int64_t a, int64_t b) { return a <= b; }},
      {Op::BrLtUI64, [](int64_t a, int64_t b) { return uint64_t(a) < uint64_t(b); }},
      {Op::BrLeUI64, [](int64_t a, int64_t b) { return uint64_t(a) <= uint64_t(b); }},
  };
  for (const Case& c : cases) {
    for (int64_t a : {kMin, int64_t{-1}, int64_t{0}, int64_t{1}, kMax}) {
      for (int64_t b : values) {
        INFO(GetOpInfo(static_cast<uint32_t>(c.op)).mnemonic << " " << a << " " << b);
        CHECK(RunBranch(c.op, a, b) == (c.ref(a, b) ? a : 1010));
      }
    }
  }
}

TEST_CASE("br.nz branches on a non-zero value and falls through on zero") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "i_i");
  Label taken = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(5);
  f.Op(Op::BrNz).V(0).T(taken).P({{V(0), V(1)}});
  f.Op(Op::Return).L({V(1)});
  f.Bind(taken);
  f.Op(Op::AddImmI64).V(1).V(1).J(1);
  f.Op(Op::Return).L({V(1)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  CHECK(h.CallI("f", {I(0)}) == 5);
  CHECK(h.CallI("f", {I(41)}) == 42);
  CHECK(h.CallI("f", {I(kMin)}) == kMin + 1);
}

// The scf.for shape: sum(lb, ub, step) = sum of i for i = lb; i < ub; i += step, with the
// zero-trip guard `br.le.s.i64 ub, lb` and the back-edge `for.i64 i, step, ub`.
void AddForSum(ModuleBuilder& mb) {
  auto& f = mb.AddFunction("sum", "iii_ii");  // (lb, ub, step) -> (sum, iterations)
  Label body = f.NewLabel(), exit = f.NewLabel();
  f.Op(Op::ConstI64).V(3).K(0);  // sum
  f.Op(Op::ConstI64).V(4).K(0);  // iterations
  f.Op(Op::BrLeSI64).V(1).V(0).T(exit).P({});
  f.Bind(body);
  f.Op(Op::AddI64).V(3).V(3).V(0);
  f.Op(Op::AddImmI64).V(4).V(4).J(1);
  f.Op(Op::ForI64).V(0).V(2).V(1).T(body).P({});
  f.Bind(exit);
  f.Op(Op::Return).L({V(3), V(4)});
  mb.AddExport("sum", f.ordinal());
}

TEST_CASE("for.i64 runs scf.for loops like C, stops on overflow, counts 2 ops per trip") {
  ModuleBuilder mb;
  AddForSum(mb);
  Harness h(mb);
  struct Case {
    int64_t lb, ub, step;
  };
  const Case cases[] = {{0, 10, 1},   {1, 1, 1},     {5, 1, 1},          {-10, 10, 3},
                        {0, 1, 100},  {0, 100000, 7}, {kMin, kMin + 5, 2}, {-3, 0, 1}};
  for (const Case& c : cases) {
    int64_t sum = 0, trips = 0;
    for (int64_t i = c.lb; i < c.ub; i += c.step) {
      sum = int64_t(uint64_t(sum) + uint64_t(i));
      ++trips;
    }
    INFO(c.lb << " " << c.ub << " " << c.step);
    uint64_t before = h.context->stats().instructions;
    auto r = h.Call("sum", {I(c.lb), I(c.ub), I(c.step)});
    REQUIRE(r.ok());
    CHECK((*r)[0].bits == sum);
    CHECK((*r)[1].bits == trips);
    // const, const, guard, 3 per trip (add, add.imm, for.i64), return.
    CHECK(h.context->stats().instructions - before == uint64_t(4 + 3 * trips));
  }
  // Near INT64_MAX the add overflows: the loop ends instead of wrapping around.
  auto r = h.Call("sum", {I(kMax - 5), I(kMax), I(3)});
  REQUIRE(r.ok());
  CHECK((*r)[1].bits == 2);  // kMax-5, kMax-2; then kMax+1 overflows
}

TEST_CASE("fuel stops for.i64 and backward br.* loops") {
  ModuleBuilder mb;
  AddForSum(mb);
  auto& spin = mb.AddFunction("spin", "_");
  Label top = spin.NewLabel();
  spin.Op(Op::ConstI64).V(0).K(0);
  spin.Bind(top);
  spin.Op(Op::BrEqI64).V(0).V(0).T(top).P({});
  spin.Op(Op::Return).L({});
  mb.AddExport("spin", spin.ordinal());
  Harness h(mb);
  h.context->SetFuel(5000);
  auto r = h.Call("sum", {I(0), I(kMax), I(1)});
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kResourceExhausted);
  CHECK(r.status().message() == "function 'sum' @21: out of fuel (limit 5000 instructions)");
  CHECK(h.CallError("spin") == "function 'spin' @4: out of fuel (limit 5000 instructions)");
}

TEST_CASE("switch with a large table jumps straight to the indexed case") {
  constexpr int kCases = 300;
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "i_i");
  Label dflt = f.NewLabel();
  std::vector<Label> labels;
  std::vector<std::pair<Label, testing::Copies>> table;
  for (int k = 0; k < kCases; ++k) {
    labels.push_back(f.NewLabel());
    // Case k copies k % 3 + 1 pairs (varying case sizes), always V0 -> V1 first.
    testing::Copies copies{{V(0), V(1)}};
    for (int j = 0; j < k % 3; ++j) copies.push_back({V(0), V(2 + j)});
    table.push_back({labels.back(), copies});
  }
  f.Op(Op::ConstI64).V(1).K(-1);
  f.Op(Op::Switch).V(0).T(dflt).P({}).W(table);
  for (int k = 0; k < kCases; ++k) {
    f.Bind(labels[k]);
    f.Op(Op::AddImmI64).V(1).V(1).J(1000 * k);
    f.Op(Op::Return).L({V(1)});
  }
  f.Bind(dflt);
  f.Op(Op::Return).L({V(1)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  for (int64_t k : {0, 1, 2, 3, 150, 298, 299}) CHECK(h.CallI("f", {I(k)}) == k + 1000 * k);
  CHECK(h.CallI("f", {I(kCases)}) == -1);
  CHECK(h.CallI("f", {I(-1)}) == -1);
}

StatusOr<Ref<Module>> LoadOne(void (*body)(testing::FunctionBuilder&)) {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "ii_");
  body(f);
  return testing::BuildAndLoad(mb);
}

TEST_CASE("verifier: fused branches are not terminators; targets and lengths are checked") {
  auto last = LoadOne([](testing::FunctionBuilder& f) {
    Label l = f.NewLabel();
    f.Bind(l);
    f.Op(Op::ForI64).V(0).V(1).V(0).T(l).P({});
  });
  REQUIRE(!last.ok());
  CHECK(last.status().message() ==
        "function 'f' @0: for.i64: the function's last instruction is not a terminator");
  auto target = LoadOne([](testing::FunctionBuilder& f) {
    f.Op(Op::BrLtSI64).V(0).V(1).Word(1).Word(0);  // T = 1: inside this instruction
    f.Op(Op::Return).L({});
  });
  REQUIRE(!target.ok());
  CHECK(target.status().message() ==
        "function 'f' @0: br.lt.s.i64: branch target 1 is not an instruction start");
  auto reg = LoadOne([](testing::FunctionBuilder& f) {
    Label l = f.NewLabel();
    f.Bind(l);
    f.Op(Op::BrNz).Word(7).T(l).P({});
    f.Op(Op::Return).L({});
  });
  REQUIRE(!reg.ok());
  CHECK(reg.status().message() ==
        "function 'f' @0: br.nz: operand value register 7 out of range (2 registers)");
}

TEST_CASE("deep recursion of wide frames traps before exhausting memory") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("deep", "_");
  f.Op(Op::Call).F(0).L({}).L({});
  f.Op(Op::Return).L({});
  f.SetRegisterCounts(65536, 0);
  mb.AddExport("deep", f.ordinal());
  Harness h(mb);
  auto r = h.Call("deep");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kResourceExhausted);
  // 256 frames deep: the 8 innermost callers are named, the rest counted.
  CHECK(r.status().message() ==
        "function 'deep' @0: register stack exhausted (16777216 registers per bank); called "
        "from 'deep' @0, 'deep' @0, 'deep' @0, 'deep' @0, 'deep' @0, 'deep' @0, 'deep' @0, "
        "'deep' @0 and 247 more");
}

}  // namespace
}  // namespace hexir::vm
