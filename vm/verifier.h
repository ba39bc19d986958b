// Bytecode verification, run once per module at load (Module::LoadFrom*).
//
// For every function, against the operand kinds of vm/isa.def:
//   - every opcode is defined and its reserved bits are zero; operands lie inside the function;
//   - V / R / list-entry register indices are below the function's register counts; R operands
//     have bit 31 clear; MOVE appears only on refs that are read (never on a written register);
//   - branch targets (T) are instruction starts inside the function;
//   - the last instruction is a terminator (br, cond_br, switch, return, fail), so the fused
//     br.* / for.i64, which fall through when not taken, always have a next instruction;
//   - list.alloc's element kind J is 0, 1 or 2 (list indices and sizes are data: run time);
//   - parallel-copy pairs name one bank; `release` lists only refs;
//   - call / call.import / return lists match the callee / import / own signature in length
//     and bank ('i', 'f' -> value registers, 'r' -> ref registers); call results are written
//     registers (no MOVE);
//   - F, M, D, S and G ordinals are in range (G against the value or ref globals, per op).
// Table-level checks (header, FlatBuffer, signatures, segments, exports, initializer) happen
// in Module::Parse before this runs. Errors name the function and the instruction's word
// offset: "function 'main' @12: br: branch target 99 out of range".
#pragma once

#include "base/status.h"

namespace hexir::vm {

class Module;

// Verifies all bytecode of a parsed module, records the interpreter's scratch sizes and decodes
// every switch table (FunctionInfo::switch_cases).
Status VerifyModule(Module& module);

}  // namespace hexir::vm
