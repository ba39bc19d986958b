// Context API details, the disassembler and the test builder's own error reporting.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vm/api.h"
#include "vm/byte_buffer.h"
#include "vm/disassembler.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

namespace hexir::vm {
namespace {

using testing::Label;
using testing::ModuleBuilder;
using testing::Move;
using testing::R;
using testing::V;

Ref<Module> Load(const ModuleBuilder& mb) {
  auto bytes = mb.Build();
  INFO(bytes.status().ToString());
  REQUIRE(bytes.ok());
  auto module = Module::LoadFromMemory(bytes->data(), bytes->size());
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return *module;
}

// A module whose "const" export returns `value`.
Ref<Module> ConstModule(const std::string& name, int64_t value) {
  ModuleBuilder mb(name);
  auto& f = mb.AddFunction("const", "_i");
  f.Op(Op::ConstI64).V(0).K(value);
  f.Op(Op::Return).L({V(0)});
  f.AddAttr("abi.results", "i64");
  mb.AddExport("const", f.ordinal());
  mb.AddAttr("origin", name);
  return Load(mb);
}

struct CounterState final : NativeModuleState {
  Context* context = nullptr;
  int calls = 0;
};

// "test.reenter" calls back into the context that is running it.
class ReenterModule final : public NativeModule {
 public:
  std::string_view name() const override { return "test"; }
  Span<const NativeFunction> functions() const override {
    static const NativeFunction kFunctions[] = {{"test.reenter", "_", &Reenter}};
    return Span<const NativeFunction>(kFunctions, 1);
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(Context& context) override {
    auto state = std::make_unique<CounterState>();
    state->context = &context;
    return std::unique_ptr<NativeModuleState>(std::move(state));
  }
  static Status Reenter(NativeModuleState& state, NativeCall&) {
    auto& s = static_cast<CounterState&>(state);
    ++s.calls;
    HEXIR_ASSIGN_OR_RETURN(Function fn, s.context->LookupFunction("const"));
    std::vector<Variant> results;
    return s.context->Invoke(fn, {}, &results);
  }
};

TEST_CASE("lookup: newest module wins; attrs are reflected") {
  auto context = Context::Create();
  auto a = ConstModule("a", 1), b = ConstModule("b", 2);
  REQUIRE(context->LoadModule(*a).ok());
  REQUIRE(context->LoadModule(*b).ok());
  auto fn = context->LookupFunction("const");
  REQUIRE(fn.ok());
  CHECK(fn->module == b.get());
  CHECK(fn->attr("abi.results") == "i64");
  CHECK(fn->attr("missing").empty());
  REQUIRE(b->attrs().size() == 1);
  CHECK(b->attrs()[0].second == "b");
  std::vector<Variant> results;
  REQUIRE(context->Invoke(*fn, {}, &results).ok());
  CHECK(results[0].bits == 2);

  // A Function of a module this context never loaded is refused.
  auto other = Context::Create();
  Status s = other->Invoke(*fn, {}, &results);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() == "function 'const' belongs to a module not loaded here");
}

TEST_CASE("native modules: state, duplicates, reentrancy") {
  auto context = Context::Create();
  REQUIRE(context->RegisterNativeModule(std::make_shared<ReenterModule>()).ok());
  Status dup = context->RegisterNativeModule(std::make_shared<ReenterModule>());
  CHECK(dup.code() == StatusCode::kFailedPrecondition);
  CHECK(dup.message() == "native module 'test' is already registered");
  auto* state = static_cast<CounterState*>(context->native_state("test"));
  REQUIRE(state);
  CHECK(state->context == context.get());
  CHECK(context->native_state("hal") == nullptr);

  ModuleBuilder mb("r");
  uint32_t imp = mb.AddImport("test.reenter", "_");
  auto& f = mb.AddFunction("const", "_");
  f.Op(Op::CallImport).M(imp).L({}).L({});
  f.Op(Op::Return).L({});
  mb.AddExport("const", f.ordinal());
  auto module = Load(mb);
  REQUIRE(context->LoadModule(*module).ok());
  auto fn = context->LookupFunction("const");
  REQUIRE(fn.ok());
  std::vector<Variant> results;
  Status s = context->Invoke(*fn, {}, &results);
  CHECK(state->calls == 1);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() == "function 'const' @0: test.reenter: Context::Invoke is not reentrant");
}

TEST_CASE("the disassembler prints every operand kind") {
  ModuleBuilder mb("d");
  uint32_t imp = mb.AddImport("test.make", "i_r");
  uint32_t str = mb.AddString("oops");
  mb.AddRodata({1});
  mb.SetGlobals(1, 1);
  auto& g = mb.AddFunction("g", "ir_r");
  g.Op(Op::Return).L({Move(0)});
  auto& f = mb.AddFunction("f", "i_");
  Label a = f.NewLabel(), b = f.NewLabel();
  f.Op(Op::ConstF64).V(1).KF(1.5);
  f.Op(Op::AddImmI64).V(2).V(0).J(-3);
  f.Op(Op::CallImport).M(imp).L({V(0)}).L({R(0)});
  f.Op(Op::Call).F(g.ordinal()).L({V(0), Move(0)}).L({R(1)});
  f.Op(Op::Rodata).R(2).D(0);
  f.Op(Op::GlobalStoreRef).R(2, true).G(0);
  f.Op(Op::Switch).V(0).T(a).P({}).W({{a, {{V(0), V(3)}}}, {b, {}}});
  f.Bind(a);
  f.Op(Op::Fail).V(0).S(str);
  f.Bind(b);
  f.Op(Op::Release).L({R(1)});
  f.Op(Op::Return).L({});
  auto module = Load(mb);
  CHECK(DisassembleFunction(*module, f.ordinal()) ==
        "f(i_) v=4 r=3:\n"
        "  @0: const.f64 v1, 1.5\n"
        "  @4: add.imm.i64 v2, v0, -3\n"
        "  @8: call.import 'test.make'#0, (v0) -> (r0)\n"
        "  @14: call 'g'#0, (v0, r0!) -> (r1)\n"
        "  @21: rodata r2, rodata#0\n"
        "  @24: global.store.ref r2!, global.r#0\n"
        "  @27: switch v0, @38, [], {0: @38 [v0 -> v3], 1: @41 []}\n"
        "  @38: fail v0, \"oops\"#0\n"
        "  @41: release (r1)\n"
        "  @44: return ()\n");
}

TEST_CASE("the builder reports misuse instead of writing a bad module") {
  auto error = [](const ModuleBuilder& mb) { return mb.Build().status().message(); };
  {
    ModuleBuilder mb;
    mb.AddFunction("f", "_").Op(Op::AddI64).V(0).K(1);
    CHECK(error(mb) == "builder: function 'f' @2: operand kind 'K' where isa.def expects 'V'");
  }
  {
    ModuleBuilder mb;
    auto& f = mb.AddFunction("f", "_");
    Label never = f.NewLabel();
    f.Op(Op::Br).T(never).P({});
    CHECK(error(mb) == "builder: function 'f' @1: label 0 never bound");
  }
  {
    ModuleBuilder mb;
    auto& f = mb.AddFunction("f", "_");
    f.Op(Op::Mov).V(0);
    f.Op(Op::Return).L({});
    CHECK(error(mb) == "builder: function 'f' @2: previous instruction lacks operands 'V'");
  }
  {
    ModuleBuilder mb;
    mb.AddFunction("f", "_").Op(Op::Return);
    CHECK(error(mb) == "builder: function 'f' last instruction lacks operands 'L'");
  }
}

TEST_CASE("LoadFromFile maps the file: rodata and executables are used in place") {
  ModuleBuilder mb("mapped");
  std::vector<uint8_t> table(1000), kernel(300);
  for (size_t i = 0; i < table.size(); ++i) table[i] = uint8_t(i * 13);
  for (size_t i = 0; i < kernel.size(); ++i) kernel[i] = uint8_t(255 - i);
  uint32_t d = mb.AddRodata(table);
  mb.AddExecutable("test-format", kernel, {"k0", "k1"});
  auto& f = mb.AddFunction("f", "_r");
  f.Op(Op::Rodata).R(0).D(d);
  f.Op(Op::Return).L({Move(0)});
  mb.AddExport("f", f.ordinal());
  auto bytes = mb.Build();
  REQUIRE(bytes.ok());
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/mapped.vmfb";
  FILE* out = std::fopen(path.c_str(), "wb");
  REQUIRE(out);
  REQUIRE(std::fwrite(bytes->data(), 1, bytes->size(), out) == bytes->size());
  std::fclose(out);

  auto module = Module::LoadFromFile(path);
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  Span<const uint8_t> file = (*module)->bytes();
  CHECK(reinterpret_cast<uintptr_t>(file.data()) % 4096 == 0);  // an mmap, not a copy
  Span<const uint8_t> ro = (*module)->rodata(0);
  CHECK(ro.data() >= file.data());
  CHECK(ro.data() + ro.size() <= file.data() + file.size());
  CHECK(reinterpret_cast<uintptr_t>(ro.data()) % kSegmentAlignment == 0);
  CHECK(std::memcmp(ro.data(), table.data(), table.size()) == 0);
  auto exe = (*module)->executable(0);
  REQUIRE(exe.ok());
  CHECK(exe->data >= file.data());
  CHECK(exe->size == kernel.size());
  CHECK(reinterpret_cast<uintptr_t>(exe->data) % kSegmentAlignment == 0);
  CHECK(std::memcmp(exe->data, kernel.data(), kernel.size()) == 0);

  CHECK(exe->entry_written_bindings.empty());  // none given: every binding may be written

  // The rodata op's vm.buffer points at the same mapped bytes.
  auto context = Context::Create();
  REQUIRE(context->LoadModule(**module).ok());
  auto fn = context->LookupFunction("f");
  REQUIRE(fn.ok());
  std::vector<Variant> results;
  REQUIRE(context->Invoke(*fn, {}, &results).ok());
  auto* buffer = RefCast<ByteBuffer>(results[0].ref.get());
  REQUIRE(buffer);
  CHECK(buffer->data() == ro.data());
}

TEST_CASE("executables: which bindings each entry writes, one mask per entry") {
  ModuleBuilder good("written");
  good.AddExecutable("test-format", std::vector<uint8_t>(64, 1), {"k0", "k1"}, {}, {0b100, 0b11});
  auto bytes = good.Build();
  REQUIRE(bytes.ok());
  auto module = Module::LoadFromMemory(bytes->data(), bytes->size());
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  auto exe = (*module)->executable(0);
  REQUIRE(exe.ok());
  CHECK(exe->entry_written_bindings == std::vector<uint64_t>{0b100, 0b11});

  // A mask count that is not the entry count: the module is refused at load, named.
  ModuleBuilder bad("written_bad");
  bad.AddExecutable("test-format", std::vector<uint8_t>(64, 1), {"k0", "k1"}, {}, {0b100});
  bytes = bad.Build();
  REQUIRE(bytes.ok());
  module = Module::LoadFromMemory(bytes->data(), bytes->size());
  REQUIRE_FALSE(module.ok());
  CHECK(module.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(module.status().message(),
             Catch::Contains("executable 0: 1 entry_written_bindings masks for 2 entry points"));
}

}  // namespace
}  // namespace hexir::vm
