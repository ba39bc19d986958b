#include "hal/drivers/cpu/widened_reduction.h"

#include "base/half_float.h"
#include "hal/element_type.h"

namespace hexir::hal::cpu {

WidenedReduction::WidenedReduction(const HostChannel::Operation& op, int32_t rank_count)
    : op_(op), send_(op.send), recv_(op.recv) {
  const bool f16 = op.element_type == int32_t(ElementType::kF16);
  widened_ = CollectiveReduces(op.kind) && (f16 || op.element_type == int32_t(ElementType::kBF16));
  if (!widened_) return;
  const uint64_t total = op.count * (op.kind == CollectiveKind::kReduceScatter ? uint64_t(rank_count) : 1);
  auto to_f32 = f16 ? HalfToFloat : BF16ToFloat;
  const auto* h = static_cast<const uint16_t*>(op.send);
  wide_send_.resize(total);
  for (uint64_t i = 0; i < total; ++i) wide_send_[i] = to_f32(h[i]);
  wide_recv_.resize(op.count);
  send_ = wide_send_.data();
  recv_ = wide_recv_.data();
}

void WidenedReduction::NarrowResult() const {
  if (!widened_) return;
  auto from_f32 = op_.element_type == int32_t(ElementType::kF16) ? FloatToHalf : FloatToBF16;
  auto* h = static_cast<uint16_t*>(op_.recv);
  for (uint64_t i = 0; i < op_.count; ++i) h[i] = from_f32(wide_recv_[i]);
}

}  // namespace hexir::hal::cpu
