// The bytecode writer's fused branches (BranchSelection.h) and block-argument coalescing
// (RegisterAllocation.h): VM-form MLIR is written, loaded by the runtime VM and run; results
// are checked against C++ and the selected instructions and executed-instruction counts
// against what the fused forms promise.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "compiler/bytecode/BytecodeWriter.h"
#include "dialects/vm/IR/VMOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "vm/api.h"
#include "vm/disassembler.h"
#include "vm/module.h"

namespace hexir::compiler {
namespace {

// A written, loaded and linked module whose function `main` takes and returns i64s.
struct Loaded {
  explicit Loaded(const std::string& text, BytecodeWriterOptions options = {}) {
    mlir::MLIRContext mlirContext;
    mlirContext.loadDialect<mlir::func::FuncDialect, vmir::VMDialect>();
    auto parsed = mlir::parseSourceString<mlir::ModuleOp>(text, &mlirContext);
    REQUIRE(parsed);
    std::vector<uint8_t> bytes;
    REQUIRE(mlir::succeeded(WriteBytecodeModule(*parsed, &bytes, options)));
    auto loaded = vm::Module::LoadFromMemory(bytes.data(), bytes.size());
    INFO(loaded.status().ToString());
    REQUIRE(loaded.ok());
    module = *loaded;
    context = vm::Context::Create();
    REQUIRE(context->LoadModule(*module).ok());
    code = vm::DisassembleFunction(*module, 0);
  }
  // Calls main(args); returns its first result and sets *instructions to the count executed.
  int64_t Call(std::vector<int64_t> args, uint64_t* instructions = nullptr) {
    auto fn = context->LookupFunction("main");
    REQUIRE(fn.ok());
    std::vector<vm::Variant> in;
    for (int64_t a : args) in.push_back(vm::Variant{a, nullptr});
    std::vector<vm::Variant> results;
    uint64_t before = context->stats().instructions;
    Status status = context->Invoke(*fn, Span<vm::Variant>(in.data(), in.size()), &results);
    INFO(status.ToString());
    REQUIRE(status.ok());
    if (instructions) *instructions = context->stats().instructions - before;
    return results.at(0).bits;
  }
  bool Has(const std::string& mnemonic) const { return code.find(": " + mnemonic + " ") != std::string::npos; }

  vm::Ref<vm::Module> module;
  std::unique_ptr<vm::Context> context;
  std::string code;
};

// s += (i * 7) % 13 for i in [0, n): what ConvertToVM makes of the scf.for.
constexpr const char* kSumLoop = R"mlir(
  func.func @main(%n: i64) -> i64 {
    %c0 = hexir_vm.const.i64 0
    %c1 = hexir_vm.const.i64 1
    %c7 = hexir_vm.const.i64 7
    %c13 = hexir_vm.const.i64 13
    hexir_vm.br ^head(%c0, %c0 : i64, i64)
  ^head(%i: i64, %s: i64):
    %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
    hexir_vm.cond_br %more, ^body, ^exit
  ^body:
    %a = hexir_vm.inst "mul.i64"(%i, %c7) : (i64, i64) -> i64
    %b = hexir_vm.inst "rem.s.i64"(%a, %c13) : (i64, i64) -> i64
    %t = hexir_vm.inst "add.i64"(%s, %b) : (i64, i64) -> i64
    %next = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
    hexir_vm.br ^head(%next, %t : i64, i64)
  ^exit:
    hexir_vm.return %s : i64
  }
)mlir";

int64_t SumReference(int64_t n) {
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += (i * 7) % 13;
  return s;
}

TEST_CASE("a counted loop runs s += (i*7)%13 in 4 instructions per iteration with for.i64") {
  Loaded m(kSumLoop);
  INFO(m.code);
  CHECK(m.Has("for.i64"));
  CHECK(m.Has("br.le.s.i64"));  // the header's test, negated to fall through into the body
  CHECK(!m.Has("cmp.lt.s.i64"));
  CHECK(!m.Has("cond_br"));
  // The only copy left is the entry's (one constant initializes both i and s): inside the
  // loop every block argument is already in place.
  CHECK(m.code.find("->") == m.code.rfind("->"));
  CHECK(m.code.find("->") < m.code.find("for.i64"));
  uint64_t once = 0, many = 0;
  for (int64_t n : {0, 1, 2, 13, 1000}) CHECK(m.Call({n}) == SumReference(n));
  CHECK(m.Call({-5}) == 0);  // zero trips
  m.Call({1}, &once);
  CHECK(m.Call({1001}, &many) == SumReference(1001));
  CHECK((many - once) == 4 * 1000);
}

TEST_CASE("written without selection the same loop keeps cmp + cond_br and takes 7 instructions per iteration") {
  Loaded m(kSumLoop, BytecodeWriterOptions{/*selectBranches=*/false});
  INFO(m.code);
  CHECK(m.Has("cmp.lt.s.i64"));
  CHECK(m.Has("cond_br"));
  CHECK(!m.Has("for.i64"));
  CHECK(!m.Has("br.le.s.i64"));
  uint64_t once = 0, many = 0;
  for (int64_t n : {-5, 0, 1, 2, 13, 1000}) CHECK(m.Call({n}) == SumReference(n));
  m.Call({1}, &once);
  m.Call({1001}, &many);
  CHECK((many - once) == 7 * 1000);  // cmp, cond_br, mul, rem, add, add, br
}

// The same loop as ConvertToVM writes an scf.while: the header passes i and s to the body's
// own arguments, and the body increments its copy of i.
constexpr const char* kSumWhileLoop = R"mlir(
  func.func @main(%n: i64) -> i64 {
    %c0 = hexir_vm.const.i64 0
    %c1 = hexir_vm.const.i64 1
    %c7 = hexir_vm.const.i64 7
    %c13 = hexir_vm.const.i64 13
    hexir_vm.br ^head(%c0, %c0 : i64, i64)
  ^head(%i: i64, %s: i64):
    %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
    hexir_vm.cond_br %more, ^body(%i, %s : i64, i64), ^exit(%s : i64)
  ^body(%bi: i64, %bs: i64):
    %a = hexir_vm.inst "mul.i64"(%bi, %c7) : (i64, i64) -> i64
    %b = hexir_vm.inst "rem.s.i64"(%a, %c13) : (i64, i64) -> i64
    %t = hexir_vm.inst "add.i64"(%bs, %b) : (i64, i64) -> i64
    %next = hexir_vm.inst "add.i64"(%bi, %c1) : (i64, i64) -> i64
    hexir_vm.br ^head(%next, %t : i64, i64)
  ^exit(%r: i64):
    hexir_vm.return %r : i64
  }
)mlir";

TEST_CASE("a while loop whose body increments its copy of the counter runs in 4 instructions per iteration with for.i64") {
  for (bool select : {true, false}) {
    Loaded m(kSumWhileLoop, BytecodeWriterOptions{select});
    INFO((select ? "selected\n" : "unoptimised\n") << m.code);
    CHECK(m.Has("for.i64") == select);
    uint64_t once = 0, many = 0;
    for (int64_t n : {-5, 0, 1, 2, 13, 1000}) CHECK(m.Call({n}) == SumReference(n));
    m.Call({1}, &once);
    CHECK(m.Call({1001}, &many) == SumReference(1001));
    CHECK((many - once) == (select ? 4 : 7) * 1000);
  }
}

TEST_CASE("a body argument that is not the counter's copy is not taken for the counter") {
  // The header passes (j, i) to the body's (x, y) crossed; the body adds 1 to x (= j) and
  // carries it as the new i: an increment of the counter's copy it is not, so no for.i64.
  Loaded m(R"mlir(
    func.func @main(%n: i64) -> i64 {
      %c0 = hexir_vm.const.i64 0
      %c1 = hexir_vm.const.i64 1
      %c5 = hexir_vm.const.i64 5
      hexir_vm.br ^head(%c0, %c5, %c0 : i64, i64, i64)
    ^head(%i: i64, %j: i64, %k: i64):
      %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
      hexir_vm.cond_br %more, ^body(%j, %i, %k : i64, i64, i64), ^exit(%k : i64)
    ^body(%x: i64, %y: i64, %z: i64):
      %next = hexir_vm.inst "add.i64"(%x, %c1) : (i64, i64) -> i64
      %z2 = hexir_vm.inst "add.i64"(%z, %c1) : (i64, i64) -> i64
      hexir_vm.br ^head(%next, %y, %z2 : i64, i64, i64)
    ^exit(%r: i64):
      hexir_vm.return %r : i64
    }
  )mlir");
  INFO(m.code);
  CHECK(!m.Has("for.i64"));
  // i, j = j + 1, i while i < n, counting iterations.
  for (int64_t n : {-1, 0, 1, 2, 6, 7, 20}) {
    int64_t i = 0, j = 5, k = 0;
    while (i < n) {
      int64_t next = j + 1;
      j = i;
      i = next;
      ++k;
    }
    INFO("n = " << n);
    CHECK(m.Call({n}) == k);
  }
}

TEST_CASE("a branch with nothing to copy to the next block is not written, so an if-else in a loop costs no jumps to jumps") {
  // s += i when i % 3 == 0, else s -= 1, as ConvertToVM writes an scf.if in an scf.for: the
  // else block falls into the merge block, which falls into the latch.
  constexpr const char* kIfLoop = R"mlir(
    func.func @main(%n: i64) -> i64 {
      %c0 = hexir_vm.const.i64 0
      %c1 = hexir_vm.const.i64 1
      %c3 = hexir_vm.const.i64 3
      hexir_vm.br ^head(%c0, %c0 : i64, i64)
    ^head(%i: i64, %s: i64):
      %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
      hexir_vm.cond_br %more, ^body, ^exit
    ^body:
      %m = hexir_vm.inst "rem.s.i64"(%i, %c3) : (i64, i64) -> i64
      %z = hexir_vm.inst "cmp.eq.i64"(%m, %c0) : (i64, i64) -> i64
      hexir_vm.cond_br %z, ^then, ^else
    ^then:
      %a = hexir_vm.inst "add.i64"(%s, %i) : (i64, i64) -> i64
      hexir_vm.br ^merge(%a : i64)
    ^else:
      %b = hexir_vm.inst "sub.i64"(%s, %c1) : (i64, i64) -> i64
      hexir_vm.br ^merge(%b : i64)
    ^merge(%t: i64):
      hexir_vm.br ^latch
    ^latch:
      %next = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
      hexir_vm.br ^head(%next, %t : i64, i64)
    ^exit:
      hexir_vm.return %s : i64
    }
  )mlir";
  auto reference = [](int64_t n) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += i % 3 == 0 ? i : -1;
    return s;
  };
  for (bool select : {true, false}) {
    Loaded m(kIfLoop, BytecodeWriterOptions{select});
    INFO((select ? "selected\n" : "unoptimised\n") << m.code);
    for (int64_t n : {-2, 0, 1, 2, 3, 4, 100}) CHECK(m.Call({n}) == reference(n));
    uint64_t once = 0, many = 0;
    m.Call({3}, &once);
    CHECK(m.Call({303}, &many) == reference(303));
    // 100 times each of: i % 3 == 0 (then), 1 and 2 (else).
    // Selected: rem, br.ne, add, br, for.i64 (then); rem, br.ne, sub, for.i64 (else).
    // Unoptimised: cmp, cond_br, rem, cmp, cond_br, add or sub, br, br, add, br.
    CHECK((many - once) == (select ? 100 * (5 + 4 + 4) : 300 * 10));
  }
}

// f(a, b) = 1 when (a <pred> b), else 2; `trueFirst` lays the true destination out first.
std::string CompareFunction(const std::string& cmp, bool trueFirst) {
  std::string yes = "^yes:\n    %one = hexir_vm.const.i64 1\n    hexir_vm.return %one : i64\n";
  std::string no = "^no:\n    %two = hexir_vm.const.i64 2\n    hexir_vm.return %two : i64\n";
  return "func.func @main(%a: i64, %b: i64) -> i64 {\n"
         "    %c = hexir_vm.inst \"" + cmp + "\"(%a, %b) : (i64, i64) -> i64\n"
         "    hexir_vm.cond_br %c, ^yes, ^no\n  " +
         (trueFirst ? yes + "  " + no : no + "  " + yes) + "}\n";
}

TEST_CASE("each i64 comparison before a cond_br becomes one fused branch of the right sense") {
  struct Case {
    const char* cmp;
    bool (*reference)(int64_t, int64_t);
  };
  const Case cases[] = {
      {"cmp.eq.i64", [](int64_t a, int64_t b) { return a == b; }},
      {"cmp.ne.i64", [](int64_t a, int64_t b) { return a != b; }},
      {"cmp.lt.s.i64", [](int64_t a, int64_t b) { return a < b; }},
      {"cmp.le.s.i64", [](int64_t a, int64_t b) { return a <= b; }},
      {"cmp.lt.u.i64", [](int64_t a, int64_t b) { return uint64_t(a) < uint64_t(b); }},
      {"cmp.le.u.i64", [](int64_t a, int64_t b) { return uint64_t(a) <= uint64_t(b); }},
  };
  const int64_t values[] = {std::numeric_limits<int64_t>::min(), -3, -1, 0, 1, 3,
                            std::numeric_limits<int64_t>::max()};
  for (const Case& c : cases) {
    for (bool trueFirst : {true, false}) {
      Loaded m(CompareFunction(c.cmp, trueFirst));
      INFO(c.cmp << (trueFirst ? ", true destination first" : ", false destination first") << "\n"
                 << m.code);
      CHECK(!m.Has("cond_br"));
      CHECK(!m.Has(c.cmp));
      for (int64_t a : values)
        for (int64_t b : values) {
          uint64_t instructions = 0;
          CHECK(m.Call({a, b}, &instructions) == (c.reference(a, b) ? 1 : 2));
          CHECK(instructions == 3);  // fused branch, const, return
        }
    }
  }
}

TEST_CASE("a loop bound carried as a header argument is read from the latch") {
  // i counts up while the bound counts down: i < ub with ub' = ub - 1 each iteration.
  Loaded m(R"mlir(
    func.func @main(%ub0: i64) -> i64 {
      %c0 = hexir_vm.const.i64 0
      %c1 = hexir_vm.const.i64 1
      hexir_vm.br ^head(%c0, %ub0, %c0 : i64, i64, i64)
    ^head(%i: i64, %ub: i64, %s: i64):
      %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %ub) : (i64, i64) -> i64
      hexir_vm.cond_br %more, ^body, ^exit(%s : i64)
    ^body:
      %t = hexir_vm.inst "add.i64"(%s, %i) : (i64, i64) -> i64
      %ub2 = hexir_vm.inst "sub.i64"(%ub, %c1) : (i64, i64) -> i64
      %next = hexir_vm.inst "add.i64"(%i, %c1) : (i64, i64) -> i64
      hexir_vm.br ^head(%next, %ub2, %t : i64, i64, i64)
    ^exit(%r: i64):
      hexir_vm.return %r : i64
    }
  )mlir");
  INFO(m.code);
  CHECK(m.Has("for.i64"));
  for (int64_t ub0 : {-4, 0, 1, 2, 7, 100}) {
    int64_t s = 0;
    for (int64_t i = 0, ub = ub0; i < ub; ++i, --ub) s += i;
    CHECK(m.Call({ub0}) == s);
  }
}

TEST_CASE("a latch whose increment is used again repeats the header's test without for.i64") {
  // %next is carried twice (as i and as the last index seen): the add stays, the latch
  // branches on the header's test of the value it passes.
  Loaded m(R"mlir(
    func.func @main(%n: i64) -> i64 {
      %c0 = hexir_vm.const.i64 0
      %c2 = hexir_vm.const.i64 2
      hexir_vm.br ^head(%c0, %c0 : i64, i64)
    ^head(%i: i64, %last: i64):
      %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %n) : (i64, i64) -> i64
      hexir_vm.cond_br %more, ^body, ^exit
    ^body:
      %next = hexir_vm.inst "add.i64"(%i, %c2) : (i64, i64) -> i64
      hexir_vm.br ^head(%next, %next : i64, i64)
    ^exit:
      %r = hexir_vm.inst "add.i64"(%last, %i) : (i64, i64) -> i64
      hexir_vm.return %r : i64
    }
  )mlir");
  INFO(m.code);
  CHECK(!m.Has("for.i64"));
  CHECK(m.Has("br.lt.s.i64"));
  for (int64_t n : {-1, 0, 1, 2, 9}) {
    int64_t i = 0, last = 0;
    while (i < n) last = i = i + 2;
    CHECK(m.Call({n}) == last + i);
  }
}

TEST_CASE("a while loop's latch branches straight back into the body on the header's test") {
  // x = x > 1 ? (x odd ? 3x + 1 : x / 2) while x != 1, counting steps (Collatz); the header
  // tests `1 != x` and the latch repeats that test on the new x.
  Loaded m(R"mlir(
    func.func @main(%x0: i64) -> i64 {
      %c0 = hexir_vm.const.i64 0
      %c1 = hexir_vm.const.i64 1
      %c2 = hexir_vm.const.i64 2
      %c3 = hexir_vm.const.i64 3
      hexir_vm.br ^head(%x0, %c0 : i64, i64)
    ^head(%x: i64, %k: i64):
      %more = hexir_vm.inst "cmp.ne.i64"(%c1, %x) : (i64, i64) -> i64
      hexir_vm.cond_br %more, ^body(%x, %k : i64, i64), ^exit(%k : i64)
    ^body(%v: i64, %n: i64):
      %odd = hexir_vm.inst "rem.s.i64"(%v, %c2) : (i64, i64) -> i64
      %up = hexir_vm.inst "mul.i64"(%v, %c3) : (i64, i64) -> i64
      %up1 = hexir_vm.inst "add.i64"(%up, %c1) : (i64, i64) -> i64
      %down = hexir_vm.inst "div.s.i64"(%v, %c2) : (i64, i64) -> i64
      %nv = hexir_vm.inst "select.i64"(%odd, %up1, %down) : (i64, i64, i64) -> i64
      %nk = hexir_vm.inst "add.i64"(%n, %c1) : (i64, i64) -> i64
      hexir_vm.br ^head(%nv, %nk : i64, i64)
    ^exit(%r: i64):
      hexir_vm.return %r : i64
    }
  )mlir");
  INFO(m.code);
  CHECK(m.Has("br.eq.i64"));  // the header: the negated test, falling through into the body
  CHECK(m.Has("br.ne.i64"));  // the latch: the test itself, taken back into the body
  CHECK(!m.Has("cond_br"));
  auto steps = [](int64_t x) {
    int64_t k = 0;
    for (; x != 1; ++k) x = x % 2 ? 3 * x + 1 : x / 2;
    return k;
  };
  for (int64_t x : {1, 2, 3, 7, 27, 97}) CHECK(m.Call({x}) == steps(x));
  uint64_t one = 0, many = 0;
  m.Call({2}, &one);     // 1 iteration
  m.Call({27}, &many);   // 111 iterations
  CHECK(many - one == 7 * 110);  // 6 in the body + the rotated branch, no copies
}

TEST_CASE("for.i64 falling through on overflow leaves the wrapping semantics to the header") {
  // i = lb, lb + step, ... while i < ub, at most 5 iterations. When the increment wraps past
  // INT64_MAX, for.i64 falls through and the header tests the wrapped value as the unfused
  // loop does (it is below ub, so the loop goes on until the count stops it).
  Loaded m(R"mlir(
    func.func @main(%lb: i64, %step: i64, %ub: i64) -> i64 {
      %c0 = hexir_vm.const.i64 0
      %c1 = hexir_vm.const.i64 1
      hexir_vm.br ^head(%lb, %c0 : i64, i64)
    ^head(%i: i64, %count: i64):
      %more = hexir_vm.inst "cmp.lt.s.i64"(%i, %ub) : (i64, i64) -> i64
      hexir_vm.cond_br %more, ^body, ^exit
    ^body:
      %limit = hexir_vm.const.i64 5
      %enough = hexir_vm.inst "cmp.le.s.i64"(%limit, %count) : (i64, i64) -> i64
      hexir_vm.cond_br %enough, ^exit, ^latch
    ^latch:
      %count2 = hexir_vm.inst "add.i64"(%count, %c1) : (i64, i64) -> i64
      %next = hexir_vm.inst "add.i64"(%i, %step) : (i64, i64) -> i64
      hexir_vm.br ^head(%next, %count2 : i64, i64)
    ^exit:
      %r = hexir_vm.inst "add.i64"(%count, %i) : (i64, i64) -> i64
      hexir_vm.return %r : i64
    }
  )mlir");
  INFO(m.code);
  CHECK(m.Has("for.i64"));
  auto reference = [](int64_t lb, int64_t step, int64_t ub) {
    int64_t i = lb, count = 0;
    while (i < ub && count < 5) {
      ++count;
      i = static_cast<int64_t>(static_cast<uint64_t>(i) + static_cast<uint64_t>(step));
    }
    return static_cast<int64_t>(static_cast<uint64_t>(count) + static_cast<uint64_t>(i));
  };
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t tests[][3] = {{0, 1, 3}, {0, 3, 100}, {max - 7, 4, max}, {max - 1, max, max},
                              {10, -2, 20}, {5, -1, 0}, {0, 0, 1}};
  for (const auto& t : tests) CHECK(m.Call({t[0], t[1], t[2]}) == reference(t[0], t[1], t[2]));
}

}  // namespace
}  // namespace hexir::compiler
