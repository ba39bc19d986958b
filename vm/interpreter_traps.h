// How the interpreter's traps read (internal to vm/interpreter.cc): the status of a failing
// `assert` / `fail`, an op's failure prefixed with its mnemonic, and the interrupt check of a
// checkpoint. All out of line and cold: the dispatch loop calls them only on the way out (the
// interrupt check once per kInterruptCheckInstructions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/interrupt.h"
#include "base/status.h"
#include "vm/module.h"

namespace hexir::vm::interpreter {

// Instructions between two interrupt checks at taken branches and calls: a clock read per
// 8192 instructions (a few microseconds of bytecode) is far below the 2% budget.
inline constexpr uint64_t kInterruptCheckInstructions = 8192;

// The interrupt check of a checkpoint (one in kInterruptCheckInstructions): true with *trap
// set when the deadline passed or the call was cancelled.
__attribute__((noinline)) bool Interrupted(const Interrupt& interrupt, Status* trap);

// Prefixes `s`, raised by the instruction at `ip`, with its mnemonic.
__attribute__((noinline, cold)) Status OpError(const uint32_t* ip, const Status& s);

// The message of a false `assert`: each "{}" of `format` becomes the next value of the
// register list at `list` (signed decimal); placeholders past the list's end stay as written.
__attribute__((noinline, cold)) Status AssertFailure(std::string_view format, const uint32_t* list,
                                                     const int64_t* v);

// `fail`: `code` as a StatusCode when it names one (1..11), else aborted.
__attribute__((noinline, cold)) Status FailStatus(int64_t code, std::string_view message);

// (The invocation's final message, naming the function, offset and callers, is
// Interpreter::DescribeTrap, defined in interpreter_traps.cc: it reads the private frames.)

}  // namespace hexir::vm::interpreter
