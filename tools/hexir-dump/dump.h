// Text dump of a loaded .vmfb module (hexir-dump): metadata, imports, exports, functions with
// register counts, attributes and disassembled bytecode, rodata, executables, strings.
//
// The output is deterministic (no addresses, no timestamps): golden tests compare it byte for
// byte. Stateless and thread-safe.
#pragma once

#include <string>

#include "vm/module.h"

namespace hexir::tools {

struct DumpOptions {
  bool code = true;          // disassemble function bodies
  size_t preview_bytes = 16;  // leading bytes shown per rodata segment / executable
};

std::string DumpModule(const vm::Module& module, const DumpOptions& options = {});

}  // namespace hexir::tools
