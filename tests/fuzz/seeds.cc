#include "tests/fuzz/seeds.h"

#include <cstdlib>
#include <cstdio>

#include "vm/testing/builder.h"

namespace hexir::fuzz {
namespace {

using vm::Op;
using vm::testing::Label;
using vm::testing::ModuleBuilder;
using vm::testing::Move;
using vm::testing::R;
using vm::testing::V;

std::vector<uint8_t> Build(const ModuleBuilder& mb) {
  auto bytes = mb.Build();
  if (!bytes.ok()) {
    std::fprintf(stderr, "seed: %s\n", bytes.status().ToString().c_str());
    std::abort();  // a bug in this file, not an input
  }
  return *bytes;
}

// Scalars: i64 / f64 arithmetic, comparisons, select, casts, cond_br.
std::vector<uint8_t> Scalars() {
  ModuleBuilder mb("scalars");
  auto& f = mb.AddFunction("arith", "ii_iif");
  Label neg = f.NewLabel(), join = f.NewLabel();
  f.Op(Op::AddI64).V(2).V(0).V(1);
  f.Op(Op::MulI64).V(3).V(2).V(0);
  f.Op(Op::SubI64).V(3).V(3).V(1);
  f.Op(Op::DivSI64).V(4).V(3).V(0);
  f.Op(Op::RemUI64).V(5).V(3).V(0);
  f.Op(Op::ShlI64).V(6).V(5).V(0);
  f.Op(Op::XorI64).V(6).V(6).V(3);
  f.Op(Op::MinSI64).V(7).V(6).V(4);
  f.Op(Op::CmpLtSI64).V(8).V(7).V(1);
  f.Op(Op::SelectI64).V(9).V(8).V(6).V(7);
  f.Op(Op::CastSI64F64).V(10).V(9);
  f.Op(Op::ConstF64).V(11).KF(0.25);
  f.Op(Op::MulF64).V(12).V(10).V(11);
  f.Op(Op::CmpLtF64).V(13).V(12).V(11);
  f.Op(Op::CondBr).V(13).T(neg).P({{V(12), V(14)}}).T(join).P({{V(10), V(14)}});
  f.Bind(neg);
  f.Op(Op::NegF64).V(14).V(14);
  f.Op(Op::TruncF64F32).V(15).V(14);
  f.Op(Op::ExtF32F64).V(14).V(15);
  f.Bind(join);
  f.Op(Op::CastF64SI64).V(16).V(14);
  f.Op(Op::TruncI64I32).V(16).V(16);
  f.Op(Op::Return).L({V(9), V(16), V(14)});
  mb.AddExport("arith", f.ordinal());
  return Build(mb);
}

// Loops: for.i64, every fused br, switch, calls.
std::vector<uint8_t> Loops() {
  ModuleBuilder mb("loops");
  auto& sq = mb.AddFunction("square", "i_i");
  sq.Op(Op::MulI64).V(0).V(0).V(0);
  sq.Op(Op::Return).L({V(0)});
  auto& f = mb.AddFunction("loops", "i_i");
  Label body = f.NewLabel(), done = f.NewLabel(), c0 = f.NewLabel(), c1 = f.NewLabel(),
        c2 = f.NewLabel(), out = f.NewLabel(), skip = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);
  f.Op(Op::ConstI64).V(2).K(0);
  f.Op(Op::ConstI64).V(3).K(1);
  f.Op(Op::BrLeSI64).V(0).V(2).T(done).P({});
  f.Bind(body);
  f.Op(Op::Call).F(sq.ordinal()).L({V(2)}).L({V(4)});
  f.Op(Op::AddI64).V(1).V(1).V(4);
  f.Op(Op::ForI64).V(2).V(3).V(0).T(body).P({});
  f.Bind(done);
  f.Op(Op::BrEqI64).V(1).V(2).T(skip).P({});
  f.Op(Op::BrNeI64).V(1).V(1).T(skip).P({});
  f.Op(Op::BrLtUI64).V(1).V(3).T(skip).P({});
  f.Op(Op::BrLeUI64).V(0).V(2).T(skip).P({});
  f.Op(Op::BrLtSI64).V(0).V(2).T(skip).P({});
  f.Op(Op::BrNz).V(2).T(skip).P({{V(1), V(5)}});
  f.Bind(skip);
  f.Op(Op::RemSI64).V(6).V(1).V(0);
  f.Op(Op::Switch).V(6).T(out).P({{V(1), V(7)}})
      .W({{c0, {{V(1), V(7)}}}, {c1, {{V(2), V(7)}}}, {c2, {}}});
  f.Bind(c0);
  f.Op(Op::Br).T(out).P({});
  f.Bind(c1);
  f.Op(Op::AddImmI64).V(7).V(7).J(-5);
  f.Op(Op::Br).T(out).P({});
  f.Bind(c2);
  f.Op(Op::ConstI64).V(7).K(2);
  f.Bind(out);
  f.Op(Op::Return).L({V(7)});
  mb.AddExport("loops", f.ordinal());
  mb.AddExport("square", sq.ordinal());
  return Build(mb);
}

// Lists of every kind, refs with MOVE, release, ref.is_null, select.ref.
std::vector<uint8_t> Lists() {
  ModuleBuilder mb("lists");
  uint32_t sum = mb.AddImport("fuzz.sum", "ii_i");
  auto& f = mb.AddFunction("lists", "ri_ri");
  Label body = f.NewLabel(), done = f.NewLabel();
  f.Op(Op::ConstI64).V(2).K(4);
  f.Op(Op::ConstI64).V(3).K(0);
  f.Op(Op::ConstI64).V(4).K(1);
  f.Op(Op::ListAlloc).R(1).V(2).J(0);
  f.Op(Op::ListResize).R(1).V(2);
  f.Op(Op::ListAlloc).R(2).V(2).J(1);
  f.Op(Op::ListResize).R(2).V(2);
  f.Op(Op::ListAlloc).R(3).V(2).J(2);
  f.Op(Op::ListReserve).R(3).V(2);
  f.Op(Op::ListResize).R(3).V(2);
  f.Bind(body);
  f.Op(Op::ListSetI64).R(1).V(3).V(3);
  f.Op(Op::CastSI64F64).V(5).V(3);
  f.Op(Op::ListSetF64).R(2).V(3).V(5);
  f.Op(Op::ListSetRef).R(3).V(3).R(0);
  f.Op(Op::ForI64).V(3).V(4).V(2).T(body).P({});
  f.Op(Op::ListGetI64).V(6).R(1).V(4);
  f.Op(Op::ListGetF64).V(7).R(2, true).V(4);
  f.Op(Op::ListGetRef).R(4).R(3).V(4);
  f.Op(Op::ListSetRef).R(3).V(4).R(1, true);
  f.Op(Op::ListSize).V(8).R(3);
  f.Op(Op::CallImport).M(sum).L({V(6), V(8)}).L({V(9)});
  f.Op(Op::RefIsNull).V(10).R(2);
  f.Op(Op::SelectRef).R(5).V(10).R(4, true).R(0);
  f.Op(Op::Release).L({Move(3), Move(0)});
  f.Op(Op::BrNz).V(1).T(done).P({});
  f.Op(Op::Return).L({Move(5), V(9)});
  f.Bind(done);
  f.Op(Op::MovRef).R(0).R(5, true);
  f.Op(Op::Return).L({Move(0), V(10)});
  mb.AddExport("lists", f.ordinal());
  return Build(mb);
}

// HAL-like flow, globals with an initializer, rodata, an executable, fail.
std::vector<uint8_t> Hal() {
  ModuleBuilder mb("hal_flow");
  uint32_t dev = mb.AddImport("hal.device.default", "_r");
  uint32_t alloc = mb.AddImport("hal.allocator.allocate", "ri_r");
  uint32_t create = mb.AddImport("hal.buffer_view.create", "riii_r");
  uint32_t dim = mb.AddImport("hal.buffer_view.dim", "ri_i");
  uint32_t rank = mb.AddImport("hal.buffer_view.rank", "r_i");
  uint32_t buffer = mb.AddImport("hal.buffer_view.buffer", "r_r");
  uint32_t length = mb.AddImport("hal.buffer.length", "r_i");
  uint32_t lookup = mb.AddImport("hal.executable.lookup", "ri_r");
  uint32_t cbc = mb.AddImport("hal.command_buffer.create", "r_r");
  uint32_t dispatch = mb.AddImport("hal.command_buffer.dispatch", "rriiiiirr_");
  uint32_t fin = mb.AddImport("hal.command_buffer.finalize", "r_");
  uint32_t ro = mb.AddRodata({1, 2, 3, 4, 5, 6, 7, 8});
  mb.AddExecutable("fake-format", std::vector<uint8_t>(64, 0xCC), {"k0", "k1"});
  uint32_t msg = mb.AddString("rank mismatch");
  mb.SetGlobals(1, 2);

  auto& init = mb.AddFunction("__init", "_");
  init.Op(Op::CallImport).M(dev).L({}).L({R(0)});
  init.Op(Op::GlobalStoreRef).R(0, true).G(0);
  init.Op(Op::Rodata).R(0).D(ro);
  init.Op(Op::GlobalStoreRef).R(0, true).G(1);
  init.Op(Op::ConstI64).V(0).K(2);
  init.Op(Op::GlobalStoreI64).V(0).G(0);
  init.Op(Op::Return).L({});
  mb.SetInitializer(init.ordinal());

  auto& f = mb.AddFunction("main", "r_ri");
  Label bad = f.NewLabel();
  f.Op(Op::GlobalLoadRef).R(1).G(0);
  f.Op(Op::CallImport).M(rank).L({R(0)}).L({V(0)});
  f.Op(Op::GlobalLoadI64).V(1).G(0);
  f.Op(Op::BrNeI64).V(0).V(1).T(bad).P({});
  f.Op(Op::ConstI64).V(2).K(0);
  f.Op(Op::ConstI64).V(3).K(1);
  f.Op(Op::CallImport).M(dim).L({R(0), V(2)}).L({V(4)});
  f.Op(Op::CallImport).M(dim).L({R(0), V(3)}).L({V(5)});
  f.Op(Op::MulI64).V(6).V(4).V(5);
  f.Op(Op::ConstI64).V(7).K(4);
  f.Op(Op::MulI64).V(8).V(6).V(7);
  f.Op(Op::CallImport).M(alloc).L({R(1), V(8)}).L({R(2)});
  f.Op(Op::CallImport).M(lookup).L({R(1), V(2)}).L({R(3)});
  f.Op(Op::CallImport).M(cbc).L({R(1)}).L({R(4)});
  f.Op(Op::CallImport).M(buffer).L({R(0)}).L({R(5)});
  f.Op(Op::CallImport).M(dispatch)
      .L({R(4), Move(3), V(3), V(4), V(5), V(3), V(2), Move(5), R(2)}).L({});
  f.Op(Op::CallImport).M(fin).L({Move(4)}).L({});
  f.Op(Op::CallImport).M(length).L({R(2)}).L({V(9)});
  f.Op(Op::CallImport).M(create).L({Move(2), V(3), V(4), V(5)}).L({R(6)});
  f.Op(Op::Release).L({Move(1), Move(0)});
  f.Op(Op::Return).L({Move(6), V(9)});
  f.Bind(bad);
  f.Op(Op::ConstI64).V(10).K(3);
  f.Op(Op::Fail).V(10).S(msg);
  mb.AddExport("main", f.ordinal());
  return Build(mb);
}

// Recursion (fib) and multi-value returns.
std::vector<uint8_t> Calls() {
  ModuleBuilder mb("calls");
  auto& fib = mb.AddFunction("fib", "i_ii");
  Label rec = fib.NewLabel();
  fib.Op(Op::ConstI64).V(1).K(2);
  fib.Op(Op::BrLeSI64).V(1).V(0).T(rec).P({});
  fib.Op(Op::Return).L({V(0), V(1)});
  fib.Bind(rec);
  fib.Op(Op::AddImmI64).V(2).V(0).J(-1);
  fib.Op(Op::AddImmI64).V(3).V(0).J(-2);
  fib.Op(Op::Call).F(0).L({V(2)}).L({V(4), V(5)});
  fib.Op(Op::Call).F(0).L({V(3)}).L({V(6), V(7)});
  fib.Op(Op::AddI64).V(4).V(4).V(6);
  fib.Op(Op::AddI64).V(5).V(5).V(7);
  fib.Op(Op::Return).L({V(4), V(5)});
  mb.AddExport("fib", fib.ordinal());
  return Build(mb);
}

}  // namespace

std::vector<std::pair<std::string, std::vector<uint8_t>>> SeedModules() {
  return {{"scalars.vmfb", Scalars()},
          {"loops.vmfb", Loops()},
          {"lists.vmfb", Lists()},
          {"hal.vmfb", Hal()},
          {"calls.vmfb", Calls()}};
}

}  // namespace hexir::fuzz
