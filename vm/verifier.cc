#include "vm/verifier.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "vm/isa.h"
#include "vm/list.h"
#include "vm/module.h"

namespace hexir::vm {
namespace {

class FunctionVerifier {
 public:
  FunctionVerifier(Module& module, FunctionInfo& fn, uint32_t ordinal)
      : module_(module), fn_(fn), ordinal_(ordinal) {}

  Status Run();
  uint32_t max_copy_pairs() const { return max_copy_pairs_; }

 private:
  template <typename... Args>
  Status Error(const Args&... args) const {
    std::string label = fn_.name.empty() ? StrCat("#", ordinal_) : StrCat("'", fn_.name, "'");
    return InvalidArgument("function ", label, " @", insn_, ": ", mnemonic_, ": ", args...);
  }
  Status Need(uint64_t words) const {
    if (words > fn_.code_length - pos_) {
      return Error("operands run past the end of the function (", fn_.code_length, " words)");
    }
    return Status::Ok();
  }
  Status CheckValue(uint32_t index, const char* what) const {
    if (index >= fn_.value_register_count) {
      return Error(what, " value register ", index, " out of range (",
                   fn_.value_register_count, " registers)");
    }
    return Status::Ok();
  }
  Status CheckRef(uint32_t index, const char* what) const {
    if (index >= fn_.ref_register_count) {
      return Error(what, " ref register ", index, " out of range (", fn_.ref_register_count,
                   " registers)");
    }
    return Status::Ok();
  }
  // One L / P entry. `written`: the entry is a destination, so MOVE is meaningless.
  Status CheckEntry(uint32_t entry, bool written) const {
    bool ref = entry & kRefBit, move = entry & kMoveBit;
    if (move && !ref) return Error("list entry 0x", std::hex, entry, ": MOVE on a value register");
    if (move && written) return Error("list entry 0x", std::hex, entry, ": MOVE on a written register");
    return ref ? CheckRef(entry & kIndexMask, "list") : CheckValue(entry & kIndexMask, "list");
  }
  // An L operand at pos_: checks entries, returns the word offset of its count.
  Status List(bool written, uint32_t* at) {
    HEXIR_RETURN_IF_ERROR(Need(1));
    *at = pos_;
    uint32_t n = fn_.code[pos_++];
    HEXIR_RETURN_IF_ERROR(Need(n));
    for (uint32_t i = 0; i < n; ++i) HEXIR_RETURN_IF_ERROR(CheckEntry(fn_.code[pos_++], written));
    return Status::Ok();
  }
  Status Copy() {
    HEXIR_RETURN_IF_ERROR(Need(1));
    uint32_t n = fn_.code[pos_++];
    HEXIR_RETURN_IF_ERROR(Need(uint64_t{n} * 2));
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t src = fn_.code[pos_++], dst = fn_.code[pos_++];
      HEXIR_RETURN_IF_ERROR(CheckEntry(src, false));
      HEXIR_RETURN_IF_ERROR(CheckEntry(dst, true));
      if ((src & kRefBit) != (dst & kRefBit)) {
        return Error("parallel copy pair ", i, " mixes a value and a ref register");
      }
    }
    max_copy_pairs_ = std::max(max_copy_pairs_, n);
    return Status::Ok();
  }
  Status Target() {
    HEXIR_RETURN_IF_ERROR(Need(1));
    targets_.emplace_back(insn_, fn_.code[pos_++]);
    return Status::Ok();
  }
  // The list whose count is at `at` must bind `kinds` in order.
  Status MatchList(uint32_t at, std::string_view kinds, const char* what,
                   std::string_view signature) const {
    uint32_t n = fn_.code[at];
    if (n != kinds.size()) {
      return Error(what, " list has ", n, " entries but signature '", signature, "' has ",
                   kinds.size());
    }
    for (uint32_t i = 0; i < n; ++i) {
      bool ref = fn_.code[at + 1 + i] & kRefBit;
      if (ref != (kinds[i] == 'r')) {
        return Error(what, " ", i, " is a ", ref ? "ref" : "value", " register but signature '",
                     signature, "' wants '", kinds[i], "'");
      }
    }
    return Status::Ok();
  }
  Status Ordinal(uint32_t value, size_t count, const char* what) const {
    if (value >= count) return Error(what, " ordinal ", value, " out of range (", count, ")");
    return Status::Ok();
  }

  const Module& module_;
  FunctionInfo& fn_;
  uint32_t ordinal_;
  uint32_t pos_ = 0;    // next word to read
  uint32_t insn_ = 0;   // start of the current instruction
  const char* mnemonic_ = "";
  std::vector<std::pair<uint32_t, uint32_t>> targets_;  // (instruction, target)
  uint32_t max_copy_pairs_ = 0;
};

Status FunctionVerifier::Run() {
  std::vector<bool> starts(fn_.code_length, false);
  Op last = Op::Nop;
  while (pos_ < fn_.code_length) {
    insn_ = pos_;
    starts[pos_] = true;
    uint32_t word = fn_.code[pos_++];
    const OpInfo& info = GetOpInfo(word);
    mnemonic_ = "instruction";
    if (word & ~kOpcodeMask) return Error("reserved bits set in word 0x", std::hex, word);
    if (!info.mnemonic) return Error("unknown opcode 0x", std::hex, word);
    mnemonic_ = info.mnemonic;
    Op op = static_cast<Op>(word);
    last = op;
    uint32_t lists[2] = {0, 0};
    int list_count = 0;
    for (const char* k = info.operands; *k; ++k) {
      switch (*k) {
        case 'V': {
          HEXIR_RETURN_IF_ERROR(Need(1));
          HEXIR_RETURN_IF_ERROR(CheckValue(fn_.code[pos_++], "operand"));
          break;
        }
        case 'R': {
          HEXIR_RETURN_IF_ERROR(Need(1));
          uint32_t w = fn_.code[pos_++];
          if (w & kRefBit) return Error("ref operand 0x", std::hex, w, " has bit 31 set");
          bool written = info.access[k - info.operands] == 'w';  // isa.def's access column
          if (written && (w & kMoveBit)) return Error("MOVE on a written ref register");
          HEXIR_RETURN_IF_ERROR(CheckRef(w & kIndexMask, "operand"));
          break;
        }
        case 'K':
          HEXIR_RETURN_IF_ERROR(Need(2));
          pos_ += 2;
          break;
        case 'J':
          HEXIR_RETURN_IF_ERROR(Need(1));
          if (op == Op::ListAlloc && fn_.code[pos_] > static_cast<uint32_t>(List::Kind::kRef)) {
            return Error("element kind ", fn_.code[pos_], " is not 0 (i64), 1 (f64) or 2 (ref)");
          }
          pos_ += 1;
          break;
        case 'T':
          HEXIR_RETURN_IF_ERROR(Target());
          break;
        case 'F':
          HEXIR_RETURN_IF_ERROR(Need(1));
          HEXIR_RETURN_IF_ERROR(Ordinal(fn_.code[pos_++], module_.functions().size(), "function"));
          break;
        case 'M':
          HEXIR_RETURN_IF_ERROR(Need(1));
          HEXIR_RETURN_IF_ERROR(Ordinal(fn_.code[pos_++], module_.imports().size(), "import"));
          break;
        case 'D':
          HEXIR_RETURN_IF_ERROR(Need(1));
          HEXIR_RETURN_IF_ERROR(Ordinal(fn_.code[pos_++], module_.rodata_count(), "rodata"));
          break;
        case 'S':
          HEXIR_RETURN_IF_ERROR(Need(1));
          HEXIR_RETURN_IF_ERROR(Ordinal(fn_.code[pos_++], module_.strings().size(), "string"));
          break;
        case 'G': {
          HEXIR_RETURN_IF_ERROR(Need(1));
          bool ref = op == Op::GlobalLoadRef || op == Op::GlobalStoreRef;
          HEXIR_RETURN_IF_ERROR(Ordinal(fn_.code[pos_++],
                                        ref ? module_.ref_global_count()
                                            : module_.value_global_count(),
                                        ref ? "ref global" : "value global"));
          break;
        }
        case 'L': {
          bool written = info.access[k - info.operands] == 'w';  // call results
          HEXIR_RETURN_IF_ERROR(List(written, &lists[list_count++]));
          break;
        }
        case 'P':
          HEXIR_RETURN_IF_ERROR(Copy());
          break;
        case 'W': {
          HEXIR_RETURN_IF_ERROR(Need(1));
          uint32_t n = fn_.code[pos_++];
          // Decode the table once: the interpreter indexes cases instead of walking them.
          if (fn_.switch_index.empty()) fn_.switch_index.assign(fn_.code_length, 0);
          fn_.switch_index[insn_] = static_cast<uint32_t>(fn_.switch_cases.size());
          for (uint32_t i = 0; i < n; ++i) {
            fn_.switch_cases.push_back(pos_);
            HEXIR_RETURN_IF_ERROR(Target());
            HEXIR_RETURN_IF_ERROR(Copy());
          }
          break;
        }
        default:
          return Error("isa.def operand kind '", *k, "' unknown to the verifier");
      }
    }
    switch (op) {
      case Op::Release: {
        for (uint32_t i = 0; i < fn_.code[lists[0]]; ++i) {
          if (!(fn_.code[lists[0] + 1 + i] & kRefBit)) {
            return Error("entry ", i, " is a value register; release takes refs only");
          }
        }
        break;
      }
      case Op::Assert: {
        for (uint32_t i = 0; i < fn_.code[lists[0]]; ++i) {
          if (fn_.code[lists[0] + 1 + i] & kRefBit) {
            return Error("entry ", i, " is a ref register; assert formats values only");
          }
        }
        break;
      }
      case Op::Return:
        HEXIR_RETURN_IF_ERROR(MatchList(lists[0], fn_.kinds.results, "result", fn_.signature));
        break;
      case Op::Call: {
        const FunctionInfo& callee = module_.functions()[fn_.code[insn_ + 1]];
        HEXIR_RETURN_IF_ERROR(MatchList(lists[0], callee.kinds.args, "argument", callee.signature));
        HEXIR_RETURN_IF_ERROR(MatchList(lists[1], callee.kinds.results, "result", callee.signature));
        break;
      }
      case Op::CallImport: {
        const ImportInfo& import = module_.imports()[fn_.code[insn_ + 1]];
        HEXIR_RETURN_IF_ERROR(MatchList(lists[0], import.kinds.args, "argument", import.signature));
        HEXIR_RETURN_IF_ERROR(MatchList(lists[1], import.kinds.results, "result", import.signature));
        break;
      }
      default:
        break;
    }
  }
  if (!IsTerminator(last)) {
    return Error("the function's last instruction is not a terminator");
  }
  for (auto [insn, target] : targets_) {
    if (target >= fn_.code_length || !starts[target]) {
      insn_ = insn;
      mnemonic_ = GetOpInfo(fn_.code[insn]).mnemonic;
      return Error("branch target ", target,
                   target >= fn_.code_length ? " out of range" : " is not an instruction start");
    }
  }
  return Status::Ok();
}

}  // namespace

Status VerifyModule(Module& module) {
  uint32_t max_copy = 0;
  for (uint32_t i = 0; i < module.functions().size(); ++i) {
    FunctionVerifier verifier(module, module.functions_[i], i);
    HEXIR_RETURN_IF_ERROR(verifier.Run());
    max_copy = std::max(max_copy, verifier.max_copy_pairs());
  }
  module.max_copy_pairs_ = max_copy;
  return Status::Ok();
}

}  // namespace hexir::vm
