// Host loops compiled from scf.for / scf.while end to end (hexir-compile, then the runtime
// through the embedding API): every loop shape the bytecode writer's fused branches and
// coalesced block arguments touch (counted, nested, while, counting down, early exit, a bound
// that changes, zero trips, refs carried) against C++ references and against the same module
// written unoptimised (hexir-compile --no-branch-selection), and the executed instructions
// per iteration of the counted loops. Host bytecode is the same for every target, so these
// run on the CPU only (compiled_calls_test runs the tensor loops on CUDA as well).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

const char* kLoops = R"mlir(
func.func @sum_mod(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %c13 = arith.constant 13 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c0) -> (i64) : i64 {
    %a = arith.muli %i, %c7 : i64
    %b = arith.remsi %a, %c13 : i64
    %t = arith.addi %s, %b : i64
    scf.yield %t : i64
  }
  return %r : i64
}

// The same loop as an scf.while: the body adds to its own copy of the counter.
func.func @sum_mod_while(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %c13 = arith.constant 13 : i64
  %r:2 = scf.while (%i = %c0, %s = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi slt, %i, %n : i64
    scf.condition(%more) %i, %s : i64, i64
  } do {
  ^bb0(%i: i64, %s: i64):
    %a = arith.muli %i, %c7 : i64
    %b = arith.remsi %a, %c13 : i64
    %t = arith.addi %s, %b : i64
    %i2 = arith.addi %i, %c1 : i64
    scf.yield %i2, %t : i64, i64
  }
  return %r#1 : i64
}

// The same loop over i32 (the VM keeps i32 sign-extended in 64-bit registers).
func.func @sum_mod_i32(%n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c7 = arith.constant 7 : i32
  %c13 = arith.constant 13 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c0) -> (i32) : i32 {
    %a = arith.muli %i, %c7 : i32
    %b = arith.remsi %a, %c13 : i32
    %t = arith.addi %s, %b : i32
    scf.yield %t : i32
  }
  return %r : i32
}

// i32 arithmetic whose i64 form differs: unsigned division, remainder and shift (operands
// zero-extended), signed remainder and division.
func.func @i32_ops(%a: i32, %b: i32) -> (i32, i32, i32, i32, i32) {
  %c1 = arith.constant 1 : i32
  %du = arith.divui %a, %b : i32
  %ru = arith.remui %a, %b : i32
  %sh = arith.shrui %a, %c1 : i32
  %rs = arith.remsi %a, %b : i32
  %ds = arith.divsi %a, %b : i32
  return %du, %ru, %sh, %rs, %ds : i32, i32, i32, i32, i32
}

// sum over i < n, j < m (index loops) of (i * m + j) % 11, plus a stepped zero-trip-capable
// inner loop: j from i to m step 3 counts into c.
func.func @nested(%n: i64, %m: i64) -> (i64, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %c11 = arith.constant 11 : i64
  %ni = arith.index_cast %n : i64 to index
  %mi = arith.index_cast %m : i64 to index
  %r:2 = scf.for %i = %c0 to %ni step %c1 iter_args(%s = %z, %c = %z) -> (i64, i64) {
    %s2 = scf.for %j = %c0 to %mi step %c1 iter_args(%t = %s) -> (i64) {
      %ii = arith.index_cast %i : index to i64
      %jj = arith.index_cast %j : index to i64
      %p = arith.muli %ii, %m : i64
      %q = arith.addi %p, %jj : i64
      %w = arith.remsi %q, %c11 : i64
      %t2 = arith.addi %t, %w : i64
      scf.yield %t2 : i64
    }
    %c2 = scf.for %j = %i to %mi step %c3 iter_args(%u = %c) -> (i64) {
      %u2 = arith.addi %u, %one : i64
      scf.yield %u2 : i64
    }
    scf.yield %s2, %c2 : i64, i64
  }
  return %r#0, %r#1 : i64, i64
}

// s += i when i % 3 == 0, else s -= 1: an scf.if with a result inside an scf.for.
func.func @if_loop(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c0) -> (i64) : i64 {
    %m = arith.remsi %i, %c3 : i64
    %z = arith.cmpi eq, %m, %c0 : i64
    %t = scf.if %z -> i64 {
      %a = arith.addi %s, %i : i64
      scf.yield %a : i64
    } else {
      %b = arith.subi %s, %c1 : i64
      scf.yield %b : i64
    }
    scf.yield %t : i64
  }
  return %r : i64
}

// Collatz steps until x == 1 (a while loop on data).
func.func @collatz(%x: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %r:2 = scf.while (%v = %x, %k = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi sgt, %v, %c1 : i64
    scf.condition(%more) %v, %k : i64, i64
  } do {
  ^bb0(%v: i64, %k: i64):
    %odd = arith.remsi %v, %c2 : i64
    %isodd = arith.cmpi ne, %odd, %c0 : i64
    %up = arith.muli %v, %c3 : i64
    %up1 = arith.addi %up, %c1 : i64
    %down = arith.divsi %v, %c2 : i64
    %nv = arith.select %isodd, %up1, %down : i64
    %nk = arith.addi %k, %c1 : i64
    scf.yield %nv, %nk : i64, i64
  }
  return %r#1 : i64
}

// Counts down from hi while i > lo by `step` (> 0), summing i.
func.func @countdown(%hi: i64, %lo: i64, %step: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %r:2 = scf.while (%i = %hi, %s = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi sgt, %i, %lo : i64
    scf.condition(%more) %i, %s : i64, i64
  } do {
  ^bb0(%i: i64, %s: i64):
    %s2 = arith.addi %s, %i : i64
    %i2 = arith.subi %i, %step : i64
    scf.yield %i2, %s2 : i64, i64
  }
  return %r#1 : i64
}

// The first i < n with (i * i) % 97 == target, or n: a loop with an early exit.
func.func @find(%n: i64, %target: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c97 = arith.constant 97 : i64
  %r = scf.while (%i = %c0) : (i64) -> i64 {
    %inrange = arith.cmpi slt, %i, %n : i64
    %sq = arith.muli %i, %i : i64
    %m = arith.remsi %sq, %c97 : i64
    %miss = arith.cmpi ne, %m, %target : i64
    %more = arith.andi %inrange, %miss : i1
    scf.condition(%more) %i : i64
  } do {
  ^bb0(%i: i64):
    %i2 = arith.addi %i, %c1 : i64
    scf.yield %i2 : i64
  }
  return %r : i64
}

// i counts up while the bound counts down by 2: the bound changes every iteration.
func.func @meet(%ub: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %r:3 = scf.while (%i = %c0, %b = %ub, %s = %c0) : (i64, i64, i64) -> (i64, i64, i64) {
    %more = arith.cmpi slt, %i, %b : i64
    scf.condition(%more) %i, %b, %s : i64, i64, i64
  } do {
  ^bb0(%i: i64, %b: i64, %s: i64):
    %s2 = arith.addi %s, %b : i64
    %i2 = arith.addi %i, %c1 : i64
    %b2 = arith.subi %b, %c2 : i64
    scf.yield %i2, %b2, %s2 : i64, i64, i64
  }
  %t = arith.muli %r#0, %c2 : i64
  %u = arith.addi %t, %r#2 : i64
  return %u : i64
}

// From lb to ub by a constant step of 3, counting iterations from a start value (zero trips
// when lb >= ub).
func.func @stepped(%lb: i64, %ub: i64, %start: i64) -> i64 {
  %c3 = arith.constant 3 : i64
  %c1 = arith.constant 1 : i64
  %r = scf.for %i = %lb to %ub step %c3 iter_args(%s = %start) -> (i64) : i64 {
    %t = arith.addi %s, %c1 : i64
    scf.yield %t : i64
  }
  return %r : i64
}

// a, b = b + 1, a: two tensors carried and swapped every iteration (a parallel copy cycle of
// refs), n times.
#id = affine_map<(i) -> (i)>
func.func @swap_add(%x: tensor<4xf32>, %y: tensor<4xf32>, %n: i64) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x, %b = %y) -> (tensor<4xf32>, tensor<4xf32>) : i64 {
    %e = tensor.empty() : tensor<4xf32>
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %w = arith.addf %v, %one : f32
      linalg.yield %w : f32
    } -> tensor<4xf32>
    scf.yield %d, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
)mlir";

// Every integer comparison as a loop test, over i32, i64 and index:
//   @walk_<predicate>_<type>(i0, b, step) -> (i, k): while (i <predicate> b) { i += step; ++k }
// (i32 adds wrap at 32 bits; the test is the one arith.cmpi, so its branch can be fused).
const char* kPredicates[] = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"};
const char* kLoopTypes[] = {"i32", "i64", "index"};

std::string WalkLoops() {
  std::string text;
  for (const char* p : kPredicates)
    for (const char* t : kLoopTypes) {
      std::string ty = t, name = std::string("@walk_") + p + "_" + t;
      text += "func.func " + name + "(%i0: " + ty + ", %b: " + ty + ", %step: " + ty + ") -> (" + ty +
              ", i64) {\n  %c0 = arith.constant 0 : i64\n  %c1 = arith.constant 1 : i64\n" +
              "  %r:2 = scf.while (%i = %i0, %k = %c0) : (" + ty + ", i64) -> (" + ty + ", i64) {\n" +
              "    %more = arith.cmpi " + p + ", %i, %b : " + ty + "\n" +
              "    scf.condition(%more) %i, %k : " + ty + ", i64\n  } do {\n  ^bb0(%i: " + ty +
              ", %k: i64):\n    %i2 = arith.addi %i, %step : " + ty + "\n    %k2 = arith.addi %k, %c1 : i64\n" +
              "    scf.yield %i2, %k2 : " + ty + ", i64\n  }\n  return %r#0, %r#1 : " + ty + ", i64\n}\n\n";
    }
  return text;
}

// How the bytecode writer writes control flow: fused branches, for.i64 and coalesced block
// arguments, or the unoptimised form (cmp + cond_br, br with copies, first-fit registers).
enum class Form { kSelected, kUnoptimised };

std::unique_ptr<tools::Session> OpenLoops(Form form) {
  std::string module = form == Form::kSelected
                           ? CompileOrDie(std::string(kLoops) + WalkLoops(), "loops")
                           : CompileOrDie(std::string(kLoops) + WalkLoops(), "loops_unoptimised", "cpu",
                                          "--no-branch-selection");
  tools::InvocationOptions options;
  options.device_uri = "cpu";
  options.cpu_threads = 0;
  auto opened = tools::Session::Open(module, options);
  INFO(opened.status().ToString());
  REQUIRE(opened.ok());
  return std::move(opened).value();
}

// The loops module in each form, compiled once and opened on the CPU.
tools::Session& Loops(Form form = Form::kSelected) {
  static std::unique_ptr<tools::Session> selected = OpenLoops(Form::kSelected);
  if (form == Form::kSelected) return *selected;
  static std::unique_ptr<tools::Session> unoptimised = OpenLoops(Form::kUnoptimised);
  return *unoptimised;
}

std::vector<HostValue> Call(const std::string& name, const std::vector<HostValue>& inputs,
                            uint64_t* instructions = nullptr, Form form = Form::kSelected) {
  tools::Session& s = Loops(form);
  auto fn = s.LookupFunction(name);
  REQUIRE(fn.ok());
  uint64_t before = s.context().stats().instructions;
  std::vector<HostValue> results;
  Status st = s.Call(*fn, inputs, &results);
  INFO(name << ": " << st.ToString());
  REQUIRE(st.ok());
  if (instructions) *instructions = s.context().stats().instructions - before;
  return results;
}

// An integer argument of the function's type ("i32"; i64 and index are both i64 here).
HostValue IntScalar(int64_t x, const std::string& type = "i64") {
  HostValue v = I64Scalar(x);
  if (type == "i32") v.scalar_type = static_cast<int32_t>(hal::ElementType::kI32);
  return v;
}

int64_t CallI(const std::string& name, const std::vector<int64_t>& args, size_t result = 0,
              const std::string& type = "i64") {
  std::vector<HostValue> inputs;
  for (int64_t a : args) inputs.push_back(IntScalar(a, type));
  std::vector<HostValue> results = Call(name, inputs);
  REQUIRE(results.size() > result);
  REQUIRE(results[result].kind == HostValue::Kind::kInt);
  return results[result].i;
}

int64_t SumModReference(int64_t n) {
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += (i * 7) % 13;
  return s;
}

TEST_CASE("a counted scf.for of s += (i*7)%13 matches C++ in 4 instructions per iteration") {
  for (int64_t n : {-7, 0, 1, 2, 12, 13, 14, 1000, 123457}) CHECK(CallI("sum_mod", {n}) == SumModReference(n));
  uint64_t one = 0, many = 0;
  Call("sum_mod", {I64Scalar(1)}, &one);
  Call("sum_mod", {I64Scalar(10001)}, &many);
  CHECK(many - one == 4 * 10000);  // mul, rem, add, for.i64
}

TEST_CASE("the same loop as an scf.while matches C++ in 4 instructions per iteration") {
  for (int64_t n : {-7, 0, 1, 2, 12, 13, 14, 1000, 123457}) {
    INFO("n = " << n);
    CHECK(CallI("sum_mod_while", {n}) == SumModReference(n));
  }
  uint64_t one = 0, many = 0;
  Call("sum_mod_while", {I64Scalar(1)}, &one);
  Call("sum_mod_while", {I64Scalar(10001)}, &many);
  CHECK(many - one == 4 * 10000);  // for.i64 adds to the body's copy of i, in i's register
}

TEST_CASE("written unoptimised, the counted loops take 7 instructions per iteration") {
  // cmp, cond_br, mul, rem, add, add, br: the form instruction selection starts from.
  for (const char* name : {"sum_mod", "sum_mod_while"}) {
    uint64_t one = 0, many = 0;
    Call(name, {I64Scalar(1)}, &one, Form::kUnoptimised);
    Call(name, {I64Scalar(10001)}, &many, Form::kUnoptimised);
    INFO(name);
    CHECK(many - one == 7 * 10000);
  }
}

TEST_CASE("a counted scf.for over i32 matches C++ in 8 instructions per iteration") {
  auto reference = [](int32_t n) {
    int32_t s = 0;
    for (int32_t i = 0; i < n; ++i) s += (i * 7) % 13;
    return s;
  };
  for (int32_t n : {-7, 0, 1, 13, 1000, 123457}) CHECK(CallI("sum_mod_i32", {n}, 0, "i32") == reference(n));
  uint64_t one = 0, many = 0;
  Call("sum_mod_i32", {IntScalar(1, "i32")}, &one);
  Call("sum_mod_i32", {IntScalar(10001, "i32")}, &many);
  CHECK(many - one <= 8 * 10000);  // the 4 of i64, 3 re-sign-extensions (mul, add, add) and the loop test
}

TEST_CASE("i32 unsigned division, remainder and shift read their operands as unsigned 32-bit values") {
  const int32_t cases[][2] = {{-1, 2}, {-7, 3}, {7, -3}, {-2147483647 - 1, 7}, {100, 7}, {-100, -7}, {5, -1}};
  for (const auto& c : cases) {
    uint32_t a = uint32_t(c[0]), b = uint32_t(c[1]);
    std::vector<HostValue> r = Call("i32_ops", {IntScalar(c[0], "i32"), IntScalar(c[1], "i32")});
    REQUIRE(r.size() == 5);
    INFO("a = " << c[0] << ", b = " << c[1]);
    CHECK(r[0].i == int32_t(a / b));
    CHECK(r[1].i == int32_t(a % b));
    CHECK(r[2].i == int32_t(a >> 1));
    CHECK(r[3].i == c[0] % c[1]);
    CHECK(r[4].i == c[0] / c[1]);
  }
}

// while (i <p> b) { i += step; ++k } in C++ on `bits`-bit integers (wrapping adds); nullopt
// when it would run more than `limit` iterations.
std::optional<std::pair<int64_t, int64_t>> Walk(const std::string& p, int bits, int64_t i, int64_t b,
                                                int64_t step, int64_t limit = 100000) {
  auto wrap = [&](int64_t v) { return bits == 32 ? int64_t(int32_t(uint32_t(uint64_t(v)))) : v; };
  auto unsignedOf = [&](int64_t v) { return bits == 32 ? uint64_t(uint32_t(v)) : uint64_t(v); };
  auto holds = [&](int64_t x) {
    uint64_t ux = unsignedOf(x), ub = unsignedOf(b);
    if (p == "eq") return x == b;
    if (p == "ne") return x != b;
    if (p == "slt") return x < b;
    if (p == "sle") return x <= b;
    if (p == "sgt") return x > b;
    if (p == "sge") return x >= b;
    if (p == "ult") return ux < ub;
    if (p == "ule") return ux <= ub;
    if (p == "ugt") return ux > ub;
    return ux >= ub;  // uge
  };
  int64_t k = 0;
  for (; holds(i); ++k) {
    if (k == limit) return std::nullopt;
    i = wrap(int64_t(uint64_t(i) + uint64_t(step)));
  }
  return std::make_pair(i, k);
}

TEST_CASE("loops tested by every integer comparison over i32, i64 and index match C++, negative steps and zero trips included") {
  const int64_t cases[][3] = {{0, 10, 1},   {0, 10, 3},     {10, 0, -1},  {10, 0, -3},   {5, 5, 1},
                              {5, 5, -1},   {-5, 5, 1},     {5, -5, -2},  {-3, 4, 7},    {3, -4, -7},
                              {7, 3, 2},    {3, 7, -2},     {-10, -1, 3}, {-1, -10, -4}, {10, 3, -1},
                              {2147483600, 2147483647, 20}, {-2147483600, -2147483647, -20}};
  for (const char* p : kPredicates)
    for (const char* t : kLoopTypes) {
      int bits = std::string(t) == "i32" ? 32 : 64;
      int ran = 0, zero_trips = 0;
      for (const auto& c : cases) {
        std::optional<std::pair<int64_t, int64_t>> expected = Walk(p, bits, c[0], c[1], c[2]);
        if (!expected) continue;  // runs (nearly) forever: not a case for this comparison
        std::string name = std::string("walk_") + p + "_" + t;
        INFO(name << "(" << c[0] << ", " << c[1] << ", " << c[2] << ")");
        CHECK(CallI(name, {c[0], c[1], c[2]}, 0, t) == expected->first);
        CHECK(CallI(name, {c[0], c[1], c[2]}, 1, t) == expected->second);
        ++ran;
        zero_trips += expected->second == 0;
      }
      INFO(p << " " << t);
      CHECK(ran >= 6);
      CHECK(zero_trips >= 1);
    }
}

TEST_CASE("a loop tested by any comparison runs in 3 instructions per iteration over i64 and index, 4 over i32") {
  // i moves toward b one step per iteration, 10000 iterations more in the second call.
  for (const char* p : {"ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"})
    for (const char* t : kLoopTypes) {
      std::string pred = p;
      bool down = pred == "sgt" || pred == "sge" || pred == "ugt" || pred == "uge";
      int64_t step = down ? -1 : 1, start = down ? 20000 : 0, few = down ? 19990 : 10;
      std::string name = "walk_" + pred + "_" + t;
      uint64_t short_run = 0, long_run = 0;
      Call(name, {IntScalar(start, t), IntScalar(few, t), IntScalar(step, t)}, &short_run);
      Call(name, {IntScalar(start, t), IntScalar(few + 10000 * step, t), IntScalar(step, t)}, &long_run);
      INFO(name << ": " << long_run - short_run << " instructions for 10000 iterations");
      CHECK(long_run - short_run <= (std::string(t) == "i32" ? 4 : 3) * 10000);
    }
}

// Every result of name(args) in `form`, as integers of the function's `type`.
std::vector<int64_t> Results(const std::string& name, const std::vector<int64_t>& args,
                             const std::string& type, Form form) {
  std::vector<HostValue> inputs;
  for (int64_t a : args) inputs.push_back(IntScalar(a, type));
  std::vector<int64_t> out;
  for (const HostValue& v : Call(name, inputs, nullptr, form)) {
    REQUIRE(v.kind == HostValue::Kind::kInt);
    out.push_back(v.i);
  }
  return out;
}

TEST_CASE("every loop returns what its unoptimised form returns: carried values, nesting, early exits, zero trips, negative steps, i32 and i64 counters") {
  struct Case {
    std::string name, type;
    std::vector<std::vector<int64_t>> args;
  };
  std::vector<Case> cases = {
      {"sum_mod", "i64", {{-7}, {0}, {1}, {14}, {1000}}},
      {"sum_mod_while", "i64", {{-7}, {0}, {1}, {14}, {1000}}},
      {"sum_mod_i32", "i32", {{-7}, {0}, {1}, {13}, {1000}}},
      {"nested", "i64", {{0, 0}, {1, 5}, {3, 0}, {5, 2}, {17, 9}}},            // two carried, nested
      {"collatz", "i64", {{1}, {27}, {871}}},                                    // while on data
      {"if_loop", "i64", {{-1}, {0}, {1}, {2}, {100}}},                          // if in a loop
      {"countdown", "i64", {{10, 0, 1}, {10, -10, 7}, {0, 0, 1}, {-5, 0, 2}}},  // i -= step
      {"find", "i64", {{0, 4}, {200, 4}, {200, 1000}, {5, 0}}},                 // early exit
      {"meet", "i64", {{-3}, {0}, {1}, {101}}},                                  // three carried
      {"stepped", "i64", {{0, 10, 100}, {5, 5, 100}, {7, 3, 100}, {-10, 10, 0}}},  // zero trips
  };
  const int64_t walks[][3] = {{0, 10, 1}, {10, 0, -1}, {5, 5, 1}, {-5, 5, 3}, {5, -5, -2}, {7, 3, 2}};
  for (const char* p : kPredicates)
    for (const char* t : kLoopTypes) {
      Case walk{std::string("walk_") + p + "_" + t, t, {}};
      for (const auto& w : walks)
        if (Walk(p, std::string(t) == "i32" ? 32 : 64, w[0], w[1], w[2]))  // ends
          walk.args.push_back({w[0], w[1], w[2]});
      cases.push_back(walk);
    }
  int compared = 0;
  for (const Case& c : cases)
    for (const std::vector<int64_t>& args : c.args) {
      std::vector<int64_t> selected = Results(c.name, args, c.type, Form::kSelected);
      std::vector<int64_t> unoptimised = Results(c.name, args, c.type, Form::kUnoptimised);
      INFO(c.name << " with " << args.size() << " arguments, the first " << args[0]);
      CHECK(selected == unoptimised);
      ++compared;
    }
  CHECK(compared > 150);
}

TEST_CASE("an scf.if in a loop matches C++ and jumps only over the branch not taken") {
  for (int64_t n : {-2, 0, 1, 2, 3, 4, 100}) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += i % 3 == 0 ? i : -1;
    INFO("n = " << n);
    CHECK(CallI("if_loop", {n}) == s);
  }
  uint64_t few = 0, many = 0;
  Call("if_loop", {I64Scalar(3)}, &few);
  Call("if_loop", {I64Scalar(30003)}, &many);
  // then: rem, br.ne, add, br (over the else), for.i64; else: rem, br.ne, sub, for.i64 (the
  // else and merge blocks fall through instead of branching to the next block)
  CHECK(many - few == 10000 * (5 + 4 + 4));
}

TEST_CASE("nested scf.for loops over index, one with a step of 3 and a zero-trip start, match C++") {
  for (int64_t n : {0, 1, 3, 17})
    for (int64_t m : {0, 1, 2, 5, 9}) {
      int64_t s = 0, c = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < m; ++j) s += (i * m + j) % 11;
        for (int64_t j = i; j < m; j += 3) ++c;
      }
      INFO("n = " << n << ", m = " << m);
      CHECK(CallI("nested", {n, m}, 0) == s);
      CHECK(CallI("nested", {n, m}, 1) == c);
    }
}

TEST_CASE("an scf.while on data (Collatz steps) matches C++") {
  for (int64_t x : {1, 2, 3, 6, 7, 27, 97, 871}) {
    int64_t k = 0;
    for (int64_t v = x; v > 1; ++k) v = v % 2 ? 3 * v + 1 : v / 2;
    INFO("x = " << x);
    CHECK(CallI("collatz", {x}) == k);
  }
}

TEST_CASE("a loop counting down by a negative step matches C++, zero trips included") {
  const int64_t cases[][3] = {{10, 0, 1}, {10, 0, 3}, {10, -10, 7}, {0, 0, 1}, {-5, 0, 2}, {100, 1, 100}};
  for (const auto& c : cases) {
    int64_t s = 0;
    for (int64_t i = c[0]; i > c[1]; i -= c[2]) s += i;
    INFO("hi = " << c[0] << ", lo = " << c[1] << ", step = -" << c[2]);
    CHECK(CallI("countdown", {c[0], c[1], c[2]}) == s);
  }
}

TEST_CASE("a loop with an early exit stops at the first match and matches C++") {
  for (int64_t target : {0, 1, 4, 50, 96, 1000})
    for (int64_t n : {0, 5, 200}) {
      int64_t i = 0;
      while (i < n && (i * i) % 97 != target) ++i;
      INFO("n = " << n << ", target = " << target);
      CHECK(CallI("find", {n, target}) == i);
    }
}

TEST_CASE("a loop whose bound changes every iteration matches C++") {
  for (int64_t ub : {-3, 0, 1, 2, 3, 10, 101}) {
    int64_t i = 0, b = ub, s = 0;
    for (; i < b; ++i, b -= 2) s += b;
    INFO("ub = " << ub);
    CHECK(CallI("meet", {ub}) == 2 * i + s);
  }
}

TEST_CASE("an scf.for with a constant step runs zero times when lb >= ub and matches C++") {
  const int64_t cases[][2] = {{0, 10}, {0, 9}, {5, 5}, {7, 3}, {-10, 10}, {-4, -3}};
  for (const auto& c : cases) {
    int64_t s = 100;
    for (int64_t i = c[0]; i < c[1]; i += 3) ++s;
    INFO("lb = " << c[0] << ", ub = " << c[1]);
    CHECK(CallI("stepped", {c[0], c[1], 100}) == s);
  }
}

TEST_CASE("two tensors carried and swapped every iteration match C++ for every trip count") {
  HostTensor x = RandomF32({4}, 11), y = RandomF32({4}, 12);
  for (int64_t n : {0, 1, 2, 5}) {
    std::vector<float> a(F32(x), F32(x) + 4), b(F32(y), F32(y) + 4);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<float> next(4);
      for (int k = 0; k < 4; ++k) next[k] = b[k] + 1.0f;
      b = a;
      a = next;
    }
    std::vector<HostValue> results = Call("swap_add", {Tensor(x), Tensor(y), I64Scalar(n)});
    REQUIRE(results.size() == 2);
    HostTensor ea = ZerosF32({4}), eb = ZerosF32({4});
    for (int k = 0; k < 4; ++k) {
      F32(ea)[k] = a[k];
      F32(eb)[k] = b[k];
    }
    INFO("n = " << n);
    RequireClose(results[0].tensor, ea, 0, 0);
    RequireClose(results[1].tensor, eb, 0, 0);
  }
}

}  // namespace
}  // namespace hexir::e2e
