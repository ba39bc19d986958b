#include "vm/disassembler.h"

#include <cstring>
#include <sstream>

#include "vm/isa.h"

namespace hexir::vm {
namespace {

void Entry(std::ostream& os, uint32_t e) {
  os << ((e & kRefBit) ? 'r' : 'v') << (e & kIndexMask);
  if (e & kMoveBit) os << '!';
}

// Prints a P operand at words[0] and returns the words it used.
uint32_t Copies(std::ostream& os, const uint32_t* w) {
  os << '[';
  for (uint32_t i = 0; i < w[0]; ++i) {
    if (i) os << ", ";
    Entry(os, w[1 + 2 * i]);
    os << " -> ";
    Entry(os, w[2 + 2 * i]);
  }
  os << ']';
  return 1 + 2 * w[0];
}

}  // namespace

std::string DisassembleInstruction(const Module& module, uint32_t function, uint32_t offset,
                                   uint32_t* next) {
  const FunctionInfo& fn = module.functions()[function];
  const uint32_t* w = fn.code + offset;
  const OpInfo& info = GetOpInfo(w[0]);
  Op op = static_cast<Op>(w[0]);
  std::ostringstream os;
  os << '@' << offset << ": " << info.mnemonic;
  uint32_t pos = 1;
  int list_index = 0;
  for (const char* k = info.operands; *k; ++k) {
    // The result list of call / call.import reads "(args) -> (results)".
    bool results_list = *k == 'L' && list_index == 1;
    os << (k == info.operands || results_list ? " " : ", ");
    switch (*k) {
      case 'V':
        os << 'v' << w[pos++];
        break;
      case 'R':
        Entry(os, w[pos++] | kRefBit);
        break;
      case 'K': {
        uint64_t bits = uint64_t{w[pos]} | uint64_t{w[pos + 1]} << 32;
        pos += 2;
        if (op == Op::ConstF64) {
          double d;
          std::memcpy(&d, &bits, 8);
          os << d;
        } else {
          os << static_cast<int64_t>(bits);
        }
        break;
      }
      case 'J':
        os << static_cast<int32_t>(w[pos++]);
        break;
      case 'T':
        os << '@' << w[pos++];
        break;
      case 'F': {
        uint32_t f = w[pos++];
        os << '\'' << module.functions()[f].name << "'#" << f;
        break;
      }
      case 'M': {
        uint32_t m = w[pos++];
        os << '\'' << module.imports()[m].name << "'#" << m;
        break;
      }
      case 'D':
        os << "rodata#" << w[pos++];
        break;
      case 'S': {
        uint32_t s = w[pos++];
        os << '"' << module.strings()[s] << "\"#" << s;
        break;
      }
      case 'G':
        os << ((op == Op::GlobalLoadRef || op == Op::GlobalStoreRef) ? "global.r#" : "global.v#")
           << w[pos++];
        break;
      case 'L': {
        bool results = list_index++ == 1;
        if (results) os << "-> ";
        os << '(';
        for (uint32_t i = 0; i < w[pos]; ++i) {
          if (i) os << ", ";
          Entry(os, w[pos + 1 + i]);
        }
        os << ')';
        pos += 1 + w[pos];
        break;
      }
      case 'P':
        pos += Copies(os, w + pos);
        break;
      case 'W': {
        uint32_t n = w[pos++];
        os << '{';
        for (uint32_t i = 0; i < n; ++i) {
          os << (i ? ", " : "") << i << ": @" << w[pos++] << ' ';
          pos += Copies(os, w + pos);
        }
        os << '}';
        break;
      }
    }
  }
  *next = offset + pos;
  return os.str();
}

std::string DisassembleFunction(const Module& module, uint32_t function) {
  const FunctionInfo& fn = module.functions()[function];
  std::ostringstream os;
  os << fn.name << '(' << fn.signature << ") v=" << fn.value_register_count
     << " r=" << fn.ref_register_count << ":\n";
  for (uint32_t offset = 0; offset < fn.code_length;) {
    os << "  " << DisassembleInstruction(module, function, offset, &offset) << '\n';
  }
  return os.str();
}

}  // namespace hexir::vm
