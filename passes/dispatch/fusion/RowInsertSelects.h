// A KV-cache row written in place at a host position (the chunked host loop's decode step:
//   %e = tensor.expand_shape %row [[0, 1]] : tensor<N> into tensor<1xN>
//   %c = tensor.insert_slice %e into %cache[%p, 0] [1, N] [1, 1] : ... into tensor<RxN>)
// in the form a device loop writes it (the importer's --device-loop step):
//   %c = linalg.generic {(r, j) -> (j), (r, j) -> (r, j)} ins(%row) outs(%cache)
//          {hexir.in_place} { yield select(index_cast(index 0) == %p64, %in, %out) }
// so that hexir-group-small-projections can take the row into its layer's group (one kernel
// instead of one more a row; codegen then writes only the row: passes/codegen/RowSelectWrites.h).
// A select the group did not take turns back into the insert_slice (its own dispatch,
// writing its row alone, as before).
//
// Only rows whose insert may update the cache in place (CanInsertInPlace) are rewritten, so
// the select's in-place mark holds. Pure IR rewrites; thread-compatible.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace hexir {

// Rewrites every such row insert of `func` (not inside a linalg body) into a cache of at most
// `maxElements` (a select over more could never join a group: its level alone would exceed
// the cost model) into its select, placed right after its row, its position and the old
// cache's other reads; returns the selects.
llvm::SmallVector<mlir::linalg::GenericOp> RowInsertsAsSelects(mlir::func::FuncOp func, int64_t maxElements);

// Turns each of `selects` (from RowInsertsAsSelects) that carries no kDispatchGroupAttr back
// into the expand_shape + in-place insert_slice it was.
void UngroupedSelectsToRowInserts(llvm::ArrayRef<mlir::linalg::GenericOp> selects);

}  // namespace hexir
