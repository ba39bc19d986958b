// Lowers host functions (func.func on tensors with hexir.dispatch ops) to hexir_vm ops
// calling the HAL imports of hal/module/hal_imports.def. Each call: assert + unwrap the
// argument views, allocate result buffers, record all dispatches into one command
// buffer (barrier between consecutive dispatches), submit, wait, wrap results in views.
#include "dialects/hexir/IR/HexirOps.h"
#include "dialects/vm/IR/VMOps.h"
#include "hal/element_type.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_CONVERTTOVM
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;
using vmir::CallImportOp;
using vmir::RefType;

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

int64_t elementTypeCode(Type t) { return hal::ElementTypeFromName(typeString(t)); }

class HostLowering {
 public:
  HostLowering(func::FuncOp func, const llvm::StringMap<int64_t>& ordinals)
      : func(func), ordinals(ordinals), ctx(func.getContext()), b(func), ref(RefType::get(ctx)) {}

  LogicalResult run() {
    SmallVector<Type> argTypes, resultTypes;
    for (Type t : func.getArgumentTypes()) {
      Type vt = vmType(t);
      if (!vt) return func.emitError() << "unsupported argument type " << t << " for target 'cpu'";
      argTypes.push_back(vt);
    }
    for (Type t : func.getResultTypes()) {
      if (!isa<RankedTensorType>(t))
        return func.emitError() << "unsupported result type " << t << " (results must be tensors)";
      resultTypes.push_back(ref);
    }
    b.setInsertionPoint(func);
    auto vmFunc = func::FuncOp::create(b, func.getLoc(), func.getName(),
                                       b.getFunctionType(argTypes, resultTypes));
    vmFunc.setVisibility(func.getVisibility());
    vmFunc->setAttr("hexir_vm.abi_args", b.getStringAttr(joinTypes(func.getArgumentTypes())));
    vmFunc->setAttr("hexir_vm.abi_results", b.getStringAttr(joinTypes(func.getResultTypes())));
    Block* block = vmFunc.addEntryBlock();
    b.setInsertionPointToStart(block);
    loc = func.getLoc();

    device = call("hal.device.default", {}, {ref})[0];
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      Value vmArg = block->getArgument(i);
      auto tensor = dyn_cast<RankedTensorType>(arg.getType());
      if (!tensor) {
        scalars[arg] = vmArg;
        continue;
      }
      SmallVector<Value> args = {vmArg, i64(i), i64(elementTypeCode(tensor.getElementType()))};
      for (int64_t d : tensor.getShape()) args.push_back(i64(d));
      call("hal.buffer_view.assert", args, {});
      views[arg] = vmArg;
      buffers[arg] = call("hal.buffer_view.buffer", {vmArg}, {ref})[0];
    }
    for (Operation& op : func.getBody().front()) {
      loc = op.getLoc();
      LogicalResult result =
          llvm::TypeSwitch<Operation*, LogicalResult>(&op)
              .Case<arith::ConstantOp>([&](auto c) { return lowerConstant(c); })
              .Case<DispatchOp>([&](auto d) { return lowerDispatch(d); })
              .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
                  [&](auto r) { return lowerReshape(r); })
              .Case<func::ReturnOp>([&](auto r) { return lowerReturn(r); })
              .Default([&](Operation* o) {
                return o->emitError() << "unsupported op '" << o->getName()
                                      << "' in a host function for target 'cpu'";
              });
      if (failed(result)) {
        vmFunc.erase();
        return failure();
      }
    }
    func.erase();
    return success();
  }

 private:
  Type vmType(Type t) {
    if (isa<RankedTensorType>(t)) return ref;
    if (t.isF32() || t.isF64()) return b.getF64Type();
    if (t.isInteger(32) || t.isInteger(64) || t.isIndex() || t.isInteger(1)) return b.getI64Type();
    return nullptr;
  }

  static std::string joinTypes(TypeRange types) {
    std::string s;
    for (auto [i, t] : llvm::enumerate(types)) s += (i ? ";" : "") + typeString(t);
    return s;
  }

  Value i64(int64_t v) {
    return vmir::ConstI64Op::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
  }

  SmallVector<Value> call(StringRef name, ValueRange args, TypeRange results) {
    auto op = CallImportOp::create(b, loc, results, b.getStringAttr(name), args);
    return SmallVector<Value>(op.getResults());
  }

  Value byteSize(RankedTensorType t) {
    return i64(t.getNumElements() *
               hal::ElementTypeByteSize(elementTypeCode(t.getElementType())));
  }

  LogicalResult lowerConstant(arith::ConstantOp c) {
    auto tensor = dyn_cast<RankedTensorType>(c.getType());
    if (!tensor) {
      constants[c.getResult()] = c.getValue();
      return success();
    }
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense) return c.emitError("unsupported constant encoding for target 'cpu' (need dense<...>)");
    Value data = vmir::RodataOp::create(b, loc, ref, dense);
    buffers[c.getResult()] = call("hal.allocator.allocate_initialized", {device, data}, {ref})[0];
    return success();
  }

  // Static reshapes of row-major buffers reuse the bytes: the result aliases the source
  // buffer (buffers are never written after the dispatch that produces them).
  LogicalResult lowerReshape(Operation* op) {
    Value buffer = buffers.lookup(op->getOperand(0));
    if (!buffer) return op->emitError("reshaped tensor has no buffer");
    buffers[op->getResult(0)] = buffer;
    return success();
  }

  // The 32-bit push-constant words of a scalar dispatch operand.
  LogicalResult pushWords(Operation* op, Value v, SmallVectorImpl<Value>& words) {
    Type t = v.getType();
    if (auto attr = constants.lookup(v)) {
      uint64_t bits;
      if (auto f = dyn_cast<FloatAttr>(attr))
        bits = f.getValue().bitcastToAPInt().getZExtValue();
      else
        bits = cast<IntegerAttr>(attr).getValue().getZExtValue();
      words.push_back(i64(static_cast<int64_t>(bits & 0xffffffffu)));
      if (t.isInteger(64) || t.isIndex()) words.push_back(i64(static_cast<int64_t>(bits >> 32)));
      return success();
    }
    Value s = scalars.lookup(v);
    if (s && t.isF32()) {
      words.push_back(vmir::TruncF64F32Op::create(b, loc, b.getI64Type(), s));
      return success();
    }
    if (s && t.isInteger(32)) {
      words.push_back(s);
      return success();
    }
    return op->emitError() << "unsupported scalar dispatch operand of type " << t
                           << " for target 'cpu'";
  }

  LogicalResult lowerDispatch(DispatchOp d) {
    StringRef name = d.getExecutable();
    auto ordinal = ordinals.find(name);
    if (ordinal == ordinals.end()) return d.emitError("unknown executable ") << name;
    auto exe = SymbolTable::lookupNearestSymbolFrom<ExecutableOp>(d, d.getExecutableAttr());
    auto count = exe ? exe->getAttrOfType<DenseI64ArrayAttr>("hexir.workgroup_count") : nullptr;
    if (!count || count.size() != 3)
      return d.emitError("executable has no hexir.workgroup_count (run codegen first)");
    Value& executable = executables[name];
    if (!executable) executable = call("hal.executable.lookup", {device, i64(ordinal->second)}, {ref})[0];

    SmallVector<Value> bindings, words;
    for (Value operand : d.getArgs()) {
      if (isa<RankedTensorType>(operand.getType())) {
        Value buffer = buffers.lookup(operand);
        if (!buffer) return d.emitError("tensor operand has no buffer");
        bindings.push_back(buffer);
      } else if (failed(pushWords(d, operand, words))) {
        return failure();
      }
    }
    for (Value result : d.getResults()) {
      auto tensor = cast<RankedTensorType>(result.getType());
      Value buffer = call("hal.allocator.allocate", {device, byteSize(tensor)}, {ref})[0];
      buffers[result] = buffer;
      bindings.push_back(buffer);
    }
    if (!commandBuffer)
      commandBuffer = call("hal.command_buffer.create", {device}, {ref})[0];
    else
      call("hal.command_buffer.barrier", {commandBuffer}, {});
    SmallVector<Value> args = {commandBuffer, executable, i64(0), i64(count[0]), i64(count[1]),
                               i64(count[2]), i64(bindings.size())};
    args.append(bindings);
    args.append(words);
    call("hal.command_buffer.dispatch", args, {});
    return success();
  }

  LogicalResult lowerReturn(func::ReturnOp r) {
    if (commandBuffer) {
      call("hal.command_buffer.finalize", {commandBuffer}, {});
      Value semaphore = call("hal.semaphore.create", {device, i64(0)}, {ref})[0];
      Value none = vmir::NullRefOp::create(b, loc, ref);
      call("hal.device.queue.execute", {device, commandBuffer, none, i64(0), semaphore, i64(1)}, {});
      call("hal.semaphore.wait", {semaphore, i64(1)}, {});
    }
    SmallVector<Value> results;
    for (Value v : r.getOperands()) {
      if (Value view = views.lookup(v)) {
        results.push_back(view);
        continue;
      }
      Value buffer = buffers.lookup(v);
      if (!buffer) return r.emitError("returned tensor has no buffer");
      auto tensor = cast<RankedTensorType>(v.getType());
      SmallVector<Value> args = {buffer, i64(elementTypeCode(tensor.getElementType()))};
      for (int64_t dim : tensor.getShape()) args.push_back(i64(dim));
      results.push_back(call("hal.buffer_view.create", args, {ref})[0]);
    }
    vmir::ReturnOp::create(b, loc, results);
    return success();
  }

  func::FuncOp func;
  const llvm::StringMap<int64_t>& ordinals;
  MLIRContext* ctx;
  OpBuilder b;
  Type ref;
  Location loc = UnknownLoc::get(ctx);
  Value device, commandBuffer;
  DenseMap<Value, Value> buffers, views, scalars;
  DenseMap<Value, Attribute> constants;
  llvm::StringMap<Value> executables;
};

class ConvertToVM : public impl::ConvertToVMBase<ConvertToVM> {
 public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<int64_t> ordinals;
    for (auto exe : module.getOps<ExecutableOp>()) ordinals[exe.getSymName()] = ordinals.size();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal()) continue;
      if (failed(HostLowering(func, ordinals).run())) return signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace hexir
