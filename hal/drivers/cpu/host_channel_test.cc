#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

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

TEST_CASE("HEXIR_CHANNEL_BACKEND picks the backend and an unknown one is refused naming the choices") {
  setenv("HEXIR_CHANNEL_BACKEND", "nccl", 1);
  auto refused = CreateHostChannel();
  REQUIRE(refused.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(refused.status().message() ==
          "HEXIR_CHANNEL_BACKEND='nccl' is not a channel backend (local, mpi, gloo)");
  setenv("HEXIR_CHANNEL_BACKEND", "gloo", 1);  // no launch: a Gloo group of this one rank
  auto gloo = CreateHostChannel();
  INFO(gloo.status().ToString());
  REQUIRE(gloo.ok());
  REQUIRE((*gloo)->Describe() == "gloo channel rank 0 of 1");
  setenv("HEXIR_CHANNEL_BACKEND", "mpi", 1);
  auto two = CreateHostChannels(2);
  REQUIRE(two.status().code() == StatusCode::kUnimplemented);
  REQUIRE_THAT(two.status().message(), Catch::StartsWith("mpi channels give one rank per process: 2 devices"));
  unsetenv("HEXIR_CHANNEL_BACKEND");
}

TEST_CASE("several cpu devices of one process form an in-process group, one rank each") {
  auto channels = CreateHostChannels(3);
  INFO(channels.status().ToString());
  REQUIRE(channels.ok());
  for (int32_t i = 0; i < 3; ++i) REQUIRE((*channels)[i]->Describe() == "gloo channel rank " + std::to_string(i) + " of 3");
  std::vector<vm::Ref<Device>> devices = {*CreateDevice("cpu", {}), *CreateDevice("cpu", {})};
  auto pair = devices[0]->CreateGroupChannels({devices[0].get(), devices[1].get()});
  REQUIRE(pair.ok());
  REQUIRE((*pair)[1]->rank() == 1);
}

TEST_CASE("a torchrun-style launch needs a rendezvous it can reach, and says which") {
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "10.255.0.7", 1);
  setenv("MASTER_PORT", "29500", 1);
  auto remote = CreateHostChannel();
  REQUIRE(remote.status().code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(remote.status().message(), Catch::Contains("HEXIR_RENDEZVOUS=file:PATH"));
  REQUIRE_THAT(remote.status().message(), Catch::Contains("MASTER_ADDR=10.255.0.7 cannot be reached"));
  setenv("RANK", "2", 1);
  auto rank = CreateHostChannel();
  REQUIRE(rank.status().message() == "RANK=2 is not below WORLD_SIZE=2");
  setenv("HEXIR_RENDEZVOUS", "tcp://host:1", 1);
  setenv("RANK", "0", 1);
  auto store = CreateHostChannel();
  REQUIRE_THAT(store.status().message(), Catch::StartsWith("HEXIR_RENDEZVOUS='tcp://host:1': expected file:PATH"));
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "HEXIR_RENDEZVOUS"}) unsetenv(v);
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
