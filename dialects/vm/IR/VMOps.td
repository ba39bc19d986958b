#ifndef HEXIR_VM_OPS_TD
#define HEXIR_VM_OPS_TD

include "dialects/vm/IR/VMBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def VM_ConstI64Op : VM_Op<"const.i64", [Pure]> {
  let summary = "const.i64: V[a] = K";
  let arguments = (ins I64Attr:$value);
  let results = (outs I64:$result);
  let assemblyFormat = "$value attr-dict";
}

def VM_ConstF64Op : VM_Op<"const.f64", [Pure]> {
  let summary = "const.f64: V[a] = K (the bits of an f64)";
  let arguments = (ins F64Attr:$value);
  let results = (outs F64:$result);
  let assemblyFormat = "$value attr-dict";
}

def VM_TruncF64F32Op : VM_Op<"trunc.f64.f32", [Pure]> {
  let summary = "trunc.f64.f32: V[a] = zero-extended bits of (f32) V[b]";
  let arguments = (ins F64:$operand);
  let results = (outs I64:$result);
  let assemblyFormat = "$operand attr-dict";
}

def VM_NullRefOp : VM_Op<"null", [Pure]> {
  let summary = "a null ref (a ref register that holds nothing; no instruction)";
  let results = (outs VM_RefType:$result);
  let assemblyFormat = "attr-dict";
}

def VM_RodataOp : VM_Op<"rodata", [Pure]> {
  let summary = "rodata: R[a] = a vm.buffer aliasing a rodata segment";
  let description = [{
    The writer stores `data` (raw little-endian element bytes) as a 64-byte aligned
    rodata segment and emits `rodata` with its ordinal.
  }];
  let arguments = (ins ElementsAttr:$data);
  let results = (outs VM_RefType:$result);
  let assemblyFormat = "$data attr-dict";
}

def VM_CallImportOp : VM_Op<"call.import", []> {
  let summary = "call.import: calls import `callee` (a hal_imports.def name)";
  let description = [{
    The import's exact signature is derived from the operand and result types
    (i64 -> 'i', f64 -> 'f', !hexir_vm.ref -> 'r').
  }];
  let arguments = (ins StrAttr:$callee, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "$callee `(` $args `)` attr-dict `:` functional-type($args, $results)";
  let hasVerifier = 1;
}

def VM_ReturnOp : VM_Op<"return", [Pure, Terminator, ReturnLike]> {
  let summary = "return: returns the operands as the function's results";
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "($operands^ `:` type($operands))? attr-dict";
}

#endif  // HEXIR_VM_OPS_TD
