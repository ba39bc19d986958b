// Device affinity of host values in a module of several devices (`hexir.devices`), as the
// placement passes leave it: what hexir-place-devices decides and what hexir-insert-transfers
// and the execution-region passes read.
//
//   a dispatch           its `hexir.device` (every dispatch has one after placement)
//   a function argument  its `hexir.device` arg attr, else its function's, else 0
//   a tensor global      its `hexir.device` (placement gives each global the device of its
//                        first reader; undecided before)
//   an alias (reshape, cast), a transfer's source ... the source's device; a transfer's
//                        result: its `to` device
//   a loop-carried value / an scf result: its init's (for/while) or the then-branch's (if)
//   a call result        the callee's result device (ResultDevice)
//   a tensor constant    none: it is uploaded once to each device that reads it
#pragma once

#include <optional>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace hexir::schedule {

// The kinds of the module's devices ("cpu", "cuda") by ordinal; empty without `hexir.devices`.
llvm::SmallVector<llvm::StringRef> DeviceKinds(mlir::ModuleOp module);

// The device a function runs unannotated work on and returns its results on: its own
// `hexir.device`, else 0.
int64_t FunctionDevice(mlir::func::FuncOp func);

// The device a function's results are returned on: 0 for a public function (its caller
// reads them through device 0), the function's device for a private one.
int64_t ResultDevice(mlir::func::FuncOp func);

// The device argument `index` of `func` lives on: its `hexir.device`, else the function's.
int64_t ArgumentDevice(mlir::func::FuncOp func, unsigned index);

// The explicit `hexir.device` of an op, function or argument attribute holder.
std::optional<int64_t> ExplicitDevice(mlir::Operation* op);

// The device whose memory holds `v` (see the table above); nullopt for constants, scalars and
// values placement has not decided yet.
std::optional<int64_t> HomeDevice(mlir::Value v);

// True when devices a and b of the module use one memory (both "cpu": host memory), so a
// value of one is read by the other in place (ordering comes from awaits, no copy).
bool SharesMemory(llvm::ArrayRef<llvm::StringRef> kinds, int64_t a, int64_t b);

}  // namespace hexir::schedule
