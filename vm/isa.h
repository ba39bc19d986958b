// C++ view of the ISA table (vm/isa.def): the opcode enum, per-opcode operand kinds and access,
// and terminator-ness.
//
// Header-only and dependency-free so that the compiler's encoder may use it too. Everything
// here is generated from isa.def by X-macros; nothing is written twice.
#pragma once

#include <cstdint>
#include <string_view>

namespace hexir::vm {

enum class Op : uint8_t {
#define HEXIR_OP(code, Name, mnemonic, operands, access, terminator, meaning) Name = code,
#include "vm/isa.def"
#undef HEXIR_OP
};

// Bits of an R operand and of an L / P list entry (see isa.def).
inline constexpr uint32_t kRefBit = 1u << 31;
inline constexpr uint32_t kMoveBit = 1u << 30;
inline constexpr uint32_t kIndexMask = (1u << 30) - 1;
// Word 0 of an instruction: the opcode in bits 7..0; bits 31..8 must be zero.
inline constexpr uint32_t kOpcodeMask = 0xFF;

struct OpInfo {
  const char* mnemonic = nullptr;  // null: the opcode is not defined
  const char* operands = "";       // operand kinds, e.g. "VVV" (see isa.def)
  const char* access = "";         // per operand: w written, r read, c copy, - not a register
  bool terminator = false;         // ends a block
  const char* meaning = "";
};

namespace isa_detail {
constexpr bool SameLength(const char* a, const char* b) {
  while (*a && *b) ++a, ++b;
  return *a == *b;
}
#define HEXIR_OP(code, Name, mnemonic, operands, access, terminator, meaning) \
  static_assert(SameLength(operands, access), "isa.def: " mnemonic ": one access letter per operand");
#include "vm/isa.def"
#undef HEXIR_OP
}  // namespace isa_detail

namespace isa_detail {
struct OpTable {
  OpInfo ops[256];
  constexpr OpTable() : ops() {
#define HEXIR_OP(code, Name, mnemonic, operands, access, terminator, meaning) \
  ops[code] = OpInfo{mnemonic, operands, access, terminator, meaning};
#include "vm/isa.def"
#undef HEXIR_OP
  }
};
inline constexpr OpTable kOpTable{};
}  // namespace isa_detail

// Operand kinds and names of `opcode`; mnemonic is null for an undefined opcode.
inline constexpr const OpInfo& GetOpInfo(uint32_t opcode) {
  return isa_detail::kOpTable.ops[opcode & kOpcodeMask];
}

// True for the instructions that end a block: the last instruction of every function.
inline constexpr bool IsTerminator(Op op) { return GetOpInfo(static_cast<uint32_t>(op)).terminator; }

// The opcode named `mnemonic` ("add.i64"); false if there is none.
inline constexpr bool OpForMnemonic(std::string_view mnemonic, Op* out) {
  for (uint32_t code = 0; code < 256; ++code) {
    const char* m = GetOpInfo(code).mnemonic;
    if (m && mnemonic == m) {
      *out = static_cast<Op>(code);
      return true;
    }
  }
  return false;
}

}  // namespace hexir::vm
