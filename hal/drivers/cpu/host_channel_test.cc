#include <catch2/catch.hpp>
#include <cstdlib>

#include "hal/api.h"
#include "hal/channel.h"

namespace hexir::hal {
namespace {

// Declared first: the later case pretends to run under mpirun, and libmpi's load result is
// kept for the process.
TEST_CASE("outside mpirun a cpu device's channel is a local group of one rank") {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMIX_RANK");
  auto device = CreateDevice("cpu", {});
  REQUIRE(device.ok());
  REQUIRE((*device)->SupportsCollectives());
  auto channel = (*device)->CreateChannel();
  INFO(channel.status().ToString());
  REQUIRE(channel.ok());
  REQUIRE((*channel)->backend() == "local");
  REQUIRE((*channel)->rank() == 0);
  REQUIRE((*channel)->count() == 1);
  REQUIRE((*channel)->Describe() == "local channel rank 0 of 1");
}

TEST_CASE("the collective timeout comes from HEXIR_COLLECTIVE_TIMEOUT in seconds, else 300 s") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "2.5", 1);
  REQUIRE(DefaultCollectiveTimeout() == std::chrono::milliseconds(2500));
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "soon", 1);
  REQUIRE(DefaultCollectiveTimeout() == std::chrono::seconds(300));
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "-1", 1);
  REQUIRE(DefaultCollectiveTimeout() == std::chrono::seconds(300));
  unsetenv("HEXIR_COLLECTIVE_TIMEOUT");
  REQUIRE(DefaultCollectiveTimeout() == std::chrono::seconds(300));
}

TEST_CASE("under mpirun a missing libmpi is Unavailable naming the library path") {
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("HEXIR_MPI_LIBRARY", "/nonexistent/libmpi.so.40", 1);
  auto channel = CreateHostChannel();
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("HEXIR_MPI_LIBRARY");
  REQUIRE(channel.status().code() == StatusCode::kUnavailable);
  REQUIRE_THAT(channel.status().message(),
               Catch::StartsWith("mpi channel: /nonexistent/libmpi.so.40 could not be loaded"));
}

TEST_CASE("collective buffer sizes follow NCCL: gather and scatter sides hold count x ranks") {
  using K = CollectiveKind;
  CollectiveBytes b = CollectiveByteSizes(K::kAllReduce, 5, 4, 1, 4, 0);
  REQUIRE((b.send == 20 && b.recv == 20));
  b = CollectiveByteSizes(K::kAllGather, 5, 2, 1, 4, 0);
  REQUIRE((b.send == 10 && b.recv == 40));
  b = CollectiveByteSizes(K::kReduceScatter, 5, 4, 1, 4, 0);
  REQUIRE((b.send == 80 && b.recv == 20));
  b = CollectiveByteSizes(K::kBroadcast, 5, 4, 1, 4, 1);  // the root reads its send
  REQUIRE((b.send == 20 && b.recv == 20));
  b = CollectiveByteSizes(K::kBroadcast, 5, 4, 2, 4, 1);
  REQUIRE((b.send == 0 && b.recv == 20));
  b = CollectiveByteSizes(K::kSend, 5, 8, 0, 2, 1);
  REQUIRE((b.send == 40 && b.recv == 0));
  REQUIRE(CollectiveName(K::kReduceScatter) == "reduce_scatter");
  REQUIRE(ReductionName(ReductionOp::kProd) == "prod");
  REQUIRE_FALSE(IsCollectiveKind(6));
  REQUIRE_FALSE(IsReductionOp(-1));
}

}  // namespace
}  // namespace hexir::hal
