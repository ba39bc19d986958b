#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "vm/api.h"
#include "vm/byte_buffer.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

namespace hexir::vm {
namespace {

using testing::Label;
using testing::ModuleBuilder;
using testing::Move;
using testing::R;
using testing::V;

// A refcounted object whose count tests can observe.
class Counter final : public RefObject {
  HEXIR_REF_TYPE(Counter, "test.counter")
 public:
  explicit Counter(int64_t v) : value(v) {}
  int64_t value;
};

Status Sum(NativeModuleState&, NativeCall& call) {
  int64_t sum = 0;
  for (const Variant& a : call.args) sum = int64_t(uint64_t(sum) + uint64_t(a.bits));
  call.results[0].bits = sum;
  return Status::Ok();
}
Status Make(NativeModuleState&, NativeCall& call) {
  call.results[0].ref = MakeRef<Counter>(call.args[0].bits);
  return Status::Ok();
}
Status ValueOf(NativeModuleState&, NativeCall& call) {
  Counter* c = RefCast<Counter>(call.args[0].ref.get());
  if (!c) {
    return InvalidArgument("input 0: expected test.counter, got ",
                           call.args[0].ref ? call.args[0].ref->type_name() : "null");
  }
  call.results[0].bits = c->value;
  return Status::Ok();
}
Status Check(NativeModuleState&, NativeCall& call) {
  if (call.args[0].bits != 0) return FailedPrecondition("input 0: expected 0, got ", call.args[0].bits);
  return Status::Ok();
}
Status BytesSum(NativeModuleState&, NativeCall& call) {
  ByteBuffer* b = RefCast<ByteBuffer>(call.args[0].ref.get());
  if (!b) return InvalidArgument("input 0: expected vm.buffer");
  int64_t sum = 0;
  for (size_t i = 0; i < b->size(); ++i) sum += b->data()[i];
  call.results[0].bits = sum;
  return Status::Ok();
}
// Keeps the ref it is given (moved out of args) and returns it back: "r_r".
Status Identity(NativeModuleState&, NativeCall& call) {
  call.results[0].ref = std::move(call.args[0].ref);
  return Status::Ok();
}

class TestModule final : public NativeModule {
 public:
  std::string_view name() const override { return "test"; }
  Span<const NativeFunction> functions() const override {
    static const NativeFunction kFunctions[] = {
        {"test.sum", "*_i", Sum},         {"test.make", "i_r", Make},
        {"test.value", "r_i", ValueOf},   {"test.check", "i_", Check},
        {"test.bytes_sum", "r_i", BytesSum}, {"test.identity", "r_r", Identity},
    };
    return Span<const NativeFunction>(kFunctions, sizeof(kFunctions) / sizeof(kFunctions[0]));
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context&) override {
    return std::make_unique<NativeModuleState>();
  }
};

Ref<Module> Load(const ModuleBuilder& mb) {
  auto bytes = mb.Build();
  INFO(bytes.status().ToString());
  REQUIRE(bytes.ok());
  auto module = Module::LoadFromMemory(bytes->data(), bytes->size());
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return *module;
}

struct Harness {
  explicit Harness(const ModuleBuilder& mb) : module(Load(mb)), context(Context::Create()) {
    REQUIRE(context->RegisterNativeModule(std::make_shared<TestModule>()).ok());
    Status s = context->LoadModule(*module);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  StatusOr<std::vector<Variant>> Call(std::string_view name, std::vector<Variant> args = {}) {
    auto fn = context->LookupFunction(name);
    if (!fn.ok()) return fn.status();
    std::vector<Variant> results;
    HEXIR_RETURN_IF_ERROR(context->Invoke(*fn, args, &results));
    return results;
  }
  int64_t CallI(std::string_view name, std::vector<Variant> args = {}) {
    auto r = Call(name, std::move(args));
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    REQUIRE(r->size() >= 1);
    return (*r)[0].bits;
  }
  Ref<Module> module;
  std::unique_ptr<Context> context;
};

Variant I(int64_t v) { return Variant{v, nullptr}; }
Variant Fb(double d) {
  Variant v;
  std::memcpy(&v.bits, &d, 8);
  return v;
}
double AsF(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
Variant RefArg(Ref<RefObject> r) {
  Variant v;
  v.ref = std::move(r);
  return v;
}

// f(a, b) = V[2] = a <op> b, for one binary opcode.
int64_t RunBinary(Op op, int64_t a, int64_t b) {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "ii_i");
  f.Op(op).V(2).V(0).V(1);
  f.Op(Op::Return).L({V(2)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  return h.CallI("f", {I(a), I(b)});
}

// The status of f(a, b) = a <op> b (for the traps).
Status BinaryStatus(Op op, int64_t a, int64_t b) {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "ii_i");
  f.Op(op).V(2).V(0).V(1);
  f.Op(Op::Return).L({V(2)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  return h.Call("f", {I(a), I(b)}).status();
}

TEST_CASE("i64 arithmetic matches C++ (wrapping, signed/unsigned)") {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case { int64_t a, b; };
  for (Case c : {Case{7, 3}, Case{-7, 3}, Case{7, -3}, Case{kMax, 1}, Case{kMin, -1}, Case{-1, 65}}) {
    INFO(c.a << " , " << c.b);
    uint64_t ua = c.a, ub = c.b;
    CHECK(RunBinary(Op::AddI64, c.a, c.b) == int64_t(ua + ub));
    CHECK(RunBinary(Op::SubI64, c.a, c.b) == int64_t(ua - ub));
    CHECK(RunBinary(Op::MulI64, c.a, c.b) == int64_t(ua * ub));
    if (!(c.a == kMin && c.b == -1)) {  // traps: the next test
      CHECK(RunBinary(Op::DivSI64, c.a, c.b) == c.a / c.b);
      CHECK(RunBinary(Op::RemSI64, c.a, c.b) == c.a % c.b);
    }
    CHECK(RunBinary(Op::DivUI64, c.a, c.b) == int64_t(ua / ub));
    CHECK(RunBinary(Op::RemUI64, c.a, c.b) == int64_t(ua % ub));
    CHECK(RunBinary(Op::AndI64, c.a, c.b) == (c.a & c.b));
    CHECK(RunBinary(Op::OrI64, c.a, c.b) == (c.a | c.b));
    CHECK(RunBinary(Op::XorI64, c.a, c.b) == (c.a ^ c.b));
    CHECK(RunBinary(Op::ShlI64, c.a, c.b) == int64_t(ua << (ub & 63)));
    CHECK(RunBinary(Op::ShrSI64, c.a, c.b) == (c.a >> (ub & 63)));
    CHECK(RunBinary(Op::ShrUI64, c.a, c.b) == int64_t(ua >> (ub & 63)));
    CHECK(RunBinary(Op::MinSI64, c.a, c.b) == std::min(c.a, c.b));
    CHECK(RunBinary(Op::MaxSI64, c.a, c.b) == std::max(c.a, c.b));
    CHECK(RunBinary(Op::CmpEqI64, c.a, c.b) == (c.a == c.b));
    CHECK(RunBinary(Op::CmpNeI64, c.a, c.b) == (c.a != c.b));
    CHECK(RunBinary(Op::CmpLtSI64, c.a, c.b) == (c.a < c.b));
    CHECK(RunBinary(Op::CmpLeSI64, c.a, c.b) == (c.a <= c.b));
    CHECK(RunBinary(Op::CmpLtUI64, c.a, c.b) == (ua < ub));
    CHECK(RunBinary(Op::CmpLeUI64, c.a, c.b) == (ua <= ub));
  }
}

TEST_CASE("constants, mov, add.imm, select, trunc.i64.i32") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "i_iiiii");
  f.Op(Op::ConstI64).V(1).K(-5000000000LL);
  f.Op(Op::Mov).V(2).V(1);
  f.Op(Op::AddImmI64).V(3).V(0).J(-10);
  f.Op(Op::SelectI64).V(4).V(0).V(1).V(3);
  f.Op(Op::TruncI64I32).V(5).V(1);
  f.Op(Op::Return).L({V(1), V(2), V(3), V(4), V(5)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  for (int64_t x : {0, 3}) {
    auto r = h.Call("f", {I(x)});
    REQUIRE(r.ok());
    REQUIRE(r->size() == 5);
    CHECK((*r)[0].bits == -5000000000LL);
    CHECK((*r)[1].bits == -5000000000LL);
    CHECK((*r)[2].bits == x - 10);
    CHECK((*r)[3].bits == (x != 0 ? -5000000000LL : x - 10));
    CHECK((*r)[4].bits == int64_t(int32_t(uint32_t(uint64_t(-5000000000LL)))));
  }
}

TEST_CASE("f64 arithmetic, comparisons and casts") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "ff_ffffffffff");
  f.Op(Op::AddF64).V(2).V(0).V(1);
  f.Op(Op::SubF64).V(3).V(0).V(1);
  f.Op(Op::MulF64).V(4).V(0).V(1);
  f.Op(Op::DivF64).V(5).V(0).V(1);
  f.Op(Op::NegF64).V(6).V(0);
  f.Op(Op::CmpEqF64).V(7).V(0).V(1);
  f.Op(Op::CmpLtF64).V(8).V(0).V(1);
  f.Op(Op::CmpLeF64).V(9).V(0).V(1);
  f.Op(Op::CastF64SI64).V(10).V(0);
  f.Op(Op::TruncF64F32).V(11).V(0);
  f.Op(Op::Return).L({V(2), V(3), V(4), V(5), V(6), V(7), V(8), V(9), V(10), V(11)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  const double nan = std::nan("");
  struct Case { double a, b; };
  for (Case c : {Case{1.5, 0.25}, Case{-3.0, -3.0}, Case{nan, 1.0}, Case{1e300, 2.0},
                 Case{-1e300, 0.0}, Case{-2.75, 4.0}}) {
    INFO(c.a << " , " << c.b);
    auto r = h.Call("f", {Fb(c.a), Fb(c.b)});
    REQUIRE(r.ok());
    auto& o = *r;
    auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
    CHECK(same(AsF(o[0].bits), c.a + c.b));
    CHECK(same(AsF(o[1].bits), c.a - c.b));
    CHECK(same(AsF(o[2].bits), c.a * c.b));
    CHECK(same(AsF(o[3].bits), c.a / c.b));
    CHECK(same(AsF(o[4].bits), -c.a));
    CHECK(o[5].bits == (c.a == c.b));
    CHECK(o[6].bits == (c.a < c.b));
    CHECK(o[7].bits == (c.a <= c.b));
    int64_t expect_int = std::isnan(c.a) ? 0
                         : c.a >= 9.3e18 ? std::numeric_limits<int64_t>::max()
                         : c.a <= -9.3e18 ? std::numeric_limits<int64_t>::min()
                                          : int64_t(c.a);
    CHECK(o[8].bits == expect_int);
    float fl = float(c.a);
    uint32_t fbits;
    std::memcpy(&fbits, &fl, 4);
    CHECK(o[9].bits == int64_t(fbits));
  }
  // cast.si64.f64 and ext.f32.f64 round trip.
  ModuleBuilder mb2;
  auto& g = mb2.AddFunction("g", "ii_ff");
  g.Op(Op::CastSI64F64).V(2).V(0);
  g.Op(Op::ExtF32F64).V(3).V(1);
  g.Op(Op::Return).L({V(2), V(3)});
  mb2.AddExport("g", g.ordinal());
  Harness h2(mb2);
  float half = -0.5f;
  uint32_t half_bits;
  std::memcpy(&half_bits, &half, 4);
  auto r = h2.Call("g", {I(-123456789), I(static_cast<int64_t>(0xFFFFFFFF00000000ULL | half_bits))});
  REQUIRE(r.ok());
  CHECK(AsF((*r)[0].bits) == -123456789.0);
  CHECK(AsF((*r)[1].bits) == -0.5);
}

TEST_CASE("parallel copy swaps block arguments") {
  // swap(a, b) n times: for odd n the pair comes back swapped.
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "iii_ii");  // a, b, n
  Label loop = f.NewLabel(), body = f.NewLabel(), exit = f.NewLabel();
  f.Bind(loop);
  f.Op(Op::CondBr).V(2).T(body).P({}).T(exit).P({});
  f.Bind(body);
  f.Op(Op::AddImmI64).V(2).V(2).J(-1);
  f.Op(Op::Br).T(loop).P({{V(0), V(1)}, {V(1), V(0)}});
  f.Bind(exit);
  f.Op(Op::Return).L({V(0), V(1)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  for (int64_t n : {0, 1, 2, 7}) {
    auto r = h.Call("f", {I(10), I(20), I(n)});
    REQUIRE(r.ok());
    CHECK((*r)[0].bits == (n % 2 ? 20 : 10));
    CHECK((*r)[1].bits == (n % 2 ? 10 : 20));
  }
}

TEST_CASE("cond_br and switch copy their own block arguments") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", "i_i");
  Label c0 = f.NewLabel(), c1 = f.NewLabel(), c2 = f.NewLabel(), dflt = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(100);
  f.Op(Op::ConstI64).V(2).K(200);
  f.Op(Op::ConstI64).V(3).K(300);
  f.Op(Op::ConstI64).V(4).K(-1);
  f.Op(Op::Switch).V(0).T(dflt).P({{V(4), V(5)}})
      .W({{c0, {{V(1), V(5)}}}, {c1, {{V(2), V(5)}}}, {c2, {{V(3), V(5)}, {V(1), V(6)}}}});
  f.Bind(c0);
  f.Op(Op::Return).L({V(5)});
  f.Bind(c1);
  f.Op(Op::AddImmI64).V(5).V(5).J(1);
  f.Op(Op::Return).L({V(5)});
  f.Bind(c2);
  f.Op(Op::AddI64).V(5).V(5).V(6);
  f.Op(Op::Return).L({V(5)});
  f.Bind(dflt);
  f.Op(Op::Return).L({V(5)});
  mb.AddExport("f", f.ordinal());
  Harness h(mb);
  CHECK(h.CallI("f", {I(0)}) == 100);
  CHECK(h.CallI("f", {I(1)}) == 201);
  CHECK(h.CallI("f", {I(2)}) == 400);
  CHECK(h.CallI("f", {I(3)}) == -1);
  CHECK(h.CallI("f", {I(-1)}) == -1);
}

// sum(n) = 1 + 2 + ... + n with a counted loop; 3 + 4n instructions.
void AddSumLoop(ModuleBuilder& mb) {
  auto& f = mb.AddFunction("sum", "i_i");
  Label head = f.NewLabel(), body = f.NewLabel(), exit = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);                                  // acc
  f.Bind(head);
  f.Op(Op::CondBr).V(0).T(body).P({}).T(exit).P({});
  f.Bind(body);
  f.Op(Op::AddI64).V(1).V(1).V(0);
  f.Op(Op::AddImmI64).V(0).V(0).J(-1);
  f.Op(Op::Br).T(head).P({});
  f.Bind(exit);
  f.Op(Op::Return).L({V(1)});
  mb.AddExport("sum", f.ordinal());
}

TEST_CASE("loop sums 1..N and counts instructions") {
  ModuleBuilder mb;
  AddSumLoop(mb);
  Harness h(mb);
  for (int64_t n : {0, 1, 10, 1000000}) {
    uint64_t before = h.context->stats().instructions;
    CHECK(h.CallI("sum", {I(n)}) == n * (n + 1) / 2);
    CHECK(h.context->stats().instructions - before == uint64_t(3 + 4 * n));
  }
  CHECK(h.context->stats().invocations == 4);
}

TEST_CASE("fuel bounds an infinite loop") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("spin", "_");
  Label top = f.NewLabel();
  f.Bind(top);
  f.Op(Op::Br).T(top).P({});
  mb.AddExport("spin", f.ordinal());
  AddSumLoop(mb);
  Harness h(mb);
  h.context->SetFuel(1000);
  auto r = h.Call("spin");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kResourceExhausted);
  CHECK(r.status().message() == "function 'spin' @0: out of fuel (limit 1000 instructions)");
  CHECK(h.CallI("sum", {I(10)}) == 55);  // within budget; context still usable
  h.context->SetFuel(0);
  CHECK(h.CallI("sum", {I(100000)}) == 5000050000LL);
}

TEST_CASE("internal calls: recursion 100000 deep, multi-value results") {
  ModuleBuilder mb;
  // depth(n) = n == 0 ? 0 : depth(n - 1) + 1, genuinely nested.
  auto& d = mb.AddFunction("depth", "i_i");
  Label base = d.NewLabel(), rec = d.NewLabel();
  d.Op(Op::CondBr).V(0).T(rec).P({}).T(base).P({});
  d.Bind(base);
  d.Op(Op::Return).L({V(0)});
  d.Bind(rec);
  d.Op(Op::AddImmI64).V(1).V(0).J(-1);
  d.Op(Op::Call).F(d.ordinal()).L({V(1)}).L({V(2)});
  d.Op(Op::AddImmI64).V(2).V(2).J(1);
  d.Op(Op::Return).L({V(2)});
  mb.AddExport("depth", d.ordinal());
  // divmod(a, b) -> (a / b, a % b); main(a, b) = q * 1000 + r via a call.
  auto& dm = mb.AddFunction("divmod", "ii_ii");
  dm.Op(Op::DivSI64).V(2).V(0).V(1);
  dm.Op(Op::RemSI64).V(3).V(0).V(1);
  dm.Op(Op::Return).L({V(2), V(3)});
  auto& m = mb.AddFunction("main", "ii_i");
  m.Op(Op::ConstI64).V(5).K(1000);
  m.Op(Op::Call).F(dm.ordinal()).L({V(0), V(1)}).L({V(3), V(2)});  // r -> V2, q -> V3
  m.Op(Op::MulI64).V(3).V(3).V(5);
  m.Op(Op::AddI64).V(4).V(3).V(2);
  m.Op(Op::Return).L({V(4)});
  mb.AddExport("main", m.ordinal());
  // Unbounded recursion hits the depth limit instead of the C stack.
  auto& inf = mb.AddFunction("forever", "_");
  inf.Op(Op::Call).F(inf.ordinal()).L({}).L({});
  inf.Op(Op::Return).L({});
  mb.AddExport("forever", inf.ordinal());
  Harness h(mb);
  CHECK(h.CallI("depth", {I(100000)}) == 100000);
  CHECK(h.context->stats().internal_calls == 100000);
  CHECK(h.CallI("main", {I(47), I(5)}) == 9 * 1000 + 2);
  auto r = h.Call("forever");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kResourceExhausted);
  CHECK(r.status().message().find("function 'forever' @0: call stack overflow") == 0);
  CHECK(h.CallI("depth", {I(3)}) == 3);
}

TEST_CASE("imports: variadic pattern, refs in and out, error propagation") {
  ModuleBuilder mb;
  uint32_t sum3 = mb.AddImport("test.sum", "iii_i");
  uint32_t sum0 = mb.AddImport("test.sum", "_i");
  uint32_t make = mb.AddImport("test.make", "i_r");
  uint32_t value = mb.AddImport("test.value", "r_i");
  uint32_t check = mb.AddImport("test.check", "i_");
  auto& f = mb.AddFunction("f", "iii_ii");
  f.Op(Op::CallImport).M(sum3).L({V(0), V(1), V(2)}).L({V(3)});
  f.Op(Op::CallImport).M(sum0).L({}).L({V(4)});
  f.Op(Op::Return).L({V(3), V(4)});
  mb.AddExport("f", f.ordinal());
  auto& g = mb.AddFunction("g", "i_i");  // value(make(x)) through a moved ref
  g.Op(Op::CallImport).M(make).L({V(0)}).L({R(0)});
  g.Op(Op::CallImport).M(value).L({Move(0)}).L({V(1)});
  g.Op(Op::Return).L({V(1)});
  mb.AddExport("g", g.ordinal());
  auto& c = mb.AddFunction("c", "i_");
  c.Op(Op::Nop);
  uint32_t at = c.offset();
  c.Op(Op::CallImport).M(check).L({V(0)}).L({});
  c.Op(Op::Return).L({});
  mb.AddExport("c", c.ordinal());
  auto& bad = mb.AddFunction("bad", "r_i");  // value() of whatever ref it is given
  bad.Op(Op::CallImport).M(value).L({R(0)}).L({V(0)});
  bad.Op(Op::Return).L({V(0)});
  mb.AddExport("bad", bad.ordinal());
  Harness h(mb);
  auto r = h.Call("f", {I(1), I(20), I(300)});
  REQUIRE(r.ok());
  CHECK((*r)[0].bits == 321);
  CHECK((*r)[1].bits == 0);
  CHECK(h.context->stats().import_calls == 2);
  CHECK(h.CallI("g", {I(77)}) == 77);
  CHECK(h.Call("c", {I(0)}).ok());
  auto err = h.Call("c", {I(5)});
  REQUIRE(!err.ok());
  CHECK(err.status().code() == StatusCode::kFailedPrecondition);
  CHECK(err.status().message() ==
        StrCat("function 'c' @", at, ": test.check: input 0: expected 0, got 5"));
  auto wrong = h.Call("bad", {RefArg(MakeRef<ByteBuffer>(nullptr, 0, nullptr))});
  REQUIRE(!wrong.ok());
  CHECK(wrong.status().message() == "function 'bad' @0: test.value: input 0: expected test.counter, got vm.buffer");
}

TEST_CASE("imports are resolved and checked at LoadModule") {
  auto load = [](const std::string& name, const std::string& sig) {
    ModuleBuilder mb("m");
    mb.AddImport(name, sig);
    auto& f = mb.AddFunction("f", "_");
    f.Op(Op::Return).L({});
    auto module = Load(mb);
    auto context = Context::Create();
    REQUIRE(context->RegisterNativeModule(std::make_shared<TestModule>()).ok());
    return context->LoadModule(*module);
  };
  CHECK(load("test.value", "r_i").ok());
  Status missing = load("test.nope", "r_i");
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message() == "module 'm': import 0 'test.nope' is not provided by any registered native module");
  Status mismatch = load("test.value", "i_i");
  CHECK(mismatch.code() == StatusCode::kInvalidArgument);
  CHECK(mismatch.message() == "module 'm': import 0 'test.value' has signature 'i_i' but the native function expects 'r_i'");
  CHECK(!load("test.sum", "ii_r").ok());  // results are never variadic
}

TEST_CASE("SignatureMatches") {
  CHECK(SignatureMatches("ri_i", "ri_i"));
  CHECK(!SignatureMatches("ri_i", "rr_i"));
  CHECK(!SignatureMatches("ri_i", "ri_"));
  CHECK(SignatureMatches("rriiiii*_", "rriiiii_"));
  CHECK(SignatureMatches("rriiiii*_", "rriiiiirri_"));
  CHECK(!SignatureMatches("rriiiii*_", "rriiii_"));
  CHECK(!SignatureMatches("*_i", "iii_ii"));
  CHECK(!SignatureMatches("*_", "i*_"));
}

TEST_CASE("refs: MOVE, release and return leave registers empty") {
  ModuleBuilder mb;
  uint32_t identity = mb.AddImport("test.identity", "r_r");
  // keep(x): copies x around, moves it through an import and a callee, releases the rest,
  // and reports which registers are null.
  auto& callee = mb.AddFunction("callee", "r_r");
  callee.Op(Op::MovRef).R(1).R(0);     // a second count held only in this frame
  callee.Op(Op::MovRef).R(2).R(0);
  callee.Op(Op::Return).L({Move(0)});  // R1, R2 must be cleared by return
  auto& f = mb.AddFunction("keep", "r_iiiir");
  f.Op(Op::MovRef).R(1).R(0);                 // R1 = x (retained)
  f.Op(Op::MovRef).R(2).R(1, true);           // R2 = x, R1 null
  f.Op(Op::RefIsNull).V(0).R(1);              // 1
  f.Op(Op::Call).F(callee.ordinal()).L({Move(2)}).L({R(3)});
  f.Op(Op::RefIsNull).V(1).R(2);              // 1: moved into the call
  f.Op(Op::CallImport).M(identity).L({Move(3)}).L({R(4)});
  f.Op(Op::Release).L({R(0)});
  f.Op(Op::RefIsNull).V(2).R(0);              // 1
  f.Op(Op::RefIsNull).V(3).R(4, true);        // 0, and clears R4
  f.Op(Op::GlobalLoadRef).R(5).G(0);          // null global
  f.Op(Op::Return).L({V(0), V(1), V(2), V(3), R(5)});
  mb.SetGlobals(0, 1);
  mb.AddExport("keep", f.ordinal());
  Harness h(mb);
  Ref<Counter> obj = MakeRef<Counter>(9);
  {
    std::vector<Variant> args{RefArg(obj)};
    CHECK(obj->ref_count() == 2);
    auto fn = h.context->LookupFunction("keep");
    REQUIRE(fn.ok());
    std::vector<Variant> results;
    Status s = h.context->Invoke(*fn, args, &results);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(results.size() == 5);
    CHECK(results[0].bits == 1);
    CHECK(results[1].bits == 1);
    CHECK(results[2].bits == 1);
    CHECK(results[3].bits == 0);
    CHECK(!results[4].ref);
    CHECK(obj->ref_count() == 2);  // only `obj` and `args` hold it: no register kept a count
  }
  CHECK(obj->ref_count() == 1);
}

TEST_CASE("cmp.eq.ref: identity of objects, null equal to null, MOVE clears") {
  ModuleBuilder mb;
  // same(a, b): a == a, a == b, a == null, null == null (global 0 is never stored), and
  // a == b again with both moved out of their registers.
  auto& f = mb.AddFunction("same", "rr_iiiiiii");
  f.Op(Op::GlobalLoadRef).R(2).G(0);
  f.Op(Op::CmpEqRef).V(0).R(0).R(0);
  f.Op(Op::CmpEqRef).V(1).R(0).R(1);
  f.Op(Op::CmpEqRef).V(2).R(0).R(2);
  f.Op(Op::CmpEqRef).V(3).R(2).R(2);
  f.Op(Op::CmpEqRef).V(4).R(0, true).R(1, true);
  f.Op(Op::RefIsNull).V(5).R(0);
  f.Op(Op::RefIsNull).V(6).R(1);
  f.Op(Op::Return).L({V(0), V(1), V(2), V(3), V(4), V(5), V(6)});
  mb.SetGlobals(0, 1);
  mb.AddExport("same", f.ordinal());
  Harness h(mb);
  Ref<Counter> x = MakeRef<Counter>(1), y = MakeRef<Counter>(1);
  auto fn = h.context->LookupFunction("same");
  REQUIRE(fn.ok());
  for (bool equal : {true, false}) {
    std::vector<Variant> args{RefArg(x), RefArg(equal ? x : y)};
    std::vector<Variant> results;
    Status s = h.context->Invoke(*fn, args, &results);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(results.size() == 7);
    CHECK(results[0].bits == 1);
    CHECK(results[1].bits == (equal ? 1 : 0));
    CHECK(results[2].bits == 0);
    CHECK(results[3].bits == 1);
    CHECK(results[4].bits == (equal ? 1 : 0));
    CHECK(results[5].bits == 1);
    CHECK(results[6].bits == 1);
  }
  CHECK(x->ref_count() == 1);
  CHECK(y->ref_count() == 1);
}

TEST_CASE("a trap releases every ref held by the frames") {
  ModuleBuilder mb;
  auto& inner = mb.AddFunction("inner", "r_");
  inner.Op(Op::MovRef).R(1).R(0);
  inner.Op(Op::ConstI64).V(0).K(0);
  inner.Op(Op::DivSI64).V(0).V(0).V(0);
  inner.Op(Op::Return).L({});
  auto& outer = mb.AddFunction("outer", "r_");
  outer.Op(Op::MovRef).R(1).R(0);
  outer.Op(Op::Call).F(inner.ordinal()).L({R(0)}).L({});
  outer.Op(Op::Return).L({});
  mb.AddExport("outer", outer.ordinal());
  Harness h(mb);
  Ref<Counter> obj = MakeRef<Counter>(1);
  auto r = h.Call("outer", {RefArg(obj)});
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  // The trap names the failing instruction, then its callers (each call instruction).
  CHECK(r.status().message() ==
        "function 'inner' @7: integer division by zero (0 / 0); called from 'outer' @3");
  CHECK(obj->ref_count() == 1);
}

TEST_CASE("signed division and remainder of INT_MIN by -1 trap at i64 and i32 width, as a kernel fails") {
  const int64_t kMin64 = std::numeric_limits<int64_t>::min();
  const int64_t kMin32 = std::numeric_limits<int32_t>::min();
  for (Op op : {Op::DivSI64, Op::RemSI64}) {
    Status s = BinaryStatus(op, kMin64, -1);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message() == "function 'f' @0: integer division overflow (-9223372036854775808 / -1)");
    CHECK(BinaryStatus(op, 9, 0).message() == "function 'f' @0: integer division by zero (9 / 0)");
    // INT32_MIN is an ordinary i64.
    CHECK(RunBinary(op, kMin32, -1) == (op == Op::DivSI64 ? -kMin32 : 0));
  }
  for (Op op : {Op::DivSI32, Op::RemSI32}) {
    Status s = BinaryStatus(op, kMin32, -1);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message() == "function 'f' @0: integer division overflow (-2147483648 / -1)");
    CHECK(BinaryStatus(op, -9, 0).message() == "function 'f' @0: integer division by zero (-9 / 0)");
  }
  for (Op op : {Op::DivUI64, Op::RemUI64})
    CHECK(BinaryStatus(op, -9, 0).message() == "function 'f' @0: integer division by zero (-9 / 0)");
}

TEST_CASE("i32 signed division and remainder match C++ on i32 and read registers at 32 bits") {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  struct Case { int32_t a, b; };
  for (Case c : {Case{7, 3}, Case{-7, 3}, Case{7, -3}, Case{-7, -3}, Case{kMax, -1}, Case{kMin, 1},
                 Case{kMin, 7}, Case{kMax, kMin}}) {
    INFO(c.a << " , " << c.b);
    CHECK(RunBinary(Op::DivSI32, c.a, c.b) == c.a / c.b);
    CHECK(RunBinary(Op::RemSI32, c.a, c.b) == c.a % c.b);
  }
  // A register that is not a sign-extended i32 (hostile bytecode) is read at its low 32 bits:
  // 2^32 + 7 is 7, and 2^32 as a divisor is 0 (a trap, not a C++ division by zero).
  CHECK(RunBinary(Op::DivSI32, (int64_t(1) << 32) + 7, 2) == 3);
  CHECK(BinaryStatus(Op::DivSI32, 7, int64_t(1) << 32).message() ==
        "function 'f' @0: integer division by zero (7 / 0)");
  CHECK(RunBinary(Op::RemSI32, int64_t(0xFFFFFFFF), 5) == -1);  // low bits -1: -1 % 5
}

TEST_CASE("rodata aliases the module and outlives the context") {
  ModuleBuilder mb;
  std::vector<uint8_t> bytes(100);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7);
  mb.AddRodata({1, 2, 3});
  uint32_t d = mb.AddRodata(bytes);
  uint32_t sum = mb.AddImport("test.bytes_sum", "r_i");
  auto& f = mb.AddFunction("f", "_ir");
  f.Op(Op::Rodata).R(0).D(d);
  f.Op(Op::CallImport).M(sum).L({R(0)}).L({V(0)});
  f.Op(Op::Return).L({V(0), Move(0)});
  mb.AddExport("f", f.ordinal());
  Ref<RefObject> kept;
  const uint8_t* module_begin;
  {
    Harness h(mb);
    module_begin = h.module->bytes().data();
    auto r = h.Call("f");
    REQUIRE(r.ok());
    int64_t expect = 0;
    for (uint8_t b : bytes) expect += b;
    CHECK((*r)[0].bits == expect);
    kept = (*r)[1].ref;
  }
  // Context and harness are gone; the buffer still retains the module's bytes.
  ByteBuffer* buffer = RefCast<ByteBuffer>(kept.get());
  REQUIRE(buffer);
  CHECK(buffer->size() == bytes.size());
  CHECK(reinterpret_cast<uintptr_t>(buffer->data()) % 64 == 0);
  CHECK(buffer->data() > module_begin);
  CHECK(std::memcmp(buffer->data(), bytes.data(), bytes.size()) == 0);
}

TEST_CASE("globals persist across calls and the initializer runs once") {
  ModuleBuilder mb;
  mb.SetGlobals(2, 1);
  uint32_t d = mb.AddRodata({9, 9});
  auto& init = mb.AddFunction("__init", "_");
  init.Op(Op::ConstI64).V(0).K(40);
  init.Op(Op::GlobalStoreI64).V(0).G(1);
  init.Op(Op::Rodata).R(0).D(d);
  init.Op(Op::GlobalStoreRef).R(0, true).G(0);
  init.Op(Op::Return).L({});
  mb.SetInitializer(init.ordinal());
  auto& next = mb.AddFunction("next", "_ii");
  next.Op(Op::GlobalLoadI64).V(0).G(1);
  next.Op(Op::AddImmI64).V(0).V(0).J(1);
  next.Op(Op::GlobalStoreI64).V(0).G(1);
  next.Op(Op::GlobalLoadRef).R(0).G(0);
  next.Op(Op::RefIsNull).V(1).R(0);
  next.Op(Op::Return).L({V(0), V(1)});
  mb.AddExport("next", next.ordinal());
  Harness h(mb);
  CHECK(h.context->stats().invocations == 1);  // the initializer
  CHECK(h.CallI("next") == 41);
  auto r = h.Call("next");
  REQUIRE(r.ok());
  CHECK((*r)[0].bits == 42);
  CHECK((*r)[1].bits == 0);

  // A failing initializer fails LoadModule.
  ModuleBuilder bad("broken");
  auto& binit = bad.AddFunction("__init", "_");
  binit.Op(Op::ConstI64).V(0).K(int64_t(StatusCode::kNotFound));
  binit.Op(Op::Fail).V(0).S(bad.AddString("no weights"));
  bad.SetInitializer(binit.ordinal());
  auto module = Load(bad);
  auto context = Context::Create();
  Status s = context->LoadModule(*module);
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message() == "module 'broken' initializer: function '__init' @4: no weights");
  CHECK(context->LookupFunction("__init").status().code() == StatusCode::kNotFound);
}

TEST_CASE("fail and division by zero trap with function and offset") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("main", "i_i");
  Label ok = f.NewLabel();
  f.Op(Op::CondBr).V(0).T(ok).P({}).T(ok).P({});
  f.Bind(ok);
  f.Op(Op::ConstI64).V(1).K(int64_t(StatusCode::kFailedPrecondition));
  f.Op(Op::CmpEqI64).V(2).V(0).V(1);  // fail when x == 4; else divide by zero when x == 0
  Label fail = f.NewLabel(), divide = f.NewLabel();
  f.Op(Op::CondBr).V(2).T(fail).P({}).T(divide).P({});
  f.Bind(fail);
  uint32_t fail_op = f.offset();
  f.Op(Op::Fail).V(1).S(mb.AddString("custom failure"));
  f.Bind(divide);
  uint32_t div_op = f.offset();
  f.Op(Op::DivUI64).V(3).V(1).V(0);
  f.Op(Op::Return).L({V(3)});
  mb.AddExport("main", f.ordinal());
  Harness h(mb);
  auto failed = h.Call("main", {I(4)});
  REQUIRE(!failed.ok());
  CHECK(failed.status().code() == StatusCode::kFailedPrecondition);
  CHECK(failed.status().message() == StrCat("function 'main' @", fail_op, ": custom failure"));
  auto div = h.Call("main", {I(0)});
  REQUIRE(!div.ok());
  CHECK(div.status().message() == StrCat("function 'main' @", div_op, ": integer division by zero (",
                                         int64_t(StatusCode::kFailedPrecondition), " / 0)"));
  CHECK(h.CallI("main", {I(2)}) == 2);
}

TEST_CASE("assert falls through when its value is nonzero and traps with the values formatted") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("main", "ii_i");  // asserts a == b, naming both
  f.Op(Op::CmpEqI64).V(2).V(0).V(1);
  uint32_t assert_op = f.offset();
  f.Op(Op::Assert).V(2).S(mb.AddString("linalg.add: dimension 0 of operand 1 is {}, expected {} ({})"))
      .L({V(1), V(0)});
  f.Op(Op::Return).L({V(0)});
  mb.AddExport("main", f.ordinal());
  Harness h(mb);
  CHECK(h.CallI("main", {I(4), I(4)}) == 4);
  auto failed = h.Call("main", {I(4), I(-2)});
  REQUIRE(!failed.ok());
  CHECK(failed.status().code() == StatusCode::kInvalidArgument);
  // A placeholder past the end of the list stays as written.
  CHECK(failed.status().message() ==
        StrCat("function 'main' @", assert_op,
               ": linalg.add: dimension 0 of operand 1 is -2, expected 4 ({})"));
}

TEST_CASE("Invoke checks argument count and lookup names") {
  ModuleBuilder mb;
  AddSumLoop(mb);
  Harness h(mb);
  auto fn = h.context->LookupFunction("sum");
  REQUIRE(fn.ok());
  CHECK(fn->signature == "i_i");
  std::vector<Variant> results;
  Status s = h.context->Invoke(*fn, {}, &results);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "function 'sum' (signature 'i_i') takes 1 arguments, got 0");
  CHECK(h.context->LookupFunction("nope").status().message() ==
        "function 'nope' is not exported by any loaded module");
}

}  // namespace
}  // namespace hexir::vm
