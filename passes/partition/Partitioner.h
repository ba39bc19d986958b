// The state of hexir-partition while it rewrites one function into its SPMD form: every value
// of the original (global) body maps to a value of the new body on this rank (its local
// shard) and to the sharding that says what that shard is. Rules (one file each) rewrite one
// op family; Resharding.cpp converts a local value between shardings with collectives or
// local slices.
//
// Contract: a value's local type is its global type with the split dimension divided by the
// rank count (static when `ranks` is known at compile time and the dimension is static,
// else dynamic); a partial value has the global type and becomes the global value by a
// reduction over the ranks (sum, max or min). Scalars are always replicated.
#pragma once

#include <string>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Operation.h"

namespace hexir::partition {
using namespace mlir;

// Replicated, split along `dim`, or partial (a reduction over ranks pending: a partial value's
// `dim` holds hal/channel.h's ReductionOp code, sum (0) for partial(); LinalgRule.cpp makes
// max and min, Resharding.cpp reads it back).
struct Sharding {
  ShardingKind kind = ShardingKind::Replicated;
  int64_t dim = 0;

  static Sharding replicated() { return {}; }
  static Sharding split(int64_t d) { return {ShardingKind::Split, d}; }
  static Sharding partial() { return {ShardingKind::Partial, 0}; }
  bool isReplicated() const { return kind == ShardingKind::Replicated; }
  bool isSplit() const { return kind == ShardingKind::Split; }
  bool isPartial() const { return kind == ShardingKind::Partial; }
  bool operator==(const Sharding& o) const {
    return kind == o.kind && (kind != ShardingKind::Split || dim == o.dim);
  }
  bool operator!=(const Sharding& o) const { return !(*this == o); }
  ShardingAttr toAttr(MLIRContext* ctx) const { return ShardingAttr::get(ctx, kind, dim); }
  static Sharding fromAttr(ShardingAttr a) { return {a.getKind(), a.getDim()}; }
  std::string str() const;
};

// A value of the new body and what it holds of the global value.
// The row-parallel pipeline's cost model rates (RowParallelPipeline.cpp): what one rank's
// matmul computes per second, what its all_reduce moves per second (each byte counted twice:
// a ring sends and receives about twice the data), and what every block adds (a dispatch, a
// collective, a copy into the result). Defaults are estimates; measured ones come from
// bench/collective_pipeline/run.sh (hexir-compile --matmul-gflops, --collective-gbps,
// --collective-block-us).
struct PipelineRates {
  double matmulGFlops = 20;
  double collectiveGBps = 4;
  double blockMicroseconds = 40;
};

struct Local {
  Value value;
  Sharding sharding;
};

class Partitioner {
 public:
  // `ranks` > 0: the group size is known at compile time; 0: read from the channel.
  Partitioner(OpBuilder& builder, int64_t ranks) : b(builder), ranks(ranks) {}

  OpBuilder& b;
  const int64_t ranks;
  Value rank;   // hexir.channel.rank, created at the function's entry
  Value count;  // hexir.channel.count, or the constant `ranks`

  // The local value of a global one (every value of the original body once rewritten).
  const Local& lookup(Value global) const;
  void map(Value global, Local local) { locals[global] = local; }
  // The local value of `global` with the sharding `to` (collectives or a slice inserted
  // when the shardings differ). `what` names the value in run-time errors. Fails (with a
  // diagnostic at `user`) when a static dimension does not divide by a known rank count.
  FailureOr<Value> reshard(Operation* user, Value global, Sharding to, const std::string& what);
  // How many collectives reshard(global, to) inserts (a slice of a replicated value is free).
  int collectivesFor(Value global, Sharding to) const;

  // The local type of a global tensor type under `s`.
  RankedTensorType localType(RankedTensorType global, Sharding s) const;
  // Size of dimension `d` of the global value, from its local value.
  Value globalDim(Location loc, Value global, int64_t d);
  // The local extent of a split dimension of global extent `extent`, with the check that
  // the ranks divide it (message: `what` names the dimension).
  FailureOr<Value> splitExtent(Operation* user, Value extent, const std::string& what);

  // The values `op` uses that are defined outside it (its operands and those its regions
  // capture), mapped to their local values as replicated (`keep`: to its local value as is).
  FailureOr<IRMapping> replicatedMapping(Operation* op, Value keep = {});

  // Backward propagation (BackwardHints.cpp): before the forward rewrite, the splits that
  // `body`'s consumers ask of their producers, from the results' shardings and ops'
  // annotations. hint(v) is the split asked of v (replicated when none); a rule takes it as
  // a candidate after the operands' splits and before replicated.
  void askBackwards(Block& body, ArrayRef<Sharding> resultShardings);
  Sharding hint(Value v) const;
  void ask(Value v, Sharding s);

  // Why a rule did not match `op` (kept for `explain`: remarks naming the op and the reason).
  bool notMatched(Operation* op, const Twine& reason);
  bool explain = false;
  // Row-parallel pipeline (RowParallelPipeline.cpp): chunk unannotated matmuls as the cost
  // model says (false: only those with hexir.collective_chunks), with these rates.
  bool chunkByModel = false;
  PipelineRates rates;

 private:
  Value zerosLike(Location loc, Value global);
  Value freshLocal(Location loc, Value local, int64_t d, Value extent);
  DenseMap<Value, Local> locals;
  DenseMap<Value, Sharding> hints;
};

// Reshapes (ReshapeRule.cpp, also asked backwards): the group of `reassociation` holding
// dimension `dim` of the expanded `shape`, and whether only extents of 1 precede `dim` in it
// (then a split of `dim` is a split of the group); the member of `group` a split of the group
// lands on in the expanded `shape` (its first extent other than 1).
std::pair<int64_t, bool> SplitGroupOf(ArrayRef<ReassociationIndices> reassociation, ArrayRef<int64_t> shape,
                                      int64_t dim);
int64_t SplitMemberOf(const ReassociationIndices& group, ArrayRef<int64_t> shape);

// The rules, tried in this order by Partition.cpp; each returns failure after a diagnostic,
// false when `op` is not its (reason given to notMatched), true when rewritten.
FailureOr<bool> PartitionDim(Operation* op, Partitioner& p);          // tensor.dim
FailureOr<bool> PartitionGather(Operation* op, Partitioner& p);       // lookups in a split table
FailureOr<bool> PartitionLinalg(Operation* op, Partitioner& p);       // linalg structured ops
FailureOr<bool> PartitionElementwise(Operation* op, Partitioner& p);  // arith/math on tensors
FailureOr<bool> PartitionReshape(Operation* op, Partitioner& p);      // expand/collapse_shape
FailureOr<bool> PartitionReplicated(Operation* op, Partitioner& p);   // everything else

}  // namespace hexir::partition
