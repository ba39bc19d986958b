// Keeps the opcode table of vm/README.md true to isa.def.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "vm/isa.h"

namespace hexir::vm {
namespace {

std::string Row(uint32_t code, const OpInfo& info) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02X", code);
  std::string meaning;
  for (const char* c = info.meaning; *c; ++c) {
    if (*c == '|') meaning += '\\';
    meaning += *c;
  }
  std::string ops = *info.operands ? std::string("`") + info.operands + "`" : "-";
  std::string access = *info.access ? std::string("`") + info.access + "`" : "-";
  return std::string("| `") + hex + "` | `" + info.mnemonic + "` | " + ops + " | " + access + " | " +
         (info.terminator ? "yes" : "") + " | " + meaning + " |";
}

TEST_CASE("README lists every opcode of isa.def exactly as the table says") {
  std::ifstream in("vm/README.md");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string readme = ss.str();
  int count = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    const OpInfo& info = GetOpInfo(code);
    if (!info.mnemonic) continue;
    ++count;
    std::string row = Row(code, info);
    INFO(row);
    CHECK(readme.find(row + "\n") != std::string::npos);
  }
  CHECK(count > 50);
}

}  // namespace
}  // namespace hexir::vm
