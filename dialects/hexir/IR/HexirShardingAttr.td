// How a tensor is laid out over the ranks of the device's channel (passes/partition).
#ifndef HEXIR_SHARDING_ATTR_TD
#define HEXIR_SHARDING_ATTR_TD

include "dialects/hexir/IR/HexirBase.td"

def Hexir_ShardingAttr : AttrDef<Hexir_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "replicated, split along one dimension over the ranks, or a partial sum";
  let description = [{
    `#hexir.sharding<replicated>`: every rank holds the whole tensor.
    `#hexir.sharding<split D>`: rank r holds the r-th of N equal parts along dimension D.
    `#hexir.sharding<partial>`: every rank holds a tensor of the whole shape; the value is
    their elementwise sum (the partitioner's internal state after a split contraction).
    Written as `hexir.sharding` on function arguments, results and ops (their result).
  }];
  let parameters = (ins "::hexir::ShardingKind":$kind, "int64_t":$dim);
  let hasCustomAssemblyFormat = 1;
}

#endif  // HEXIR_SHARDING_ATTR_TD
