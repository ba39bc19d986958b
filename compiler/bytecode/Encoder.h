// Low-level bytecode encoding per vm/isa.def: opcodes and operand kinds come from vm/isa.h,
// never from hand-copied numbers. Header-only and MLIR-free so that unit
// tests can encode and decode without the compiler.
//
// Contract: Encoder::op() starts an instruction and checks, operand by operand, that the
// kinds appended match the table's operand string (a mismatch is a compiler bug: it
// aborts via assert in debug builds and is reported by finish() always).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vm/isa.h"

namespace hexir::compiler::bytecode {

// The opcodes are vm/isa.h's: the encoder keeps no enum of its own.
using Opcode = vm::Op;

// The operand-kind string of an opcode ("VK" for const.i64).
constexpr std::string_view OperandKinds(Opcode op) {
  return vm::GetOpInfo(static_cast<uint32_t>(op)).operands;
}

constexpr std::string_view Mnemonic(Opcode op) {
  return vm::GetOpInfo(static_cast<uint32_t>(op)).mnemonic;
}

// The opcode named `mnemonic` ("add.i64"); false if there is none.
inline bool OpcodeForMnemonic(std::string_view mnemonic, Opcode* out) {
  return vm::OpForMnemonic(mnemonic, out);
}

constexpr uint32_t kRefMove = vm::kMoveBit;  // R operand / L entry: move instead of retain
constexpr uint32_t kListRef = vm::kRefBit;   // L entry: ref register

// A register list entry (L operands).
struct ListEntry {
  bool is_ref = false;
  bool move = false;
  uint32_t index = 0;
  uint32_t Encode() const {
    return (is_ref ? kListRef : 0) | (move ? kRefMove : 0) | index;
  }
};

class Encoder {
 public:
  // Starts an instruction.
  void op(Opcode opcode) {
    CheckDone();
    current_ = OperandKinds(opcode);
    mnemonic_ = Mnemonic(opcode);
    next_ = 0;
    words_.push_back(static_cast<uint32_t>(opcode));
  }
  void V(uint32_t reg) { Kind('V'); words_.push_back(reg); }
  void R(uint32_t reg, bool move) { Kind('R'); words_.push_back((move ? kRefMove : 0) | reg); }
  void K(uint64_t bits) {
    Kind('K');
    words_.push_back(static_cast<uint32_t>(bits));
    words_.push_back(static_cast<uint32_t>(bits >> 32));
  }
  void J(uint32_t v) { Kind('J'); words_.push_back(v); }
  void M(uint32_t ordinal) { Kind('M'); words_.push_back(ordinal); }
  void D(uint32_t ordinal) { Kind('D'); words_.push_back(ordinal); }
  void F(uint32_t ordinal) { Kind('F'); words_.push_back(ordinal); }
  void G(uint32_t ordinal) { Kind('G'); words_.push_back(ordinal); }
  void S(uint32_t ordinal) { Kind('S'); words_.push_back(ordinal); }
  // A branch target; returns the word position to patch with the block's offset later.
  size_t T(uint32_t offset) {
    Kind('T');
    words_.push_back(offset);
    return words_.size() - 1;
  }
  void Patch(size_t at, uint32_t value) { words_[at] = value; }
  size_t size() const { return words_.size(); }
  // Block-argument parallel copy: (source, destination) pairs of the same bank.
  void P(const std::vector<std::pair<ListEntry, ListEntry>>& pairs) {
    Kind('P');
    words_.push_back(static_cast<uint32_t>(pairs.size()));
    for (const auto& [src, dst] : pairs) {
      words_.push_back(src.Encode());
      words_.push_back(dst.Encode());
    }
  }
  void L(const std::vector<ListEntry>& list) {
    Kind('L');
    words_.push_back(static_cast<uint32_t>(list.size()));
    for (const ListEntry& e : list) words_.push_back(e.Encode());
  }

  // Ends the last instruction; returns the words, or an error in *error.
  std::vector<uint32_t> finish(std::string* error) {
    CheckDone();
    if (!error_.empty() && error) *error = error_;
    return std::move(words_);
  }

 private:
  void Kind(char kind) {
    if (next_ >= current_.size() || current_[next_] != kind) {
      if (error_.empty())
        error_ = "operand " + std::to_string(next_) + " of '" + std::string(mnemonic_) +
                 "' is not of kind '" + std::string(1, kind) + "'";
    }
    ++next_;
  }
  void CheckDone() {
    if (next_ != current_.size() && error_.empty())
      error_ = "instruction '" + std::string(mnemonic_) + "' is missing operands";
    current_ = {};
    next_ = 0;
  }

  std::vector<uint32_t> words_;
  std::string_view current_;
  std::string_view mnemonic_;
  size_t next_ = 0;
  std::string error_;
};

}  // namespace hexir::compiler::bytecode
