// vm.list: the list.* ops against C++ references, their run-time traps (bounds, kinds, null,
// wrong type, limits, cycles), ref ownership, and the verifier's static checks.
#include <catch2/catch.hpp>

#include "vm/list.h"
#include "vm/testing/harness.h"

namespace hexir::vm {
namespace {

using testing::Counter;
using testing::Harness;
using testing::I;
using testing::Label;
using testing::ModuleBuilder;
using testing::Move;
using testing::R;
using testing::V;

constexpr uint32_t kI64 = 0, kF64 = 1, kRef = 2;

TEST_CASE("i64 and f64 lists: alloc, resize, set, get, size") {
  ModuleBuilder mb;
  // squares(n) -> (list, sum of squares read back, size)
  auto& f = mb.AddFunction("squares", "i_rii");
  Label body = f.NewLabel(), read = f.NewLabel(), done = f.NewLabel();
  f.Op(Op::ListAlloc).R(0).V(0).J(kI64);
  f.Op(Op::ListResize).R(0).V(0);
  f.Op(Op::ConstI64).V(1).K(0);  // i
  f.Op(Op::ConstI64).V(2).K(1);  // step
  f.Op(Op::ConstI64).V(5).K(0);  // sum
  f.Op(Op::BrLeSI64).V(0).V(1).T(done).P({});
  f.Bind(body);
  f.Op(Op::MulI64).V(3).V(1).V(1);
  f.Op(Op::ListSetI64).R(0).V(1).V(3);
  f.Op(Op::ForI64).V(1).V(2).V(0).T(body).P({});
  f.Op(Op::ConstI64).V(1).K(0);
  f.Bind(read);
  f.Op(Op::ListGetI64).V(4).R(0).V(1);
  f.Op(Op::AddI64).V(5).V(5).V(4);
  f.Op(Op::ForI64).V(1).V(2).V(0).T(read).P({});
  f.Bind(done);
  f.Op(Op::ListSize).V(6).R(0);
  f.Op(Op::Return).L({Move(0), V(5), V(6)});
  mb.AddExport("squares", f.ordinal());

  auto& g = mb.AddFunction("halves", "f_f");  // stores x/2 in an f64 list, reads it back
  g.Op(Op::ConstI64).V(1).K(1);
  g.Op(Op::ConstF64).V(2).KF(2.0);
  g.Op(Op::DivF64).V(3).V(0).V(2);
  g.Op(Op::ListAlloc).R(0).V(1).J(kF64);
  g.Op(Op::ListResize).R(0).V(1);
  g.Op(Op::ConstI64).V(4).K(0);
  g.Op(Op::ListSetF64).R(0).V(4).V(3);
  g.Op(Op::ListGetF64).V(5).R(Move(0).word & kIndexMask, true).V(4);
  g.Op(Op::Return).L({V(5)});
  mb.AddExport("halves", g.ordinal());
  Harness h(mb);

  for (int64_t n : {0, 1, 5, 1000}) {
    auto r = h.Call("squares", {I(n)});
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += i * i;
    CHECK((*r)[1].bits == sum);
    CHECK((*r)[2].bits == n);
    List* list = RefCast<List>((*r)[0].ref.get());
    REQUIRE(list != nullptr);
    CHECK(list->kind() == List::Kind::kI64);
    REQUIRE(list->size() == n);
    for (int64_t i = 0; i < n; ++i) CHECK(list->value(i) == i * i);
    CHECK(list->ref_count() == 1);  // the registers released theirs
  }
  auto r = h.Call("halves", {testing::F64(-7.5)});
  REQUIRE(r.ok());
  CHECK(testing::AsF64((*r)[0].bits) == -3.75);
}

// f(index, value) on a fresh list of `size` elements of `kind` runs `op`.
std::string TrapOf(uint32_t kind, int64_t size, Op op, int64_t index) {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "ii_");
  f.Op(Op::ConstI64).V(2).K(size);
  f.Op(Op::ListAlloc).R(0).V(2).J(kind);
  f.Op(Op::ListResize).R(0).V(2);
  if (op == Op::ListGetI64 || op == Op::ListGetF64) f.Op(op).V(3).R(0).V(0);
  if (op == Op::ListSetI64 || op == Op::ListSetF64) f.Op(op).R(0).V(0).V(1);
  if (op == Op::ListGetRef) f.Op(op).R(1).R(0).V(0);
  if (op == Op::ListSetRef) f.Op(op).R(0).V(0).R(1);
  if (op == Op::ListResize || op == Op::ListReserve) f.Op(op).R(0).V(0);
  f.Op(Op::Return).L({});
  f.SetRegisterCounts(4, 2);
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  return h.CallError("f", {I(index), I(0)});
}

TEST_CASE("list ops trap on bad indices, kinds and sizes, naming function and offset") {
  // The op under test sits at @16 (const 4 words, alloc 4, resize 3 ... see TrapOf).
  CHECK(TrapOf(kI64, 3, Op::ListGetI64, 3) ==
        "function 'f' @11: list.get.i64: list index 3 out of range (size 3)");
  CHECK(TrapOf(kI64, 3, Op::ListSetI64, -1) ==
        "function 'f' @11: list.set.i64: list index -1 out of range (size 3)");
  CHECK(TrapOf(kF64, 0, Op::ListGetF64, 0) ==
        "function 'f' @11: list.get.f64: list index 0 out of range (size 0)");
  CHECK(TrapOf(kRef, 2, Op::ListGetRef, 2) ==
        "function 'f' @11: list.get.ref: list index 2 out of range (size 2)");
  CHECK(TrapOf(kRef, 2, Op::ListSetRef, 9) ==
        "function 'f' @11: list.set.ref: list index 9 out of range (size 2)");
  CHECK(TrapOf(kI64, 3, Op::ListGetF64, 0) ==
        "function 'f' @11: list.get.f64: list holds i64 elements, not f64");
  CHECK(TrapOf(kF64, 3, Op::ListSetI64, 0) ==
        "function 'f' @11: list.set.i64: list holds f64 elements, not i64");
  CHECK(TrapOf(kI64, 3, Op::ListGetRef, 0) ==
        "function 'f' @11: list.get.ref: list holds i64 elements, not ref");
  CHECK(TrapOf(kI64, 3, Op::ListResize, -2) ==
        "function 'f' @11: list.resize: list size -2 is negative");
  CHECK(TrapOf(kI64, 3, Op::ListReserve, kMaxListSize + 1) ==
        "function 'f' @11: list.reserve: list capacity 16777217 exceeds the limit 16777216");
  CHECK(TrapOf(kI64, -1, Op::ListSize, 0) ==
        "function 'f' @4: list.alloc: list capacity -1 is negative");
}

TEST_CASE("list ops trap on a null list and on a ref that is not a list") {
  ModuleBuilder mb;
  uint32_t make = mb.AddImport("test.make", "i_r");
  auto& f = mb.AddFunction("null_list", "_i");
  f.Op(Op::ListSize).V(0).R(0);
  f.Op(Op::Return).L({V(0)});
  f.SetRegisterCounts(1, 1);
  mb.AddExport("null_list", f.ordinal());
  auto& g = mb.AddFunction("not_a_list", "_");
  g.Op(Op::ConstI64).V(0).K(4);
  g.Op(Op::CallImport).M(make).L({V(0)}).L({R(0)});
  g.Op(Op::ListSetI64).R(0).V(0).V(0);
  g.Op(Op::Return).L({});
  mb.AddExport("not_a_list", g.ordinal());
  Harness h(mb);
  CHECK(h.CallError("null_list") ==
        "function 'null_list' @0: list.size: null ref where a vm.list is required");
  CHECK(h.CallError("not_a_list") ==
        "function 'not_a_list' @10: list.set.i64: expected vm.list, got test.counter");
}

TEST_CASE("ref lists retain, move and release their elements") {
  ModuleBuilder mb;
  uint32_t value = mb.AddImport("test.value", "r_i");
  // f(counter) -> (list holding the counter twice, is_null(R0 after the MOVE store), value)
  auto& f = mb.AddFunction("f", "r_rii");
  f.Op(Op::ConstI64).V(0).K(2);
  f.Op(Op::ConstI64).V(1).K(0);
  f.Op(Op::ConstI64).V(2).K(1);
  f.Op(Op::ListAlloc).R(1).V(0).J(kRef);
  f.Op(Op::ListResize).R(1).V(0);
  f.Op(Op::ListSetRef).R(1).V(1).R(0);         // retained
  f.Op(Op::ListSetRef).R(1).V(2).R(0, true);   // moved: R0 is null afterwards
  f.Op(Op::RefIsNull).V(3).R(0);
  f.Op(Op::ListGetRef).R(2).R(1).V(2);
  f.Op(Op::CallImport).M(value).L({Move(2)}).L({V(4)});
  f.Op(Op::Return).L({Move(1), V(3), V(4)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  Ref<Counter> counter = MakeRef<Counter>(77);
  std::vector<Variant> args(1);
  args[0].ref = counter;
  auto r = h.Call("f", std::move(args));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK((*r)[1].bits == 1);
  CHECK((*r)[2].bits == 77);
  CHECK(counter->ref_count() == 3);  // ours + two list slots
  r->clear();                        // drops the list
  CHECK(counter->ref_count() == 1);
}

TEST_CASE("list.set.ref refuses reference cycles but allows shared sublists") {
  ModuleBuilder mb;
  auto& self = mb.AddFunction("self", "_");
  self.Op(Op::ConstI64).V(0).K(1);
  self.Op(Op::ConstI64).V(1).K(0);
  self.Op(Op::ListAlloc).R(0).V(0).J(kRef);
  self.Op(Op::ListResize).R(0).V(0);
  self.Op(Op::ListSetRef).R(0).V(1).R(0);
  self.Op(Op::Return).L({});
  mb.AddExport("self", self.ordinal());
  // a = [b]; b = [c]; c = [a] must fail; a second copy of c in a (a DAG) is fine.
  auto& tri = mb.AddFunction("tri", "_");
  tri.Op(Op::ConstI64).V(0).K(2);
  tri.Op(Op::ConstI64).V(1).K(0);
  tri.Op(Op::ConstI64).V(2).K(1);
  for (uint32_t i = 0; i < 3; ++i) {
    tri.Op(Op::ListAlloc).R(i).V(0).J(kRef);
    tri.Op(Op::ListResize).R(i).V(0);
  }
  tri.Op(Op::ListSetRef).R(0).V(1).R(1);
  tri.Op(Op::ListSetRef).R(1).V(1).R(2);
  tri.Op(Op::ListSetRef).R(0).V(2).R(2);   // shared: a -> c twice over
  tri.Op(Op::ListSetRef).R(2).V(1).R(0);   // c -> a closes the cycle
  tri.Op(Op::Return).L({});
  mb.AddExport("tri", tri.ordinal());
  Harness h(mb);
  CHECK(h.CallError("self") ==
        "function 'self' @15: list.set.ref: storing list R0 into list R0 would create a "
        "reference cycle");
  CHECK(h.CallError("tri") ==
        "function 'tri' @45: list.set.ref: storing list R0 into list R2 would create a "
        "reference cycle");
}

TEST_CASE("a deeply nested list is freed without recursing on the C stack") {
  ModuleBuilder mb;
  // depth(n): l = []; repeat n times: m = [l]; l = m. Returns the outermost list.
  auto& f = mb.AddFunction("nest", "i_r");
  Label body = f.NewLabel(), done = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(1);
  f.Op(Op::ConstI64).V(2).K(0);
  f.Op(Op::ConstI64).V(3).K(0);  // i
  f.Op(Op::ListAlloc).R(0).V(1).J(kRef);
  f.Op(Op::BrLeSI64).V(0).V(3).T(done).P({});
  f.Bind(body);
  f.Op(Op::ListAlloc).R(1).V(1).J(kRef);
  f.Op(Op::ListResize).R(1).V(1);
  f.Op(Op::ListSetRef).R(1).V(2).R(0, true);
  f.Op(Op::ForI64).V(3).V(1).V(0).T(body).P({{Move(1), R(0)}});
  f.Op(Op::MovRef).R(0).R(1, true);
  f.Bind(done);
  f.Op(Op::Return).L({Move(0)});
  mb.AddExport("nest", f.ordinal());
  Harness h(mb);
  auto r = h.Call("nest", {I(1000000)});
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  List* outer = RefCast<List>((*r)[0].ref.get());
  REQUIRE(outer != nullptr);
  REQUIRE(outer->size() == 1);
  CHECK(RefCast<List>(outer->ref(0).get()) != nullptr);
  r->clear();  // a million nested destructors: must not overflow the stack
}

TEST_CASE("verifier: list.alloc element kind and written list registers") {
  {
    ModuleBuilder mb;
    auto& f = mb.AddFunction("f", "i_");
    f.Op(Op::ListAlloc).R(0).V(0).J(3);
    f.Op(Op::Return).L({});
    auto m = testing::BuildAndLoad(mb);
    REQUIRE(!m.ok());
    CHECK(m.status().message() ==
          "function 'f' @0: list.alloc: element kind 3 is not 0 (i64), 1 (f64) or 2 (ref)");
  }
  {
    ModuleBuilder mb;
    auto& f = mb.AddFunction("f", "i_");
    f.Op(Op::ListGetRef).R(0, true).R(1).V(0);
    f.Op(Op::Return).L({});
    auto m = testing::BuildAndLoad(mb);
    REQUIRE(!m.ok());
    CHECK(m.status().message() ==
          "function 'f' @0: list.get.ref: MOVE on a written ref register");
  }
}

}  // namespace
}  // namespace hexir::vm
