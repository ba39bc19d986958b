// Host tensor ops: constants (ref globals filled by the initializer), host empties (zeroed
// buffers), reshapes and casts (aliases of the source buffer), checks (asserts), dims
// (registers) and host reads of one element.
#include "passes/vm/HostLowering.h"

#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {

LogicalResult HostLowering::lowerScalarConstant(arith::ConstantOp c) {
  Attribute value = c.getValue();
  if (auto f = dyn_cast<FloatAttr>(value)) {
    scalars[c] = vmir::ConstF64Op::create(b, loc, b.getF64Type(),
                                          b.getF64FloatAttr(f.getValueAsDouble()));
    return success();
  }
  APInt i = cast<IntegerAttr>(value).getValue();
  scalars[c] = i64(c.getType().isInteger(1) ? (i.getBoolValue() ? 1 : 0) : i.getSExtValue());
  return success();
}

LogicalResult HostLowering::lowerTensorConstant(arith::ConstantOp c) {
  auto tensor = cast<RankedTensorType>(c.getType());
  auto dense = cast<DenseElementsAttr>(c.getValue());
  int64_t global = state.refGlobals++;
  auto on = c->getAttrOfType<IntegerAttr>(kDeviceAttr);
  state.constants.push_back({dense, global, on ? on.getInt() : 0});
  HostTensor h;
  h.buffer = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
  for (int64_t d : tensor.getShape()) h.dims.push_back(i64(d));
  tensors[c] = h;
  return success();
}

// ---- tensor globals (hexir.global: lifted dispatch results) ---------------------------------
// A ref global holding the buffer; the static dims are constants. A store is an ordinary host
// op: it ends the region that computes the value (queue order covers later reads).
int64_t HostLowering::tensorGlobal(FlatSymbolRefAttr name) {
  auto [it, inserted] = state.tensorGlobals.try_emplace(name.getValue(), state.refGlobals);
  if (inserted) ++state.refGlobals;
  return it->second;
}

LogicalResult HostLowering::lowerGlobalLoad(GlobalLoadOp g) {
  HostTensor h;
  h.buffer = vmir::GlobalLoadRefOp::create(b, loc, ref,
                                           b.getI64IntegerAttr(tensorGlobal(g.getGlobalAttr())));
  for (int64_t d : g.getType().getShape()) h.dims.push_back(i64(d));
  tensors[g] = h;
  return success();
}

LogicalResult HostLowering::lowerGlobalStore(GlobalStoreOp g) {
  auto it = tensors.find(g.getValue());
  if (it == tensors.end()) return g.emitError("stored tensor has no buffer");
  vmir::GlobalStoreRefOp::create(b, loc, it->second.buffer,
                                 b.getI64IntegerAttr(tensorGlobal(g.getGlobalAttr())));
  return success();
}

// Buffer identity (a global never stored holds null; two nulls are the same).
LogicalResult HostLowering::lowerSameBuffer(SameBufferOp s) {
  auto lhs = tensors.find(s.getLhs()), rhs = tensors.find(s.getRhs());
  if (lhs == tensors.end() || rhs == tensors.end()) return s.emitError("compared tensor has no buffer");
  scalars[s] = vmir::CmpEqRefOp::create(b, loc, b.getI64Type(), lhs->second.buffer, rhs->second.buffer);
  return success();
}

LogicalResult HostLowering::lowerEmpty(tensor::EmptyOp e) {
  // A host-side empty (returned or passed on without a producer): a zeroed buffer.
  auto t = e.getType();
  HostTensor h;
  unsigned dyn = 0;
  for (int64_t d : t.getShape())
    h.dims.push_back(ShapedType::isDynamic(d) ? scalars.lookup(e.getDynamicSizes()[dyn++]) : i64(d));
  auto on = e->getAttrOfType<IntegerAttr>(kDeviceAttr);
  h.buffer = hal_import::AllocatorAllocate(b, loc, on ? deviceAt(on.getInt()) : device,
                                           byteSize(t, h.dims));
  tensors[e] = h;
  return success();
}

// Row-major reshapes reuse the bytes: the result aliases the source buffer (buffers are
// never written after the dispatch that produces them). Result dims: a collapsed dim is
// the product of its group; an expanded dim is static or its `output_shape` value.
LogicalResult HostLowering::lowerReshape(Operation* op) {
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
LogicalResult HostLowering::lowerCast(tensor::CastOp c) {
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
LogicalResult HostLowering::lowerCheck(CheckOp c) {
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

LogicalResult HostLowering::lowerDim(tensor::DimOp d) {
  auto it = tensors.find(d.getSource());
  if (it == tensors.end()) return d.emitError("tensor.dim of a tensor that has no buffer");
  scalars[d] = it->second.dims[*d.getConstantIndex()];
  return success();
}

// One element read back by the host: waits for the device once.
LogicalResult HostLowering::lowerExtract(tensor::ExtractOp e) {
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
  Value type = i64(elementTypeCode(et));
  // Read through the device that holds the tensor (it waits for that device's work).
  auto on = e->getAttrOfType<IntegerAttr>(kDeviceAttr);
  Value holder = on ? deviceAt(on.getInt()) : device;
  scalars[e] = isFloat ? hal_import::DeviceReadF64(b, loc, holder, it->second.buffer, offset, type)
                       : hal_import::DeviceReadI64(b, loc, holder, it->second.buffer, offset, type);
  return success();
}

}  // namespace hexir::vm_lowering
