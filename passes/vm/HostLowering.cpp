// HostLowering: the function frame (signature, blocks, arguments, views) and the driver that
// applies the host lowering patterns (HostLoweringPatterns.cpp) to each op in block order.
// See HostLowering.h for the file map.
#include "passes/vm/HostLowering.h"

#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {
namespace {

// Keeps the reason a pattern gave for not matching (the last one, if several were tried).
struct MatchFailureReason : RewriterBase::Listener {
  std::string message;
  void notifyMatchFailure(Location loc, function_ref<void(Diagnostic&)> reasonCallback) override {
    Diagnostic diag(loc, DiagnosticSeverity::Remark);
    reasonCallback(diag);
    message = diag.str();
  }
};

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

}  // namespace

LogicalResult HostLowering::run() {
  SmallVector<Type> argTypes, resultTypes;
  for (Type t : func.getArgumentTypes()) {
    Type vt = vmType(t);
    if (!vt) return func.emitError() << "unsupported argument type " << t << " for target 'cpu'";
    argTypes.push_back(vt);
    // A recorded callee takes a tensor as its buffer and dynamic dims (LowerRecordedCalls.cpp).
    if (auto tensor = dyn_cast<RankedTensorType>(t); tensor && recordedForm)
      argTypes.append(tensor.getNumDynamicDims(), b.getI64Type());
  }
  // A recorded callee: then the buffer the call site keeps for each result (or null).
  if (recordedForm) argTypes.append(func.getNumResults(), ref);
  // A recorded callee's results are known once its region is lowered (lowerReturn).
  for (Type t : recordedForm ? TypeRange{} : func.getResultTypes()) {
    Type vt = vmType(t);
    if (!vt) return func.emitError() << "unsupported result type " << t << " for target 'cpu'";
    resultTypes.push_back(vt);
  }
  b.setInsertionPoint(func);
  vmFunc = func::FuncOp::create(b, func.getLoc(), func.getName(),
                                b.getFunctionType(argTypes, resultTypes));
  vmFunc.setVisibility(func.getVisibility());
  if (!recordedForm) {
    vmFunc->setAttr("hexir_vm.abi_args", b.getStringAttr(joinTypes(func.getArgumentTypes())));
    vmFunc->setAttr("hexir_vm.abi_results", b.getStringAttr(joinTypes(func.getResultTypes())));
  }
  // A module of several devices: the device each argument lives on ("0;1"), so the caller
  // uploads it there (tools::Session); absent when every argument is on device 0.
  std::string argDevices;
  bool anyElsewhere = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto on = func.getArgAttrOfType<IntegerAttr>(i, kDeviceAttr);
    int64_t device = on ? on.getInt() : func->getAttrOfType<IntegerAttr>(kDeviceAttr)
                                            ? func->getAttrOfType<IntegerAttr>(kDeviceAttr).getInt()
                                            : 0;
    anyElsewhere |= device != 0;
    argDevices += (i ? ";" : "") + std::to_string(device);
  }
  if (anyElsewhere) vmFunc->setAttr("hexir_vm.abi_arg_devices", b.getStringAttr(argDevices));
  if (failed(lowerBody())) {
    vmFunc.erase();
    return failure();
  }
  func.erase();
  return success();
}

Type HostLowering::vmType(Type t) {
  if (isa<RankedTensorType>(t)) return ref;
  if (isa<FloatType>(t) && (t.isF32() || t.isF64())) return b.getF64Type();
  if (t.isIndex() || t.isInteger(64) || t.isInteger(32) || t.isInteger(1) || t.isInteger(8) ||
      t.isInteger(16))
    return b.getI64Type();
  return nullptr;
}

Value HostLowering::byteSize(RankedTensorType t, ArrayRef<Value> dims) {
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
LogicalResult HostLowering::flatten(Operation* op, Value v, SmallVectorImpl<Value>& out) {
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
void HostLowering::addBlockArguments(Block* block, Block* vmBlock) {
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
void HostLowering::materializeStaticDims() {
  for (Value a : pendingStaticDims) {
    auto t = cast<RankedTensorType>(a.getType());
    for (auto [i, d] : llvm::enumerate(t.getShape()))
      if (!ShapedType::isDynamic(d)) tensors[a].dims[i] = i64(d);
  }
  pendingStaticDims.clear();
}

// ---- function body ----
LogicalResult HostLowering::lowerBody() {
  RewritePatternSet patternList(ctx);
  populateHostLoweringPatterns(patternList, *this);
  FrozenRewritePatternSet frozen(std::move(patternList));
  PatternApplicator applicator(frozen);
  applicator.applyDefaultCostModel();
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
  devices[0] = device;
  // Every other device the function uses (regions, transfers, per-device constants and empties,
  // host reads of values held elsewhere).
  SetVector<int64_t> used;
  func.walk([&](Operation* op) {
    if (auto e = dyn_cast<ExecuteOp>(op)) used.insert(e.getDevice());
    if (auto t = dyn_cast<TransferOp>(op)) used.insert(t.getFrom());
    if (auto attr = op->getAttrOfType<IntegerAttr>(kDeviceAttr)) used.insert(attr.getInt());
  });
  for (int64_t ordinal : used)
    if (!devices.count(ordinal)) devices[ordinal] = hal_import::DeviceAt(b, loc, i64(ordinal));
  if (recordedForm) {  // buffers and dims, like block arguments: no views, nothing to assert
    addBlockArguments(&region.front(), entry);
    materializeStaticDims();
    mapHeldResultBuffers(entry);
  }
  for (auto [i, arg] : llvm::enumerate(recordedForm ? ArrayRef<BlockArgument>{} : region.front().getArguments())) {
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
    for (Operation& op : block)
      if (failed(lowerOp(op, applicator))) return failure();
  }
  return success();
}

// Unwraps a view: buffer and dims (asserted when `check`, index = argument index).
HostTensor HostLowering::importView(Value view, RankedTensorType tensor, int64_t index, bool check) {
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

Value HostLowering::exportView(const HostTensor& h, RankedTensorType t) {
  if (h.view) return h.view;
  return hal_import::BufferViewCreate(b, loc, h.buffer, i64(elementTypeCode(t.getElementType())), h.dims);
}

// Applies the first pattern that lowers `op`. A pattern that does not match gives its reason
// (reported here as the op's error); one that fails while rewriting has reported its own.
LogicalResult HostLowering::lowerOp(Operation& op, PatternApplicator& patterns) {
  loc = op.getLoc();
  MatchFailureReason reason;
  PatternRewriter rewriter(ctx);
  rewriter.setListener(&reason);
  bool tried = false;
  if (succeeded(patterns.matchAndRewrite(&op, rewriter, /*canApply=*/{},
                                         [&](const Pattern&) { tried = true; })))
    return success();
  if (!reason.message.empty()) return op.emitError(reason.message);
  if (!tried) return emitNoPattern(&op, *this);
  return failure();
}

}  // namespace hexir::vm_lowering
