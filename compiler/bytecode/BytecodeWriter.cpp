#include "compiler/bytecode/BytecodeWriter.h"

#include <map>
#include <set>

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include "compiler/bytecode/Encoder.h"
#include "compiler/bytecode/ModuleFile.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::compiler {
namespace {
using namespace mlir;
using bytecode::Encoder;
using bytecode::ListEntry;
using bytecode::Opcode;

// Liveness of one function's blocks (classic backward dataflow over the CFG).
struct Liveness {
  DenseMap<Block*, llvm::SetVector<Value>> liveIn, liveOut;

  explicit Liveness(Region& region) {
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
};

// Linear-scan register assignment over the blocks in region order. A value's interval is
// the hull of every point where it is live (definition, uses, block boundaries where it is
// live-in or live-out), so two values share a register only when their lives are disjoint.
class RegisterAssignment {
 public:
  RegisterAssignment(Region& region, const Liveness& live) {
    DenseMap<Value, std::pair<unsigned, unsigned>> interval;
    auto touch = [&](Value v, unsigned pos) {
      auto [it, inserted] = interval.try_emplace(v, pos, pos);
      if (!inserted) {
        it->second.first = std::min(it->second.first, pos);
        it->second.second = std::max(it->second.second, pos);
      }
    };
    SmallVector<Value> order;  // by definition point
    unsigned pos = 0;
    for (Block& block : region) {
      unsigned begin = pos++;
      for (BlockArgument a : block.getArguments()) {
        touch(a, begin);
        order.push_back(a);
      }
      for (Value v : live.liveIn.lookup(&block)) touch(v, begin);
      for (Operation& op : block) {
        unsigned at = pos++;
        for (Value v : op.getOperands()) touch(v, at);
        for (Value r : op.getResults()) {
          touch(r, at);
          order.push_back(r);
        }
      }
      for (Value v : live.liveOut.lookup(&block)) touch(v, pos);
      ++pos;
    }
    llvm::stable_sort(order, [&](Value a, Value b) { return interval[a].first < interval[b].first; });
    Block& entry = region.front();
    // Arguments take V0.. / R0.. in order, before anything else.
    for (BlockArgument a : entry.getArguments()) regs[a] = (isRef(a) ? refCount : valueCount)++;
    std::multimap<unsigned, Value> active;  // by interval end
    std::set<uint32_t> freeValues, freeRefs;
    for (BlockArgument a : entry.getArguments()) active.emplace(interval[a].second, a);
    for (Value v : order) {
      if (regs.count(v)) continue;
      unsigned start = interval[v].first;
      while (!active.empty() && active.begin()->first < start) {
        Value done = active.begin()->second;
        (isRef(done) ? freeRefs : freeValues).insert(regs[done]);
        active.erase(active.begin());
      }
      auto& pool = isRef(v) ? freeRefs : freeValues;
      if (pool.empty()) {
        regs[v] = (isRef(v) ? refCount : valueCount)++;
      } else {
        regs[v] = *pool.begin();
        pool.erase(pool.begin());
      }
      active.emplace(interval[v].second, v);
    }
  }

  static bool isRef(Value v) { return isa<vmir::RefType>(v.getType()); }

  DenseMap<Value, uint32_t> regs;
  uint32_t valueCount = 0, refCount = 0;
};

class ModuleWriter {
 public:
  LogicalResult write(ModuleOp module, std::vector<uint8_t>* out) {
    data.name = module.getName() ? module.getName()->str() : "module";
    for (auto exe : module.getOps<ExecutableOp>())
      if (failed(addExecutable(exe))) return failure();
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal()) continue;
      if (func->hasAttr("hexir_vm.initializer"))
        data.initializer = static_cast<int32_t>(functionOrdinals.size());
      functionOrdinals[func.getName()] = static_cast<uint32_t>(functionOrdinals.size());
    }
    auto count = [&](StringRef name) -> uint32_t {
      auto attr = module->getAttrOfType<IntegerAttr>(name);
      return attr ? static_cast<uint32_t>(attr.getInt()) : 0;
    };
    data.value_global_count = count("hexir_vm.value_globals");
    data.ref_global_count = count("hexir_vm.ref_globals");
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(addFunction(func))) return failure();
    *out = bytecode::SerializeModule(data);
    return success();
  }

 private:
  LogicalResult addExecutable(ExecutableOp exe) {
    auto format = exe->getAttrOfType<StringAttr>("hexir.format");
    auto binary = exe->getAttrOfType<StringAttr>("hexir.binary");
    auto entry = exe->getAttrOfType<StringAttr>("hexir.entry");
    if (!format || !binary || !entry)
      return exe.emitError("executable was not serialized (no hexir.format/binary/entry)");
    bytecode::ExecutableData e;
    e.format = format.str();
    e.binary.assign(binary.getValue().begin(), binary.getValue().end());
    e.entry_points.push_back(entry.str());
    // Target metadata: `hexir.attrs` strings are copied; each `hexir.rodata_attrs` blob
    // is stored as rodata and its key maps to the rodata ordinal (e.g. CUDA's PTX).
    if (auto attrs = exe->getAttrOfType<DictionaryAttr>("hexir.attrs"))
      for (NamedAttribute a : attrs)
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          e.attrs.emplace_back(a.getName().str(), s.str());
    if (auto blobs = exe->getAttrOfType<DictionaryAttr>("hexir.rodata_attrs"))
      for (NamedAttribute a : blobs)
        if (auto s = dyn_cast<StringAttr>(a.getValue())) {
          data.rodata.emplace_back(s.getValue().begin(), s.getValue().end());
          e.attrs.emplace_back(a.getName().str(), std::to_string(data.rodata.size() - 1));
        }
    data.executables.push_back(std::move(e));
    return success();
  }

  uint32_t importOrdinal(StringRef name, StringRef signature) {
    std::string key = (name + "|" + signature).str();
    auto [it, inserted] = imports.try_emplace(key, data.imports.size());
    if (inserted)
      data.imports.push_back({name.split('.').first.str(), name.str(), signature.str()});
    return it->second;
  }

  FailureOr<uint32_t> rodataOrdinal(vmir::RodataOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getData());
    if (!dense) return op.emitError("rodata needs a dense elements attribute");
    Type element = dense.getElementType();
    unsigned bits = element.getIntOrFloatBitWidth();
    if (bits % 8 != 0) return op.emitError("unsupported rodata element type ") << element;
    ArrayRef<char> raw = dense.getRawData();
    std::vector<uint8_t> bytes;
    int64_t count = dense.isSplat() ? dense.getNumElements() : 1;
    for (int64_t i = 0; i < count; ++i) bytes.insert(bytes.end(), raw.begin(), raw.end());
    data.rodata.push_back(std::move(bytes));
    return static_cast<uint32_t>(data.rodata.size() - 1);
  }

  static std::string signatureOf(TypeRange args, TypeRange results) {
    std::string s;
    for (Type t : args) s += vmir::SignatureChar(t);
    s += '_';
    for (Type t : results) s += vmir::SignatureChar(t);
    return s;
  }

  LogicalResult addFunction(func::FuncOp func) {
    if (func.isExternal()) return success();
    for (Type t : llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
      if (!vmir::SignatureChar(t))
        return func.emitError("function is not in VM form: type ") << t;
    Region& region = func.getBody();
    for (Block& block : region) {
      if (block.empty() || !block.back().hasTrait<OpTrait::IsTerminator>())
        return func.emitError("every block must end with a VM terminator");
      for (BlockArgument a : block.getArguments())
        if (!vmir::SignatureChar(a.getType()))
          return func.emitError("block argument is not in VM form: type ") << a.getType();
    }
    Liveness live(region);
    RegisterAssignment assignment(region, live);
    auto& regs = assignment.regs;
    auto isRef = RegisterAssignment::isRef;
    auto entryOf = [&](Value v, bool move) { return ListEntry{isRef(v), move, regs[v]}; };

    Encoder enc;
    DenseMap<Block*, uint32_t> blockOffsets;
    std::vector<std::pair<size_t, Block*>> fixups;
    for (Block& block : region) {
      blockOffsets[&block] = static_cast<uint32_t>(enc.size());
      const auto& liveOut = live.liveOut[&block];
      // Refs that a predecessor kept alive for another successor (or unused arguments)
      // die on entry here.
      std::vector<ListEntry> dying;
      llvm::SmallDenseSet<uint32_t> dyingRegs;
      auto kill = [&](Value v) {
        if (isRef(v) && dyingRegs.insert(regs[v]).second) dying.push_back(entryOf(v, false));
      };
      llvm::SmallDenseSet<uint32_t> argRegs;
      for (BlockArgument a : block.getArguments())
        if (isRef(a)) argRegs.insert(regs[a]);
      for (Block* pred : block.getPredecessors()) {
        for (Value v : live.liveOut[pred])
          if (!live.liveIn[&block].contains(v) && !argRegs.contains(regs[v])) kill(v);
        // A ref that dies at the predecessor's branch but is passed only on another edge.
        Operation* term = pred->getTerminator();
        auto branch = dyn_cast<BranchOpInterface>(term);
        llvm::SmallDenseSet<Value> passedHere;
        for (auto [i, succ] : llvm::enumerate(term->getSuccessors()))
          if (succ == &block && branch)
            for (Value v : branch.getSuccessorOperands(i).getForwardedOperands()) passedHere.insert(v);
        for (Value v : term->getOperands())
          if (isRef(v) && !live.liveOut[pred].contains(v) && !passedHere.contains(v) &&
              !argRegs.contains(regs[v]))
            kill(v);
      }
      for (BlockArgument a : block.getArguments())
        if (a.use_empty() && !liveOut.contains(a)) kill(a);
      if (!dying.empty()) {
        enc.op(Opcode::Release);
        enc.L(dying);
      }
      // Last use of each value within this block (values live-out are never moved).
      DenseMap<Value, Operation*> lastUse;
      for (Operation& op : block)
        for (Value v : op.getOperands()) lastUse[v] = &op;
      auto movable = [&](Value v, Operation* op) {
        return isRef(v) && lastUse.lookup(v) == op && !liveOut.contains(v);
      };
      for (Operation& op : block) {
        std::vector<ListEntry> operands;
        for (auto [j, v] : llvm::enumerate(op.getOperands())) {
          bool laterInOp = llvm::is_contained(op.getOperands().drop_front(j + 1), v);
          operands.push_back(entryOf(v, movable(v, &op) && !laterInOp));
        }
        std::vector<ListEntry> results;
        for (Value r : op.getResults()) results.push_back(entryOf(r, false));
        if (auto br = dyn_cast<vmir::BrOp>(op)) {
          enc.op(Opcode::Br);
          fixups.emplace_back(enc.T(0), br.getDest());
          enc.P(copies(br.getDestOperands(), br.getDest(), &op, movable, regs));
          continue;
        }
        if (auto br = dyn_cast<vmir::CondBrOp>(op)) {
          enc.op(Opcode::CondBr);
          enc.V(regs[br.getCondition()]);
          fixups.emplace_back(enc.T(0), br.getTrueDest());
          enc.P(copies(br.getTrueOperands(), br.getTrueDest(), &op, movable, regs));
          fixups.emplace_back(enc.T(0), br.getFalseDest());
          enc.P(copies(br.getFalseOperands(), br.getFalseDest(), &op, movable, regs));
          continue;
        }
        if (failed(encode(&op, enc, operands, results))) return failure();
        std::vector<ListEntry> dead;
        for (Value r : op.getResults())
          if (r.use_empty() && isRef(r) && !isa<vmir::NullRefOp>(op)) dead.push_back(entryOf(r, false));
        if (!dead.empty()) {
          enc.op(Opcode::Release);
          enc.L(dead);
        }
      }
    }
    for (auto [at, block] : fixups) enc.Patch(at, blockOffsets[block]);

    std::string error;
    bytecode::FunctionData fn;
    fn.name = func.getName().str();
    fn.signature = signatureOf(func.getArgumentTypes(), func.getResultTypes());
    fn.code = enc.finish(&error);
    if (!error.empty()) return func.emitError("internal encoding error: ") << error;
    fn.value_register_count = assignment.valueCount;
    fn.ref_register_count = assignment.refCount;
    fn.exported = func.isPublic();
    for (auto [attr, key] : {std::pair{"hexir_vm.abi_args", "abi.args"},
                             std::pair{"hexir_vm.abi_results", "abi.results"}})
      if (auto s = func->getAttrOfType<StringAttr>(attr)) fn.attrs.emplace_back(key, s.str());
    data.functions.push_back(std::move(fn));
    return success();
  }

  // The parallel copy of a branch edge: MOVE on a ref's last occurrence when it dies here.
  template <typename Movable>
  static std::vector<std::pair<ListEntry, ListEntry>> copies(OperandRange sources, Block* dest,
                                                             Operation* op, Movable& movable,
                                                             DenseMap<Value, uint32_t>& regs) {
    std::vector<std::pair<ListEntry, ListEntry>> pairs;
    for (auto [j, v] : llvm::enumerate(sources)) {
      bool laterHere = llvm::is_contained(sources.drop_front(j + 1), v);
      bool ref = RegisterAssignment::isRef(v);
      Value dst = dest->getArgument(j);
      if (regs[v] == regs[dst] && !laterHere) continue;  // already in place
      pairs.push_back({ListEntry{ref, movable(v, op) && !laterHere, regs[v]},
                       ListEntry{ref, false, regs[dst]}});
    }
    return pairs;
  }

  LogicalResult encode(Operation* op, Encoder& enc, const std::vector<ListEntry>& operands,
                       const std::vector<ListEntry>& results) {
    if (auto c = dyn_cast<vmir::ConstI64Op>(op)) {
      enc.op(Opcode::ConstI64);
      enc.V(results[0].index);
      enc.K(static_cast<uint64_t>(c.getValue()));
    } else if (auto c = dyn_cast<vmir::ConstF64Op>(op)) {
      enc.op(Opcode::ConstF64);
      enc.V(results[0].index);
      enc.K(c.getValueAttr().getValue().bitcastToAPInt().getZExtValue());
    } else if (isa<vmir::TruncF64F32Op>(op)) {
      enc.op(Opcode::TruncF64F32);
      enc.V(results[0].index);
      enc.V(operands[0].index);
    } else if (isa<vmir::NullRefOp>(op)) {
      // A fresh or released register is null; nothing to emit.
    } else if (auto r = dyn_cast<vmir::RodataOp>(op)) {
      FailureOr<uint32_t> ordinal = rodataOrdinal(r);
      if (failed(ordinal)) return failure();
      enc.op(Opcode::Rodata);
      enc.R(results[0].index, false);
      enc.D(*ordinal);
    } else if (auto call = dyn_cast<vmir::CallImportOp>(op)) {
      enc.op(Opcode::CallImport);
      enc.M(importOrdinal(call.getCallee(),
                          signatureOf(call.getArgs().getTypes(), call.getResultTypes())));
      enc.L(operands);
      enc.L(results);
    } else if (auto inst = dyn_cast<vmir::InstOp>(op)) {
      Opcode opcode;
      if (!bytecode::OpcodeForMnemonic(inst.getMnemonic().str(), &opcode))
        return op->emitError("unknown instruction ") << inst.getMnemonic();
      enc.op(opcode);
      for (const ListEntry& r : results) enc.V(r.index);
      for (const ListEntry& o : operands) enc.V(o.index);
    } else if (auto g = dyn_cast<vmir::GlobalLoadRefOp>(op)) {
      enc.op(Opcode::GlobalLoadRef);
      enc.R(results[0].index, false);
      enc.G(static_cast<uint32_t>(g.getGlobal()));
    } else if (auto g = dyn_cast<vmir::GlobalStoreRefOp>(op)) {
      enc.op(Opcode::GlobalStoreRef);
      enc.R(operands[0].index, operands[0].move);
      enc.G(static_cast<uint32_t>(g.getGlobal()));
    } else if (auto g = dyn_cast<vmir::GlobalLoadI64Op>(op)) {
      enc.op(Opcode::GlobalLoadI64);
      enc.V(results[0].index);
      enc.G(static_cast<uint32_t>(g.getGlobal()));
    } else if (auto g = dyn_cast<vmir::GlobalStoreI64Op>(op)) {
      enc.op(Opcode::GlobalStoreI64);
      enc.V(operands[0].index);
      enc.G(static_cast<uint32_t>(g.getGlobal()));
    } else if (isa<vmir::RefIsNullOp>(op)) {
      enc.op(Opcode::RefIsNull);
      enc.V(results[0].index);
      enc.R(operands[0].index, operands[0].move);
    } else if (auto call = dyn_cast<vmir::CallOp>(op)) {
      auto ordinal = functionOrdinals.find(call.getCallee());
      if (ordinal == functionOrdinals.end())
        return op->emitError("call to unknown function ") << call.getCallee();
      enc.op(Opcode::Call);
      enc.F(ordinal->second);
      enc.L(operands);
      enc.L(results);
    } else if (auto check = dyn_cast<vmir::AssertOp>(op)) {
      enc.op(Opcode::Assert);
      enc.V(operands[0].index);
      data.strings.push_back(check.getMessage().str());
      enc.S(static_cast<uint32_t>(data.strings.size() - 1));
      enc.L(std::vector<ListEntry>(operands.begin() + 1, operands.end()));  // value registers
    } else if (auto fail = dyn_cast<vmir::FailOp>(op)) {
      enc.op(Opcode::Fail);
      enc.V(operands[0].index);
      data.strings.push_back(fail.getMessage().str());
      enc.S(static_cast<uint32_t>(data.strings.size() - 1));
    } else if (isa<vmir::ReturnOp>(op)) {
      enc.op(Opcode::Return);
      enc.L(operands);
    } else {
      return op->emitError() << "cannot encode op '" << op->getName()
                             << "' as VM bytecode (not in VM form)";
    }
    return success();
  }

  bytecode::ModuleData data;
  std::map<std::string, uint32_t> imports;
  llvm::StringMap<uint32_t> functionOrdinals;
};

}  // namespace

LogicalResult WriteBytecodeModule(ModuleOp module, std::vector<uint8_t>* out) {
  return ModuleWriter().write(module, out);
}

}  // namespace hexir::compiler
