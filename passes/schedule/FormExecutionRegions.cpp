// hexir-form-execution-regions: each maximal run of dispatches of a block becomes one
// `hexir.execute` (one recorded command buffer).
//
//   %d = tensor.dim %x, %c0              %d = tensor.dim %x, %c0
//   %a = hexir.dispatch @f(%x) dims(%d)  %c = hexir.check ...
//   %n = tensor.dim %a, %c0       ==>    %b, %t = hexir.execute on(0, "compute") -> ... {
//   hexir.check ... (%n)                   %a = hexir.dispatch @f(%x) dims(%d)
//   %b = hexir.dispatch @g(%a) dims(%n)      %b = hexir.dispatch @g(%a) dims(%d)
//   %v = tensor.extract %b[...]              hexir.yield %b
//                                          }
//                                          %v = tensor.extract %b[...]
//
// A run is a sequence of ops that keep a command buffer open: dispatches, collectives
// (hexir.all_reduce, ...), host reshapes (aliases) and host ops that only compute host values
// (checks, dims, arith, empties, the channel's rank and count), and calls of functions that
// record into their caller (RecordedCalls.h; marked here first). Any other op (another
// call, a host read, a branch, a return) ends it. Host ops stay outside the
// region, before it: they run on the host before the region is submitted. A `tensor.dim` of
// a value the region produces is first resolved to the host value that sized it (a
// dispatch's `dims` operand, a reshape's output size, a constant, a recorded call's result
// through its callee); a host op that still
// reads a region value closes the region before it. Values used only inside the region are
// not yielded: transients.
//
// A region awaits the timepoints of the regions producing the tensors it reads, and of the
// earlier regions reading a buffer it updates in place (write after read), a recorded
// call's tied results included (marked `hexir.tied_operands` here, schedule/Buffers.h).
//
// Affinity (modules of several devices, after hexir-insert-transfers): a region holds the
// dispatches of one device (`on(N, "compute")`, N = their hexir.device; a dispatch of another
// device closes the region), and each hexir.transfer is a region of its own on its target's
// transfer queue (`on(to, "transfer")`).
//
// A `hexir.execute` already in the block (a device loop of hexir-form-device-loops) ends the
// run before it, keeps its body and gets the awaits of what its body reads.
#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "passes/Passes.h"
#include "passes/schedule/Affinity.h"
#include "passes/dispatch/InPlaceUpdates.h"  // kTiedOperandsAttr
#include "passes/schedule/Buffers.h"
#include "passes/schedule/RecordedCalls.h"

namespace hexir {
#define GEN_PASS_DEF_FORMEXECUTIONREGIONS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

bool isHostValueOp(Operation& op) {
  return isa<CheckOp, tensor::DimOp, tensor::EmptyOp, GlobalLoadOp, ChannelRankOp,
             ChannelCountOp>(op) ||
         (op.getDialect() && op.getDialect()->getNamespace() == "arith");
}

// A command of a region: a dispatch, a collective, or a call recorded into the caller's
// command buffer (RecordedCalls.h; the callee is marked before any region is formed).
bool isCommand(Operation& op) {
  return isa<DispatchOp>(op) || GetCollective(&op) || schedule::RecordedCallee(&op);
}

bool keepsRegionOpen(Operation& op) {
  return isCommand(op) || schedule::IsAlias(&op) || isHostValueOp(op);
}

// A function whose calls may record into the caller's command buffer (RecordedCalls.h):
// private, one block of dispatches, reshapes and host-value ops (so it forms one region),
// tensor results, no placement. Its host work runs at each call, before the caller's
// region is submitted.
bool canRecordIntoCaller(func::FuncOp f) {
  if (f.isExternal() || !f.isPrivate() || !f.getBody().hasOneBlock()) return false;
  auto isHexirAttr = [](NamedAttribute a) { return a.getName().strref().starts_with("hexir."); };
  if (llvm::any_of(f->getAttrs(), isHexirAttr)) return false;
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (DictionaryAttr attrs = f.getArgAttrDict(i); attrs && llvm::any_of(attrs.getValue(), isHexirAttr))
      return false;
  if (!llvm::all_of(f.getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); })) return false;
  bool dispatches = false;
  for (Operation& op : f.getBody().front()) {
    if (isa<func::ReturnOp>(op)) continue;
    if (!keepsRegionOpen(op) || GetCollective(&op) || isa<func::CallOp>(op) ||
        schedule::ExplicitDevice(&op))
      return false;
    dispatches |= isa<DispatchOp>(op);
  }
  return dispatches;
}

Value resolveDim(OpBuilder& b, Location loc, Value v, int64_t index);

// Dimension `index` of result `result` of `call` (a recorded call) as a host value of the
// caller, or null: the callee's returned value is followed (through its region's yield,
// casts, in-place results and the `dims` of the dispatch making it) to a dim of one of its
// arguments, a scalar argument or a constant, which the call's operands give in the caller.
//   @layer(%x: ?x16) { %n = tensor.dim %x, 0; %r = dispatch @f(%x) dims(%n); return %r }
//   %a = call @layer(%y); tensor.dim %a, 0   ==>   tensor.dim %y, 0 (resolved in turn)
Value resolveCallResultDim(OpBuilder& b, Location loc, func::CallOp call, func::FuncOp callee,
                           unsigned result, int64_t index) {
  Block& entry = callee.getBody().front();
  Value v = cast<func::ReturnOp>(entry.getTerminator()).getOperand(result);
  for (int depth = 0; depth < 64; ++depth) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == &entry ? resolveDim(b, loc, call.getOperand(arg.getArgNumber()), index) : Value();
    if (!cast<RankedTensorType>(v.getType()).isDynamicDim(index))
      return arith::ConstantIndexOp::create(b, loc, cast<RankedTensorType>(v.getType()).getDimSize(index));
    Operation* def = v.getDefiningOp();
    if (auto execute = dyn_cast<ExecuteOp>(def)) {
      auto yield = cast<YieldOp>(execute.getBody().front().getTerminator());
      v = yield.getValues()[cast<OpResult>(v).getResultNumber()];
      continue;
    }
    if (auto cast = dyn_cast<tensor::CastOp>(def)) {
      v = cast.getSource();
      continue;
    }
    auto dispatch = dyn_cast<DispatchOp>(def);
    if (!dispatch) return Value();
    unsigned resultNumber = cast<OpResult>(v).getResultNumber();
    if (int64_t tied = schedule::TiedOperandOf(dispatch, resultNumber); tied >= 0) {
      v = dispatch.getArgs()[tied];
      continue;
    }
    int64_t position = 0;
    for (Value r : dispatch.getResults().take_front(resultNumber))
      position += cast<RankedTensorType>(r.getType()).getNumDynamicDims();
    for (int64_t i = 0; i < index; ++i) position += cast<RankedTensorType>(v.getType()).isDynamicDim(i) ? 1 : 0;
    Value size = dispatch.getResultDims()[position];
    if (auto arg = dyn_cast<BlockArgument>(size))
      return arg.getOwner() == &entry ? call.getOperand(arg.getArgNumber()) : Value();
    if (std::optional<int64_t> c = getConstantIntValue(size)) return arith::ConstantIndexOp::create(b, loc, *c);
    auto dim = size.getDefiningOp<tensor::DimOp>();
    std::optional<int64_t> dimIndex = dim ? dim.getConstantIndex() : std::nullopt;
    if (!dimIndex) return Value();
    v = dim.getSource();
    index = *dimIndex;
  }
  return Value();
}

// The host value of dimension `index` of `v` computed without `v` itself, or null.
Value resolveDim(OpBuilder& b, Location loc, Value v, int64_t index) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.isDynamicDim(index))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(index));
  // A block argument is never a region's value: its dim is a host op.
  if (isa<BlockArgument>(v)) return tensor::DimOp::create(b, loc, v, index);
  Operation* def = v.getDefiningOp();
  if (auto dispatch = dyn_cast_or_null<DispatchOp>(def)) {
    unsigned resultNumber = cast<OpResult>(v).getResultNumber();
    int64_t tied = schedule::TiedOperandOf(dispatch, resultNumber);
    if (tied >= 0) return resolveDim(b, loc, dispatch.getArgs()[tied], index);
    int64_t position = 0;
    for (Value r : dispatch.getResults().take_front(resultNumber))
      position += cast<RankedTensorType>(r.getType()).getNumDynamicDims();
    for (int64_t i = 0; i < index; ++i) position += type.isDynamicDim(i) ? 1 : 0;
    return dispatch.getResultDims()[position];
  }
  if (func::FuncOp callee = def ? schedule::RecordedCallee(def) : func::FuncOp())
    return resolveCallResultDim(b, loc, cast<func::CallOp>(def), callee,
                                cast<OpResult>(v).getResultNumber(), index);
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(def))
    return getValueOrCreateConstantIndexOp(b, loc, expand.getMixedOutputShape()[index]);
  if (auto cast = dyn_cast_or_null<tensor::CastOp>(def)) return resolveDim(b, loc, cast.getSource(), index);
  // all_reduce and broadcast: the result has the source's type, so its dims.
  if (std::optional<CollectiveView> c = def ? GetCollective(def) : std::nullopt)
    if (c->send && c->recv && c->send.getType() == c->recv.getType()) return resolveDim(b, loc, c->send, index);
  // reduce_scatter: the source's dims, dimension 0 over the channel's count (a dynamic result
  // dimension 0 serves any count).
  if (auto scatter = dyn_cast_or_null<ReduceScatterOp>(def)) {
    Value size = resolveDim(b, loc, scatter.getSource(), index);
    if (!size || index != 0) return size;
    return arith::DivUIOp::create(b, loc, size, ChannelCountOp::create(b, loc, b.getIndexType()));
  }
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(def)) {
    Value size;
    // A copy: getReassociationIndices() returns a temporary, which a range-for over its
    // element would outlive.
    ReassociationIndices group = collapse.getReassociationIndices()[index];
    for (int64_t d : group) {
      Value part = resolveDim(b, loc, collapse.getSrc(), d);
      if (!part) return Value();
      size = size ? arith::MulIOp::create(b, loc, size, part) : part;
    }
    return size;
  }
  return Value();
}

class RegionBuilder {
 public:
  explicit RegionBuilder(DominanceInfo& dominance) : dominance(dominance) {}

  void formInBlock(Block& block) {
    SmallVector<Operation*> members;
    DenseSet<Operation*> memberSet;
    std::optional<int64_t> device;  // the members' device (hexir.device of their dispatches)
    auto close = [&]() {
      if (llvm::any_of(members, [](Operation* op) { return isCommand(*op); }))
        wrap(members);
      members.clear();
      memberSet.clear();
      device.reset();
    };
    for (Operation& op : llvm::make_early_inc_range(block)) {
      if (auto formed = dyn_cast<ExecuteOp>(op)) {
        // A region formed earlier (a device loop, hexir-form-device-loops): it stays as it is
        // and awaits what its body reads.
        close();
        SmallVector<Operation*> body;
        for (Operation& inner : formed.getBody().front().without_terminator()) body.push_back(&inner);
        DenseSet<Operation*> bodySet(body.begin(), body.end());
        SmallVector<Value> awaits = body.empty() ? SmallVector<Value>() : awaitedTimepoints(body, bodySet);
        llvm::erase_if(awaits, [&](Value t) { return t == formed.getTimepoint(); });  // its own reads
        formed.getAwaitsMutable().assign(awaits);
        continue;
      }
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        // A transfer is a region of its own, on the transfer queue of its target.
        close();
        wrap({&op});
        continue;
      }
      if (!keepsRegionOpen(op)) {
        close();
        continue;
      }
      if (auto dim = dyn_cast<tensor::DimOp>(op))
        if (foldDimOfMember(dim, memberSet)) continue;
      bool readsMember = llvm::any_of(op.getOperands(), [&](Value v) {
        return v.getDefiningOp() && memberSet.contains(v.getDefiningOp());
      });
      if (isHostValueOp(op)) {
        if (readsMember) close();
        continue;
      }
      // Reshapes of host values are host ops too; reshapes of region values alias inside it.
      if (schedule::IsAlias(&op) && !readsMember) continue;
      if (isCommand(op)) {
        // A command of another device starts a region of its own.
        int64_t on = schedule::ExplicitDevice(&op).value_or(0);
        if (device && *device != on) close();
        device = on;
      }
      members.push_back(&op);
      memberSet.insert(&op);
    }
    close();
  }

 private:
  // Replaces a dim of a member by the host value that sized it; true when erased.
  static bool foldDimOfMember(tensor::DimOp dim, const DenseSet<Operation*>& memberSet) {
    Operation* def = dim.getSource().getDefiningOp();
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!def || !memberSet.contains(def) || !index) return false;
    OpBuilder b(dim);
    Value size = resolveDim(b, dim.getLoc(), dim.getSource(), *index);
    if (!size) return false;
    dim.replaceAllUsesWith(size);
    dim.erase();
    return true;
  }

  // Moves `members` (in order) into a new hexir.execute placed after the last of them.
  void wrap(ArrayRef<Operation*> members) {
    DenseSet<Operation*> memberSet(members.begin(), members.end());
    SmallVector<Value> yielded;
    for (Operation* op : members)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation* u) { return !memberSet.contains(u); }))
          yielded.push_back(r);
    SmallVector<Value> awaits = awaitedTimepoints(members, memberSet);

    Operation* last = members.back();
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    Location loc = members.front()->getLoc();
    // Affinity: the dispatches' device, compute queue; a transfer: its target, transfer queue.
    int64_t device = 0;
    StringRef queue = "compute";
    for (Operation* op : members) {
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        device = transfer.getTo();
        queue = "transfer";
      } else if (isCommand(*op)) {
        device = schedule::ExplicitDevice(op).value_or(0);
      }
    }
    auto execute = ExecuteOp::create(b, loc, ValueRange(yielded).getTypes(),
                                     TimepointType::get(b.getContext()), b.getI64IntegerAttr(device),
                                     b.getStringAttr(queue), awaits);
    Block* body = b.createBlock(&execute.getBody());
    for (Operation* op : members) op->moveBefore(body, body->end());
    b.setInsertionPointToEnd(body);
    YieldOp::create(b, loc, yielded);
    for (auto [value, result] : llvm::zip(yielded, execute.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand& use) {
        return !execute->isProperAncestor(use.getOwner());
      });
  }

  // Timepoints of the regions defining what the members read, and of earlier regions reading
  // a buffer a member updates in place; in first-use order, without repeats.
  SmallVector<Value> awaitedTimepoints(ArrayRef<Operation*> members,
                                       const DenseSet<Operation*>& memberSet) {
    SetVector<Value> awaits;
    auto awaitProducer = [&](Value v) {
      if (auto producer = v.getDefiningOp<ExecuteOp>()) awaits.insert(producer.getTimepoint());
    };
    for (Operation* op : members) {
      for (Value v : op->getOperands())
        if (!v.getDefiningOp() || !memberSet.contains(v.getDefiningOp())) awaitProducer(v);
      for (unsigned r = 0; r < op->getNumResults(); ++r) {
        Value tied = schedule::TiedOperand(op, r);  // a dispatch's or a recorded call's
        if (!tied) continue;
        Value root = schedule::BufferRoot(tied);
        if (root.getDefiningOp() && memberSet.contains(root.getDefiningOp())) continue;
        for (Operation* reader : readersOf(root))
          if (auto earlier = reader->getParentOfType<ExecuteOp>())
            if (dominance.properlyDominates(earlier.getOperation(), members.front()))
              awaits.insert(earlier.getTimepoint());
      }
    }
    return awaits.takeVector();
  }

  // Every op reading `root`'s buffer through aliases (not through in-place results, which
  // the region's own SSA chain orders).
  static SmallVector<Operation*> readersOf(Value root) {
    SmallVector<Operation*> readers;
    SmallVector<Value> worklist = {root};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation* user : v.getUsers()) {
        readers.push_back(user);
        if (schedule::IsAlias(user)) worklist.push_back(user->getResult(0));
        if (auto execute = dyn_cast<YieldOp>(user))
          if (auto parent = dyn_cast<ExecuteOp>(execute->getParentOp()))
            for (auto [i, y] : llvm::enumerate(execute.getValues()))
              if (y == v) worklist.push_back(parent.getResults()[i]);
      }
    }
    return readers;
  }

  DominanceInfo& dominance;
};

class FormExecutionRegions : public impl::FormExecutionRegionsBase<FormExecutionRegions> {
 public:
  void runOnOperation() override {
    // Callees recording into their callers are marked first, so that their calls are commands
    // wherever they are met (one device only: placement decides per op with several).
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> recorded;
    if (!module->hasAttr(kDevicesAttr))
      for (auto func : module.getOps<func::FuncOp>())
        if (canRecordIntoCaller(func)) recorded.push_back(func);
    for (func::FuncOp func : recorded) func->setAttr(kRecordsIntoCallerAttr, UnitAttr::get(&getContext()));
    // A recorded call whose callee returns an argument's buffer (updated in place: a donated
    // argument, dispatch/InPlaceUpdates.h) says so at the call site, as a dispatch does.
    Builder builder(&getContext());
    module.walk([&](func::CallOp call) {
      func::FuncOp callee = schedule::RecordedCallee(call);
      if (!callee) return;
      SmallVector<int64_t> tied = schedule::TiedCallOperands(callee);
      if (llvm::any_of(tied, [](int64_t t) { return t >= 0; }))
        call->setAttr(kTiedOperandsAttr, builder.getDenseI64ArrayAttr(tied));
    });
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal()) continue;
      DominanceInfo dominance(func);
      RegionBuilder builder(dominance);
      SmallVector<Block*> blocks;
      func->walk([&](Block* block) {
        if (!block->getParentOp()->getParentOfType<ExecuteOp>() && !isa<ExecuteOp>(block->getParentOp()))
          blocks.push_back(block);
      });
      for (Block* block : blocks) builder.formInBlock(*block);
    }
    for (func::FuncOp func : recorded) {
      std::string why;
      if (!schedule::RecordedRegionOf(func, &why)) {
        func.emitError() << "hexir-form-execution-regions: @" << func.getName()
                         << " cannot record into its callers: " << why;
        return signalPassFailure();
      }
    }
  }
};

}  // namespace
}  // namespace hexir
