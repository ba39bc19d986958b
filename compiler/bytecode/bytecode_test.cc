// Encodes instructions and whole modules, then decodes them back independently: words
// per vm/isa.def's encoding rules, the file per vm/module.fbs's layout.
#include <catch2/catch.hpp>

#include <cstring>

#include "compiler/bytecode/Encoder.h"
#include "compiler/bytecode/ModuleFile.h"
#include "base/checksum.h"
#include "vm/module_generated.h"

namespace hexir::compiler::bytecode {
namespace {

// One decoded operand: kind plus its words (L: count then entries).
struct Decoded {
  Opcode opcode;
  std::vector<std::pair<char, std::vector<uint32_t>>> operands;
};

// Decodes a word stream using only the table's operand strings.
std::vector<Decoded> Decode(const std::vector<uint32_t>& words) {
  std::vector<Decoded> out;
  size_t pc = 0;
  while (pc < words.size()) {
    REQUIRE((words[pc] >> 8) == 0u);  // reserved bits are zero
    Decoded d{static_cast<Opcode>(words[pc++] & 0xff), {}};
    for (char kind : OperandKinds(d.opcode)) {
      std::vector<uint32_t> w;
      if (kind == 'K') {
        w = {words[pc], words[pc + 1]};
        pc += 2;
      } else if (kind == 'L') {
        uint32_t n = words[pc];
        w.assign(words.begin() + pc, words.begin() + pc + 1 + n);
        pc += 1 + n;
      } else {
        w = {words[pc++]};
      }
      d.operands.emplace_back(kind, w);
    }
    out.push_back(d);
  }
  REQUIRE(pc == words.size());
  return out;
}

TEST_CASE("opcodes and operand kinds come from isa.def") {
  // Independent reference: the numbers and strings printed in vm/isa.def.
  CHECK(static_cast<int>(Opcode::ConstI64) == 0x01);
  CHECK(static_cast<int>(Opcode::Release) == 0x05);
  CHECK(static_cast<int>(Opcode::CallImport) == 0x54);
  CHECK(static_cast<int>(Opcode::Return) == 0x55);
  CHECK(static_cast<int>(Opcode::Rodata) == 0x60);
  CHECK(OperandKinds(Opcode::CallImport) == "MLL");
  CHECK(OperandKinds(Opcode::ConstI64) == "VK");
  CHECK(Mnemonic(Opcode::TruncF64F32) == "trunc.f64.f32");
}

TEST_CASE("a small function encodes and decodes back") {
  Encoder enc;
  enc.op(Opcode::ConstI64);
  enc.V(3);
  enc.K(0x1122334455667788ull);
  enc.op(Opcode::CallImport);
  enc.M(2);
  enc.L({{true, true, 1}, {false, false, 3}});
  enc.L({{true, false, 0}});
  enc.op(Opcode::Rodata);
  enc.R(4, false);
  enc.D(7);
  enc.op(Opcode::Release);
  enc.L({{true, false, 4}});
  enc.op(Opcode::Return);
  enc.L({{true, true, 0}});
  std::string error;
  std::vector<uint32_t> words = enc.finish(&error);
  REQUIRE(error.empty());

  // Exact words, per the encoding comment at the top of isa.def.
  std::vector<uint32_t> expected = {
      0x01, 3, 0x55667788, 0x11223344,                          // const.i64 V3, K
      0x54, 2, 2, 0xC0000001, 0x00000003, 1, 0x80000000,        // call.import M2 L L
      0x60, 4, 7,                                               // rodata R4, D7
      0x05, 1, 0x80000004,                                      // release [R4]
      0x55, 1, 0xC0000000,                                      // return [move R0]
  };
  CHECK(words == expected);

  std::vector<Decoded> decoded = Decode(words);
  REQUIRE(decoded.size() == 5);
  CHECK(decoded[0].opcode == Opcode::ConstI64);
  CHECK(decoded[1].opcode == Opcode::CallImport);
  CHECK(decoded[1].operands[1].second == std::vector<uint32_t>{2, 0xC0000001, 3});
  CHECK(decoded[2].opcode == Opcode::Rodata);
  CHECK(decoded[4].opcode == Opcode::Return);
}

TEST_CASE("operands that disagree with the table are reported") {
  Encoder enc;
  enc.op(Opcode::ConstI64);
  enc.V(0);
  enc.V(1);  // should be K
  std::string error;
  enc.finish(&error);
  CHECK(error == "operand 1 of 'const.i64' is not of kind 'V'");

  Encoder missing;
  missing.op(Opcode::Mov);
  missing.V(0);
  missing.op(Opcode::Nop);
  error.clear();
  missing.finish(&error);
  CHECK(error == "instruction 'mov' is missing operands");
}

uint32_t ReadU32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

TEST_CASE("module file: header, FlatBuffer and 64-byte aligned segments") {
  ModuleData m;
  m.name = "m";
  m.imports.push_back({"hal", "hal.device.default", "_r"});
  FunctionData f;
  f.name = "main";
  f.signature = "r_r";
  f.value_register_count = 2;
  f.ref_register_count = 3;
  f.code = {0x55, 1, 0xC0000000};
  f.attrs = {{"abi.args", "tensor<2xf32>"}, {"abi.results", "tensor<2xf32>"}};
  m.functions.push_back(f);
  m.rodata.push_back({1, 2, 3});
  m.executables.push_back({"cpu-elf-x86_64", std::vector<uint8_t>(100, 0xAB), {"k"}, {}});
  std::vector<uint8_t> file = SerializeModule(m);

  REQUIRE(file.size() > 24);
  CHECK(std::memcmp(file.data(), "HXIRVMFB", 8) == 0);
  CHECK(ReadU32(file, 8) == 0x00020003u);  // 2.3: cmp.eq.ref
  uint32_t fb_size = ReadU32(file, 12);
  REQUIRE(24 + fb_size <= file.size());
  uint64_t fb_checksum;
  std::memcpy(&fb_checksum, file.data() + 16, 8);
  CHECK(fb_checksum == Checksum64(file.data() + 24, fb_size));
  flatbuffers::Verifier verifier(file.data() + 24, fb_size);
  REQUIRE(vm::format::VerifyModuleBuffer(verifier));
  CHECK(vm::format::ModuleBufferHasIdentifier(file.data() + 24));

  const vm::format::Module* module = vm::format::GetModule(file.data() + 24);
  CHECK(module->version() == 0x00020003u);
  CHECK(module->bytecode_checksum() == Checksum64(module->bytecode()->data(), 3 * 4));
  REQUIRE(module->imports()->size() == 1);
  CHECK(module->imports()->Get(0)->signature()->str() == "_r");
  REQUIRE(module->functions()->size() == 1);
  const auto* fn = module->functions()->Get(0);
  CHECK(fn->ref_register_count() == 3);
  CHECK(fn->bytecode_offset() == 0);
  CHECK(fn->bytecode_length() == 3);
  CHECK(module->bytecode()->Get(2) == 0xC0000000u);
  REQUIRE(fn->attrs()->size() == 2);
  CHECK(fn->attrs()->Get(0)->key()->str() == "abi.args");
  REQUIRE(module->exports()->size() == 1);
  CHECK(module->exports()->Get(0)->name()->str() == "main");
  CHECK(module->initializer() == -1);

  REQUIRE(module->segments()->size() == 2);
  REQUIRE(module->rodata()->size() == 1);
  const auto* ro = module->segments()->Get(module->rodata()->Get(0));
  const auto* exe = module->segments()->Get(module->executables()->Get(0)->segment());
  for (const auto* s : {ro, exe}) {
    CHECK(s->offset() % 64 == 0);
    CHECK(s->offset() >= 24 + fb_size);
    CHECK(s->offset() + s->length() <= file.size());
    CHECK(s->checksum() == Checksum64(file.data() + s->offset(), s->length()));
  }
  CHECK(ro->length() == 3);
  CHECK(file[ro->offset() + 2] == 3);
  CHECK(exe->length() == 100);
  CHECK(file[exe->offset() + 99] == 0xAB);
  CHECK(exe->offset() >= ro->offset() + ro->length());
  CHECK(module->executables()->Get(0)->format()->str() == "cpu-elf-x86_64");
  CHECK(module->executables()->Get(0)->entry_points()->Get(0)->str() == "k");
}

}  // namespace
}  // namespace hexir::compiler::bytecode
