#ifndef HEXIR_OPS_TD
#define HEXIR_OPS_TD

include "dialects/hexir/IR/HexirBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "dialects/hexir/IR/HexirCollectiveOps.td"
include "dialects/hexir/IR/HexirShardingAttr.td"

def Hexir_DispatchRegionOp : Hexir_Op<"dispatch_region", [
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A region of tensor computation that becomes one kernel launch";
  let description = [{
    The body computes the results from values defined above (its captures). It is
    terminated by `hexir.yield`. `hexir-outline-dispatch-regions` turns each region into
    a `hexir.executable` and a `hexir.dispatch`.
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` `(` type($results)^ `)`)? $body attr-dict";
  let hasVerifier = 1;
}

def Hexir_YieldOp : Hexir_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["DispatchRegionOp", "ExecuteOp"]>]> {
  let summary = "Yields the results of a dispatch region or an execution region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Hexir_ExecutableOp : Hexir_Op<"executable", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator]> {
  let summary = "A kernel and its compiled forms";
  let description = [{
    Holds one `builtin.module` with one public kernel `func.func` named like the
    executable. Codegen lowers that module in place; serialization attaches
    `hexir.format` (string), `hexir.binary` (string of bytes), `hexir.entry` (string)
    and `hexir.workgroup_count` (array of 3 i64), or, for a count computed per call from
    the dispatch's shape, `hexir.workgroup_count_dynamic` (passes/codegen/WorkgroupCount.h).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let extraClassDeclaration = [{
    /// The module inside the body, or null.
    ::mlir::ModuleOp getInnerModule();
    /// Whether the codegen of `target` ("cpu", "cuda") compiles this executable: yes unless
    /// `hexir.target` (set by hexir-assign-executable-targets in a module of several
    /// targets) names another one.
    bool isCompiledFor(::llvm::StringRef target) {
      auto t = (*this)->getAttrOfType<::mlir::StringAttr>(::hexir::kTargetAttr);
      return !t || t.getValue() == target;
    }
  }];
}

def Hexir_DispatchOp : Hexir_Op<"dispatch", [AttrSizedOperandSegments, Pure]> {
  let summary = "Runs an executable's kernel on tensors";
  let description = [{
    Operands are the kernel's inputs (tensors, then scalars as they appear); results are
    freshly allocated tensors the kernel writes. `result_dims` are the dynamic dimensions
    of the results, in result order (host `index` values), so the host can size them.
    Pure: a kernel is a function of its operands that writes only its fresh results, so
    identical dispatches may be merged (CSE) and loop-invariant ones hoisted (LICM).
  }];
  let arguments = (ins FlatSymbolRefAttr:$executable, Variadic<AnyType>:$args,
                       Variadic<Index>:$resultDims);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $executable `(` $args `)` (`dims` `(` $resultDims^ `)`)? attr-dict `:`
    functional-type($args, $results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$results, "::mlir::FlatSymbolRefAttr":$executable,
                   "::mlir::ValueRange":$args), [{
      build($_builder, $_state, results, executable, args, ::mlir::ValueRange{});
    }]>
  ];
  let hasVerifier = 1;
}

def Hexir_CheckOp : Hexir_Op<"check", []> {
  let summary = "A host check the program relies on: traps with a message when it fails";
  let description = [{
    When `condition` is false at run time, the invocation fails (invalid_argument) with
    `message`, each `{}` in it replaced by the next of `values` (signed decimal); the VM
    prefixes the function name and offset. Materialized before dispatch formation by
    `hexir-insert-shape-checks` (equal dims, sizes that fit in 64 bits) and lowered by
    `hexir-convert-to-vm` to one `assert` instruction. It declares no memory effects
    interface on purpose: it must not be erased as dead, nor moved.

    ```mlir
    hexir.check %eq, "linalg.add: dimension 0 of operand 1 is {}, expected {} (operand 0)"(%d1, %d0) : index, index
    ```
  }];
  let arguments = (ins I1:$condition, StrAttr:$message, Variadic<AnySignlessIntegerOrIndex>:$values);
  let assemblyFormat = [{
    $condition `,` $message (`(` $values^ `)` `:` type($values))? attr-dict
  }];
}

//===-- schedule: execution regions, timepoints, barriers -------------------------------===//

def Hexir_ExecuteOp : Hexir_Op<"execute", [SingleBlock]> {
  let summary = "One execution region: the dispatches of one recorded command buffer";
  let description = [{
    Runs its body's `hexir.dispatch` ops and collectives (`hexir.all_reduce`, ...; or its
    one `hexir.transfer`, on the "transfer" queue) as one command buffer submitted to queue `queue`
    ("compute" or "transfer") of device `device` (a module device ordinal), after every
    timepoint of `awaits` is reached. The body may also hold host reshapes (tensor
    `expand_shape`, `collapse_shape`, `cast`: aliases, no commands) and `hexir.barrier`; it
    uses values from above and ends with `hexir.yield` of the tensors used after the region.
    Results: the yielded tensors, then the timepoint the region signals when it completes.
    A dispatch result that is not yielded (nor aliased by a yielded value) is *transient*:
    it lives only while the region runs. Without a `hexir.barrier` between them, two
    dispatches may run concurrently. A `func.call` of a function marked
    `hexir.records_into_caller` (passes/schedule/RecordedCalls.h) is a command too: the
    callee's one region is recorded into this region's command buffer at that point.

    ```mlir
    %r, %t = hexir.execute on(0, "compute") await(%t0) -> tensor<4xf32> {
      %a = hexir.dispatch @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
      hexir.barrier
      %b = hexir.dispatch @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
      hexir.yield %b : tensor<4xf32>
    }
    ```
    No memory-effects trait on purpose: a region is submitted work, never erased or merged.
  }];
  let arguments = (ins I64Attr:$device, StrAttr:$queue, Variadic<Hexir_TimepointType>:$awaits);
  let results = (outs Variadic<AnyRankedTensor>:$results, Hexir_TimepointType:$timepoint);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `on` `(` $device `,` $queue `)` (`await` `(` $awaits^ `)`)? (`->` type($results)^)?
    $body attr-dict
  }];
  let extraClassDeclaration = [{
    /// The terminator of the body.
    YieldOp getYield();
  }];
  let hasVerifier = 1;
}

def Hexir_TransferOp : Hexir_Op<"transfer", [Pure, AllTypesMatch<["source", "result"]>]> {
  let summary = "A copy of a tensor on device `from` into a new tensor on device `to`";
  let description = [{
    Inserted by `hexir-insert-transfers` where a value is read on another device than the
    one holding it; `hexir-form-execution-regions` gives each its own region on the
    transfer queue of `to`. A copy (`hal.device.queue.transfer`: a peer or staged copy in
    queue order, after everything queued on `from` before it) makes a new buffer on `to`.
    With `in_place` (devices that share memory: two CPU devices) nothing is copied: the
    result is the source's buffer, and `to`'s queue only waits for everything queued on
    `from` before it (`hal.device.queue.fence`). Pure: two transfers of one value to one
    device are one (CSE), an unread one is dead.

    ```mlir
    %y = hexir.transfer %x from(0) to(1) : tensor<4xf32>
    %z = hexir.transfer %x from(0) to(2) in_place : tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source, I64Attr:$from, I64Attr:$to, UnitAttr:$in_place);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $source `from` `(` $from `)` `to` `(` $to `)` (`in_place` $in_place^)? attr-dict `:` type($source)
  }];
}

def Hexir_BarrierOp : Hexir_Op<"barrier", [HasParent<"ExecuteOp">]> {
  let summary = "Inside an execution region: every command before completes before any after";
  let assemblyFormat = "attr-dict";
}

//===-- tensor globals: results computed once at load (hexir-lift-constant-dispatches) ---===//

def Hexir_GlobalOp : Hexir_Op<"global", [Symbol]> {
  let summary = "A host tensor that lives for the module instance (static shape)";
  let description = [{
    Written once by the initializer form (`hexir.initializer` functions, run by the VM
    module initializer after the constants are uploaded) and read by functions.
    `hexir-convert-to-vm` gives it one ref global.

    ```mlir
    hexir.global @w_t : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttr:$type);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
}

def Hexir_GlobalLoadOp : Hexir_Op<"global.load", [
    MemoryEffects<[MemRead]>, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a tensor global";
  let arguments = (ins FlatSymbolRefAttr:$global);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$global attr-dict `:` type($result)";
}

def Hexir_GlobalStoreOp : Hexir_Op<"global.store", [
    MemoryEffects<[MemWrite]>, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Writes a tensor global (an initializer form, or a function's parameter transforms)";
  let arguments = (ins AnyStaticShapeTensor:$value, FlatSymbolRefAttr:$global);
  let assemblyFormat = "$value `,` $global attr-dict `:` type($value)";
}

def Hexir_SameBufferOp : Hexir_Op<"same_buffer", [Pure, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Whether two host tensors are the same buffer (identity, not contents)";
  let description = [{
    True when `lhs` and `rhs` are one buffer object (both unset, e.g. a global never stored,
    count as the same). `hexir-lift-constant-dispatches` keys a function's parameter
    transforms on it: they run again only when a `hexir.parameter` argument is not the buffer
    they were computed from. Lowered to `cmp.eq.ref` on the two buffers.

    ```mlir
    %same = hexir.same_buffer %w, %key : tensor<64x27xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs I1:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}

#endif  // HEXIR_OPS_TD
