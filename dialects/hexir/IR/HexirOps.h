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

#include "dialects/hexir/IR/HexirAttributes.h"

#include "dialects/hexir/IR/HexirOpsDialect.h.inc"

namespace hexir {
// The three layouts of a tensor over a channel's ranks (HexirShardingAttr.td).
enum class ShardingKind : uint8_t { Replicated, Split, Partial };
}  // namespace hexir

#define GET_ATTRDEF_CLASSES
#include "dialects/hexir/IR/HexirOpsAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hexir/IR/HexirOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/hexir/IR/HexirOps.h.inc"

namespace hexir {
// A collective op (HexirCollectiveOps.td) as a hal/channel.h command: what the scheduling
// and VM lowering passes need without switching over the ops.
struct CollectiveView {
  llvm::StringRef kind;       // hal/channel.h spelling: "all_reduce", ..., "recv"
  llvm::StringRef reduction;  // "sum" (also for the kinds that do not reduce), "max", ...
  mlir::Value send;           // the tensor sent, or null (recv)
  mlir::Value recv;           // the tensor received (the op's result), or null (send)
  mlir::Value peer;           // send/recv: the peer rank (index), else null
  int64_t root = 0;           // broadcast: the root rank
  int64_t ranks = 0;          // all_gather/reduce_scatter: the ranks the types assume, else 0
};
// The view of `op` when it is a collective, else nullopt.
std::optional<CollectiveView> GetCollective(mlir::Operation* op);
}  // namespace hexir
