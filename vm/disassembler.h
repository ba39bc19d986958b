// Text form of verified bytecode, driven by the operand kinds of vm/isa.def (for hexir-dump,
// tests and error reports).
//
//   @0: const.i64 v1, 0
//   @4: cond_br v0, @10, [], @22, [r0! -> r1]
//   @10: call 'twice'#1, (v0) -> (v2)
//   @16: for.i64 v2, v4, v3, @10, []
//
// Registers print as v<N> / r<N>; a trailing '!' marks MOVE. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "vm/module.h"

namespace hexir::vm {

// One instruction of function `function` at word `offset` (an instruction start of a verified
// module); sets *next to the following instruction's offset.
std::string DisassembleInstruction(const Module& module, uint32_t function, uint32_t offset,
                                   uint32_t* next);

// Every instruction of the function, one per line, headed by "name(signature) v=N r=M:".
std::string DisassembleFunction(const Module& module, uint32_t function);

}  // namespace hexir::vm
