// The `hexir` dialect: dispatch regions, executables and dispatches on tensors.
#ifndef HEXIR_BASE_TD
#define HEXIR_BASE_TD

include "mlir/IR/OpBase.td"

def Hexir_Dialect : Dialect {
  let name = "hexir";
  let cppNamespace = "::hexir";
  let summary = "Dispatch regions, executables and dispatches of the Hexir compiler";
}

class Hexir_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hexir_Dialect, mnemonic, traits>;

#endif  // HEXIR_BASE_TD
