// One parameter buffer per execution region for its CPU and CUDA dispatches (HostLowering.h
// PackedParams). A dispatch with run-time shapes used to get a buffer of its own: per call a
// global load, a reuse_uniform import comparing its words, a global store, and one more
// binding-table slot to resolve and await at submission. Packed, the region pays that once;
// each dispatch binds the one slot at its list's offset (hal.command_buffer.dispatch_slots_at).
// The import is created at the region's first list (its value is every dispatch's binding)
// and moved, with all words, to the end of the region's host work before it is recorded.
#include "passes/vm/HalImports.h"
#include "passes/vm/HostLowering.h"

namespace hexir::vm_lowering {

namespace {
constexpr int64_t kWordBytes = 8;
constexpr int64_t kListAlignment = 64;  // hal::kBindingAlignment
constexpr int64_t kListWords = kListAlignment / kWordBytes;
}  // namespace

std::optional<std::pair<Value, int64_t>> HostLowering::packedParameters(ArrayRef<Value> params,
                                                                        int64_t maxBytes) {
  for (auto& [values, offset] : packed.lists)
    if (ArrayRef<Value>(values) == params)
      return std::make_pair(packed.reuse->getResult(0), offset);
  // The next aligned offset (the last list needs no zeros after it).
  const int64_t used = static_cast<int64_t>(packed.words.size());
  const int64_t start = (used + kListWords - 1) / kListWords * kListWords;
  if ((start + static_cast<int64_t>(params.size())) * kWordBytes > maxBytes) return std::nullopt;
  if (used < start) packed.words.resize(start, i64(0));
  const int64_t offset = start * kWordBytes;
  packed.words.append(params.begin(), params.end());
  packed.lists.push_back({SmallVector<Value>(params), offset});
  if (!packed.reuse) {
    int64_t global = state.refGlobals++;
    Value held = vmir::GlobalLoadRefOp::create(b, loc, ref, b.getI64IntegerAttr(global));
    Value buffer = hal_import::AllocatorReuseUniform(b, loc, device, held, params);
    packed.load = held.getDefiningOp();
    packed.reuse = buffer.getDefiningOp();
    packed.store =
        vmir::GlobalStoreRefOp::create(b, loc, buffer, b.getI64IntegerAttr(global)).getOperation();
  }
  return std::make_pair(packed.reuse->getResult(0), offset);
}

// Every word dominates the end of the region's host work; the buffer's users (the recording,
// the submission) all come after it.
void HostLowering::emitPackedParameters() {
  if (!packed.reuse) return;
  Block* block = b.getInsertionBlock();
  Block::iterator at = b.getInsertionPoint();
  for (Operation* op : {packed.load, packed.reuse, packed.store}) op->moveBefore(block, at);
  SmallVector<Value> operands = {packed.reuse->getOperand(0), packed.load->getResult(0)};
  operands.append(packed.words.begin(), packed.words.end());
  packed.reuse->setOperands(operands);
}

}  // namespace hexir::vm_lowering
