#include "compiler/bytecode/RegisterAllocation.h"

#include <map>
#include <optional>

#include "llvm/ADT/MapVector.h"
#include "dialects/vm/IR/VMOps.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"

namespace hexir::compiler {
using namespace mlir;

Liveness::Liveness(Region& region) {
  DenseMap<Block*, llvm::SetVector<Value>> uses, defs;
  for (Block& block : region) {
    auto& d = defs[&block];
    for (BlockArgument a : block.getArguments()) d.insert(a);
    for (Operation& op : block) {
      for (Value v : op.getOperands())
        if (!d.contains(v)) uses[&block].insert(v);
      for (Value r : op.getResults()) d.insert(r);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (Block& block : llvm::reverse(region)) {
      llvm::SetVector<Value> out;
      for (Block* succ : block.getSuccessors()) out.insert(liveIn[succ].begin(), liveIn[succ].end());
      llvm::SetVector<Value> in = uses[&block];
      for (Value v : out)
        if (!defs[&block].contains(v)) in.insert(v);
      if (in.size() != liveIn[&block].size() || out.size() != liveOut[&block].size()) {
        changed = true;
        liveIn[&block] = std::move(in);
        liveOut[&block] = std::move(out);
      }
    }
  }
}

bool RegisterAssignment::isRef(Value v) { return isa<vmir::RefType>(v.getType()); }

namespace {

// Each branch operand with the block argument it is copied into, both ways round.
DenseMap<Value, SmallVector<Value, 2>> copyPartners(Region& region) {
  DenseMap<Value, SmallVector<Value, 2>> partners;
  for (Block& block : region) {
    auto branch = dyn_cast<BranchOpInterface>(block.getTerminator());
    if (!branch) continue;
    for (unsigned s = 0, e = branch->getNumSuccessors(); s < e; ++s) {
      Block* succ = branch->getSuccessor(s);
      for (auto [j, v] : llvm::enumerate(branch.getSuccessorOperands(s).getForwardedOperands())) {
        Value arg = succ->getArgument(j);
        if (v == arg) continue;
        partners[v].push_back(arg);
        partners[arg].push_back(v);
      }
    }
  }
  return partners;
}

}  // namespace

RegisterAssignment::RegisterAssignment(Region& region, const Liveness& live, bool coalesce) {
  // Live ranges in half-steps: an operation at position p reads at 2p and writes at 2p + 1
  // (an instruction) or at 2p (any other op: its results never share with its operands).
  DenseMap<Value, SmallVector<Segment, 2>> ranges;
  SmallVector<Value> order;  // by definition, in region order
  unsigned pos = 0;
  for (Block& block : region) {
    unsigned begin = 2 * pos++;
    llvm::MapVector<Value, Segment> local;
    auto reach = [&](Value v, unsigned at) {
      auto [it, inserted] = local.try_emplace(v, Segment{begin, at});
      it->second.end = std::max(it->second.end, at);
    };
    for (Value v : live.liveIn.lookup(&block)) reach(v, begin);
    for (BlockArgument a : block.getArguments()) {
      reach(a, begin);
      order.push_back(a);
    }
    for (Operation& op : block) {
      unsigned at = 2 * pos++;
      for (Value v : op.getOperands()) reach(v, at);
      unsigned write = isa<vmir::InstOp>(op) ? at + 1 : at;
      for (Value r : op.getResults()) {
        local[r] = Segment{write, write};
        order.push_back(r);
      }
    }
    unsigned end = 2 * pos++;
    for (Value v : live.liveOut.lookup(&block)) reach(v, end);
    for (auto& [v, segment] : local) ranges[v].push_back(segment);
  }
  DenseMap<Value, SmallVector<Value, 2>> partners;
  if (coalesce) partners = copyPartners(region);

  // Per bank, per register: the segments it holds (start -> end, disjoint).
  std::vector<std::map<unsigned, unsigned>> held[2];
  auto fits = [&](const std::map<unsigned, unsigned>& segments, ArrayRef<Segment> range) {
    for (const Segment& s : range) {
      auto it = segments.upper_bound(s.end);
      if (it != segments.begin() && std::prev(it)->second >= s.start) return false;
    }
    return true;
  };
  auto assign = [&](Value v, uint32_t reg) {
    auto& bank = held[isRef(v)];
    if (reg >= bank.size()) bank.resize(reg + 1);
    for (const Segment& s : ranges[v]) bank[reg][s.start] = s.end;
    regs[v] = reg;
  };
  for (BlockArgument a : region.front().getArguments())
    assign(a, (isRef(a) ? refCount : valueCount)++);
  // A partner's register that `v` fits in, if any.
  auto partnerRegister = [&](Value v) -> std::optional<uint32_t> {
    for (Value partner : partners.lookup(v)) {
      auto it = regs.find(partner);
      if (it != regs.end() && isRef(partner) == isRef(v) &&
          fits(held[isRef(v)][it->second], ranges[v]))
        return it->second;
    }
    return std::nullopt;
  };
  auto allocate = [&](Value v, std::optional<uint32_t> chosen) {
    auto& bank = held[isRef(v)];
    for (uint32_t reg = 0; !chosen && reg < bank.size(); ++reg)
      if (fits(bank[reg], ranges[v])) chosen = reg;
    uint32_t& count = isRef(v) ? refCount : valueCount;
    if (!chosen) chosen = count;
    assign(v, *chosen);
    count = std::max<uint32_t>(count, *chosen + 1);
  };
  for (Value v : order) {
    if (regs.count(v)) continue;
    // A block's arguments: those that can join a partner first, so that the others' first
    // fit does not take the register a sibling wants.
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      for (BlockArgument a : arg.getOwner()->getArguments())
        if (!regs.count(a))
          if (std::optional<uint32_t> reg = partnerRegister(a)) allocate(a, reg);
      if (regs.count(v)) continue;
    }
    allocate(v, partnerRegister(v));
  }
}

}  // namespace hexir::compiler
