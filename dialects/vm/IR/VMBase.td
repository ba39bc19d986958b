// The `hexir_vm` dialect: the VM instructions of vm/isa.def at SSA level.
#ifndef HEXIR_VM_BASE_TD
#define HEXIR_VM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def VM_Dialect : Dialect {
  let name = "hexir_vm";
  let cppNamespace = "::hexir::vmir";
  let summary = "Hexir VM bytecode at SSA level (registers are assigned by the writer)";
  let useDefaultTypePrinterParser = 1;
}

class VM_Type<string name, string typeMnemonic> : TypeDef<VM_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def VM_RefType : VM_Type<"Ref", "ref"> {
  let summary = "a reference-counted object held in a ref register";
}

class VM_Op<string mnemonic, list<Trait> traits = []>
    : Op<VM_Dialect, mnemonic, traits>;

#endif  // HEXIR_VM_BASE_TD
