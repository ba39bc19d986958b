// Lowering of the collective ops (dialects/hexir/IR/HexirCollectiveOps.td) inside an
// execution region, and of the channel's rank and count on the host.
//
//   %s = hexir.all_reduce "sum" %x : tensor<?x8xf32>      (in a hexir.execute)
//   ==> host, before the region: count = d0 * 8; %s's buffer (queue alloca or transient)
//       record block:            ch = hal.channel.default(device)
//                                hal.command_buffer.collective_slots(cb, ch, 0 (all_reduce),
//                                    0 (sum), f32, count, 0, slot(x), 0, slot(s), 0)
//
// The kind and reduction codes are hal/channel.h's (bytecode ABI). all_gather and
// reduce_scatter also assert on the host, before the region, that the channel has the number
// of ranks their types were written for; a reduce_scatter whose result dim 0 is dynamic serves
// any count: its dim 0 is the source's divided by the channel's count, asserted to divide. The channel is never baked in: it is the context's
// channel of the region's device (`hal.channel.default`), so one module serves every rank.
#include "hal/channel.h"
#include "mlir/IR/Matchers.h"
#include "passes/schedule/Affinity.h"
#include "passes/vm/HostLowering.h"

namespace hexir::vm_lowering {
namespace {

int64_t kindCode(StringRef spelling) {
#define HEXIR_KIND_CODE_(Name, code, name) \
  if (spelling == name) return code;
  HEXIR_COLLECTIVE_KINDS(HEXIR_KIND_CODE_)
#undef HEXIR_KIND_CODE_
  return -1;
}

int64_t reductionCode(StringRef spelling) {
#define HEXIR_REDUCTION_CODE_(Name, code, name) \
  if (spelling == name) return code;
  HEXIR_REDUCTION_OPS(HEXIR_REDUCTION_CODE_)
#undef HEXIR_REDUCTION_CODE_
  return -1;
}

bool isConstant(Value v) { return v && matchPattern(v, m_Constant()); }

}  // namespace

LogicalResult HostLowering::lowerChannelQuery(Operation* op) {
  Value saved = device;
  device = deviceAt(schedule::ExplicitDevice(op).value_or(0));
  if (!device) {
    device = saved;
    return op->emitError("no device value for the channel's device");
  }
  Value channel = defaultChannel();
  device = saved;
  scalars[op->getResult(0)] = isa<ChannelRankOp>(op) ? hal_import::ChannelRank(b, loc, channel)
                                                     : hal_import::ChannelCount(b, loc, channel);
  return success();
}

// Host work of a collective (its result buffer, its count, the rank-count check) and its
// place in the region's recording.
LogicalResult HostLowering::lowerCollective(Operation* op, const DenseSet<Value>& yieldedRoots) {
  CollectiveView c = *GetCollective(op);
  PendingDispatch p;
  PendingCollective pc;
  pc.kind = kindCode(c.kind);
  pc.reduction = reductionCode(c.reduction);
  Value sized = c.kind == "reduce_scatter" || !c.send ? c.recv : c.send;  // NCCL's count
  auto sizedType = cast<RankedTensorType>(sized.getType());
  pc.elementType = elementTypeCode(sizedType.getElementType());
  if (pc.kind < 0 || pc.reduction < 0 || pc.elementType == 0)
    return op->emitError("collective with no hal/channel.h code for its kind, reduction or "
                         "element type");

  HostTensor source;
  if (c.send) {
    auto it = tensors.find(c.send);
    if (it == tensors.end()) return op->emitError("collective source has no buffer");
    source = it->second;
    p.bindings.push_back(source.buffer);
    pc.hasSend = true;
  }
  if (c.ranks > 0) {
    // The types assume `ranks` ranks: the channel must have them.
    Value count = hal_import::ChannelCount(b, loc, defaultChannel());
    Value ok = instI("cmp.eq.i64", {count, i64(c.ranks)});
    vmir::AssertOp::create(
        b, loc, ok,
        b.getStringAttr((op->getName().getStringRef() + ": the program was written for " +
                         Twine(c.ranks) + " ranks, the channel has {}")
                            .str()),
        ValueRange{count});
  }
  // A reduce_scatter's dynamic result dim 0: the source's over the channel's count.
  auto scatteredRows = [&](Value rows) {
    Value count = hal_import::ChannelCount(b, loc, defaultChannel());
    Value divides = instI("cmp.eq.i64", {instI("rem.u.i64", {rows, count}), i64(0)});
    vmir::AssertOp::create(b, loc, divides,
                           b.getStringAttr("hexir.reduce_scatter: dimension 0 of the source ({}) "
                                           "is not divisible by the channel's {} ranks"),
                           ValueRange{rows, count});
    return instI("div.u.i64", {rows, count});
  };
  if (c.recv) {
    auto type = cast<RankedTensorType>(c.recv.getType());
    HostTensor h;
    for (auto [i, extent] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(extent))
        h.dims.push_back(i64(extent));
      else if (i == 0 && c.kind == "reduce_scatter")
        h.dims.push_back(scatteredRows(source.dims[0]));
      else
        h.dims.push_back(source.dims[i]);  // all_reduce/broadcast: the source's
    }
    h.buffer = allocateResult(c.recv, h, yieldedRoots);
    tensors[c.recv] = h;
    p.bindings.push_back(h.buffer);
    pc.hasRecv = true;
  }
  // Element count: NCCL's (the send count; reduce_scatter and recv: the received count).
  ArrayRef<Value> dims = sized == c.recv ? tensors[c.recv].dims : source.dims;
  Value count = i64(1);
  for (Value d : dims) count = instI("mul.i64", {count, d});
  pc.count = count;
  pc.replayable = sizedType.hasStaticShape();
  if (c.peer) {
    pc.peer = scalars.lookup(c.peer);
    if (!pc.peer) return op->emitError("collective peer has no host value");
    pc.replayable &= isConstant(c.peer);
  } else {
    pc.peer = i64(c.root);
  }
  p.collective = pc;
  pending.push_back(std::move(p));
  return success();
}

void HostLowering::recordCollective(Value cb, Value channel, const PendingDispatch& p,
                                    const DenseMap<Value, int64_t>& slotOf) {
  const PendingCollective& c = *p.collective;
  Value send = i64(c.hasSend ? slotOf.lookup(p.bindings.front()) : -1);
  Value recv = i64(c.hasRecv ? slotOf.lookup(p.bindings.back()) : -1);
  hal_import::CommandBufferCollectiveSlots(b, loc, cb, channel, i64(c.kind), i64(c.reduction),
                                           i64(c.elementType), c.count, c.peer, send, i64(0),
                                           recv, i64(0));
}

}  // namespace hexir::vm_lowering
