// The `hexir` dialect: dispatch regions, executables, dispatches on tensors, and the
// schedule (execution regions, timepoints, barriers).
#ifndef HEXIR_BASE_TD
#define HEXIR_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Hexir_Dialect : Dialect {
  let name = "hexir";
  let cppNamespace = "::hexir";
  let summary = "Dispatch regions, executables, dispatches and the schedule of the Hexir compiler";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerShardingAttr();  // HexirShardingAttr.cpp
  }];
}

def Hexir_TimepointType : TypeDef<Hexir_Dialect, "Timepoint"> {
  let mnemonic = "timepoint";
  let summary = "a point on a device queue's timeline: reached when an execution region completes";
}

class Hexir_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hexir_Dialect, mnemonic, traits>;

#endif  // HEXIR_BASE_TD
