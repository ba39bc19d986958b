#include "passes/vm/DispatchRecording.h"

#include "dialects/vm/IR/VMOps.h"
#include "passes/codegen/WorkgroupCount.h"
#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {
using namespace mlir;

namespace {

Value Constant(OpBuilder& b, Location loc, int64_t v) {
  return vmir::ConstI64Op::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
}

Value Inst(OpBuilder& b, Location loc, StringRef mnemonic, ValueRange operands) {
  return vmir::InstOp::create(b, loc, TypeRange{b.getI64Type()}, b.getStringAttr(mnemonic),
                              operands)
      .getResult(0);
}

// ceil(n / d) for n >= 0 and a positive d (n <= 0 gives 0 or less: clamped by the callers).
Value CeilDiv(OpBuilder& b, Location loc, Value n, Value d) {
  Value biased = Inst(b, loc, "sub.i64", {Inst(b, loc, "add.i64", {n, d}), Constant(b, loc, 1)});
  return Inst(b, loc, "div.s.i64", {biased, d});
}

}  // namespace

FailureOr<std::optional<int64_t>> WorkgroupCounts::Append(OpBuilder& b, Location loc,
                                                          DispatchOp dispatch, ExecutableOp exe,
                                                          SmallVectorImpl<Value>& params) {
  FailureOr<std::optional<codegen::DynamicWorkgroupCount>> dynamic =
      codegen::GetDynamicWorkgroupCount(exe);
  if (failed(dynamic)) return failure();
  if (!*dynamic) {
    auto count = exe->getAttrOfType<DenseI64ArrayAttr>(codegen::kWorkgroupCountAttr);
    if (!count || count.size() != 3)
      return dispatch.emitError("executable has no hexir.workgroup_count (run codegen first)");
    return std::optional<int64_t>();
  }
  const codegen::DynamicWorkgroupCount& c = **dynamic;
  SmallVector<Value> read;
  for (int64_t w : c.extentWords) {
    if (w >= static_cast<int64_t>(params.size()))
      return dispatch.emitError("workgroup count reads parameter word ")
             << w << " but the dispatch has " << params.size();
    read.push_back(params[w]);
  }
  const int64_t offset = 8 * static_cast<int64_t>(params.size());
  Attribute key = exe->getAttr(codegen::kWorkgroupCountDynamicAttr);
  for (auto& [attr, words, x, yz] : emitted_) {
    if (attr == key && words == read) {
      params.append({x, yz});
      return std::optional<int64_t>(offset);
    }
  }
  Value n = c.extentFactor == 1 && !read.empty() ? read.front() : Constant(b, loc, c.extentFactor);
  for (Value v : llvm::ArrayRef<Value>(read).drop_front(c.extentFactor == 1 ? 1 : 0))
    n = Inst(b, loc, "mul.i64", {n, v});
  Value tile = Inst(b, loc, "max.s.i64",
                    {CeilDiv(b, loc, n, Constant(b, loc, c.limit)), Constant(b, loc, c.tile)});
  Value count = Inst(b, loc, "max.s.i64", {CeilDiv(b, loc, n, tile), Constant(b, loc, 1)});
  // Little-endian u32 x = count (< 2^31), y = 1; then z = 1 and 4 bytes of padding.
  Value x = Inst(b, loc, "or.i64", {count, Constant(b, loc, int64_t{1} << 32)});
  Value yz = Constant(b, loc, 1);
  emitted_.emplace_back(key, read, x, yz);
  params.append({x, yz});
  return std::optional<int64_t>(offset);
}

void RecordDispatch(OpBuilder& b, Location loc, Value cb, Value exe, ExecutableOp exeOp,
                    ArrayRef<int64_t> bindingSlots, std::optional<CountSlot> count,
                    ArrayRef<Value> slotValues, ArrayRef<int64_t> bindingOffsets) {
  auto slotValue = [&](int64_t s) { return slotValues.empty() ? Constant(b, loc, s) : slotValues[s]; };
  // Some binding at an offset into its slot: the `_at` imports, (slot, offset) per binding.
  const bool at = llvm::any_of(bindingOffsets, [](int64_t o) { return o != 0; });
  auto slots = [&] {
    SmallVector<Value> values;
    for (auto [i, s] : llvm::enumerate(bindingSlots)) {
      values.push_back(slotValue(s));
      if (at) values.push_back(Constant(b, loc, bindingOffsets[i]));
    }
    return values;
  };
  Value entry = Constant(b, loc, 0);
  if (count) {
    Value slot = slotValue(count->slot), offset = Constant(b, loc, count->offset);
    Value bindingCount = Constant(b, loc, static_cast<int64_t>(bindingSlots.size()));
    if (at)
      hal_import::CommandBufferDispatchIndirectSlotsAt(b, loc, cb, exe, entry, slot, offset,
                                                       bindingCount, slots());
    else
      hal_import::CommandBufferDispatchIndirectSlots(b, loc, cb, exe, entry, slot, offset,
                                                     bindingCount, slots());
    return;
  }
  auto wg = exeOp->getAttrOfType<DenseI64ArrayAttr>(codegen::kWorkgroupCountAttr);
  Value x = Constant(b, loc, wg[0]), y = Constant(b, loc, wg[1]), z = Constant(b, loc, wg[2]);
  Value bindingCount = Constant(b, loc, static_cast<int64_t>(bindingSlots.size()));
  if (at)
    hal_import::CommandBufferDispatchSlotsAt(b, loc, cb, exe, entry, x, y, z, bindingCount, slots());
  else
    hal_import::CommandBufferDispatchSlots(b, loc, cb, exe, entry, x, y, z, bindingCount, slots());
}

}  // namespace hexir::vm_lowering
