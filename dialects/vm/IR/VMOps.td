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


def VM_InstOp : VM_Op<"inst", [NoMemoryEffect,
                                DeclareOpInterfaceMethods<ConditionallySpeculatable>]> {
  let summary = "any value-register-only instruction of vm/isa.def, named by its mnemonic";
  let description = [{
    For instructions whose operand string is all `V` (results first): `add.i64`,
    `cmp.lt.s.i64`, `select.i64`, `cast.si64.f64`, ... The writer looks the mnemonic up
    in the ISA table; the verifier checks that it exists and that the counts match.
    No memory effects; speculatable except integer division and remainder (`div.*`,
    `rem.*` but not `.f64`), which trap on a zero divisor, so generic passes (LICM,
    CSE's hoisting) never move them to where they would run unguarded; a 64-bit one whose
    divisor is a positive constant or `max.s.i64` with one (shape arithmetic) is
    speculatable.
  }];
  let arguments = (ins StrAttr:$mnemonic, Variadic<AnyTypeOf<[I64, F64]>>:$operands);
  let results = (outs Variadic<AnyTypeOf<[I64, F64]>>:$results);
  let assemblyFormat = "$mnemonic `(` $operands `)` attr-dict `:` functional-type($operands, $results)";
  let hasVerifier = 1;
}

def VM_GlobalLoadRefOp : VM_Op<"global.load.ref", []> {
  let summary = "global.load.ref: R[a] = ref global G (retained)";
  let arguments = (ins I64Attr:$global);
  let results = (outs VM_RefType:$result);
  let assemblyFormat = "$global attr-dict";
}

def VM_GlobalStoreRefOp : VM_Op<"global.store.ref", []> {
  let summary = "global.store.ref: ref global G = R[a]";
  let arguments = (ins VM_RefType:$value, I64Attr:$global);
  let assemblyFormat = "$value `,` $global attr-dict";
}

def VM_GlobalLoadI64Op : VM_Op<"global.load.i64", []> {
  let summary = "global.load.i64: V[a] = value global G";
  let arguments = (ins I64Attr:$global);
  let results = (outs I64:$result);
  let assemblyFormat = "$global attr-dict";
}

def VM_GlobalStoreI64Op : VM_Op<"global.store.i64", []> {
  let summary = "global.store.i64: value global G = V[a]";
  let arguments = (ins I64:$value, I64Attr:$global);
  let assemblyFormat = "$value `,` $global attr-dict";
}

def VM_RefIsNullOp : VM_Op<"ref.is_null", [Pure]> {
  let summary = "ref.is_null: V[a] = R[b] is null";
  let arguments = (ins VM_RefType:$operand);
  let results = (outs I64:$result);
  let assemblyFormat = "$operand attr-dict";
}

def VM_CmpEqRefOp : VM_Op<"cmp.eq.ref", [Pure]> {
  let summary = "cmp.eq.ref: V[a] = R[b] and R[c] are the same object (or both null)";
  let arguments = (ins VM_RefType:$lhs, VM_RefType:$rhs);
  let results = (outs I64:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict";
}

def VM_CallOp : VM_Op<"call", []> {
  let summary = "call: calls an internal function of this module";
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "$callee `(` $args `)` attr-dict `:` functional-type($args, $results)";
}

def VM_BrOp : VM_Op<"br", [Pure, Terminator,
    DeclareOpInterfaceMethods<BranchOpInterface, ["getSuccessorForOperands"]>]> {
  let summary = "br: copies the block arguments, jumps";
  let arguments = (ins Variadic<AnyType>:$destOperands);
  let successors = (successor AnySuccessor:$dest);
  let assemblyFormat = "$dest (`(` $destOperands^ `:` type($destOperands) `)`)? attr-dict";
}

def VM_CondBrOp : VM_Op<"cond_br", [Pure, Terminator, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<BranchOpInterface, ["getSuccessorForOperands"]>]> {
  let summary = "cond_br: V[a] != 0 ? true destination : false destination";
  let arguments = (ins I64:$condition, Variadic<AnyType>:$trueOperands,
                       Variadic<AnyType>:$falseOperands);
  let successors = (successor AnySuccessor:$trueDest, AnySuccessor:$falseDest);
  let assemblyFormat = [{
    $condition `,` $trueDest (`(` $trueOperands^ `:` type($trueOperands) `)`)? `,`
    $falseDest (`(` $falseOperands^ `:` type($falseOperands) `)`)? attr-dict
  }];
}

def VM_AssertOp : VM_Op<"assert", []> {
  let summary = "assert: traps (invalid_argument) when `condition` is 0, else falls through";
  let description = [{
    The trap's message is `message` with each `{}` replaced by the next of `values`
    (signed decimal). No side effects are declared on purpose: the op must survive CSE/DCE.
  }];
  let arguments = (ins I64:$condition, StrAttr:$message, Variadic<I64>:$values);
  let assemblyFormat = "$condition `,` $message (`(` $values^ `)`)? attr-dict";
}

def VM_FailOp : VM_Op<"fail", [Terminator]> {
  let summary = "fail: aborts the invocation with status code V[a] and a message";
  let arguments = (ins I64:$code, StrAttr:$message);
  let assemblyFormat = "$code `,` $message attr-dict";
}

#endif  // HEXIR_VM_OPS_TD
