// hexir-import's llama2.c mode: checkpoint file -> MLIR text of the decode program
// (EmitModule.h). Reads only the header and the file length; the weights stay in the file
// and are passed by the runtime (hexir-generate) as arguments of @generate.
#pragma once

#include <string>

#include "base/status.h"
#include "compiler/importers/llama/EmitModule.h"

namespace hexir::compiler::llama {

// Errors name the file and the offending header field / offset.
StatusOr<std::string> ImportLlama2cFile(const std::string& path, const EmitOptions& options = {});

}  // namespace hexir::compiler::llama
