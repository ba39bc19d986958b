#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "vm/api.h"
#include "vm/disassembler.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

namespace hexir::vm {
namespace {

using testing::FunctionBuilder;
using testing::Label;
using testing::ModuleBuilder;
using testing::Move;
using testing::R;
using testing::V;

std::vector<uint8_t> Bytes(const ModuleBuilder& mb) {
  auto bytes = mb.Build();
  INFO(bytes.status().ToString());
  REQUIRE(bytes.ok());
  return *bytes;
}

Status LoadStatus(const std::vector<uint8_t>& bytes) {
  return Module::LoadFromMemory(bytes.data(), bytes.size()).status();
}

// A module using most features: imports, rodata, strings, globals, calls, a loop.
void BuildSample(ModuleBuilder& mb) {
  mb.SetGlobals(1, 1);
  uint32_t msg = mb.AddString("boom");
  std::vector<uint8_t> data(64);  // a multiple of 64: the file has no trailing padding
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i);
  uint32_t d = mb.AddRodata(data);
  uint32_t imp = mb.AddImport("test.sum", "ii_i");
  auto& callee = mb.AddFunction("twice", "i_i");
  callee.Op(Op::AddI64).V(1).V(0).V(0);
  callee.Op(Op::Return).L({V(1)});
  auto& f = mb.AddFunction("main", "ir_ir");
  Label head = f.NewLabel(), body = f.NewLabel(), exit = f.NewLabel(), bad = f.NewLabel();
  f.Op(Op::ConstI64).V(1).K(0);
  f.Bind(head);
  f.Op(Op::CondBr).V(0).T(body).P({}).T(exit).P({{R(0), R(1)}});
  f.Bind(body);
  f.Op(Op::Call).F(callee.ordinal()).L({V(0)}).L({V(2)});
  f.Op(Op::CallImport).M(imp).L({V(1), V(2)}).L({V(1)});
  f.Op(Op::AddImmI64).V(0).V(0).J(-1);
  f.Op(Op::GlobalStoreI64).V(1).G(0);
  f.Op(Op::Switch).V(0).T(head).P({}).W({{head, {}}, {head, {{V(1), V(3)}}}});
  // Unreachable, but verified like everything else.
  f.Bind(bad);
  f.Op(Op::Fail).V(0).S(msg);
  f.Bind(exit);
  f.Op(Op::Rodata).R(2).D(d);
  f.Op(Op::GlobalStoreRef).R(2, true).G(0);
  f.Op(Op::Release).L({R(0)});
  f.Op(Op::Return).L({V(1), Move(1)});
  mb.AddExport("main", f.ordinal());

  // Format 1.1 ops: lists, fused branches, for.i64 (so corruption tests reach them too).
  auto& g = mb.AddFunction("lists", "i_ri");
  Label loop = g.NewLabel(), done = g.NewLabel();
  g.Op(Op::ConstI64).V(1).K(0);
  g.Op(Op::ConstI64).V(2).K(1);
  g.Op(Op::ListAlloc).R(0).V(0).J(2);
  g.Op(Op::ListResize).R(0).V(0);
  g.Op(Op::ListAlloc).R(1).V(0).J(0);
  g.Op(Op::ListResize).R(1).V(0);
  g.Op(Op::BrLeSI64).V(0).V(1).T(done).P({});
  g.Bind(loop);
  g.Op(Op::ListSetI64).R(1).V(1).V(1);
  g.Op(Op::ListGetI64).V(3).R(1).V(1);
  g.Op(Op::ListSetRef).R(0).V(1).R(1);
  g.Op(Op::BrNz).V(3).T(loop).P({}).Op(Op::Nop);
  g.Op(Op::ForI64).V(1).V(2).V(0).T(loop).P({});
  g.Bind(done);
  g.Op(Op::ListGetRef).R(2).R(0, true).V(2);
  g.Op(Op::ListSize).V(4).R(1, true);
  g.Op(Op::Return).L({Move(2), V(4)});
  mb.AddExport("lists", g.ordinal());
}

class SumModule final : public NativeModule {
 public:
  std::string_view name() const override { return "test"; }
  Span<const NativeFunction> functions() const override {
    static const NativeFunction kFunctions[] = {{"test.sum", "ii_i", &Sum}};
    return Span<const NativeFunction>(kFunctions, 1);
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context&) override {
    return std::make_unique<NativeModuleState>();
  }
  static Status Sum(NativeModuleState&, NativeCall& call) {
    call.results[0].bits = int64_t(uint64_t(call.args[0].bits) + uint64_t(call.args[1].bits));
    return Status::Ok();
  }
};

// Whatever loads must also disassemble, link and run without crashing (bounded by fuel).
void RunSafely(const Module& module) {
  for (uint32_t i = 0; i < module.functions().size(); ++i) {
    CHECK(!DisassembleFunction(module, i).empty());
  }
  auto context = Context::Create();
  REQUIRE(context->RegisterNativeModule(std::make_shared<SumModule>()).ok());
  context->SetFuel(10000);
  if (!context->LoadModule(module).ok()) return;
  for (const ExportInfo& e : module.exports()) {
    auto fn = context->LookupFunction(e.name);
    if (!fn.ok()) continue;
    const FunctionInfo& info = module.functions()[e.function];
    std::vector<Variant> args(info.kinds.args.size()), results;
    for (Variant& a : args) a.bits = 3;
    context->Invoke(*fn, args, &results).IgnoreError();
  }
}

TEST_CASE("the sample module loads and runs") {
  ModuleBuilder mb;
  BuildSample(mb);
  auto bytes = Bytes(mb);
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  auto context = Context::Create();
  REQUIRE(context->RegisterNativeModule(std::make_shared<SumModule>()).ok());
  REQUIRE(context->LoadModule(**module).ok());
  auto fn = context->LookupFunction("main");
  REQUIRE(fn.ok());
  std::vector<Variant> args(2), results;
  args[0].bits = 3;  // acc = 2*3 + 2*2 + 2*1
  REQUIRE(context->Invoke(*fn, args, &results).ok());
  CHECK(results[0].bits == 12);
}

TEST_CASE("every truncation of a module is rejected") {
  ModuleBuilder mb;
  BuildSample(mb);
  auto bytes = Bytes(mb);
  REQUIRE(LoadStatus(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    Status s = LoadStatus(prefix);
    INFO("length " << n);
    CHECK(!s.ok());
    CHECK(!s.message().empty());
  }
}

// The corruption tests below reseal each variant (recompute its checksums) so that it gets
// past the integrity check to the verifier; integrity_test.cc covers unsealed corruption.
TEST_CASE("every single-bit flip, resealed, either fails to load or loads and runs safely") {
  ModuleBuilder mb;
  BuildSample(mb);
  auto bytes = Bytes(mb);
  size_t loaded = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> flipped = bytes;
      flipped[i] ^= uint8_t(1u << bit);
      testing::ResealModule(flipped);
      auto module = Module::LoadFromMemory(flipped.data(), flipped.size());
      if (!module.ok()) {
        CHECK(!module.status().message().empty());
        continue;
      }
      ++loaded;
      RunSafely(**module);
    }
  }
  WARN("bit flips: " << loaded << " of " << bytes.size() * 8 << " variants still load");
  CHECK(loaded > 0);  // flips in names and padding keep a valid module
}

TEST_CASE("random multi-byte corruption, resealed, never crashes the loader or the interpreter") {
  ModuleBuilder mb;
  BuildSample(mb);
  auto bytes = Bytes(mb);
  std::mt19937 rng(1234);
  size_t loaded = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> corrupt = bytes;
    int edits = 1 + rng() % 6;
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % corrupt.size();
      // Small values and opcodes hit valid-looking operands more often than uniform bytes.
      uint8_t choices[] = {uint8_t(rng()), uint8_t(rng() % 8), 0x50, 0x53, 0x55, 0xFF, 0};
      corrupt[at] = choices[rng() % 7];
    }
    testing::ResealModule(corrupt);
    auto module = Module::LoadFromMemory(corrupt.data(), corrupt.size());
    if (!module.ok()) continue;
    ++loaded;
    RunSafely(**module);
  }
  WARN("random corruption: " << loaded << " of 3000 variants still load");
}


// Builds a module with a function made by `body`, loads it, returns the status.
Status LoadWith(const std::function<void(ModuleBuilder&, FunctionBuilder&)>& body,
                const char* signature = "_") {
  ModuleBuilder mb;
  auto& f = mb.AddFunction("f", signature);
  body(mb, f);
  return LoadStatus(Bytes(mb));
}

void ExpectError(const Status& s, const std::string& message) {
  INFO(s.ToString());
  CHECK(!s.ok());
  CHECK(s.message() == message);
}

TEST_CASE("bytecode verification names function, offset and the problem") {
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.SetRegisterCounts(3, 0);
                f.Op(Op::Nop);
                f.Op(Op::AddI64).V(0).V(5).V(1);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @1: add.i64: operand value register 5 out of range (3 registers)");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.SetRegisterCounts(0, 2);
                f.Op(Op::MovRef).R(0).R(2);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: mov.ref: operand ref register 2 out of range (2 registers)");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Nop);
                f.Op(Op::Br).Word(99).Word(0);
              }),
              "function 'f' @1: br: branch target 99 out of range");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::ConstI64).V(0).K(1);
                f.Op(Op::Br).Word(2).Word(0);  // inside const.i64's immediate
              }),
              "function 'f' @4: br: branch target 2 is not an instruction start");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Call).F(7).L({}).L({});
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: call: function ordinal 7 out of range (1)");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::CallImport).M(0).L({}).L({});
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: call.import: import ordinal 0 out of range (0)");
  ExpectError(LoadWith([](ModuleBuilder& mb, FunctionBuilder& f) {
                mb.AddRodata({1});
                f.Op(Op::Rodata).R(0).D(1);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: rodata: rodata ordinal 1 out of range (1)");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::ConstI64).V(0).K(1);
                f.Op(Op::Fail).V(0).S(0);
              }),
              "function 'f' @4: fail: string ordinal 0 out of range (0)");
  ExpectError(LoadWith([](ModuleBuilder& mb, FunctionBuilder& f) {
                mb.SetGlobals(2, 1);
                f.Op(Op::GlobalLoadRef).R(0).G(1);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: global.load.ref: ref global ordinal 1 out of range (1)");
  ExpectError(LoadWith([](ModuleBuilder& mb, FunctionBuilder& f) {
                mb.SetGlobals(2, 1);
                f.Op(Op::GlobalStoreI64).V(0).G(2);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: global.store.i64: value global ordinal 2 out of range (2)");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Word(0xEE);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: instruction: unknown opcode 0xee");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Word(0x100);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: instruction: reserved bits set in word 0x100");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.SetRegisterCounts(1, 0);
                f.Op(Op::Return).L({});
                f.Word(uint32_t(Op::AddI64)).Word(0).Word(0);  // one operand short at the end
              }),
              "function 'f' @2: add.i64: operands run past the end of the function (5 words)");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Return).L({});
                f.Op(Op::Nop);
              }),
              "function 'f' @2: nop: the function's last instruction is not a terminator");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Return).Word(0x7FFFFFFF);  // a list count far past the end
              }),
              "function 'f' @0: return: operands run past the end of the function (2 words)");
}

TEST_CASE("verification of lists, copies and signatures") {
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Return).Word(1).Word(kMoveBit | 0);
              }, "_i"),
              "function 'f' @0: return: list entry 0x40000000: MOVE on a value register");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::MovRef).R(0, true).R(1);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: mov.ref: MOVE on a written ref register");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.SetRegisterCounts(1, 2);
                f.Op(Op::ListGetRef).R(0, true).R(1).V(0);
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: list.get.ref: MOVE on a written ref register");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.SetRegisterCounts(1, 1);
                f.Op(Op::Br).Word(0).Word(1).Word(0).Word(kRefBit | 0);
              }),
              "function 'f' @0: br: parallel copy pair 0 mixes a value and a ref register");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.SetRegisterCounts(0, 2);
                f.Op(Op::Br).Word(0).Word(1).Word(kRefBit | 0).Word(kRefBit | kMoveBit | 1);
              }),
              "function 'f' @0: br: list entry 0xc0000001: MOVE on a written register");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Release).Word(1).Word(0);
                f.Op(Op::Return).L({});
              }, "i_"),
              "function 'f' @0: release: entry 0 is a value register; release takes refs only");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Return).L({V(0)});
              }, "i_r"),
              "function 'f' @0: return: result 0 is a value register but signature 'i_r' wants 'r'");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Return).L({});
              }, "i_i"),
              "function 'f' @0: return: result list has 0 entries but signature 'i_i' has 1");
  ExpectError(LoadWith([](ModuleBuilder&, FunctionBuilder& f) {
                f.Op(Op::Call).F(0).L({V(0), V(0)}).L({});
                f.Op(Op::Return).L({});
              }, "i_"),
              "function 'f' @0: call: argument list has 2 entries but signature 'i_' has 1");
  ExpectError(LoadWith([](ModuleBuilder& mb, FunctionBuilder& f) {
                mb.AddImport("x.y", "r_i");
                f.Op(Op::CallImport).M(0).L({R(0)}).L({R(1)});
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: call.import: result 0 is a ref register but signature 'r_i' wants 'i'");
  ExpectError(LoadWith([](ModuleBuilder& mb, FunctionBuilder& f) {
                mb.AddImport("x.y", "r_r");
                f.Op(Op::CallImport).M(0).L({R(0)}).L({Move(1)});
                f.Op(Op::Return).L({});
              }),
              "function 'f' @0: call.import: list entry 0xc0000001: MOVE on a written register");
}

// Offset of the 16 bytes (offset, length) of the first SegmentRef in `bytes`.
size_t FindSegmentRef(const std::vector<uint8_t>& bytes, uint64_t offset, uint64_t length) {
  uint64_t pattern[2] = {offset, length};
  for (size_t i = kModuleHeaderSize; i + 16 <= bytes.size(); i += 8) {
    if (std::memcmp(bytes.data() + i, pattern, 16) == 0) return i;
  }
  return 0;
}

TEST_CASE("module-level verification: header, segments, exports, initializer") {
  ModuleBuilder mb("m");
  mb.AddRodata(std::vector<uint8_t>(10, 7));
  auto& f = mb.AddFunction("f", "_");
  f.Op(Op::Return).L({});
  mb.AddExport("f", 0);
  auto good = Bytes(mb);
  REQUIRE(LoadStatus(good).ok());
  auto module = Module::LoadFromMemory(good.data(), good.size());
  REQUIRE(module.ok());
  Span<const uint8_t> rodata = (*module)->rodata(0);
  uint64_t seg_offset = rodata.data() - (*module)->bytes().data();
  CHECK(seg_offset % 64 == 0);
  size_t at = FindSegmentRef(good, seg_offset, 10);
  REQUIRE(at != 0);

  uint32_t fb_size;
  std::memcpy(&fb_size, good.data() + 12, 4);
  uint64_t area_begin = kModuleHeaderSize + uint64_t{fb_size};
  auto patched = [&](size_t pos, uint64_t value) {
    std::vector<uint8_t> b = good;
    std::memcpy(b.data() + pos, &value, 8);
    return b;
  };
  ExpectError(LoadStatus(patched(at, seg_offset + 8)),
              StrCat("segment 0: offset ", seg_offset + 8, " is not a multiple of 64"));
  ExpectError(LoadStatus(patched(at + 8, ~uint64_t{0} - 4)),
              StrCat("segment 0: bytes [", seg_offset, ", +", ~uint64_t{0} - 4,
                     ") are outside the segment area [", area_begin, ", ", good.size(),
                     ") of the file"));
  ExpectError(LoadStatus(patched(at, 0)),
              StrCat("segment 0: bytes [0, +10) are outside the segment area [",
                     area_begin, ", ", good.size(), ") of the file"));

  std::vector<uint8_t> bad_magic = good;
  bad_magic[0] = 'X';
  ExpectError(LoadStatus(bad_magic), "not a .vmfb module (bad magic at offset 0)");
  std::vector<uint8_t> big_fb = good;
  big_fb[15] = 0x7F;
  CHECK(LoadStatus(big_fb).code() == StatusCode::kDataLoss);
  CHECK(LoadStatus(big_fb).message().find("module header (offset 12) gives a FlatBuffer of") == 0);
  std::vector<uint8_t> smaller_fb = good;
  smaller_fb[12] -= 8;  // still a valid FlatBuffer prefix? the checksum or the verifier says no
  CHECK(LoadStatus(smaller_fb).code() == StatusCode::kDataLoss);

  // Compatibility rule: same major, minor <= the reader's (2.3). 1.x files have no checksums
  // and are refused; 2.4 is refused too; 2.0 (no device list), 2.1 and 2.2 still load.
  for (uint32_t version : {1u << 16 | 0, 1u << 16 | 1, 2u << 16 | 4, 3u << 16}) {
    ModuleBuilder other;
    other.SetVersion(version);
    other.AddFunction("f", "_").Op(Op::Return).L({});
    ExpectError(LoadStatus(Bytes(other)),
                StrCat("module format version ", version >> 16, ".", version & 0xFFFF,
                       " is not supported by this reader (2.3): recompile it"));
  }
  for (uint32_t version : {2u << 16, 2u << 16 | 1, 2u << 16 | 2, 2u << 16 | 3}) {
    ModuleBuilder current;
    current.SetVersion(version);
    current.AddFunction("f", "_").Op(Op::Return).L({});
    CHECK(LoadStatus(Bytes(current)).ok());
  }

  ModuleBuilder exports;
  exports.AddFunction("f", "_").Op(Op::Return).L({});
  exports.AddExport("g", 3);
  ExpectError(LoadStatus(Bytes(exports)), "export 'g': function ordinal 3 out of range (1 functions)");

  ModuleBuilder init;
  init.AddFunction("setup", "i_").Op(Op::Return).L({});
  init.SetInitializer(0);
  ExpectError(LoadStatus(Bytes(init)),
              "initializer 'setup': signature must be \"_\", got 'i_'");

  ModuleBuilder sig;
  sig.AddFunction("f", "ix_").Op(Op::Return).L({});
  ExpectError(LoadStatus(Bytes(sig)), "function 'f': malformed signature 'ix_'");

  ModuleBuilder regs;
  auto& rf = regs.AddFunction("f", "_");
  rf.SetRegisterCounts(kMaxRegistersPerBank + 1, 0);
  rf.Op(Op::Return).L({});
  ExpectError(LoadStatus(Bytes(regs)),
              StrCat("function 'f': register counts ", kMaxRegistersPerBank + 1,
                     "/0 exceed the limit ", kMaxRegistersPerBank));
}

TEST_CASE("LoadFromFile maps a file and names the path in errors") {
  auto missing = Module::LoadFromFile("/nonexistent/dir/m.vmfb");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "module file '/nonexistent/dir/m.vmfb' does not exist");

  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = tmp ? tmp : "/tmp";
  ModuleBuilder mb("filed");
  mb.AddRodata({5, 6, 7});
  mb.AddFunction("f", "_").Op(Op::Return).L({});
  auto bytes = Bytes(mb);
  std::string path = dir + "/good.vmfb";
  FILE* fp = std::fopen(path.c_str(), "wb");
  REQUIRE(fp);
  std::fwrite(bytes.data(), 1, bytes.size(), fp);
  std::fclose(fp);
  auto module = Module::LoadFromFile(path);
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  CHECK((*module)->name() == "filed");
  CHECK((*module)->rodata(0).size() == 3);
  CHECK(reinterpret_cast<uintptr_t>((*module)->rodata(0).data()) % 64 == 0);

  std::string junk = dir + "/junk.vmfb";
  fp = std::fopen(junk.c_str(), "wb");
  std::fputs("definitely not a module", fp);
  std::fclose(fp);
  auto bad = Module::LoadFromFile(junk);
  CHECK(bad.status().message() ==
        "module file '" + junk + "': not a .vmfb module (bad magic at offset 0)");
}

TEST_CASE("modules get distinct instance ids and expose executables") {
  ModuleBuilder mb("exe");
  mb.AddFunction("f", "_").Op(Op::Return).L({});
  mb.AddExecutable("cpu-elf-x86_64", std::vector<uint8_t>(100, 0xAB), {"k0", "k1"},
                   {{"note", "x"}});
  auto bytes = Bytes(mb);
  auto a = Module::LoadFromMemory(bytes.data(), bytes.size());
  auto b = Module::LoadFromMemory(bytes.data(), bytes.size());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->instance_id() != (*b)->instance_id());
  REQUIRE((*a)->executable_count() == 1);
  auto exe = (*a)->executable(0);
  REQUIRE(exe.ok());
  CHECK(exe->format == "cpu-elf-x86_64");
  CHECK(exe->size == 100);
  CHECK(exe->data[99] == 0xAB);
  CHECK(reinterpret_cast<uintptr_t>(exe->data) % 64 == 0);
  REQUIRE(exe->entry_points.size() == 2);
  CHECK(exe->entry_points[1] == "k1");
  CHECK(exe->attrs.size() == 1);
  CHECK((*a)->executable(1).status().message() ==
        "module 'exe': executable ordinal 1 out of range (1 executables)");
}

}  // namespace
}  // namespace hexir::vm
