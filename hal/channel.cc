#include "hal/channel.h"

#include <cstdlib>

namespace hexir::hal {

std::string_view CollectiveName(CollectiveKind kind) {
  switch (kind) {
#define HEXIR_COLLECTIVE_NAME_(Name, code, spelling) \
  case CollectiveKind::k##Name:                      \
    return spelling;
    HEXIR_COLLECTIVE_KINDS(HEXIR_COLLECTIVE_NAME_)
#undef HEXIR_COLLECTIVE_NAME_
  }
  return "";
}

std::string_view ReductionName(ReductionOp op) {
  switch (op) {
#define HEXIR_REDUCTION_NAME_(Name, code, spelling) \
  case ReductionOp::k##Name:                        \
    return spelling;
    HEXIR_REDUCTION_OPS(HEXIR_REDUCTION_NAME_)
#undef HEXIR_REDUCTION_NAME_
  }
  return "";
}

bool IsCollectiveKind(int64_t code) {
#define HEXIR_COLLECTIVE_CODE_(Name, c, spelling) \
  if (code == c) return true;
  HEXIR_COLLECTIVE_KINDS(HEXIR_COLLECTIVE_CODE_)
#undef HEXIR_COLLECTIVE_CODE_
  return false;
}

bool IsReductionOp(int64_t code) {
#define HEXIR_REDUCTION_CODE_(Name, c, spelling) \
  if (code == c) return true;
  HEXIR_REDUCTION_OPS(HEXIR_REDUCTION_CODE_)
#undef HEXIR_REDUCTION_CODE_
  return false;
}

CollectiveBytes CollectiveByteSizes(CollectiveKind kind, uint64_t count, uint64_t element_bytes,
                                    int32_t rank, int32_t rank_count, int32_t peer) {
  const uint64_t one = count * element_bytes;
  const uint64_t all = one * static_cast<uint64_t>(rank_count);
  switch (kind) {
    case CollectiveKind::kAllReduce: return {one, one};
    case CollectiveKind::kAllGather: return {one, all};
    case CollectiveKind::kReduceScatter: return {all, one};
    case CollectiveKind::kBroadcast: return {rank == peer ? one : 0, one};
    case CollectiveKind::kSend: return {one, 0};
    case CollectiveKind::kRecv: return {0, one};
  }
  return {};
}

std::chrono::nanoseconds DefaultCollectiveTimeout() {
  const char* text = std::getenv("HEXIR_COLLECTIVE_TIMEOUT");
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    double seconds = std::strtod(text, &end);
    if (end != text && *end == '\0' && seconds > 0 && seconds < 1e9) {
      return std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
    }
  }
  return std::chrono::seconds(300);
}

std::string Channel::Describe() const {
  return StrCat(backend(), " channel rank ", rank_, " of ", count_);
}

}  // namespace hexir::hal
