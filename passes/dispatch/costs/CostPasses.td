// Dispatch cost annotation (bytes, FLOPs, matmul shapes) for hexir-bench. Separate from
// passes/Passes.td so that it builds as its own small library.
#ifndef HEXIR_COST_PASSES_TD
#define HEXIR_COST_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateDispatchCosts : Pass<"hexir-annotate-dispatch-costs", "mlir::ModuleOp"> {
  let summary = "Records bytes read/written, FLOPs and matmul shapes of each executable";
  let description = [{
    Runs on outlined executables before codegen (their kernels are still linalg on tensors).
    For executable E it sets `hexir.costs` (a dictionary of strings) with keys
    `cost.E.bytes_read` (tensor inputs), `cost.E.bytes_written` (results), `cost.E.flops`
    (iteration points x arithmetic ops of each linalg body; casts, constants and yields are
    free), `cost.E.ops` (the linalg op names), and for a dispatch holding a contraction
    `cost.E.matmul` = "M=..,N=..,K=..,B=..,lhs=T,rhs=T,out=T". A dynamic extent makes the
    value "?" and adds `<key>.formula`: a sum of products over symbols `aIdJ` (dimension J
    of kernel argument I).
  }];
}

def AttachDispatchCosts : Pass<"hexir-attach-dispatch-costs", "mlir::ModuleOp"> {
  let summary = "Moves hexir.costs into the executable's hexir.attrs (copied into the .vmfb)";
  let description = [{
    Runs after serialization (which may replace `hexir.attrs`): merges each executable's
    `hexir.costs` entries into `hexir.attrs` and drops `hexir.costs`.
  }];
}

#endif
