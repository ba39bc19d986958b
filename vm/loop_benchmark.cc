// VM speed on one thread, measured against Lua 5.4 and C in the same run:
//   (a) the counted integer loop `s = 0; for i = 1..N: s += i` as bytecode (fused `for.i64`,
//       2 instructions per iteration; and the unfused cmp + cond_br shape, 4 per iteration),
//       as Lua 5.4's numeric `for` (run through `lua5.4 -e`, timed by Lua's os.clock around the
//       loop alone), and as C (an empty asm keeps the compiler from folding the sum);
//   (b) the cost of an internal `call` and of a `call.import` (loop overhead subtracted).
// Usage: loop_benchmark [N=100000000] [LUA=lua5.4]. Each figure is the best of 3 runs.
// Exit status 0 even when Lua is missing (its lines then say so).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "vm/api.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

using namespace hexir;
using namespace hexir::vm;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRuns = 3;

// sum(n): s = 0; for i = 1 .. n: s += i (fused loop ops).
void AddFusedSum(testing::ModuleBuilder& mb) {
  auto& f = mb.AddFunction("sum_for", "i_i");
  testing::Label body = f.NewLabel(), exit = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);          // s
  f.Op(Op::ConstI64).V(2).K(1);          // i
  f.Op(Op::AddImmI64).V(3).V(0).J(1);    // ub = n + 1
  f.Op(Op::ConstI64).V(4).K(1);          // step
  f.Op(Op::BrLeSI64).V(3).V(2).T(exit).P({});  // zero-trip guard: ub <= i
  f.Bind(body);
  f.Op(Op::AddI64).V(1).V(1).V(2);
  f.Op(Op::ForI64).V(2).V(4).V(3).T(body).P({});  // i += step(V4 = 1); i < ub -> body
  f.Bind(exit);
  f.Op(Op::Return).L({testing::V(1)});
  mb.AddExport("sum_for", f.ordinal());
}

// The same loop without fused ops: cmp + cond_br at the head, add.imm + br at the end.
void AddUnfusedSum(testing::ModuleBuilder& mb) {
  auto& f = mb.AddFunction("sum_cond_br", "i_i");
  testing::Label head = f.NewLabel(), body = f.NewLabel(), exit = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);
  f.Op(Op::ConstI64).V(2).K(1);
  f.Bind(head);
  f.Op(Op::CmpLeSI64).V(3).V(2).V(0);
  f.Op(Op::CondBr).V(3).T(body).P({}).T(exit).P({});
  f.Bind(body);
  f.Op(Op::AddI64).V(1).V(1).V(2);
  f.Op(Op::AddImmI64).V(2).V(2).J(1);
  f.Op(Op::Br).T(head).P({});
  f.Bind(exit);
  f.Op(Op::Return).L({testing::V(1)});
  mb.AddExport("sum_cond_br", f.ordinal());
}

// A loop of n iterations whose body is `call inc` / `call.import bench.inc` / nothing.
void AddCallLoop(testing::ModuleBuilder& mb, const char* name, int kind, uint32_t inc,
                 uint32_t import) {
  auto& f = mb.AddFunction(name, "i_i");
  testing::Label body = f.NewLabel(), exit = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);
  f.Op(Op::ConstI64).V(2).K(0);
  f.Op(Op::ConstI64).V(4).K(1);
  f.Op(Op::BrLeSI64).V(0).V(2).T(exit).P({});
  f.Bind(body);
  if (kind == 1) f.Op(Op::Call).F(inc).L({testing::V(1)}).L({testing::V(1)});
  if (kind == 2) f.Op(Op::CallImport).M(import).L({testing::V(1)}).L({testing::V(1)});
  if (kind == 0) f.Op(Op::AddImmI64).V(1).V(1).J(1);
  f.Op(Op::ForI64).V(2).V(4).V(0).T(body).P({});
  f.Bind(exit);
  f.Op(Op::Return).L({testing::V(1)});
  mb.AddExport(name, f.ordinal());
}

Status Inc(NativeModuleState&, NativeCall& call) {
  call.results[0].bits = call.args[0].bits + 1;
  return Status::Ok();
}

class BenchModule final : public NativeModule {
 public:
  std::string_view name() const override { return "bench"; }
  Span<const NativeFunction> functions() const override {
    static const NativeFunction kFunctions[] = {{"bench.inc", "i_i", &Inc}};
    return Span<const NativeFunction>(kFunctions, 1);
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context&) override {
    return std::unique_ptr<NativeModuleState>(new NativeModuleState());
  }
};

struct Timing {
  double seconds = 1e30;
  int64_t result = 0;
  uint64_t instructions = 0;
};

Timing RunVm(Context& context, const char* name, int64_t n) {
  Timing best;
  auto fn = context.LookupFunction(name);
  if (!fn.ok()) {
    std::fprintf(stderr, "%s\n", fn.status().ToString().c_str());
    std::exit(1);
  }
  for (int run = 0; run < kRuns; ++run) {
    std::vector<Variant> args(1), results;
    args[0].bits = n;
    uint64_t before = context.stats().instructions;
    auto start = Clock::now();
    Status s = context.Invoke(*fn, args, &results);
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, s.ToString().c_str());
      std::exit(1);
    }
    if (secs < best.seconds) {
      best.seconds = secs;
      best.result = results[0].bits;
      best.instructions = context.stats().instructions - before;
    }
  }
  return best;
}

Timing RunC(int64_t n) {
  Timing best;
  for (int run = 0; run < kRuns; ++run) {
    volatile int64_t vn = n;  // the bound is unknown to the compiler
    int64_t bound = vn, s = 0;
    auto start = Clock::now();
    for (int64_t i = 1; i <= bound; ++i) {
      s += i;
      asm volatile("" : "+r"(s));  // no closed form, no vectorization: one add per iteration
    }
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (secs < best.seconds) best = Timing{secs, s, 0};
  }
  return best;
}

// Lua times its own loop with os.clock() and prints "sum seconds"; returns false if absent.
bool RunLua(const std::string& lua, const char* loop, int64_t n, Timing* out) {
  for (int run = 0; run < kRuns; ++run) {
    std::string cmd = lua + " -e 'local n = " + std::to_string(n) +
                      " local t = os.clock() local s = 0 " + loop +
                      " io.write(string.format(\"%d %.9f\", s, os.clock() - t))' 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return false;
    long long s = 0;
    double secs = 0;
    int got = std::fscanf(p, "%lld %lf", &s, &secs);
    if (pclose(p) != 0 || got != 2) return false;
    if (secs < out->seconds) *out = Timing{secs, s, 0};
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 100000000;
  std::string lua = argc > 2 ? argv[2] : "lua5.4";

  testing::ModuleBuilder mb("bench");
  AddFusedSum(mb);
  AddUnfusedSum(mb);
  auto& inc = mb.AddFunction("inc", "i_i");
  inc.Op(Op::AddImmI64).V(0).V(0).J(1);
  inc.Op(Op::Return).L({testing::V(0)});
  uint32_t import = mb.AddImport("bench.inc", "i_i");
  AddCallLoop(mb, "loop_empty", 0, inc.ordinal(), import);
  AddCallLoop(mb, "loop_call", 1, inc.ordinal(), import);
  AddCallLoop(mb, "loop_import", 2, inc.ordinal(), import);
  auto bytes = mb.Build();
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  auto module = Module::LoadFromMemory(bytes->data(), bytes->size());
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", module.status().ToString().c_str());
    return 1;
  }
  auto context = Context::Create();
  if (!context->RegisterNativeModule(std::make_shared<BenchModule>()).ok() ||
      !context->LoadModule(**module).ok()) {
    return 1;
  }

  const int64_t expected = n * (n + 1) / 2;
  Timing fused = RunVm(*context, "sum_for", n);
  Timing unfused = RunVm(*context, "sum_cond_br", n);
  Timing c = RunC(n);
  Timing lua_for, lua_while;
  bool have_lua = RunLua(lua, "for i = 1, n do s = s + i end", n, &lua_for) &&
                  RunLua(lua, "local i = 1 while i <= n do s = s + i i = i + 1 end", n,
                         &lua_while);
  if (fused.result != expected || unfused.result != expected || c.result != expected ||
      (have_lua && (lua_for.result != expected || lua_while.result != expected))) {
    std::fprintf(stderr, "wrong sum: expected %lld, vm %lld / %lld, c %lld, lua %lld / %lld\n",
                 (long long)expected, (long long)fused.result, (long long)unfused.result,
                 (long long)c.result, (long long)lua_for.result, (long long)lua_while.result);
    return 1;
  }

  auto per = [&](const Timing& t) { return t.seconds * 1e9 / n; };
  std::printf("(a) integer loop s += i, i = 1..%lld (best of %d, one thread)\n", (long long)n,
              kRuns);
  std::printf("  vm  for.i64 loop      %7.3f s  %6.3f ns/iteration  %6.3f ns/instruction (%.1f instr/iter)\n",
              fused.seconds, per(fused), fused.seconds * 1e9 / fused.instructions,
              double(fused.instructions) / n);
  std::printf("  vm  cmp+cond_br loop  %7.3f s  %6.3f ns/iteration  %6.3f ns/instruction (%.1f instr/iter)\n",
              unfused.seconds, per(unfused), unfused.seconds * 1e9 / unfused.instructions,
              double(unfused.instructions) / n);
  std::printf("  C   loop              %7.3f s  %6.3f ns/iteration\n", c.seconds, per(c));
  if (have_lua) {
    std::printf("  lua5.4 numeric for    %7.3f s  %6.3f ns/iteration\n", lua_for.seconds,
                per(lua_for));
    std::printf("  lua5.4 while loop     %7.3f s  %6.3f ns/iteration\n", lua_while.seconds,
                per(lua_while));
    std::printf("  ratio vm for.i64 / lua for      = %.3f  (goal <= 1.0)\n",
                fused.seconds / lua_for.seconds);
    std::printf("  ratio vm cmp+cond_br / lua while = %.3f\n", unfused.seconds / lua_while.seconds);
  } else {
    std::printf("  lua5.4: not runnable ('%s' failed); no Lua ratio\n", lua.c_str());
  }
  std::printf("  ratio vm for.i64 / C            = %.3f\n", fused.seconds / c.seconds);

  const int64_t calls = n / 10;
  Timing empty = RunVm(*context, "loop_empty", calls);
  Timing call = RunVm(*context, "loop_call", calls);
  Timing imp = RunVm(*context, "loop_import", calls);
  if (empty.result != calls || call.result != calls || imp.result != calls) {
    std::fprintf(stderr, "wrong call-loop result\n");
    return 1;
  }
  std::printf("(b) calls (%lld per loop, loop overhead %.3f ns/iteration subtracted)\n",
              (long long)calls, empty.seconds * 1e9 / calls);
  std::printf("  internal call + return  %6.3f ns/call\n",
              (call.seconds - empty.seconds) * 1e9 / calls);
  std::printf("  import call (native)    %6.3f ns/call\n",
              (imp.seconds - empty.seconds) * 1e9 / calls);
  if (have_lua) {
    std::printf("RESULT loop_vs_lua_ratio=%.3f loop_vs_c_ratio=%.3f\n",
                fused.seconds / lua_for.seconds, fused.seconds / c.seconds);
  }
  return 0;
}
