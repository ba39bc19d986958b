// hexir-partition: a function with `hexir.sharding` annotations becomes the program every rank
// runs (SPMD): its arguments and results are this rank's shards, its ops work on local shards
// and collectives are inserted where shardings change (GSPMD's approach).
//
// Propagation runs backward, then forward. Backward (BackwardHints.cpp): the splits the
// results' annotations and ops' own annotations ask of their producers, through linalg and
// elementwise ops. Forward, in program order: arguments start with their annotation
// (replicated when none); each op gets its sharding from the first rule that matches (one
// file per op family, Partitioner.h), which also converts its operands; an op's own
// `hexir.sharding` then converts its result. Results are converted to their annotation
// (replicated when none). Priority when annotations conflict: an op's annotation over what
// its operands imply; among operands, the layout needing the fewest collectives, then
// parallel splits before reductions, then operand order, then the split its consumers ask
// (LinalgRule.cpp).
//
//   func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x4xf32> {hexir.sharding = #hexir.sharding<split 1>})
//   ==> func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x?xf32> {...})  + a check that the
//       ranks divide 4 and that %w holds 4 / count columns; the matmul runs on 8x(4/N);
//       the result (replicated) is gathered.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/Passes.h"
#include "passes/partition/Partitioner.h"

namespace hexir {
#define GEN_PASS_DEF_PARTITION
#include "passes/Passes.h.inc"

namespace partition {
// RowParallelPipeline.cpp: the matmul annotation choosing its block count, removed here with
// the shardings once it served.
extern const char kCollectiveChunksAttr[];

namespace {

using Rule = FailureOr<bool> (*)(Operation*, Partitioner&);
constexpr Rule kRules[] = {&PartitionDim, &PartitionGather, &PartitionLinalg, &PartitionElementwise,
                           &PartitionReshape, &PartitionReplicated};

// The annotation of argument/result `what` of type `type`, verified; nullopt when absent.
FailureOr<std::optional<Sharding>> annotation(Operation* at, Attribute attr, Type type,
                                              const std::string& what, int64_t ranks) {
  if (!attr) return std::optional<Sharding>();
  auto sharding = dyn_cast<ShardingAttr>(attr);
  if (!sharding)
    return at->emitError("hexir.sharding on ") << what << " must be a #hexir.sharding, got " << attr;
  Sharding s = Sharding::fromAttr(sharding);
  if (s.isPartial())
    return at->emitError("hexir.sharding on ")
           << what << ": 'partial' is the partitioner's internal state, not an annotation";
  if (!s.isSplit()) return std::optional<Sharding>(s);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) return at->emitError("hexir.sharding on ") << what << ": split needs a ranked tensor, got " << type;
  if (s.dim >= tensor.getRank())
    return at->emitError("hexir.sharding on ") << what << ": split dimension " << s.dim
                                               << " is out of range for " << type;
  int64_t extent = tensor.getDimSize(s.dim);
  if (ranks > 0 && !ShapedType::isDynamic(extent) && extent % ranks != 0)
    return at->emitError("hexir.sharding on ") << what << ": dimension " << s.dim << " (" << extent
                                               << ") is not divisible by the " << ranks << " ranks";
  return std::optional<Sharding>(s);
}

bool hasAnnotations(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, kShardingAttr)) return true;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, kShardingAttr)) return true;
  return func.getBody()
      .walk([](Operation* op) {
        return op->hasAttr(kShardingAttr) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

LogicalResult partitionFunction(func::FuncOp func, int64_t ranks, bool explain, bool chunkByModel,
                                const PipelineRates& rates) {
  std::string name = "@" + func.getSymName().str();
  if (!func.getBody().hasOneBlock())
    return func.emitError("hexir-partition: ") << name << " has several blocks; only one-block "
                                                          "functions are partitioned";
  if (auto uses = SymbolTable::getSymbolUses(func, func->getParentOp()); uses && !uses->empty())
    return func.emitError("hexir-partition: ") << name << " is called from the module; its "
                                                          "shards would change the callers' types";
  SmallVector<Sharding> argShardings, resultShardings;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto s = annotation(func, func.getArgAttr(i, kShardingAttr), func.getArgumentTypes()[i],
                        "argument " + std::to_string(i) + " of " + name, ranks);
    if (failed(s)) return failure();
    argShardings.push_back(s->value_or(Sharding::replicated()));
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto s = annotation(func, func.getResultAttr(i, kShardingAttr), func.getResultTypes()[i],
                        "result " + std::to_string(i) + " of " + name, ranks);
    if (failed(s)) return failure();
    resultShardings.push_back(s->value_or(Sharding::replicated()));
  }

  Block* old = &func.front();
  Location loc = func.getLoc();
  OpBuilder b(func.getContext());
  Partitioner p(b, ranks);
  p.explain = explain;
  p.chunkByModel = chunkByModel;
  p.rates = rates;
  auto* fresh = new Block();
  func.getBody().push_front(fresh);
  for (auto [arg, s] : llvm::zip(old->getArguments(), argShardings)) {
    Type type = arg.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(type)) type = p.localType(tensor, s);
    fresh->addArgument(type, arg.getLoc());
  }
  b.setInsertionPointToStart(fresh);
  p.rank = ChannelRankOp::create(b, loc, b.getIndexType());
  p.count = ranks > 0 ? Value(arith::ConstantIndexOp::create(b, loc, ranks))
                      : Value(ChannelCountOp::create(b, loc, b.getIndexType()));
  // Each split argument: the ranks divide its extent and this rank got its share.
  for (auto [i, s] : llvm::enumerate(argShardings)) {
    Value arg = fresh->getArgument(i);
    p.map(old->getArgument(i), {arg, s});
    auto type = dyn_cast<RankedTensorType>(old->getArgument(i).getType());
    if (!s.isSplit() || !type || type.isDynamicDim(s.dim)) continue;
    std::string what = "dimension " + std::to_string(s.dim) + " of argument " + std::to_string(i) + " of " + name;
    Value extent = arith::ConstantIndexOp::create(b, loc, type.getDimSize(s.dim));
    FailureOr<Value> part = p.splitExtent(func, extent, what);
    if (failed(part)) return failure();
    if (!cast<RankedTensorType>(arg.getType()).isDynamicDim(s.dim)) continue;
    Value got = tensor::DimOp::create(b, loc, arg, s.dim);
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, got, *part);
    CheckOp::create(b, loc, ok, b.getStringAttr("hexir-partition: " + what + " is {} on this rank, expected {}"),
                    ValueRange{got, *part});
  }

  p.askBackwards(*old, resultShardings);
  for (Operation& op : old->without_terminator()) {
    for (Rule rule : kRules) {
      FailureOr<bool> r = rule(&op, p);
      if (failed(r)) return failure();
      if (*r) break;
    }
    auto pinned = op.getAttrOfType<ShardingAttr>(kShardingAttr);
    if (!pinned) continue;
    if (op.getNumResults() != 1)
      return op.emitError("hexir-partition: hexir.sharding on an op with ")
             << op.getNumResults() << " results (one expected)";
    auto s = annotation(&op, pinned, op.getResult(0).getType(), "the result of " + op.getName().getStringRef().str(), ranks);
    if (failed(s)) return failure();
    FailureOr<Value> local = p.reshard(&op, op.getResult(0), **s, "the result of " + op.getName().getStringRef().str());
    if (failed(local)) return failure();
    p.map(op.getResult(0), {*local, **s});
  }
  Operation* ret = old->getTerminator();
  SmallVector<Value> results;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    if (!isa<RankedTensorType>(v.getType())) {
      results.push_back(p.lookup(v).value);
      continue;
    }
    FailureOr<Value> local = p.reshard(ret, v, resultShardings[i], "result " + std::to_string(i) + " of " + name);
    if (failed(local)) return failure();
    results.push_back(*local);
  }
  func::ReturnOp::create(b, ret->getLoc(), results);

  old->dropAllDefinedValueUses();
  old->erase();
  func.setType(FunctionType::get(func.getContext(), fresh->getArgumentTypes(), ValueRange(results).getTypes()));
  // Whole-size tensors replaced by local ones, annotations that served.
  for (Operation& op : llvm::make_early_inc_range(llvm::reverse(*fresh))) {
    op.removeAttr(kShardingAttr);
    op.removeAttr(kCollectiveChunksAttr);
    if (isOpTriviallyDead(&op)) op.erase();
  }
  return success();
}

struct PartitionPass : impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;
  void runOnOperation() override {
    if (ranks < 0) {
      getOperation().emitError("hexir-partition: ranks must be >= 0 (0: read at run time), got ") << int64_t(ranks);
      return signalPassFailure();
    }
    const PipelineRates rates{matmulGFlops, collectiveGBps, blockMicroseconds};
    for (auto [name, value] : {std::pair{"matmul-gflops", rates.matmulGFlops},
                               std::pair{"collective-gbps", rates.collectiveGBps},
                               std::pair{"block-us", rates.blockMicroseconds}}) {
      if (!(value > 0 && value < 1e12)) {
        getOperation().emitError("hexir-partition: ") << name << " must be a positive number, got " << value;
        return signalPassFailure();
      }
    }
    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      if (func.isExternal() || !hasAnnotations(func)) continue;
      if (failed(partitionFunction(func, ranks, explain, chunkByModel, rates))) return signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace partition
}  // namespace hexir
