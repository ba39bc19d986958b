// hexir-schedule-concurrency{mode=waves|serial}: orders the dispatches of each execution
// region and puts `hexir.barrier` only where a dependence crosses it.
//
//   waves: a = f(x); b = g(x); c = h(a, b)   ==>   a = f(x); b = g(x); barrier; c = h(a, b)
//   serial: a barrier between every pair     ==>   a = f(x); barrier; b = g(x); barrier; c = ...
//
// Dependences inside a region come from buffers: a dispatch or a collective depends on the
// command that wrote each buffer it reads (SSA def-use, through alias reshapes and in-place
// results), and a dispatch that updates a buffer in place (`hexir.tied_operands`) also
// depends on every earlier command reading that buffer (write after read). A collective also
// depends on the region's previous collective: every rank issues them in program order. The *wave* of a dispatch is one
// more than the latest wave it depends on; a barrier separates consecutive waves, so the
// dispatches of one wave may run concurrently (CUDA graph branches).
//
// Latency-hiding order: a dispatch off the critical path (its latest feasible wave, given
// its consumers and the region's wave count, is later than its earliest) is placed in that
// latest wave when a larger dispatch on the critical path starts in its earliest wave: the
// larger one then does not share its wave with work that could wait. Cost = element count of
// the results (a dynamic dim counts as kDynamicExtent); collectives count as the largest, so
// they are never deferred and come first in their wave. Within a wave the larger
// dispatches come first. Reshapes follow their source. Re-running the pass recomputes the
// barriers. A call recorded into the region (schedule/RecordedCalls.h) is a command like a
// dispatch: it depends on the writers of its tensor operands, its tied results (an argument
// its callee updates in place) on every earlier reader of that buffer, and on the previous
// call of the same callee (calls of one callee are kept in order: each call site has its own
// transients now, vm/LowerRecordedCalls.cpp, so independent ones could overlap); it spans its callee's
// waves (its recording holds the callee's barriers), so its consumers start after its last
// wave, and independent commands share its first and last waves:
//
//   a = f(x); c = call @g(y); b = h(a)   ==>   a = f(x); c = call @g(y) [2 waves]; b = h(a)
//   (before: barrier; call; barrier)           (h joins @g's second wave: no barrier at all)
#include <limits>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/Passes.h"
#include "passes/schedule/Buffers.h"
#include "passes/schedule/RecordedCalls.h"

namespace hexir {
#define GEN_PASS_DEF_SCHEDULECONCURRENCY
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// The extent assumed for a dynamic dimension when comparing costs.
constexpr int64_t kDynamicExtent = 1024;

// Collectives count as the largest: issued as early as their inputs allow, so that a peer
// waiting for this rank waits as little as possible.
constexpr int64_t kCollectiveCost = std::numeric_limits<int64_t>::max();

int64_t costOf(Operation* command) {
  if (GetCollective(command)) return kCollectiveCost;
  int64_t elements = 0;
  for (Type t : command->getResultTypes()) {
    auto tensor = cast<RankedTensorType>(t);
    int64_t n = 1;
    for (int64_t extent : tensor.getShape()) n *= ShapedType::isDynamic(extent) ? kDynamicExtent : extent;
    elements += n;
  }
  return elements;
}

struct RegionSchedule {
  SmallVector<Operation*> dispatches;           // dispatches, collectives and recorded calls, body order
  SmallVector<SmallVector<unsigned>> deps;      // indices of earlier dispatches
  SmallVector<int64_t> span;                    // waves a command occupies (a call: its callee's)
  SmallVector<int64_t> wave;                    // the first of them
};

// The waves a recorded call's commands take in the caller's command buffer: its callee's
// region's barriers + 1 (the callee's regions are scheduled before their callers').
int64_t spanOf(Operation* command) {
  func::FuncOp callee = schedule::RecordedCallee(command);
  if (!callee) return 1;
  ExecuteOp region = schedule::RecordedRegionOf(callee);
  if (!region) return 1;
  auto barriers = region.getBody().front().getOps<BarrierOp>();
  return 1 + std::distance(barriers.begin(), barriers.end());
}

// The dispatch of the region writing `v`'s contents (through aliases), or -1.
int64_t writerOf(Value v, const DenseMap<Operation*, unsigned>& index) {
  while (Operation* def = v.getDefiningOp()) {
    if (schedule::IsAlias(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto it = index.find(def);
    return it == index.end() ? -1 : int64_t(it->second);
  }
  return -1;
}

RegionSchedule dependences(ExecuteOp execute) {
  RegionSchedule s;
  DenseMap<Operation*, unsigned> index;
  for (Operation& op : execute.getBody().front()) {
    if (!isa<DispatchOp>(op) && !GetCollective(&op) && !isa<func::CallOp>(op)) continue;
    index[&op] = s.dispatches.size();
    s.dispatches.push_back(&op);
    s.span.push_back(spanOf(&op));
  }
  s.deps.resize(s.dispatches.size());
  std::optional<unsigned> previousCollective;
  llvm::StringMap<unsigned> previousCallOf;  // callee -> its latest call in the region
  for (auto [i, op] : llvm::enumerate(s.dispatches)) {
    SetVector<unsigned> deps;
    // Calls of one callee: each follows the previous one (they share no buffer since each call
    // site has its own transients; the order is kept, not needed).
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto [it, first] = previousCallOf.try_emplace(call.getCallee(), i);
      if (!first) deps.insert(std::exchange(it->second, i));
    }
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        if (int64_t w = writerOf(v, index); w >= 0) deps.insert(w);
    if (GetCollective(op)) {
      // Every rank must issue its collectives in the same order: program order.
      if (previousCollective) deps.insert(*previousCollective);
      previousCollective = i;
    }
    // An in-place update (a dispatch's or a recorded call's tied result) follows every
    // earlier reader of the buffer it writes.
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      Value tied = schedule::TiedOperand(op, r);
      if (!tied) continue;
      Value root = schedule::BufferRoot(tied);
      for (unsigned e = 0; e < i; ++e)
        for (Value v : s.dispatches[e]->getOperands())
          if (isa<RankedTensorType>(v.getType()) && schedule::BufferRoot(v) == root) deps.insert(e);
    }
    s.deps[i] = deps.takeVector();
  }
  return s;
}

void placeInWaves(RegionSchedule& s) {
  size_t n = s.dispatches.size();
  SmallVector<int64_t> asap(n, 0), alap(n, 0), cost(n);
  int64_t depth = 0;  // the last wave
  for (size_t i = 0; i < n; ++i) {
    for (unsigned d : s.deps[i]) asap[i] = std::max(asap[i], asap[d] + s.span[d]);
    depth = std::max(depth, asap[i] + s.span[i] - 1);
    cost[i] = costOf(s.dispatches[i]);
  }
  for (size_t i = 0; i < n; ++i) alap[i] = depth - s.span[i] + 1;
  for (size_t i = n; i-- > 0;)
    for (unsigned d : s.deps[i]) alap[d] = std::min(alap[d], alap[i] - s.span[d]);
  // The largest critical-path cost starting in each wave.
  SmallVector<int64_t> criticalCost(depth + 1, 0);
  for (size_t i = 0; i < n; ++i)
    if (asap[i] == alap[i]) criticalCost[asap[i]] = std::max(criticalCost[asap[i]], cost[i]);
  s.wave.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t earliest = 0;
    for (unsigned d : s.deps[i]) earliest = std::max(earliest, s.wave[d] + s.span[d]);
    bool defer = alap[i] > earliest && cost[i] < criticalCost[earliest];
    s.wave[i] = defer ? alap[i] : earliest;
  }
}

void rebuildBody(ExecuteOp execute, const RegionSchedule& s, bool serial) {
  Block& body = execute.getBody().front();
  for (auto barrier : llvm::make_early_inc_range(body.getOps<BarrierOp>())) barrier.erase();
  SmallVector<unsigned> order(s.dispatches.size());
  for (unsigned i = 0; i < order.size(); ++i) order[i] = i;
  if (!serial)
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      if (s.wave[a] != s.wave[b]) return s.wave[a] < s.wave[b];
      return costOf(s.dispatches[a]) > costOf(s.dispatches[b]);
    });
  SmallVector<Operation*> aliases;
  for (Operation& op : body)
    if (schedule::IsAlias(&op)) aliases.push_back(&op);

  OpBuilder b(execute.getContext());
  Operation* terminator = body.getTerminator();
  // The wave the recording is in: a recorded call's commands end `span - 1` barriers later,
  // so a command planned inside a call's span goes after it (and its consumers after that).
  int64_t current = 0;
  SmallVector<int64_t> end(s.dispatches.size(), 0);  // the last wave of each command, as emitted
  for (auto [position, i] : llvm::enumerate(order)) {
    Operation* d = s.dispatches[i];
    int64_t wave = std::max(serial ? current + 1 : s.wave[i], current);
    for (unsigned dep : s.deps[i]) wave = std::max(wave, end[dep] + 1);
    if (position > 0 && wave > current) {
      b.setInsertionPoint(terminator);
      BarrierOp::create(b, d->getLoc());
    }
    current = wave + s.span[i] - 1;
    end[i] = current;
    d->moveBefore(terminator);
  }
  for (Operation* alias : aliases) {
    Operation* source = alias->getOperand(0).getDefiningOp();
    if (source && source->getBlock() == &body)
      alias->moveAfter(source);
    else
      alias->moveBefore(&body.front());
  }
}

class ScheduleConcurrency : public impl::ScheduleConcurrencyBase<ScheduleConcurrency> {
 public:
  using ScheduleConcurrencyBase::ScheduleConcurrencyBase;

  void runOnOperation() override {
    if (mode != "waves" && mode != "serial") {
      getOperation().emitError() << "hexir-schedule-concurrency: unknown mode '" << mode
                                 << "' (expected waves or serial)";
      return signalPassFailure();
    }
    auto schedule = [&](ExecuteOp execute) {
      RegionSchedule s = dependences(execute);
      if (mode == "waves") placeInWaves(s);
      rebuildBody(execute, s, mode == "serial");
    };
    // Recorded callees first: a call's span is its callee's scheduled waves.
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr(kRecordsIntoCallerAttr)) func.walk(schedule);
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func->hasAttr(kRecordsIntoCallerAttr)) func.walk(schedule);
  }
};

}  // namespace
}  // namespace hexir
