#include "compiler/bytecode/BytecodeWriter.h"

#include <unistd.h>

#include <map>

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include "compiler/bytecode/BranchSelection.h"
#include "compiler/bytecode/Encoder.h"
#include "compiler/bytecode/ModuleFile.h"
#include "compiler/bytecode/RegisterAllocation.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::compiler {
namespace {
using namespace mlir;
using bytecode::Encoder;
using bytecode::ListEntry;
using bytecode::Opcode;

class ModuleWriter {
 public:
  explicit ModuleWriter(const BytecodeWriterOptions& options) : options(options) {}

  LogicalResult write(ModuleOp module, std::vector<uint8_t>* out) {
    data.name = module.getName() ? module.getName()->str() : "module";
    // The device list (hexir.devices = ["cpu", "cuda"]: the --target list by ordinal).
    if (auto devices = module->getAttrOfType<ArrayAttr>(kDevicesAttr))
      for (Attribute d : devices) {
        auto kind = dyn_cast<StringAttr>(d);
        if (!kind) return module.emitError("hexir.devices: expected an array of strings");
        data.devices.push_back(kind.str());
      }
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
    auto format = exe->getAttrOfType<StringAttr>(kFormatAttr);
    auto binary = exe->getAttrOfType<StringAttr>(kBinaryAttr);
    auto entry = exe->getAttrOfType<StringAttr>(kEntryAttr);
    if (!format || !binary || !entry)
      return exe.emitError("executable was not serialized (no hexir.format/binary/entry)");
    bytecode::ExecutableData e;
    e.format = format.str();
    e.binary.assign(binary.getValue().begin(), binary.getValue().end());
    e.entry_points.push_back(entry.str());
    if (auto written = exe->getAttrOfType<IntegerAttr>(kWrittenBindingsAttr))
      e.entry_written_bindings.push_back(static_cast<uint64_t>(written.getInt()));
    // Target metadata: `hexir.attrs` strings are copied; each `hexir.rodata_attrs` blob
    // is stored as rodata and its key maps to the rodata ordinal (e.g. CUDA's PTX).
    if (auto attrs = exe->getAttrOfType<DictionaryAttr>(kExecutableAttrsAttr))
      for (NamedAttribute a : attrs)
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          e.attrs.emplace_back(a.getName().str(), s.str());
    if (auto blobs = exe->getAttrOfType<DictionaryAttr>(kRodataAttrsAttr))
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

  static uint64_t maxRodataBytes() {
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || pageSize <= 0) return UINT64_MAX;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) / 2;
  }

  FailureOr<uint32_t> rodataOrdinal(vmir::RodataOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getData());
    if (!dense) return op.emitError("rodata needs a dense elements attribute");
    Type element = dense.getElementType();
    unsigned bits = element.getIntOrFloatBitWidth();
    // Booleans are one byte each in buffers (as LLVM stores i1: 0 or 1); the attribute may
    // hold them packed, so they are read one by one.
    std::vector<char> bools;
    if (element.isInteger(1) && dense.isSplat())
      bools.push_back(dense.getSplatValue<bool>() ? 1 : 0);
    else if (element.isInteger(1))
      for (bool v : dense.getValues<bool>()) bools.push_back(v ? 1 : 0);
    else if (bits % 8 != 0)
      return op.emitError("unsupported rodata element type ") << element;
    ArrayRef<char> raw = element.isInteger(1) ? ArrayRef<char>(bools) : dense.getRawData();
    // A splat is expanded here: refuse one that could not be held in memory (the writer
    // keeps the bytes and the file image) before allocating anything.
    uint64_t count = dense.isSplat() ? static_cast<uint64_t>(dense.getNumElements()) : 1;
    uint64_t total = 0;
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(raw.size()), &total) ||
        total > maxRodataBytes())
      return op.emitError("rodata constant ")
             << dense.getType() << " needs " << count << " x " << raw.size()
             << " bytes, more than the " << maxRodataBytes()
             << " bytes (half of this machine's memory) a module can hold";
    std::vector<uint8_t> bytes;
    bytes.reserve(static_cast<size_t>(total));
    for (uint64_t i = 0; i < count; ++i) bytes.insert(bytes.end(), raw.begin(), raw.end());
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

  // Every signature, block argument and terminator in VM form.
  static LogicalResult verifyVMForm(func::FuncOp func) {
    for (Type t : llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
      if (!vmir::SignatureChar(t))
        return func.emitError("function is not in VM form: type ") << t;
    for (Block& block : func.getBody()) {
      if (block.empty() || !block.back().hasTrait<OpTrait::IsTerminator>())
        return func.emitError("every block must end with a VM terminator");
      for (BlockArgument a : block.getArguments())
        if (!vmir::SignatureChar(a.getType()))
          return func.emitError("block argument is not in VM form: type ") << a.getType();
    }
    return success();
  }

  // What a block's terminator fuses (BranchSelection.h): a loop latch or a compare.
  struct BlockBranches {
    std::optional<LoopLatch> latch;
    std::optional<FusedCompare> fused;
    bool counted = false;  // the latch is a for.i64
    // The instruction folded into the branch (not emitted on its own).
    Operation* folded() {
      return counted ? latch->increment.getOperation() : fused ? fused->compare.getOperation() : nullptr;
    }
  };

  BlockBranches selectBranches(Block& block, DenseMap<Block*, std::vector<ListEntry>>& entryReleases,
                               DenseMap<Value, uint32_t>& regs, const llvm::SetVector<Value>& liveOut) {
    BlockBranches out;
    Operation* selecting = options.selectBranches ? block.getTerminator() : nullptr;
    if (auto br = dyn_cast_or_null<vmir::BrOp>(selecting)) {
      std::optional<LoopLatch>& latch = out.latch;
      latch = MatchLoopLatch(br);
      // The rotated branch skips the header: only where the header releases nothing on
      // entry and copies nothing into the body.
      if (latch && (!entryReleases[latch->header].empty() ||
                    !inPlace(cast<vmir::CondBrOp>(latch->header->getTerminator()).getTrueOperands(),
                             latch->body, regs)))
        latch.reset();
      // for.i64 adds in place at the branch: %next and %counter in %i's register, %step
      // still in its.
      out.counted = latch && latch->increment &&
                    regs[latch->increment->getResult(0)] == regs[latch->induction] &&
                    regs[latch->counter] == regs[latch->induction] &&
                    (latch->increment->getNextNode() == br.getOperation() || liveOut.contains(latch->step) ||
                     llvm::is_contained(br.getDestOperands(), latch->step));
    } else if (auto br = dyn_cast_or_null<vmir::CondBrOp>(selecting)) {
      out.fused = MatchFusedCompare(br);
    }
    return out;
  }

  // A function's code being written: branch targets are patched once every block has its offset.
  struct FunctionCode {
    Encoder enc;
    DenseMap<Block*, uint32_t> blockOffsets;
    std::vector<std::pair<size_t, Block*>> fixups;
    void target(Block* block) { fixups.emplace_back(enc.T(0), block); }
    void patchTargets() {
      for (auto [at, block] : fixups) enc.Patch(at, blockOffsets[block]);
    }
  };
  using EdgeCopies = std::vector<std::pair<ListEntry, ListEntry>>;

  // `br`, with the latch's test and jump to the body first when the block is a loop latch.
  void encodeBr(vmir::BrOp br, EdgeCopies p, const BlockBranches& branches, Block* fallthrough,
                DenseMap<Value, uint32_t>& regs, FunctionCode& code) {
    Encoder& enc = code.enc;
    if (const std::optional<LoopLatch>& latch = branches.latch) {
      if (branches.counted) {
        enc.op(Opcode::ForI64);
        enc.V(regs[latch->induction]);
        enc.V(regs[latch->step]);
      } else {
        enc.op(latch->test.opcode);
        enc.V(regs[latch->test.lhs]);
      }
      enc.V(regs[latch->test.rhs]);
      code.target(latch->body);
      enc.P(p);
    }
    // A branch with nothing to copy to the block laid out next is not written: the code
    // falls through (a block left empty this way costs its predecessors nothing).
    if (options.selectBranches && p.empty() && fallthrough == br.getDest()) return;
    enc.op(Opcode::Br);
    code.target(br.getDest());
    enc.P(p);
  }

  // `cond_br`, or its fused compare-and-branch when the block has one.
  void encodeCondBr(vmir::CondBrOp br, EdgeCopies pTrue, EdgeCopies pFalse, const BlockBranches& branches,
                    Block* fallthrough, DenseMap<Value, uint32_t>& regs, FunctionCode& code) {
    Encoder& enc = code.enc;
    if (!branches.fused) {
      enc.op(Opcode::CondBr);
      enc.V(regs[br.getCondition()]);
      code.target(br.getTrueDest());
      enc.P(pTrue);
      code.target(br.getFalseDest());
      enc.P(pFalse);
      return;
    }
    // Branch toward one destination and fall through (or `br`) to the other; the
    // negated test when that lets the true destination be the fall-through.
    FusedCompare test = *branches.fused;
    auto fallsThrough = [&](Block* dest, const auto& p) { return dest == fallthrough && p.empty(); };
    if (!fallsThrough(br.getFalseDest(), pFalse) && fallsThrough(br.getTrueDest(), pTrue))
      test = Negated(test);
    Block* taken = test.toTrueDest ? br.getTrueDest() : br.getFalseDest();
    Block* other = test.toTrueDest ? br.getFalseDest() : br.getTrueDest();
    enc.op(test.opcode);
    enc.V(regs[test.lhs]);
    enc.V(regs[test.rhs]);
    code.target(taken);
    enc.P(test.toTrueDest ? pTrue : pFalse);
    const auto& pOther = test.toTrueDest ? pFalse : pTrue;
    if (fallsThrough(other, pOther)) return;
    enc.op(Opcode::Br);
    code.target(other);
    enc.P(pOther);
  }

  // The module's record of a function: its code, register counts, export and ABI attributes.
  static bytecode::FunctionData functionData(func::FuncOp func, std::vector<uint32_t> code,
                                             const RegisterAssignment& assignment) {
    bytecode::FunctionData fn;
    fn.name = func.getName().str();
    fn.signature = signatureOf(func.getArgumentTypes(), func.getResultTypes());
    fn.code = std::move(code);
    fn.value_register_count = assignment.valueCount;
    fn.ref_register_count = assignment.refCount;
    fn.exported = func.isPublic();
    for (auto [attr, key] : {std::pair{"hexir_vm.abi_args", "abi.args"},
                             std::pair{"hexir_vm.abi_results", "abi.results"},
                             std::pair{"hexir_vm.abi_arg_devices", "abi.arg_devices"}})
      if (auto s = func->getAttrOfType<StringAttr>(attr)) fn.attrs.emplace_back(key, s.str());
    return fn;
  }

  LogicalResult addFunction(func::FuncOp func) {
    if (func.isExternal()) return success();
    if (failed(verifyVMForm(func))) return failure();
    Region& region = func.getBody();
    Liveness live(region);
    RegisterAssignment assignment(region, live, /*coalesce=*/options.selectBranches);
    auto& regs = assignment.regs;
    auto isRef = RegisterAssignment::isRef;
    auto entryOf = [&](Value v, bool move) { return ListEntry{isRef(v), move, regs[v]}; };

    DenseMap<Block*, std::vector<ListEntry>> entryReleases;
    for (Block& block : region) entryReleases[&block] = releasesOnEntry(block, live, regs);

    FunctionCode code;
    Encoder& enc = code.enc;
    for (Block& block : region) {
      code.blockOffsets[&block] = static_cast<uint32_t>(enc.size());
      if (!entryReleases[&block].empty()) {
        enc.op(Opcode::Release);
        enc.L(entryReleases[&block]);
      }
      const auto& liveOut = live.liveOut[&block];
      // Last use of each value within this block (values live-out are never moved).
      DenseMap<Value, Operation*> lastUse;
      for (Operation& op : block)
        for (Value v : op.getOperands()) lastUse[v] = &op;
      auto movable = [&](Value v, Operation* op) {
        return isRef(v) && lastUse.lookup(v) == op && !liveOut.contains(v);
      };
      BlockBranches branches = selectBranches(block, entryReleases, regs, liveOut);
      Operation* folded = branches.folded();
      Block* fallthrough = block.getNextNode();
      for (Operation& op : block) {
        if (&op == folded) continue;
        if (auto br = dyn_cast<vmir::BrOp>(op)) {
          encodeBr(br, copies(br.getDestOperands(), br.getDest(), &op, movable, regs), branches, fallthrough,
                   regs, code);
          continue;
        }
        if (auto br = dyn_cast<vmir::CondBrOp>(op)) {
          auto pTrue = copies(br.getTrueOperands(), br.getTrueDest(), &op, movable, regs);
          auto pFalse = copies(br.getFalseOperands(), br.getFalseDest(), &op, movable, regs);
          encodeCondBr(br, std::move(pTrue), std::move(pFalse), branches, fallthrough, regs, code);
          continue;
        }
        std::vector<ListEntry> operands;
        for (auto [j, v] : llvm::enumerate(op.getOperands())) {
          bool laterInOp = llvm::is_contained(op.getOperands().drop_front(j + 1), v);
          operands.push_back(entryOf(v, movable(v, &op) && !laterInOp));
        }
        std::vector<ListEntry> results;
        for (Value r : op.getResults()) results.push_back(entryOf(r, false));
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
    code.patchTargets();
    std::string error;
    std::vector<uint32_t> words = enc.finish(&error);
    if (!error.empty()) return func.emitError("internal encoding error: ") << error;
    data.functions.push_back(functionData(func, std::move(words), assignment));
    return success();
  }

  // Refs that die on entry to `block`: kept alive by a predecessor for another successor,
  // passed by its branch only on another edge, or block arguments nothing uses.
  static std::vector<ListEntry> releasesOnEntry(Block& block, const Liveness& live,
                                                DenseMap<Value, uint32_t>& regs) {
    auto isRef = RegisterAssignment::isRef;
    const auto& liveIn = live.liveIn.lookup(&block);
    std::vector<ListEntry> dying;
    llvm::SmallDenseSet<uint32_t> dyingRegs;
    auto kill = [&](Value v) {
      if (isRef(v) && dyingRegs.insert(regs[v]).second) dying.push_back(ListEntry{true, false, regs[v]});
    };
    llvm::SmallDenseSet<uint32_t> argRegs;
    for (BlockArgument a : block.getArguments())
      if (isRef(a)) argRegs.insert(regs[a]);
    for (Block* pred : block.getPredecessors()) {
      const auto& predLiveOut = live.liveOut.lookup(pred);
      for (Value v : predLiveOut)
        if (!liveIn.contains(v) && !argRegs.contains(regs[v])) kill(v);
      Operation* term = pred->getTerminator();
      auto branch = dyn_cast<BranchOpInterface>(term);
      llvm::SmallDenseSet<Value> passedHere;
      for (auto [i, succ] : llvm::enumerate(term->getSuccessors()))
        if (succ == &block && branch)
          for (Value v : branch.getSuccessorOperands(i).getForwardedOperands()) passedHere.insert(v);
      for (Value v : term->getOperands())
        if (isRef(v) && !predLiveOut.contains(v) && !passedHere.contains(v) &&
            !argRegs.contains(regs[v]))
          kill(v);
    }
    for (BlockArgument a : block.getArguments())
      if (a.use_empty() && !live.liveOut.lookup(&block).contains(a)) kill(a);
    return dying;
  }

  // True when the copies of an edge into `dest` are all in place (nothing to emit).
  static bool inPlace(OperandRange sources, Block* dest, DenseMap<Value, uint32_t>& regs) {
    for (auto [j, v] : llvm::enumerate(sources))
      if (regs[v] != regs[dest->getArgument(j)]) return false;
    return true;
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
      // Already in place. A ref copied again later stays listed: its MOVE is on the last
      // occurrence, which must not empty the register this pair leaves in place.
      if (regs[v] == regs[dst] && (!ref || !laterHere)) continue;
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
    } else if (isa<vmir::CmpEqRefOp>(op)) {
      enc.op(Opcode::CmpEqRef);
      enc.V(results[0].index);
      enc.R(operands[0].index, operands[0].move);
      enc.R(operands[1].index, operands[1].move);
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

  const BytecodeWriterOptions options;
  bytecode::ModuleData data;
  std::map<std::string, uint32_t> imports;
  llvm::StringMap<uint32_t> functionOrdinals;
};

}  // namespace

LogicalResult WriteBytecodeModule(ModuleOp module, std::vector<uint8_t>* out,
                                  const BytecodeWriterOptions& options) {
  return ModuleWriter(options).write(module, out);
}

}  // namespace hexir::compiler
