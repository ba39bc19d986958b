// Times the integer loop of vm/README.md ("sum 1..N") in the interpreter.
// Compare with Lua 5.4:  lua5.4 -e 'local s,n=0,N while n>0 do s=s+n n=n-1 end print(s)'
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "vm/api.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

using namespace hexir;
using namespace hexir::vm;

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 100000000;
  testing::ModuleBuilder mb;
  auto& f = mb.AddFunction("sum", "i_i");
  testing::Label head = f.NewLabel(), body = f.NewLabel(), exit = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);
  f.Bind(head);
  f.Op(Op::CondBr).V(0).T(body).P({}).T(exit).P({});
  f.Bind(body);
  f.Op(Op::AddI64).V(1).V(1).V(0);
  f.Op(Op::AddImmI64).V(0).V(0).J(-1);
  f.Op(Op::Br).T(head).P({});
  f.Bind(exit);
  f.Op(Op::Return).L({testing::V(1)});
  mb.AddExport("sum", f.ordinal());
  auto bytes = mb.Build();
  auto module = Module::LoadFromMemory(bytes->data(), bytes->size());
  auto context = Context::Create();
  if (!module.ok() || !context->LoadModule(**module).ok()) return 1;
  auto fn = context->LookupFunction("sum");
  std::vector<Variant> args(1), results;
  args[0].bits = n;
  auto start = std::chrono::steady_clock::now();
  Status s = context->Invoke(*fn, args, &results);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) return 1;
  std::printf("sum(%lld) = %lld in %.3f s: %.2f ns/iteration, %.2f ns/instruction\n",
              (long long)n, (long long)results[0].bits, secs, secs * 1e9 / n,
              secs * 1e9 / context->stats().instructions);
  return 0;
}
