// isa.def's access and terminator columns against the instruction semantics they encode (an
// independent list here): the verifier and the encoder trust these columns.
#include "vm/isa.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace hexir::vm {
namespace {

std::set<std::string> OpsWhere(bool (*pred)(const OpInfo&)) {
  std::set<std::string> names;
  for (uint32_t code = 0; code < 256; ++code) {
    const OpInfo& info = GetOpInfo(code);
    if (info.mnemonic && pred(info)) names.insert(info.mnemonic);
  }
  return names;
}

bool WritesARef(const OpInfo& info) {
  for (int i = 0; info.operands[i]; ++i)
    if (info.operands[i] == 'R' && info.access[i] == 'w') return true;
  return false;
}

bool WritesAList(const OpInfo& info) {
  for (int i = 0; info.operands[i]; ++i)
    if (info.operands[i] == 'L' && info.access[i] == 'w') return true;
  return false;
}

TEST_CASE("the ref-writing instructions are exactly those whose first ref register is a destination") {
  CHECK(OpsWhere(WritesARef) == std::set<std::string>{"mov.ref", "select.ref", "rodata", "global.load.ref",
                                                      "list.alloc", "list.get.ref"});
  // The written ref is always the first operand.
  for (uint32_t code = 0; code < 256; ++code) {
    const OpInfo& info = GetOpInfo(code);
    if (!info.mnemonic || !WritesARef(info)) continue;
    INFO(info.mnemonic);
    CHECK(info.operands[0] == 'R');
    CHECK(info.access[0] == 'w');
  }
}

TEST_CASE("only the result lists of call and call.import are written lists") {
  CHECK(OpsWhere(WritesAList) == std::set<std::string>{"call", "call.import"});
  CHECK(std::string(GetOpInfo(static_cast<uint32_t>(Op::Call)).access) == "-rw");
}

TEST_CASE("the terminators are br, cond_br, switch, return and fail; fused branches fall through") {
  CHECK(OpsWhere([](const OpInfo& i) { return i.terminator; }) ==
        std::set<std::string>{"br", "cond_br", "switch", "return", "fail"});
  CHECK(IsTerminator(Op::Return));
  CHECK(!IsTerminator(Op::BrNz));
  CHECK(!IsTerminator(Op::ForI64));
}

TEST_CASE("mnemonics name their opcodes and unknown ones are refused") {
  Op op = Op::Nop;
  REQUIRE(OpForMnemonic("list.get.ref", &op));
  CHECK(op == Op::ListGetRef);
  CHECK(!OpForMnemonic("list.get", &op));
}

}  // namespace
}  // namespace hexir::vm
