// NCCL is dlopened (nccl_api.h): these run on any machine, with or without a GPU or NCCL.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "hal/drivers/cuda/nccl_api.h"
#include "hal/drivers/cuda/nccl_channel.h"
#include "hal/element_type.h"

namespace hexir::hal::cuda {
namespace {

TEST_CASE("a missing NCCL library is Unavailable naming the path HEXIR_NCCL_LIBRARY gave") {
  setenv("HEXIR_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  auto api = LoadNcclApi();
  REQUIRE(api.status().code() == StatusCode::kUnavailable);
  REQUIRE_THAT(api.status().message(),
               Catch::StartsWith("nccl channel: /nonexistent/libnccl.so.2 could not be loaded "
                                 "(name NCCL's library in HEXIR_NCCL_LIBRARY)"));
  // The result is kept for the process: a second call does not retry.
  unsetenv("HEXIR_NCCL_LIBRARY");
  REQUIRE(LoadNcclApi().status().message() == api.status().message());
}

TEST_CASE("NCCL channels refuse reductions of element types NCCL lacks, naming them") {
  Status s = NcclChannel::CheckSupported(CollectiveKind::kAllReduce, int32_t(ElementType::kI16));
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "all_reduce: NCCL cannot reduce i16 values");
  REQUIRE(NcclChannel::CheckSupported(CollectiveKind::kReduceScatter, int32_t(ElementType::kBF16)).ok());
  // Moving bytes works for every type.
  REQUIRE(NcclChannel::CheckSupported(CollectiveKind::kAllGather, int32_t(ElementType::kI16)).ok());
}

}  // namespace
}  // namespace hexir::hal::cuda
