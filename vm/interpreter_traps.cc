#include "vm/interpreter_traps.h"

#include <string>
#include <utility>

#include "vm/interpreter.h"
#include "vm/isa.h"

namespace hexir::vm {
namespace interpreter {

bool Interrupted(const Interrupt& interrupt, Status* trap) {
  Status st = interrupt.Check();
  if (st.ok()) return false;
  *trap = std::move(st);
  return true;
}

Status OpError(const uint32_t* ip, const Status& s) {
  return Status(s.code(), StrCat(GetOpInfo(*ip).mnemonic, ": ", s.message()));
}

Status AssertFailure(std::string_view format, const uint32_t* list, const int64_t* v) {
  std::string message;
  uint32_t next = 0, count = list[0];
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '{' && i + 1 < format.size() && format[i + 1] == '}' && next < count) {
      message += std::to_string(v[list[1 + next++]]);
      ++i;
      continue;
    }
    message += format[i];
  }
  return InvalidArgument(message);
}

Status FailStatus(int64_t code, std::string_view message) {
  StatusCode sc = code >= 1 && code <= static_cast<int64_t>(StatusCode::kInternal)
                      ? static_cast<StatusCode>(code)
                      : StatusCode::kAborted;
  return Status(sc, std::string(message));
}

}  // namespace interpreter

void Interpreter::DescribeTrap(Status* trap, const FunctionInfo* fns, const FunctionInfo& fn,
                               size_t offset, const Frame* frames, size_t depth) {
  // The callers, innermost first (at most kShownCallers of them).
  constexpr size_t kShownCallers = 8;
  std::string callers;
  for (size_t k = depth, shown = 0; k > 0 && shown < kShownCallers; --k, ++shown) {
    const Frame& f = frames[k - 1];
    callers += StrCat(shown ? ", " : "; called from ", "'", fns[f.function].name, "' @",
                      f.call_ip - fns[f.function].code);
  }
  if (depth > kShownCallers) callers += StrCat(" and ", depth - kShownCallers, " more");
  *trap = Status(trap->code(),
                 StrCat("function '", fn.name, "' @", offset, ": ", trap->message(), callers));
}

}  // namespace hexir::vm
