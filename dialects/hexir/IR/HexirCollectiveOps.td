// Collectives on tensors: every rank of the device's channel (hal/channel.h) runs the same
// program (SPMD) and these ops exchange data between the ranks. Each is one command of an
// execution region (hal.command_buffer.collective_slots), ordered like a dispatch by the
// buffers it reads and writes; collectives keep their program order among themselves.
// Element counts follow hal/channel.h (NCCL's semantics); all_gather and reduce_scatter
// concatenate / split along dimension 0, so the ratio of the two dim 0 sizes is the number
// of ranks the program was written for (checked against the channel at run time).
#ifndef HEXIR_COLLECTIVE_OPS_TD
#define HEXIR_COLLECTIVE_OPS_TD

include "dialects/hexir/IR/HexirBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Not Pure: a collective is communication every rank must take part in, in the same order;
// it is never erased, merged or hoisted.
class Hexir_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Hexir_Op<mnemonic, traits # [MemoryEffects<[MemRead, MemWrite]>]> {
  let hasVerifier = 1;
}

def Hexir_AllReduceOp : Hexir_CollectiveOp<"all_reduce", [AllTypesMatch<["source", "result"]>]> {
  let summary = "Every rank gets the elementwise sum/max/min/prod of all ranks' tensors";
  let description = [{
    ```mlir
    %s = hexir.all_reduce "sum" %x : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$reduction, AnyRankedTensor:$source);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$reduction $source attr-dict `:` type($source)";
}

def Hexir_AllGatherOp : Hexir_CollectiveOp<"all_gather"> {
  let summary = "Concatenates every rank's tensor along dimension 0, in rank order";
  let description = [{
    The result's dim 0 is N times the source's (N ranks, both static); other dims equal.

    ```mlir
    %g = hexir.all_gather %x : tensor<2x8xf32> -> tensor<8x8xf32>   // 4 ranks
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
}

def Hexir_ReduceScatterOp : Hexir_CollectiveOp<"reduce_scatter"> {
  let summary = "Reduces all ranks' tensors and gives rank r the r-th part of dimension 0";
  let description = [{
    The source's dim 0 is N times the result's (N ranks, both static); other dims equal.
    A dynamic result dim 0 serves any rank count: it is the source's dim 0 divided by the
    channel's count, which must divide it (checked at run time, naming both).

    ```mlir
    %p = hexir.reduce_scatter "max" %x : tensor<8xf32> -> tensor<2xf32>   // 4 ranks
    %q = hexir.reduce_scatter "sum" %y : tensor<?x4xf32> -> tensor<?x4xf32>  // any count
    ```
  }];
  let arguments = (ins StrAttr:$reduction, AnyRankedTensor:$source);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$reduction $source attr-dict `:` type($source) `->` type($result)";
}

def Hexir_BroadcastOp : Hexir_CollectiveOp<"broadcast", [AllTypesMatch<["source", "result"]>]> {
  let summary = "Every rank gets rank `root`'s tensor";
  let arguments = (ins AnyRankedTensor:$source, I64Attr:$root);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$source `root` `(` $root `)` attr-dict `:` type($source)";
}

def Hexir_SendOp : Hexir_CollectiveOp<"send"> {
  let summary = "Sends a tensor to rank `peer` (paired in order with its hexir.recv there)";
  let arguments = (ins AnyRankedTensor:$source, Index:$peer);
  let assemblyFormat = "$source `to` $peer attr-dict `:` type($source)";
}

def Hexir_RecvOp : Hexir_CollectiveOp<"recv"> {
  let summary = "Receives a tensor (static shape) from rank `peer`";
  let arguments = (ins Index:$peer);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "`from` $peer attr-dict `:` type($result)";
}

def Hexir_ChannelRankOp : Hexir_Op<"channel.rank", [Pure]> {
  let summary = "This process's rank in the device's channel, in [0, count)";
  let description = [{
    Read from the channel at run time (`hal.channel.rank`), never baked into the module, so
    one module serves every rank.
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Hexir_ChannelCountOp : Hexir_Op<"channel.count", [Pure]> {
  let summary = "The number of ranks of the device's channel (the world size)";
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

#endif  // HEXIR_COLLECTIVE_OPS_TD
