// runtime::RankGroup end to end: one process drives N CPU devices as the ranks of one
// compiled SPMD program (a row-parallel matrix-vector product summed by all_reduce), and a
// rank that fails names itself while its peers, blocked in the collective, fail at once.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "hal/api.h"
#include "hal/element_type.h"
#include "runtime/rank_group.h"
#include "tests/e2e/harness.h"
#include "tests/e2e/row_parallel.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

tools::HostValue F32Tensor(std::vector<int64_t> dims, const std::vector<float>& values) {
  tools::HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kF32);
  t.dims = std::move(dims);
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return Tensor(std::move(t));
}

// Rank `rank` of `ranks`'s arguments: its rows of W and its part of x.
std::vector<tools::HostValue> Shard(int32_t rank, int32_t ranks) {
  row_parallel::Shard s = row_parallel::ShardOf(rank, ranks);
  return {F32Tensor({s.rows, row_parallel::kCols}, s.w), F32Tensor({s.rows}, s.x)};
}

std::unique_ptr<runtime::RankGroup> CreateGroup(const vm::Module& module, int32_t ranks) {
  std::vector<vm::Ref<hal::Device>> devices;
  for (int32_t i = 0; i < ranks; ++i) {
    auto device = hal::CreateDevice("cpu:threads=1");
    REQUIRE(device.ok());
    devices.push_back(std::move(*device));
  }
  auto group = runtime::RankGroup::Create(module, devices);
  INFO(group.status().ToString());
  REQUIRE(group.ok());
  return std::move(*group);
}

vm::Ref<vm::Module> LoadRowParallel() {
  auto module = vm::Module::LoadFromFile(CompileOrDie(row_parallel::kSource, "rank_group_row_parallel"));
  REQUIRE(module.ok());
  return std::move(*module);
}

TEST_CASE("a row-parallel product on 1, 2 and 4 in-process ranks gives every rank the exact sum") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  vm::Ref<vm::Module> module = LoadRowParallel();
  REQUIRE(runtime::UsesCollectives(*module));
  const std::vector<float> want = row_parallel::Reference();
  for (int32_t ranks : {1, 2, 4}) {
    INFO(ranks << " ranks");
    auto group = CreateGroup(*module, ranks);
    REQUIRE(group->size() == ranks);
    std::vector<std::vector<float>> got(ranks);
    Status st = group->Run([&](int32_t rank) -> Status {
      if (group->channel(rank).rank() != rank || group->channel(rank).count() != ranks)
        return Internal("rank ", rank, " has channel ", group->channel(rank).Describe());
      HEXIR_ASSIGN_OR_RETURN(vm::Function fn, group->context(rank).LookupFunction("main"));
      std::vector<tools::HostValue> results;
      const std::vector<vm::Ref<hal::Device>> devices = {vm::Ref<hal::Device>::Retain(&group->device(rank))};
      HEXIR_RETURN_IF_ERROR(tools::CallFunction(group->context(rank), devices, fn, Shard(rank, ranks), &results));
      got[rank].resize(4);
      std::memcpy(got[rank].data(), results.at(0).tensor.bytes.data(), 16);
      return Status::Ok();
    });
    INFO(st.ToString());
    REQUIRE(st.ok());
    for (int32_t rank = 0; rank < ranks; ++rank) CHECK(got[rank] == want);
    // Every rank ran its collective on its own device's queue.
    for (int32_t rank = 0; rank < ranks; ++rank) CHECK(group->device(rank).stats().dispatches_executed > 0);
  }
}

TEST_CASE("a rank whose call fails is named, and its peers waiting in the all_reduce fail at once") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "120", 1);
  vm::Ref<vm::Module> module = LoadRowParallel();
  auto group = CreateGroup(*module, 2);
  std::vector<Status> statuses;
  Status st = group->Run(
      [&](int32_t rank) -> Status {
        HEXIR_ASSIGN_OR_RETURN(vm::Function fn, group->context(rank).LookupFunction("main"));
        std::vector<tools::HostValue> args = Shard(rank, 2);
        if (rank == 1) args.pop_back();  // rank 1 forgets x: refused before its all_reduce
        std::vector<tools::HostValue> results;
        const std::vector<vm::Ref<hal::Device>> devices = {vm::Ref<hal::Device>::Retain(&group->device(rank))};
        return tools::CallFunction(group->context(rank), devices, fn, args, &results);
      },
      &statuses);
  INFO(st.ToString());
  REQUIRE(!st.ok());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().rfind("rank 1 of 2 ('cpu'): function 'main' expects 2 inputs", 0) == 0);
  REQUIRE(statuses.size() == 2);
  INFO(statuses[0].ToString());
  CHECK(statuses[0].code() == StatusCode::kAborted);
  // Told by rank 1, not timed out (the timeout is 120 s).
  CHECK(statuses[0].message().find("all_reduce (collective #1 on the gloo channel rank 0 of 2): failed because "
                                   "rank 1 failed: function 'main' expects 2 inputs") != std::string::npos);
}

TEST_CASE("a rank group refuses a module of two devices: each rank runs a module of one") {
  auto module = vm::Module::LoadFromFile(CompileOrDie(row_parallel::kSource, "rank_group_two_devices", "cpu", "--target=cpu"));
  REQUIRE(module.ok());
  std::vector<vm::Ref<hal::Device>> devices = {*hal::CreateDevice("cpu"), *hal::CreateDevice("cpu")};
  auto group = runtime::RankGroup::Create(**module, devices);
  REQUIRE(!group.ok());
  CHECK(group.status().message() ==
        "module '" + std::string((*module)->name()) +
            "' runs on 2 devices; a rank group runs a module of one device on each rank");
}

}  // namespace
}  // namespace hexir::e2e
