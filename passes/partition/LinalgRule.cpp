// Linalg structured ops (matmul, batch_matmul, transpose, elementwise and broadcasting
// generics, reductions, gathers through tensor.extract in the body): the op is split along
// at most one loop L, read from its indexing maps.
//
//   operand (or captured tensor read with tensor.extract) whose map has L at position p:
//       split p;  one without L (broadcast along L): replicated
//   L parallel  -> result split at L's position in the output map
//   L reduction -> result partial (allowed when the body adds into the output and the
//                  output starts at zero: every rank sums its part of L; or when it takes
//                  the max or min of the output and a value, from any start: max and min
//                  are idempotent, so every rank may start from the same value)
//
//   %c = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z ...)
//        (%a replicated, %b split 0: loop k)
//   ==> %a1 = tensor.extract_slice %a[0, rank * 16/N] [8, 16/N] [1, 1]
//       %c = linalg.matmul ins(%a1, %b_local) outs(%z)            (%c partial)
//
// Candidates for L: the loop of each split operand's dimension (operand order, then
// captured tensors), then the parallel loop giving a result the split its consumers ask
// (Partitioner::hint, backward propagation), then no split. Priority when they conflict: the fewest collectives
// (slicing a replicated operand is free), then a parallel loop before a reduction loop, then
// the earlier candidate. A loop the body reads with linalg.index (other than as the index of a
// captured tensor's dimension) is never split.
#include "hal/channel.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {
namespace {

// A tensor the body captures and reads with tensor.extract: the loop whose linalg.index
// indexes each of its dimensions, or -1 (data, another expression, or inconsistent).
struct Capture {
  Value tensor;
  SmallVector<int64_t> loopAt;
};

std::optional<int64_t> indexedLoop(Value v) {
  if (auto index = v.getDefiningOp<linalg::IndexOp>()) return index.getDim();
  return std::nullopt;
}

// Fills `captures` and the loops read by linalg.index for anything else.
void analyzeBody(linalg::LinalgOp op, SmallVector<Capture>& captures,
                 llvm::DenseSet<int64_t>& indexedLoops) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegion(0), above);
  for (Value v : above) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type) continue;
    Capture c{v, SmallVector<int64_t>(type.getRank(), -2)};
    for (OpOperand& use : v.getUses()) {
      if (!op->isProperAncestor(use.getOwner())) continue;
      auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
      for (int64_t pos = 0; pos < type.getRank(); ++pos) {
        std::optional<int64_t> loop = extract ? indexedLoop(extract.getIndices()[pos]) : std::nullopt;
        int64_t& at = c.loopAt[pos];
        at = loop && (at == -2 || at == *loop) ? *loop : -1;
      }
    }
    for (int64_t& at : c.loopAt) at = at == -2 ? -1 : at;
    captures.push_back(std::move(c));
  }
  op->getRegion(0).walk([&](linalg::IndexOp index) {
    for (OpOperand& use : index->getUses()) {
      auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
      if (!extract || use.getOperandNumber() == 0 ||
          !llvm::any_of(captures, [&](const Capture& c) { return c.tensor == extract.getTensor(); }))
        indexedLoops.insert(index.getDim());
    }
  });
}

// The position of loop `loop` among `map`'s results, if it is one of them.
std::optional<int64_t> positionOf(AffineMap map, int64_t loop) {
  for (auto [pos, expr] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(expr); d && d.getPosition() == loop) return pos;
  return std::nullopt;
}

bool isZero(Value v) {
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) v = fill.getInputs()[0];
  return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero());
}

// How output i combines with the body's value: `out_i + v` (sum), `max(out_i, v)`,
// `min(out_i, v)` (float, or signed integers: the collectives' integer max/min are signed);
// nullopt for anything else. The reduction of the ranks' partial results by
// the same op is the whole reduction.
std::optional<hal::ReductionOp> outputCombiner(linalg::LinalgOp op, int64_t i) {
  Block* body = op.getBlock();
  Value yielded = body->getTerminator()->getOperand(i);
  Operation* combine = yielded.getDefiningOp();
  if (!combine || combine->getNumOperands() != 2) return std::nullopt;
  Value out = body->getArgument(op.getNumDpsInputs() + i);
  if (combine->getOperand(0) != out && combine->getOperand(1) != out) return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(combine)) return hal::ReductionOp::kSum;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combine))
    return hal::ReductionOp::kMax;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combine))
    return hal::ReductionOp::kMin;
  return std::nullopt;
}

// A partial value reduced by `op`: the code rides in the Sharding's dim, which partial values
// do not use (Resharding.cpp reads it back).
Sharding partialOf(hal::ReductionOp op) {
  return {ShardingKind::Partial, static_cast<int64_t>(op)};
}

}  // namespace

FailureOr<bool> PartitionLinalg(Operation* op, Partitioner& p) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp) return p.notMatched(op, "not a linalg structured op");
  if (!linalgOp.hasPureTensorSemantics()) return p.notMatched(op, "linalg op on buffers");
  SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
  for (AffineMap map : maps)
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return p.notMatched(op, "an indexing map is not a projected permutation");
  SmallVector<utils::IteratorType> iterators = linalgOp.getIteratorTypesArray();
  SmallVector<Capture> captures;
  llvm::DenseSet<int64_t> indexedLoops;
  analyzeBody(linalgOp, captures, indexedLoops);

  // What each tensor operand / capture must be when splitting `loop` (-1: nothing split).
  auto operandSharding = [&](OpOperand& o, int64_t loop) {
    if (loop < 0) return Sharding::replicated();
    if (linalgOp.isDpsInit(&o) && iterators[loop] == utils::IteratorType::reduction)
      return Sharding::replicated();  // the zero the partial sums start from
    std::optional<int64_t> pos = positionOf(maps[o.getOperandNumber()], loop);
    return pos ? Sharding::split(*pos) : Sharding::replicated();
  };
  auto captureSharding = [&](const Capture& c, int64_t loop) {
    for (auto [pos, at] : llvm::enumerate(c.loopAt))
      if (loop >= 0 && at == loop) return Sharding::split(pos);
    return Sharding::replicated();
  };
  auto tensorOperands = [&] {
    SmallVector<OpOperand*> list;
    for (OpOperand& o : op->getOpOperands())
      if (isa<RankedTensorType>(o.get().getType())) list.push_back(&o);
    return list;
  }();
  // Why `loop` cannot be split, or "".
  auto infeasible = [&](int64_t loop) -> std::string {
    if (indexedLoops.contains(loop)) return "the body reads linalg.index " + std::to_string(loop);
    for (OpOperand& init : linalgOp.getDpsInitsMutable()) {
      int64_t i = init.getOperandNumber() - linalgOp.getNumDpsInputs();
      if (iterators[loop] == utils::IteratorType::parallel) {
        if (!positionOf(maps[init.getOperandNumber()], loop)) return "an output does not span the loop";
      } else if (std::optional<hal::ReductionOp> combiner = outputCombiner(linalgOp, i);
                 !combiner || (*combiner == hal::ReductionOp::kSum && !isZero(init.get()))) {
        return "reduction loop " + std::to_string(loop) +
               " neither adds into an output that starts at zero nor takes a max or min of it";
      }
    }
    return "";
  };

  SmallVector<int64_t> candidates;
  for (OpOperand* o : tensorOperands)
    if (Sharding s = p.lookup(o->get()).sharding; s.isSplit())
      if (auto d = dyn_cast<AffineDimExpr>(maps[o->getOperandNumber()].getResult(s.dim)))
        candidates.push_back(d.getPosition());
  for (const Capture& c : captures)
    if (Sharding s = p.lookup(c.tensor).sharding; s.isSplit() && c.loopAt[s.dim] >= 0)
      candidates.push_back(c.loopAt[s.dim]);
  // The split its consumers ask of a result (BackwardHints.cpp), when a parallel loop gives it.
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (Sharding s = p.hint(result); s.isSplit())
      if (auto d = dyn_cast<AffineDimExpr>(maps[linalgOp.getNumDpsInputs() + i].getResult(s.dim));
          d && iterators[d.getPosition()] == utils::IteratorType::parallel)
        candidates.push_back(d.getPosition());
  candidates.push_back(-1);
  int64_t best = -1;
  std::tuple<int, int, int> bestKey{INT_MAX, 0, 0};
  for (auto [order, loop] : llvm::enumerate(candidates)) {
    if (loop >= 0) {
      if (std::string why = infeasible(loop); !why.empty()) {
        p.notMatched(op, "loop " + std::to_string(loop) + " not split: " + why);
        continue;
      }
    }
    int cost = 0;
    for (OpOperand* o : tensorOperands) cost += p.collectivesFor(o->get(), operandSharding(*o, loop));
    for (const Capture& c : captures) cost += p.collectivesFor(c.tensor, captureSharding(c, loop));
    bool reduction = loop >= 0 && iterators[loop] == utils::IteratorType::reduction;
    std::tuple<int, int, int> key{cost, reduction ? 1 : 0, static_cast<int>(order)};
    if (key < bestKey) bestKey = key, best = loop;
  }

  std::string opName = op->getName().getStringRef().str();
  IRMapping mapping;
  for (OpOperand* o : tensorOperands) {
    FailureOr<Value> local = p.reshard(op, o->get(), operandSharding(*o, best),
                                       "operand " + std::to_string(o->getOperandNumber()) + " of " + opName);
    if (failed(local)) return failure();
    mapping.map(o->get(), *local);
  }
  for (const Capture& c : captures) {
    FailureOr<Value> local = p.reshard(op, c.tensor, captureSharding(c, best),
                                       "a tensor read by " + opName);
    if (failed(local)) return failure();
    mapping.map(c.tensor, *local);
  }
  llvm::SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
  getUsedValuesDefinedAbove(op->getRegions(), used);
  for (Value v : used)
    if (!mapping.contains(v)) mapping.map(v, p.lookup(v).value);

  Operation* clone = p.b.clone(*op, mapping);
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    Value init = mapping.lookup(linalgOp.getDpsInits()[i]);
    clone->getResult(i).setType(init.getType());
    Sharding s = Sharding::replicated();
    if (best >= 0)
      s = iterators[best] == utils::IteratorType::reduction
              ? partialOf(*outputCombiner(linalgOp, i))
              : Sharding::split(*positionOf(maps[linalgOp.getNumDpsInputs() + i], best));
    p.map(result, {clone->getResult(i), s});
  }
  return true;
}

}  // namespace hexir::partition
