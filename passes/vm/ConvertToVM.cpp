// Lowers host functions (func.func on tensors and scalars with hexir.dispatch ops, control
// flow already in `cf` form) to hexir_vm ops calling the HAL imports of
// hal/module/hal_imports.def.
//
// Why it looks like this (see passes/README.md, "Host lowering"):
// - Consecutive dispatches of a block form a *segment*. Each segment's command buffer is
//   recorded once per context (on first execution, into a ref global) with binding-table
//   slots only, and replayed on every later execution with `execute_bound` and this call's
//   buffers. Nothing a recording contains depends on a call: bindings are slots, dynamic
//   dims and scalar operands travel in a per-dispatch parameter buffer written per call,
//   and workgroup counts are static (kernels with dynamic extents bound themselves).
// - The device queue is in order, so no semaphores are needed between segments, calls and
//   loop iterations; the host waits only where it reads a value (`hal.device.read_*`, or the
//   caller reading a result view). Transient buffers (used only inside their segment) live
//   in ref globals, grown by `hal.device.transient` when a dynamic size exceeds them, and
//   are reused by every execution: a replayed segment allocates nothing and its recorded
//   bindings stay put (no CUDA graph node updates).
// - Tensors are (buffer ref, dims as i64 registers); dims of dynamic dimensions are read
//   from argument views once and then flow through registers.
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "hal/element_type.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/ElementTypeCode.h"
#include "passes/Passes.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/vm/HalImports.h"

namespace hexir {
#define GEN_PASS_DEF_CONVERTTOVM
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;
using vmir::RefType;

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string joinTypes(TypeRange types) {
  std::string s;
  for (auto [i, t] : llvm::enumerate(types)) s += (i ? ";" : "") + typeString(t);
  return s;
}

// State shared by every function of the module: globals and the initializer's body.
struct ModuleState {
  explicit ModuleState(ModuleOp module) : module(module) {}
  ModuleOp module;
  llvm::StringMap<int64_t> executableOrdinals;
  int64_t refGlobals = 0;
  // Constants: uploaded once by the initializer into ref globals.
  SmallVector<std::pair<DenseElementsAttr, int64_t>> constants;
  // Tensor globals (hexir.global): one ref global each; the hexir.initializer functions
  // that write them are called by the module initializer after the constant uploads.
  llvm::StringMap<int64_t> tensorGlobals;
  SmallVector<std::string> initializerForms;
};

// A host tensor: its buffer and its dims (i64 registers; constants for static dims).
struct HostTensor {
  Value buffer;
  SmallVector<Value> dims;
  Value view;  // the argument view it came from, if any (returned as is)
};

struct PendingDispatch {
  DispatchOp op;
  SmallVector<Value> bindings;  // buffers, params buffer last
};

class HostLowering {
 public:
  HostLowering(func::FuncOp func, ModuleState& state)
      : func(func), state(state), ctx(func.getContext()), b(func), ref(RefType::get(ctx)) {}

  LogicalResult run() {
    SmallVector<Type> argTypes, resultTypes;
    for (Type t : func.getArgumentTypes()) {
      Type vt = vmType(t);
      if (!vt) return func.emitError() << "unsupported argument type " << t << " for target 'cpu'";
      argTypes.push_back(vt);
    }
    for (Type t : func.getResultTypes()) {
      Type vt = vmType(t);
      if (!vt) return func.emitError() << "unsupported result type " << t << " for target 'cpu'";
      resultTypes.push_back(vt);
    }
    b.setInsertionPoint(func);
    vmFunc = func::FuncOp::create(b, func.getLoc(), func.getName(),
                                  b.getFunctionType(argTypes, resultTypes));
    vmFunc.setVisibility(func.getVisibility());
    vmFunc->setAttr("hexir_vm.abi_args", b.getStringAttr(joinTypes(func.getArgumentTypes())));
    vmFunc->setAttr("hexir_vm.abi_results", b.getStringAttr(joinTypes(func.getResultTypes())));
    if (failed(lowerBody())) {
      vmFunc.erase();
      return failure();
    }
    func.erase();
    return success();
  }

 private:
  // ---- helpers ----------------------------------------------------------------------------
  Type vmType(Type t) {
    if (isa<RankedTensorType>(t)) return ref;
    if (isa<FloatType>(t) && (t.isF32() || t.isF64())) return b.getF64Type();
    if (t.isIndex() || t.isInteger(64) || t.isInteger(32) || t.isInteger(1) || t.isInteger(8) ||
        t.isInteger(16))
      return b.getI64Type();
    return nullptr;
  }

  Value i64(int64_t v) {
    return vmir::ConstI64Op::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
  }
  Value inst(StringRef mnemonic, ValueRange operands, Type result) {
    return vmir::InstOp::create(b, loc, TypeRange{result}, b.getStringAttr(mnemonic), operands)
        .getResult(0);
  }
  Value instI(StringRef mnemonic, ValueRange operands) {
    return inst(mnemonic, operands, b.getI64Type());
  }
  Value null() { return vmir::NullRefOp::create(b, loc, ref); }

  int64_t elementSize(RankedTensorType t) {
    return hal::ElementTypeByteSize(elementTypeCode(t.getElementType()));
  }
  Value byteSize(RankedTensorType t, ArrayRef<Value> dims) {
    int64_t constant = elementSize(t);
    Value size;
    for (auto [i, d] : llvm::enumerate(t.getShape())) {
      if (!ShapedType::isDynamic(d)) {
        constant *= d;
        continue;
      }
      size = size ? instI("mul.i64", {size, dims[i]}) : dims[i];
    }
    return size ? instI("mul.i64", {size, i64(constant)}) : i64(constant);
  }

  // The VM values a host value becomes on a block edge / in a call: tensors are their
  // buffer and dynamic dims, scalars themselves.
  LogicalResult flatten(Operation* op, Value v, SmallVectorImpl<Value>& out) {
    if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      auto it = tensors.find(v);
      if (it == tensors.end()) return op->emitError("tensor has no buffer on the host");
      out.push_back(it->second.buffer);
      for (auto [i, d] : llvm::enumerate(t.getShape()))
        if (ShapedType::isDynamic(d)) out.push_back(it->second.dims[i]);
      return success();
    }
    Value s = scalars.lookup(v);
    if (!s) return op->emitError("scalar has no host value");
    out.push_back(s);
    return success();
  }
  // Binds block arguments of `vmBlock` created for `block`'s arguments.
  void addBlockArguments(Block* block, Block* vmBlock) {
    for (BlockArgument a : block->getArguments()) {
      if (auto t = dyn_cast<RankedTensorType>(a.getType())) {
        HostTensor h;
        h.buffer = vmBlock->addArgument(ref, a.getLoc());
        for (int64_t d : t.getShape())
          h.dims.push_back(ShapedType::isDynamic(d) ? vmBlock->addArgument(b.getI64Type(), a.getLoc())
                                                    : Value());
        pendingStaticDims.push_back(a);
        tensors[a] = h;
      } else {
        scalars[a] = vmBlock->addArgument(vmType(a.getType()), a.getLoc());
      }
    }
  }
  // Static dims of block-argument tensors are materialized at the start of their block.
  void materializeStaticDims() {
    for (Value a : pendingStaticDims) {
      auto t = cast<RankedTensorType>(a.getType());
      for (auto [i, d] : llvm::enumerate(t.getShape()))
        if (!ShapedType::isDynamic(d)) tensors[a].dims[i] = i64(d);
    }
    pendingStaticDims.clear();
  }

  // ---- function body ---------------------------------------------------------------------
  LogicalResult lowerBody() {
    Region& region = func.getBody();
    for (Block& block : region) {
      Block* vmBlock = new Block();
      vmFunc.getBody().push_back(vmBlock);
      blocks[&block] = vmBlock;
    }
    Block* entry = blocks[&region.front()];
    b.setInsertionPointToStart(entry);
    loc = func.getLoc();
    device = hal_import::DeviceDefault(b, loc);
    for (auto [i, arg] : llvm::enumerate(region.front().getArguments())) {
      Value vmArg = entry->addArgument(vmType(arg.getType()), arg.getLoc());
      auto tensor = dyn_cast<RankedTensorType>(arg.getType());
      if (!tensor) {
        scalars[arg] = vmArg;
        continue;
      }
      tensors[arg] = importView(vmArg, tensor, static_cast<int64_t>(i), /*check=*/true);
    }
    for (Block& block : region) {
      cur = blocks[&block];
      if (&block != &region.front()) {
        b.setInsertionPointToStart(cur);
        addBlockArguments(&block, cur);
        materializeStaticDims();
      }
      b.setInsertionPointToEnd(cur);
      computeSegments(block);
      for (Operation& op : block)
        if (failed(lowerOp(op))) return failure();
    }
    return success();
  }

  // Unwraps a view: buffer and dims (asserted when `check`, index = argument index).
  HostTensor importView(Value view, RankedTensorType tensor, int64_t index, bool check) {
    HostTensor h;
    h.view = check ? view : Value();
    if (check) {
      Value argument = i64(index);
      Value type = i64(elementTypeCode(tensor.getElementType()));
      SmallVector<Value> dims;
      for (int64_t d : tensor.getShape()) dims.push_back(i64(ShapedType::isDynamic(d) ? -1 : d));
      hal_import::BufferViewAssert(b, loc, view, argument, type, dims);
    }
    h.buffer = hal_import::BufferViewBuffer(b, loc, view);
    for (auto [i, d] : llvm::enumerate(tensor.getShape()))
      h.dims.push_back(ShapedType::isDynamic(d)
                           ? hal_import::BufferViewDim(b, loc, view, i64(i))
                           : i64(d));
    return h;
  }

  Value exportView(const HostTensor& h, RankedTensorType t) {
    if (h.view) return h.view;
    return hal_import::BufferViewCreate(b, loc, h.buffer, i64(elementTypeCode(t.getElementType())), h.dims);
  }

  // Ops that may sit inside a segment without ending it.
  static bool keepsSegmentOpen(Operation& op) {
    return isa<DispatchOp, CheckOp, tensor::DimOp, tensor::ExpandShapeOp,
               tensor::CollapseShapeOp, tensor::CastOp, tensor::EmptyOp>(op) ||
           (op.getDialect() && op.getDialect()->getNamespace() == "arith");
  }

  void computeSegments(Block& block) {
    segmentOf.clear();
    int64_t id = 0;
    for (Operation& op : block) {
      segmentOf[&op] = id;
      if (!keepsSegmentOpen(op)) ++id;
    }
  }

  // A dispatch result is transient when every use (through host reshapes) is a dispatch
  // of the same segment: it is then queue-allocated and queue-deallocated around it.
  bool isTransient(Value v, int64_t segment) {
    for (OpOperand& use : v.getUses()) {
      Operation* user = use.getOwner();
      if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
        if (user->getBlock() != v.getParentBlock() || !isTransient(user->getResult(0), segment))
          return false;
        continue;
      }
      auto d = dyn_cast<DispatchOp>(user);
      if (!d || d->getBlock() != v.getParentBlock() || segmentOf.lookup(d) != segment ||
          !llvm::is_contained(d.getArgs(), v))
        return false;
      // Updated in place: the buffer lives on as the tied result.
      int64_t result = tiedResultOf(d, use.getOperandNumber());
      if (result >= 0 && !isTransient(d->getResult(result), segment)) return false;
    }
    return true;
  }

  // The result of `d` written into operand `operand`'s buffer (hexir.tied_operands), or -1.
  static int64_t tiedResultOf(DispatchOp d, unsigned operand) {
    auto tied = d->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr);
    if (!tied) return -1;
    for (auto [i, t] : llvm::enumerate(tied.asArrayRef()))
      if (t == int64_t(operand)) return i;
    return -1;
  }

  LogicalResult lowerOp(Operation& op) {
    loc = op.getLoc();
    if (!keepsSegmentOpen(op)) flushSegment();
    return llvm::TypeSwitch<Operation*, LogicalResult>(&op)
        .Case<arith::ConstantOp>([&](auto c) { return lowerConstant(c); })
        .Case<DispatchOp>([&](auto d) { return lowerDispatch(d); })
        .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp>([&](auto r) { return lowerReshape(r); })
        .Case<tensor::CastOp>([&](auto c) { return lowerCast(c); })
        .Case<CheckOp>([&](auto c) { return lowerCheck(c); })
        .Case<tensor::EmptyOp>([&](auto e) { return lowerEmpty(e); })
        .Case<tensor::DimOp>([&](auto d) { return lowerDim(d); })
        .Case<tensor::ExtractOp>([&](auto e) { return lowerExtract(e); })
        .Case<func::CallOp>([&](auto c) { return lowerCall(c); })
        .Case<cf::BranchOp>([&](auto br) { return lowerBranch(br); })
        .Case<cf::CondBranchOp>([&](auto br) { return lowerCondBranch(br); })
        .Case<func::ReturnOp>([&](auto r) { return lowerReturn(r); })
        .Case<GlobalLoadOp>([&](auto g) { return lowerGlobalLoad(g); })
        .Case<GlobalStoreOp>([&](auto g) { return lowerGlobalStore(g); })
        .Default([&](Operation* o) -> LogicalResult {
          if (o->getDialect() && o->getDialect()->getNamespace() == "arith")
            return lowerScalarArith(o);
          return o->emitError() << "unsupported op '" << o->getName()
                                << "' in a host function for target 'cpu'";
        });
  }

  // ---- tensors -----------------------------------------------------------------------------
  LogicalResult lowerConstant(arith::ConstantOp c) {
    auto tensor = dyn_cast<RankedTensorType>(c.getType());
    if (!tensor) {
      Attribute value = c.getValue();
      if (auto f = dyn_cast<FloatAttr>(value)) {
        scalars[c] = vmir::ConstF64Op::create(b, loc, b.getF64Type(),
                                              b.getF64FloatAttr(f.getValueAsDouble()));
      } else if (auto i = dyn_cast<IntegerAttr>(value)) {
        scalars[c] = i64(c.getType().isInteger(1) ? (i.getValue().getBoolValue() ? 1 : 0)
                                                  : i.getValue().getSExtValue());
      } else {
        return c.emitError("unsupported scalar constant for target 'cpu'");
      }
      return success();
    }
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense) return c.emitError("unsupported constant encoding for target 'cpu' (need dense<...>)");
    int64_t global = state.refGlobals++;
    state.constants.push_back({dense, global});
    HostTensor h;
    h.buffer = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
    for (int64_t d : tensor.getShape()) h.dims.push_back(i64(d));
    tensors[c] = h;
    return success();
  }

  LogicalResult lowerEmpty(tensor::EmptyOp e) {
    // A host-side empty (returned or passed on without a producer): a zeroed buffer.
    auto t = e.getType();
    HostTensor h;
    unsigned dyn = 0;
    for (int64_t d : t.getShape())
      h.dims.push_back(ShapedType::isDynamic(d) ? scalars.lookup(e.getDynamicSizes()[dyn++]) : i64(d));
    h.buffer = hal_import::AllocatorAllocate(b, loc, device, byteSize(t, h.dims));
    tensors[e] = h;
    return success();
  }

  // Row-major reshapes reuse the bytes: the result aliases the source buffer (buffers are
  // never written after the dispatch that produces them). Result dims: a collapsed dim is
  // the product of its group; an expanded dim is static or its `output_shape` value.
  LogicalResult lowerReshape(Operation* op) {
    auto it = tensors.find(op->getOperand(0));
    if (it == tensors.end()) return op->emitError("reshaped tensor has no buffer");
    auto t = cast<RankedTensorType>(op->getResult(0).getType());
    HostTensor h;
    h.buffer = it->second.buffer;
    SmallVector<Value> source = it->second.dims;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      for (auto [i, group] : llvm::enumerate(collapse.getReassociationIndices())) {
        if (!t.isDynamicDim(i)) {
          h.dims.push_back(i64(t.getDimSize(i)));
          continue;
        }
        Value size = source[group[0]];
        for (int64_t d : ArrayRef<int64_t>(group).drop_front()) size = instI("mul.i64", {size, source[d]});
        h.dims.push_back(size);
      }
    } else {
      auto expand = cast<tensor::ExpandShapeOp>(op);
      for (auto [i, size] : llvm::enumerate(expand.getMixedOutputShape())) {
        if (!t.isDynamicDim(i)) {
          h.dims.push_back(i64(t.getDimSize(i)));
          continue;
        }
        Value v = scalars.lookup(dyn_cast<Value>(size));
        if (!v) return op->emitError("reshape size has no host value");
        h.dims.push_back(v);
      }
    }
    tensors[op->getResult(0)] = h;
    return success();
  }

  // A cast aliases its source; its static dims are constants (a check that they hold at run
  // time is materialized before it by hexir-insert-shape-checks).
  LogicalResult lowerCast(tensor::CastOp c) {
    auto it = tensors.find(c.getSource());
    if (it == tensors.end()) return c.emitError("cast tensor has no buffer");
    auto t = cast<RankedTensorType>(c.getType());
    HostTensor h;
    h.buffer = it->second.buffer;
    for (auto [i, d] : llvm::enumerate(t.getShape()))
      h.dims.push_back(ShapedType::isDynamic(d) ? it->second.dims[i] : i64(d));
    tensors[c] = h;
    return success();
  }

  // A check is one `assert`: it runs on the host before the segment holding the dispatches
  // it guards is submitted (checks keep the segment open).
  LogicalResult lowerCheck(CheckOp c) {
    Value condition = scalars.lookup(c.getCondition());
    if (!condition) return c.emitError("check condition has no host value");
    SmallVector<Value> values;
    for (Value v : c.getValues()) {
      Value s = scalars.lookup(v);
      if (!s) return c.emitError("check value has no host value");
      values.push_back(s);
    }
    vmir::AssertOp::create(b, loc, condition, c.getMessageAttr(), values);
    return success();
  }

  LogicalResult lowerDim(tensor::DimOp d) {
    auto it = tensors.find(d.getSource());
    std::optional<int64_t> index = d.getConstantIndex();
    if (it == tensors.end() || !index)
      return d.emitError("unsupported tensor.dim (needs a constant index) for target 'cpu'");
    scalars[d] = it->second.dims[*index];
    return success();
  }

  // One element read back by the host: waits for the device once.
  LogicalResult lowerExtract(tensor::ExtractOp e) {
    auto it = tensors.find(e.getTensor());
    if (it == tensors.end()) return e.emitError("extracted tensor has no buffer");
    auto t = e.getTensor().getType();
    Value linear = i64(0);
    for (auto [i, index] : llvm::enumerate(e.getIndices())) {
      Value idx = scalars.lookup(index);
      if (!idx) return e.emitError("index has no host value");
      linear = instI("add.i64", {instI("mul.i64", {linear, it->second.dims[i]}), idx});
    }
    Value offset = instI("mul.i64", {linear, i64(elementSize(t))});
    Type et = t.getElementType();
    bool isFloat = et.isF32() || et.isF64();
    if (!isHostReadableElement(et))
      return e.emitError() << "unsupported element type " << et
                           << " for a host read (tensor.extract) for target 'cpu'";
    Value type = i64(elementTypeCode(et));
    scalars[e] = isFloat ? hal_import::DeviceReadF64(b, loc, device, it->second.buffer, offset, type)
                         : hal_import::DeviceReadI64(b, loc, device, it->second.buffer, offset, type);
    return success();
  }

  // ---- tensor globals (hexir.global: lifted dispatch results) -------------------------------
  // A ref global holding the buffer; the static dims are constants. A store is an ordinary
  // host op: it ends the segment that computes the value (queue order covers later reads).
  int64_t tensorGlobal(FlatSymbolRefAttr name) {
    auto [it, inserted] = state.tensorGlobals.try_emplace(name.getValue(), state.refGlobals);
    if (inserted) ++state.refGlobals;
    return it->second;
  }
  LogicalResult lowerGlobalLoad(GlobalLoadOp g) {
    HostTensor h;
    h.buffer = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(tensorGlobal(g.getGlobalAttr())));
    for (int64_t d : g.getType().getShape()) h.dims.push_back(i64(d));
    tensors[g] = h;
    return success();
  }
  LogicalResult lowerGlobalStore(GlobalStoreOp g) {
    auto it = tensors.find(g.getValue());
    if (it == tensors.end()) return g.emitError("stored tensor has no buffer");
    vmir::GlobalStoreRefOp::create(b, loc, it->second.buffer, b.getI64IntegerAttr(tensorGlobal(g.getGlobalAttr())));
    return success();
  }

  // ---- dispatches and segments -------------------------------------------------------------
  // Scalar kernel operands as i64 parameter words (f32 as its bits, low 32).
  FailureOr<Value> paramWord(DispatchOp d, Value v) {
    Value s = scalars.lookup(v);
    if (!s) return d.emitError("scalar dispatch operand has no host value");
    Type t = v.getType();
    if (t.isF32()) return inst("trunc.f64.f32", {s}, b.getI64Type());
    if (t.isF64()) return d.emitError("unsupported f64 scalar dispatch operand for target 'cpu'");
    return s;
  }

  LogicalResult lowerDispatch(DispatchOp d) {
    StringRef name = d.getExecutable();
    if (!state.executableOrdinals.count(name)) return d.emitError("unknown executable ") << name;
    auto exe = SymbolTable::lookupNearestSymbolFrom<ExecutableOp>(d, d.getExecutableAttr());
    auto count = exe ? exe->getAttrOfType<DenseI64ArrayAttr>("hexir.workgroup_count") : nullptr;
    if (!count || count.size() != 3)
      return d.emitError("executable has no hexir.workgroup_count (run codegen first)");

    PendingDispatch p;
    p.op = d;
    SmallVector<Value> params;  // kernel argument order: tensors' dyn dims, results', scalars
    SmallVector<Value> scalarOperands;
    for (Value operand : d.getArgs()) {
      auto t = dyn_cast<RankedTensorType>(operand.getType());
      if (!t) {
        scalarOperands.push_back(operand);
        continue;
      }
      auto it = tensors.find(operand);
      if (it == tensors.end()) return d.emitError("tensor operand has no buffer");
      p.bindings.push_back(it->second.buffer);
      for (auto [i, dim] : llvm::enumerate(t.getShape()))
        if (ShapedType::isDynamic(dim)) params.push_back(it->second.dims[i]);
    }
    unsigned nextDim = 0;
    int64_t segment = segmentOf.lookup(d);
    auto tied = d->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr);
    for (auto [ri, result] : llvm::enumerate(d.getResults())) {
      auto t = cast<RankedTensorType>(result.getType());
      if (tied && tied[ri] >= 0) {
        // Written in place into the operand's buffer: same buffer, same dims; bound twice
        // (operand and output), which the segment's slot list turns into one slot.
        HostTensor h = tensors.lookup(d.getArgs()[tied[ri]]);
        if (!h.buffer) return d.emitError("in-place update of a tensor without a buffer");
        for (int64_t dim : t.getShape())
          if (ShapedType::isDynamic(dim)) ++nextDim;
        h.view = Value();
        tensors[result] = h;
        p.bindings.push_back(h.buffer);
        for (auto [i, dim] : llvm::enumerate(t.getShape()))
          if (ShapedType::isDynamic(dim)) params.push_back(h.dims[i]);
        continue;
      }
      HostTensor h;
      for (int64_t dim : t.getShape()) {
        if (!ShapedType::isDynamic(dim)) {
          h.dims.push_back(i64(dim));
          continue;
        }
        Value size = scalars.lookup(d.getResultDims()[nextDim++]);
        if (!size) return d.emitError("result dim has no host value");
        h.dims.push_back(size);
        params.push_back(size);
      }
      Value bytes = byteSize(t, h.dims);
      if (isTransient(result, segment)) {
        // Kept in a ref global and reused by every execution of the segment (the queue is in
        // order): no allocation per execution, and the recorded binding does not change.
        int64_t global = state.refGlobals++;
        Value held = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
        h.buffer = hal_import::DeviceTransient(b, loc, device, held, bytes);
        vmir::GlobalStoreRefOp::create(b, loc, h.buffer, b.getI64IntegerAttr(global));
      } else {
        // Kernels write every element of their results: no zero fill (a pass over the
        // memory on the CPU, a memset node on CUDA), stream-ordered, no submission.
        Value none = null();
        h.buffer = hal_import::QueueAlloca(b, loc, device, none, i64(0), none, i64(0), bytes);
      }
      tensors[result] = h;
      p.bindings.push_back(h.buffer);
    }
    for (Value s : scalarOperands) {
      FailureOr<Value> word = paramWord(d, s);
      if (failed(word)) return failure();
      params.push_back(*word);
    }
    if (!params.empty()) {
      // Dispatches of one segment with the same parameters share one buffer.
      Value buffer;
      for (auto& [values, existing] : segmentParams)
        if (values == params) buffer = existing;
      if (!buffer) {
        buffer = hal_import::AllocatorAllocateUniform(b, loc, device,
                                                      i64(8 * static_cast<int64_t>(params.size())));
        hal_import::BufferStoreI64(b, loc, buffer, i64(0), params);
        segmentParams.push_back({params, buffer});
      }
      p.bindings.push_back(buffer);
    }
    pending.push_back(std::move(p));
    return success();
  }

  // Emits the pending segment: record-once (lazily, into a ref global) and replay.
  void flushSegment() {
    if (pending.empty()) return;
    SmallVector<Value> slots;
    DenseMap<Value, int64_t> slotOf;
    for (auto& p : pending)
      for (Value v : p.bindings)
        if (slotOf.try_emplace(v, slots.size()).second) slots.push_back(v);

    int64_t global = state.refGlobals++;
    Value cached = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
    Value isNull = vmir::RefIsNullOp::create(b, loc, b.getI64Type(), cached);
    Block* record = new Block();
    Block* replay = new Block();
    vmFunc.getBody().getBlocks().insertAfter(Region::iterator(cur), record);
    vmFunc.getBody().getBlocks().insertAfter(Region::iterator(record), replay);
    Value cbArg = replay->addArgument(ref, loc);
    vmir::CondBrOp::create(b, loc, isNull, ValueRange{}, ValueRange{cached}, record, replay);

    b.setInsertionPointToStart(record);
    Value cb = hal_import::CommandBufferCreate(b, loc, device);
    llvm::StringMap<Value> executables;
    for (auto [i, p] : llvm::enumerate(pending)) {
      loc = p.op.getLoc();
      StringRef name = p.op.getExecutable();
      Value& exe = executables[name];
      if (!exe) exe = hal_import::ExecutableLookup(b, loc, device, i64(state.executableOrdinals[name]));
      if (i) hal_import::CommandBufferBarrier(b, loc, cb);
      auto exeOp = SymbolTable::lookupNearestSymbolFrom<ExecutableOp>(p.op, p.op.getExecutableAttr());
      auto count = exeOp->getAttrOfType<DenseI64ArrayAttr>("hexir.workgroup_count");
      Value entry = i64(0), x = i64(count[0]), y = i64(count[1]), z = i64(count[2]);
      Value bindingCount = i64(p.bindings.size());
      SmallVector<Value> slotOrdinals;
      for (Value v : p.bindings) slotOrdinals.push_back(i64(slotOf[v]));
      hal_import::CommandBufferDispatchSlots(b, loc, cb, exe, entry, x, y, z, bindingCount, slotOrdinals);
    }
    hal_import::CommandBufferFinalize(b, loc, cb);
    vmir::GlobalStoreRefOp::create(b, loc, cb, b.getI64IntegerAttr(global));
    vmir::BrOp::create(b, loc, ValueRange{cb}, replay);

    b.setInsertionPointToStart(replay);
    cur = replay;
    Value none = null();
    hal_import::QueueExecuteBound(b, loc, device, cbArg, none, i64(0), none, i64(0), slots);
    pending.clear();
    segmentParams.clear();
  }

  // ---- calls and control flow -------------------------------------------------------------
  LogicalResult lowerCall(func::CallOp c) {
    SmallVector<Value> args;
    for (Value v : c.getOperands()) {
      if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
        auto it = tensors.find(v);
        if (it == tensors.end()) return c.emitError("tensor argument has no buffer");
        args.push_back(exportView(it->second, t));
      } else {
        Value s = scalars.lookup(v);
        if (!s) return c.emitError("scalar argument has no host value");
        args.push_back(s);
      }
    }
    SmallVector<Type> results;
    for (Type t : c.getResultTypes()) {
      Type vt = vmType(t);
      if (!vt) return c.emitError() << "unsupported result type " << t << " for target 'cpu'";
      results.push_back(vt);
    }
    auto callOp = vmir::CallOp::create(b, loc, results, c.getCalleeAttr(), args);
    for (auto [r, v] : llvm::zip(c.getResults(), callOp.getResults())) {
      if (auto t = dyn_cast<RankedTensorType>(r.getType()))
        tensors[r] = importView(v, t, 0, /*check=*/false);
      else
        scalars[r] = v;
    }
    return success();
  }

  LogicalResult edgeOperands(Operation* op, ValueRange operands, SmallVectorImpl<Value>& out) {
    for (Value v : operands)
      if (failed(flatten(op, v, out))) return failure();
    return success();
  }

  LogicalResult lowerBranch(cf::BranchOp br) {
    SmallVector<Value> operands;
    if (failed(edgeOperands(br, br.getDestOperands(), operands))) return failure();
    vmir::BrOp::create(b, loc, operands, blocks[br.getDest()]);
    return success();
  }

  LogicalResult lowerCondBranch(cf::CondBranchOp br) {
    SmallVector<Value> t, f;
    if (failed(edgeOperands(br, br.getTrueDestOperands(), t)) ||
        failed(edgeOperands(br, br.getFalseDestOperands(), f)))
      return failure();
    Value cond = scalars.lookup(br.getCondition());
    if (!cond) return br.emitError("condition has no host value");
    vmir::CondBrOp::create(b, loc, cond, t, f, blocks[br.getTrueDest()], blocks[br.getFalseDest()]);
    return success();
  }

  LogicalResult lowerReturn(func::ReturnOp r) {
    SmallVector<Value> results;
    for (Value v : r.getOperands()) {
      if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
        auto it = tensors.find(v);
        if (it == tensors.end()) return r.emitError("returned tensor has no buffer");
        results.push_back(exportView(it->second, t));
      } else {
        Value s = scalars.lookup(v);
        if (!s) return r.emitError("returned scalar has no host value");
        results.push_back(s);
      }
    }
    vmir::ReturnOp::create(b, loc, results);
    return success();
  }

  // ---- host scalar arithmetic ------------------------------------------------------------
  LogicalResult lowerScalarArith(Operation* op) {
    for (Type t : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      if (!vmType(t) || isa<RankedTensorType>(t))
        return op->emitError() << "unsupported op '" << op->getName() << "' on " << t
                               << " in a host function for target 'cpu'";
    SmallVector<Value> in;
    for (Value v : op->getOperands()) {
      Value s = scalars.lookup(v);
      if (!s) return op->emitError("operand has no host value");
      in.push_back(s);
    }
    Type resultType = op->getResult(0).getType();
    bool i32 = resultType.isInteger(32);
    Value result;
    auto binary = [&](StringRef m) { return instI(m, {in[0], in[1]}); };
    auto binaryF = [&](StringRef m) { return inst(m, {in[0], in[1]}, b.getF64Type()); };
    result =
        llvm::TypeSwitch<Operation*, Value>(op)
            .Case([&](arith::AddIOp) { return binary("add.i64"); })
            .Case([&](arith::SubIOp) { return binary("sub.i64"); })
            .Case([&](arith::MulIOp) { return binary("mul.i64"); })
            .Case([&](arith::DivSIOp) { return binary("div.s.i64"); })
            .Case([&](arith::RemSIOp) { return binary("rem.s.i64"); })
            .Case([&](arith::DivUIOp) { return binary("div.u.i64"); })
            .Case([&](arith::RemUIOp) { return binary("rem.u.i64"); })
            .Case([&](arith::AndIOp) { return binary("and.i64"); })
            .Case([&](arith::OrIOp) { return binary("or.i64"); })
            .Case([&](arith::XOrIOp) { return binary("xor.i64"); })
            .Case([&](arith::ShLIOp) { return binary("shl.i64"); })
            .Case([&](arith::ShRSIOp) { return binary("shr.s.i64"); })
            .Case([&](arith::ShRUIOp) { return binary("shr.u.i64"); })
            .Case([&](arith::MinSIOp) { return binary("min.s.i64"); })
            .Case([&](arith::MaxSIOp) { return binary("max.s.i64"); })
            .Case([&](arith::FloorDivSIOp) { return roundedDivSI(in[0], in[1], /*ceil=*/false); })
            .Case([&](arith::CeilDivSIOp) { return roundedDivSI(in[0], in[1], /*ceil=*/true); })
            .Case([&](arith::AddFOp) { return binaryF("add.f64"); })
            .Case([&](arith::SubFOp) { return binaryF("sub.f64"); })
            .Case([&](arith::MulFOp) { return binaryF("mul.f64"); })
            .Case([&](arith::DivFOp) { return binaryF("div.f64"); })
            .Case([&](arith::NegFOp) { return inst("neg.f64", {in[0]}, b.getF64Type()); })
            .Case([&](arith::CmpIOp c) { return lowerCmpI(c.getPredicate(), in[0], in[1]); })
            .Case([&](arith::CmpFOp c) { return lowerCmpF(c.getPredicate(), in[0], in[1]); })
            .Case([&](arith::SelectOp) { return instI("select.i64", {in[0], in[1], in[2]}); })
            .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(
                [&](Operation*) { return in[0]; })
            .Case([&](arith::ExtUIOp e) {
              unsigned w = e.getIn().getType().getIntOrFloatBitWidth();
              return w >= 64 ? in[0] : instI("and.i64", {in[0], i64((int64_t(1) << w) - 1)});
            })
            .Case([&](arith::TruncIOp) { return in[0]; })
            .Case([&](arith::SIToFPOp) { return inst("cast.si64.f64", {in[0]}, b.getF64Type()); })
            .Case([&](arith::FPToSIOp) { return instI("cast.f64.si64", {in[0]}); })
            .Case([&](arith::ExtFOp) { return in[0]; })
            .Case([&](arith::TruncFOp) {
              Value bits = inst("trunc.f64.f32", {in[0]}, b.getI64Type());
              return inst("ext.f32.f64", {bits}, b.getF64Type());
            })
            .Default([&](Operation*) { return Value(); });
    if (!result)
      return op->emitError() << "unsupported op '" << op->getName()
                             << "' in a host function for target 'cpu'";
    // Narrow integers wrap like their type: sign-extend the low bits again.
    if (i32 && !isa<arith::CmpIOp>(op)) result = instI("trunc.i64.i32", {result});
    if (resultType.isInteger(1) && !isa<arith::CmpIOp, arith::CmpFOp>(op))
      result = instI("and.i64", {result, i64(1)});
    scalars[op->getResult(0)] = result;
    return success();
  }

  // Floor / ceil signed division from the VM's truncating div and rem (any signs): the
  // truncated quotient q is off by one exactly when the remainder r is nonzero and
  // floor: r and b have different signs (q - 1); ceil: r and b have the same sign (q + 1).
  Value roundedDivSI(Value a, Value d, bool ceil) {
    Value q = instI("div.s.i64", {a, d});
    Value r = instI("rem.s.i64", {a, d});
    Value inexact = instI("cmp.ne.i64", {r, i64(0)});
    Value signsDiffer = instI("xor.i64", {instI("cmp.lt.s.i64", {r, i64(0)}),
                                          instI("cmp.lt.s.i64", {d, i64(0)})});
    if (ceil) signsDiffer = instI("xor.i64", {signsDiffer, i64(1)});
    Value adjust = instI("and.i64", {inexact, signsDiffer});
    return instI(ceil ? "add.i64" : "sub.i64", {q, adjust});
  }

  Value lowerCmpI(arith::CmpIPredicate p, Value l, Value r) {
    using P = arith::CmpIPredicate;
    switch (p) {
      case P::eq: return instI("cmp.eq.i64", {l, r});
      case P::ne: return instI("cmp.ne.i64", {l, r});
      case P::slt: return instI("cmp.lt.s.i64", {l, r});
      case P::sle: return instI("cmp.le.s.i64", {l, r});
      case P::sgt: return instI("cmp.lt.s.i64", {r, l});
      case P::sge: return instI("cmp.le.s.i64", {r, l});
      case P::ult: return instI("cmp.lt.u.i64", {l, r});
      case P::ule: return instI("cmp.le.u.i64", {l, r});
      case P::ugt: return instI("cmp.lt.u.i64", {r, l});
      case P::uge: return instI("cmp.le.u.i64", {r, l});
    }
    return Value();
  }

  Value lowerCmpF(arith::CmpFPredicate p, Value l, Value r) {
    using P = arith::CmpFPredicate;
    switch (p) {
      case P::OEQ: return instI("cmp.eq.f64", {l, r});
      case P::OLT: return instI("cmp.lt.f64", {l, r});
      case P::OLE: return instI("cmp.le.f64", {l, r});
      case P::OGT: return instI("cmp.lt.f64", {r, l});
      case P::OGE: return instI("cmp.le.f64", {r, l});
      case P::UNE: return instI("xor.i64", {instI("cmp.eq.f64", {l, r}), i64(1)});
      default: return Value();
    }
  }

  func::FuncOp func, vmFunc;
  ModuleState& state;
  MLIRContext* ctx;
  OpBuilder b;
  Type ref;
  Location loc = UnknownLoc::get(ctx);
  Value device;
  Block* cur = nullptr;
  DenseMap<Block*, Block*> blocks;
  DenseMap<Value, HostTensor> tensors;
  DenseMap<Value, Value> scalars;
  SmallVector<Value> pendingStaticDims;
  DenseMap<Operation*, int64_t> segmentOf;
  SmallVector<PendingDispatch> pending;
  SmallVector<std::pair<SmallVector<Value>, Value>> segmentParams;
};

// The module initializer: uploads every constant once into its ref global.
void buildInitializer(ModuleState& state) {
  OpBuilder b(state.module.getContext());
  b.setInsertionPointToEnd(state.module.getBody());
  Location loc = state.module.getLoc();
  Type ref = RefType::get(b.getContext());
  auto init = func::FuncOp::create(b, loc, "__hexir_init", b.getFunctionType({}, {}));
  init.setPrivate();
  init->setAttr("hexir_vm.initializer", b.getUnitAttr());
  b.setInsertionPointToStart(init.addEntryBlock());
  Value device = hal_import::DeviceDefault(b, loc);
  for (auto [dense, global] : state.constants) {
    Value data = vmir::RodataOp::create(b, loc, ref, dense);
    Value buffer = hal_import::AllocatorAllocateInitialized(b, loc, device, data);
    vmir::GlobalStoreRefOp::create(b, loc, buffer, b.getI64IntegerAttr(global));
  }
  for (const std::string& form : state.initializerForms)
    vmir::CallOp::create(b, loc, TypeRange{}, FlatSymbolRefAttr::get(b.getContext(), form), ValueRange{});
  vmir::ReturnOp::create(b, loc, ValueRange{});
}

class ConvertToVM : public impl::ConvertToVMBase<ConvertToVM> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    ModuleState state(module);
    for (auto exe : module.getOps<ExecutableOp>())
      state.executableOrdinals[exe.getSymName()] = state.executableOrdinals.size();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal()) continue;
      if (func->hasAttr("hexir.initializer")) state.initializerForms.push_back(func.getName().str());
      if (failed(HostLowering(func, state).run())) return signalPassFailure();
    }
    for (auto global : llvm::to_vector(module.getOps<GlobalOp>())) global.erase();
    if (!state.constants.empty() || !state.initializerForms.empty()) buildInitializer(state);
    OpBuilder b(module.getContext());
    module->setAttr("hexir_vm.ref_globals", b.getI64IntegerAttr(state.refGlobals));
  }
};

}  // namespace
}  // namespace hexir
