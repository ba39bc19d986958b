// Values a module knows once its weights are loaded: constants, globals computed at load, and
// the `hexir.parameter` arguments of public functions (passes/README.md, step 5b). Work that
// reads only such values (a weight's transpose, a filter packed into panels) is lifted out of
// the calls by hexir-lift-constant-dispatches: constants' work into the module initializer,
// parameters' work into a transform that runs again only when a parameter argument is another
// buffer than the one it last ran on.
//
// Thread-compatible (pure queries of the IR).
#pragma once

#include "mlir/IR/Value.h"

namespace hexir {

// An entry block argument of a public function marked `hexir.parameter`, of static shape,
// that no dispatch updates in place (public arguments never are: dispatch/InPlaceUpdates.h).
bool IsParameterArgument(mlir::Value v);

// `v` seen through static reshapes and casts (aliases of their source): the value they start
// from, or `v` itself.
mlir::Value ThroughStaticReshapes(mlir::Value v);

// What a value is known from (through static reshapes and casts): a dense or scalar constant
// or a global (kConstant), a parameter argument (kParameter), or neither (kRunTime).
enum class LoadTimeKind { kConstant, kParameter, kRunTime };
LoadTimeKind ClassifyLoadTime(mlir::Value v);

// Known at load: a constant, a global or a parameter argument (ClassifyLoadTime != kRunTime).
inline bool IsLoadTimeValue(mlir::Value v) { return ClassifyLoadTime(v) != LoadTimeKind::kRunTime; }

}  // namespace hexir
