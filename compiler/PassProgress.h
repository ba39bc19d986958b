// Progress of a long compile on a terminal (hexir-compile when stderr is one): one stderr
// line rewritten in place, at most 5 times a second, "hexir-compile: pass 37 (name), 1234 ops
// (12.3 s)": the passes run so far (nested ones included, which may run on several threads)
// and the ops of the whole module after the last pass on the module itself; cleared when the
// pass manager finishes.
#pragma once

#include <memory>

#include "mlir/Pass/PassInstrumentation.h"

namespace hexir::compiler {

std::unique_ptr<mlir::PassInstrumentation> MakePassProgress(const char* tool);

}  // namespace hexir::compiler
