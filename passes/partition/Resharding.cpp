// Conversions of a local value between shardings (the only place hexir-partition inserts
// communication):
//
//   partial    -> replicated : hexir.all_reduce of the partial's reduction (sum, max, min); a
//                              row-parallel matmul's sum as a pipeline of row blocks where
//                              that pays (RowParallelPipeline.cpp)
//   split d    -> replicated : hexir.all_gather (d = 0, static shapes, rank count known), else
//                              the shard inserted at rank * extent into zeros + all_reduce "sum"
//                              (the collective ops concatenate along dimension 0 with a rank
//                              count fixed in their types; this form serves any count)
//   replicated -> split d    : tensor.extract_slice at rank * (extent / count), no communication
//                              (a tensor.empty or its linalg.fill is created at the local size)
//   partial    -> split d    : hexir.reduce_scatter of the partial's reduction: each rank
//                              receives only its part, reduced (the collective scatters
//                              dimension 0, so a d with extents other than 1 before it is
//                              transposed to the front and back); with a rank count read at
//                              run time or a dynamic extent the part's extent is dynamic
//                              (extent / count, checked to divide like a slice)
//   split d    -> split e    : to replicated, then the slice
//
// A split of a static extent that the ranks do not divide fails at compile time when the
// rank count is known, else at run time with a hexir.check naming the dimension.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "hal/channel.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {

// RowParallelPipeline.cpp: the replicated value of `partial` (the local value of `global`,
// a partial sum) as row blocks of its matmul, each all_reduced while the next computes; null
// when the matmul is not chunked.
// Unannotated matmuls are chunked only with `byModel` (the cost model's block count at
// `rates`, stated in a remark on the matmul).
FailureOr<Value> PipelinedAllReduce(OpBuilder& b, Operation* user, Value global, Value partial,
                                    bool byModel, const PipelineRates& rates);

namespace {

// The reduction of a partial value: its Sharding's dim (unused by partial values) holds
// hal/channel.h's ReductionOp code (sum 0: Sharding::partial(); LinalgRule.cpp makes max
// and min), spelled as the collectives spell it.
StringRef partialReduction(Sharding s) {
  return hal::ReductionName(static_cast<hal::ReductionOp>(s.dim));
}

}  // namespace

std::string Sharding::str() const {
  switch (kind) {
    case ShardingKind::Replicated: return "replicated";
    case ShardingKind::Partial: return "partial " + partialReduction(*this).str();
    case ShardingKind::Split: return "split " + std::to_string(dim);
  }
  return "?";
}

const Local& Partitioner::lookup(Value global) const {
  auto it = locals.find(global);
  assert(it != locals.end() && "every value is rewritten before its uses");
  return it->second;
}

bool Partitioner::notMatched(Operation* op, const Twine& reason) {
  if (explain) op->emitRemark() << "hexir-partition: " << reason;
  return false;
}

RankedTensorType Partitioner::localType(RankedTensorType global, Sharding s) const {
  if (!s.isSplit()) return global;
  SmallVector<int64_t> shape(global.getShape());
  int64_t& extent = shape[s.dim];
  bool divides = ranks > 0 && !ShapedType::isDynamic(extent) && extent % ranks == 0;
  extent = divides ? extent / ranks : ShapedType::kDynamic;
  return global.clone(shape);
}

Value Partitioner::globalDim(Location loc, Value global, int64_t d) {
  auto type = cast<RankedTensorType>(global.getType());
  if (!type.isDynamicDim(d)) return arith::ConstantIndexOp::create(b, loc, type.getDimSize(d));
  const Local& local = lookup(global);
  Value extent = tensor::DimOp::create(b, loc, local.value, d);
  if (local.sharding.isSplit() && local.sharding.dim == d)
    extent = arith::MulIOp::create(b, loc, extent, count);
  return extent;
}

FailureOr<Value> Partitioner::splitExtent(Operation* user, Value extent, const std::string& what) {
  Location loc = user->getLoc();
  std::optional<int64_t> known = getConstantIntValue(extent);
  if (ranks > 0 && known) {
    if (*known % ranks != 0)
      return user->emitError("hexir-partition: ")
             << what << " (" << *known << ") is not divisible by the " << ranks << " ranks";
    return b.createOrFold<arith::ConstantIndexOp>(loc, *known / ranks);
  }
  Value rem = arith::RemUIOp::create(b, loc, extent, count);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, zero);
  CheckOp::create(b, loc, ok,
                  b.getStringAttr("hexir-partition: " + what + " ({}) is not divisible by the {} ranks"),
                  ValueRange{extent, count});
  return b.createOrFold<arith::DivUIOp>(loc, extent, count);
}

int Partitioner::collectivesFor(Value global, Sharding to) const {
  Sharding from = lookup(global).sharding;
  return from != to && !from.isReplicated() ? 1 : 0;
}

// A tensor.empty (or a linalg.fill of one) created at the local size instead of sliced.
Value Partitioner::freshLocal(Location loc, Value local, int64_t d, Value extent) {
  auto fill = local.getDefiningOp<linalg::FillOp>();
  Value empty = fill ? fill.getOutputs()[0] : local;
  auto emptyOp = empty.getDefiningOp<tensor::EmptyOp>();
  if (!emptyOp) return {};
  SmallVector<OpFoldResult> sizes = emptyOp.getMixedSizes();
  sizes[d] = getAsOpFoldResult(extent);
  Value shard = tensor::EmptyOp::create(b, loc, sizes, emptyOp.getType().getElementType());
  if (!fill) return shard;
  return linalg::FillOp::create(b, loc, fill.getInputs()[0], shard).getResult(0);
}

Value Partitioner::zerosLike(Location loc, Value global) {
  auto type = cast<RankedTensorType>(global.getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(getAsOpFoldResult(globalDim(loc, global, d)));
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

// hexir.reduce_scatter of `partial` (`reduction`) into its split along `d`, whose local extent
// is `part` (the divisibility already checked). The collective scatters along dimension 0:
// another dimension d is moved there first and back after (two local transposes), unless
// every dimension before d is 1 (same layout).
static Value scatterReduced(OpBuilder& b, Location loc, Value partial, StringRef reduction,
                            int64_t d, Value part) {
  auto type = cast<RankedTensorType>(partial.getType());
  std::optional<int64_t> known = getConstantIntValue(part);
  auto scattered = [&](RankedTensorType t, int64_t at) {
    SmallVector<int64_t> shape(t.getShape());
    shape[at] = known ? *known : ShapedType::kDynamic;
    return t.clone(shape);
  };
  if (llvm::all_of(type.getShape().take_front(d), [](int64_t e) { return e == 1; })) {
    if (d == 0) return ReduceScatterOp::create(b, loc, scattered(type, 0), reduction, partial);
    // 1x..xNx.. as Nx..: the rows of the collapsed form are the split dimension's.
    SmallVector<ReassociationIndices> groups(1);
    for (int64_t i = 0; i <= d; ++i) groups[0].push_back(i);
    for (int64_t i = d + 1; i < type.getRank(); ++i) groups.push_back({i});
    Value flat = tensor::CollapseShapeOp::create(b, loc, partial, groups);
    Value scatteredFlat = ReduceScatterOp::create(
        b, loc, scattered(cast<RankedTensorType>(flat.getType()), 0), reduction, flat);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, partial);
    sizes[d] = getAsOpFoldResult(part);
    return tensor::ExpandShapeOp::create(b, loc, scattered(type, d), scatteredFlat, groups, sizes);
  }
  SmallVector<int64_t> toFront{d}, back;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (i != d) toFront.push_back(i);
  // Result dimension i of the way back is dimension back[i] of the front-first form.
  for (int64_t i = 0; i < type.getRank(); ++i) back.push_back(i == d ? 0 : (i < d ? i + 1 : i));
  auto transpose = [&](Value v, ArrayRef<int64_t> perm) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v), permuted;
    for (int64_t p : perm) permuted.push_back(sizes[p]);
    Value init = tensor::EmptyOp::create(b, loc, permuted,
                                         cast<RankedTensorType>(v.getType()).getElementType());
    return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
  };
  Value front = transpose(partial, toFront);
  Value scatteredFront = ReduceScatterOp::create(
      b, loc, scattered(cast<RankedTensorType>(front.getType()), 0), reduction, front);
  return transpose(scatteredFront, back);
}

FailureOr<Value> Partitioner::reshard(Operation* user, Value global, Sharding to,
                                      const std::string& what) {
  Local from = lookup(global);
  if (from.sharding == to) return from.value;
  if (to.isPartial()) return user->emitError("hexir-partition: no conversion to a partial value");
  Location loc = user->getLoc();
  auto globalType = cast<RankedTensorType>(global.getType());
  Value v = from.value;
  if (from.sharding.isPartial() && to.isSplit()) {  // one collective: each rank its part, reduced
    FailureOr<Value> part = splitExtent(user, globalDim(loc, global, to.dim),
                                        "dimension " + std::to_string(to.dim) + " of " + what);
    if (failed(part)) return failure();
    return scatterReduced(b, loc, v, partialReduction(from.sharding), to.dim, *part);
  }
  if (from.sharding.isPartial() && partialReduction(from.sharding) == "sum" && to.isReplicated()) {
    FailureOr<Value> pipelined = PipelinedAllReduce(b, user, global, v, chunkByModel, rates);
    if (failed(pipelined)) return failure();
    if (*pipelined) return *pipelined;
  }
  if (from.sharding.isPartial()) {
    v = AllReduceOp::create(b, loc, v.getType(), partialReduction(from.sharding), v);
  } else if (from.sharding.isSplit()) {
    int64_t d = from.sharding.dim;
    auto localType = cast<RankedTensorType>(v.getType());
    if (ranks > 0 && d == 0 && globalType.hasStaticShape() && localType.hasStaticShape()) {
      v = AllGatherOp::create(b, loc, globalType, v);
    } else {
      Value zeros = zerosLike(loc, global);
      SmallVector<OpFoldResult> offsets(globalType.getRank(), b.getIndexAttr(0));
      Value extent = b.createOrFold<tensor::DimOp>(loc, v, d);
      offsets[d] = getAsOpFoldResult(b.createOrFold<arith::MulIOp>(loc, rank, extent));
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
      SmallVector<OpFoldResult> strides(globalType.getRank(), b.getIndexAttr(1));
      Value placed = tensor::InsertSliceOp::create(b, loc, v, zeros, offsets, sizes, strides);
      v = AllReduceOp::create(b, loc, placed.getType(), "sum", placed);
    }
  }
  if (to.isReplicated()) return v;
  // replicated -> split to.dim: this rank's part.
  int64_t d = to.dim;
  Value extent = globalDim(loc, global, d);
  FailureOr<Value> part = splitExtent(
      user, extent, "dimension " + std::to_string(d) + " of " + what);
  if (failed(part)) return failure();
  if (Value fresh = freshLocal(loc, v, d, *part)) return fresh;
  SmallVector<OpFoldResult> offsets(globalType.getRank(), b.getIndexAttr(0));
  offsets[d] = getAsOpFoldResult(b.createOrFold<arith::MulIOp>(loc, rank, *part));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  sizes[d] = getAsOpFoldResult(*part);
  SmallVector<OpFoldResult> strides(globalType.getRank(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, v, offsets, sizes, strides).getResult();
}

FailureOr<IRMapping> Partitioner::replicatedMapping(Operation* op, Value keep) {
  llvm::SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
  getUsedValuesDefinedAbove(op->getRegions(), used);
  IRMapping mapping;
  for (Value v : used) {
    if (!isa<RankedTensorType>(v.getType()) || v == keep) {
      mapping.map(v, lookup(v).value);
      continue;
    }
    FailureOr<Value> local = reshard(op, v, Sharding::replicated(),
                                     "an operand of " + op->getName().getStringRef().str());
    if (failed(local)) return failure();
    mapping.map(v, *local);
  }
  return mapping;
}

}  // namespace hexir::partition
