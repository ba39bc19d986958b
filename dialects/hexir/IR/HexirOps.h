// The `hexir` dialect (dispatch regions, executables, dispatches, execution regions,
// timepoints). See HexirOps.td.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/hexir/IR/HexirOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hexir/IR/HexirOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/hexir/IR/HexirOps.h.inc"

namespace hexir {
// Device placement (passes/schedule/PlaceDevices.cpp): `hexir.device = N` (an i64 index into
// the module's device list, `hexir.devices`) on an op, a function or a function argument.
inline constexpr char kDeviceAttr[] = "hexir.device";
// The module's device list: hexir.devices = ["cpu", "cuda"] (hexir-compile's --target list).
inline constexpr char kDevicesAttr[] = "hexir.devices";
}  // namespace hexir
