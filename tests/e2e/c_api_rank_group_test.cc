// The C API's rank groups (hexir_rank_group_*, runtime/hexir_runtime.h) on a compiled SPMD
// program: a row-parallel matrix-vector product summed by all_reduce, run as 1, 2 and 4 CPU
// ranks of this process, each given its own shards; and every refusal named: no device, a null
// device, a module without collectives, a missing function, a rank's wrong argument list, and
// a rank that fails while its peer waits in the collective (no hang).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/hexir_runtime.h"
#include "tests/e2e/harness.h"
#include "tests/e2e/row_parallel.h"

namespace hexir::e2e {
namespace {

constexpr const char* kNoCollectives = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
)";

std::string LastError() { return hexir_last_error(); }

// One instance, `ranks` CPU devices and a module, released together.
struct Fixture {
  hexir_instance_t* instance = nullptr;
  std::vector<hexir_device_t*> devices;
  hexir_module_t* module = nullptr;

  // The row-parallel program (row_parallel.h) or `source`.
  Fixture(const std::string& name, int32_t ranks, const char* source = row_parallel::kSource) {
    REQUIRE(hexir_instance_create(&instance) == HEXIR_OK);
    for (int32_t i = 0; i < ranks; ++i) {
      devices.push_back(nullptr);
      REQUIRE(hexir_device_create(instance, "cpu:threads=1", &devices.back()) == HEXIR_OK);
    }
    REQUIRE(hexir_module_load_file(instance, CompileOrDie(source, name).c_str(), &module) == HEXIR_OK);
  }
  ~Fixture() {
    hexir_module_release(module);
    for (hexir_device_t* d : devices) hexir_device_release(d);
    hexir_instance_release(instance);
  }
};

hexir_buffer_view_t* F32View(hexir_device_t* device, std::vector<int64_t> dims, const std::vector<float>& values) {
  hexir_buffer_view_t* view = nullptr;
  REQUIRE(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims.data(), dims.size(), values.data(),
                                      values.size() * sizeof(float), &view) == HEXIR_OK);
  return view;
}

// Rank `rank` of `ranks`'s arguments on its device: its rows of W and its part of x.
hexir_values_t* Shard(hexir_device_t* device, int32_t rank, int32_t ranks) {
  row_parallel::Shard s = row_parallel::ShardOf(rank, ranks);
  hexir_values_t* args = nullptr;
  REQUIRE(hexir_values_create(&args) == HEXIR_OK);
  for (hexir_buffer_view_t* view : {F32View(device, {s.rows, row_parallel::kCols}, s.w), F32View(device, {s.rows}, s.x)}) {
    REQUIRE(hexir_values_push_buffer_view(args, view) == HEXIR_OK);
    hexir_buffer_view_release(view);  // the list keeps its own reference
  }
  return args;
}

std::vector<hexir_values_t*> Shards(const Fixture& f) {
  std::vector<hexir_values_t*> all;
  const int32_t ranks = int32_t(f.devices.size());
  for (int32_t r = 0; r < ranks; ++r) all.push_back(Shard(f.devices[r], r, ranks));
  return all;
}

void Release(const std::vector<hexir_values_t*>& lists) {
  for (hexir_values_t* v : lists) hexir_values_release(v);
}

TEST_CASE("C API: a row-parallel product on 1, 2 and 4 ranks returns rank 0's exact sum") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  const std::vector<float> want = row_parallel::Reference();
  for (int32_t ranks : {1, 2, 4}) {
    INFO(ranks << " ranks");
    Fixture f("c_api_rank_group", ranks);
    hexir_rank_group_t* group = nullptr;
    REQUIRE(hexir_rank_group_create(f.instance, f.module, f.devices.data(), f.devices.size(), &group) == HEXIR_OK);
    CHECK(hexir_rank_group_size(group) == size_t(ranks));
    std::vector<hexir_values_t*> args = Shards(f);
    hexir_values_t* results = nullptr;
    REQUIRE(hexir_values_create(&results) == HEXIR_OK);
    // Twice: the group is reused by a second call.
    for (int call = 0; call < 2; ++call) {
      INFO(LastError());
      REQUIRE(hexir_rank_group_call(group, "main", args.data(), results, HEXIR_NO_DEADLINE) == HEXIR_OK);
      REQUIRE(hexir_values_size(results) == 1);
      hexir_buffer_view_t* y = nullptr;
      REQUIRE(hexir_values_get_buffer_view(results, 0, &y) == HEXIR_OK);
      CHECK(hexir_buffer_view_dim(y, 0) == 4);
      std::vector<float> got(4);
      REQUIRE(hexir_buffer_view_to_host(f.devices[0], y, got.data(), got.size() * sizeof(float)) == HEXIR_OK);
      CHECK(got == want);
      hexir_buffer_view_release(y);
    }
    hexir_values_release(results);
    Release(args);
    hexir_rank_group_release(group);
  }
}

TEST_CASE("C API: a rank group refuses no devices, a null device and a module without collectives, by name") {
  Fixture f("c_api_rank_group", 2);
  hexir_rank_group_t* group = nullptr;
  REQUIRE(hexir_rank_group_create(f.instance, f.module, f.devices.data(), 0, &group) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError() == "module '" + std::string(hexir_module_name(f.module)) +
                           "': a rank group needs at least one device, got 0");
  CHECK(group == nullptr);
  hexir_device_t* with_null[2] = {f.devices[0], nullptr};
  REQUIRE(hexir_rank_group_create(f.instance, f.module, with_null, 2, &group) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError().find("': device 1 is null") != std::string::npos);
  REQUIRE(hexir_rank_group_create(f.instance, nullptr, f.devices.data(), 2, &group) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError() == "hexir_rank_group_create: null module");

  Fixture plain("c_api_rank_group_plain", 2, kNoCollectives);
  REQUIRE(hexir_rank_group_create(plain.instance, plain.module, plain.devices.data(), 2, &group) ==
          HEXIR_INVALID_ARGUMENT);
  CHECK(LastError() == "module '" + std::string(hexir_module_name(plain.module)) +
                           "' uses no collectives (it imports no hal.channel.default), so it is not a program for a "
                           "group of ranks; run it on one context (hexir_context_create)");
  CHECK(group == nullptr);
  CHECK(hexir_rank_group_size(nullptr) == 0);
  hexir_rank_group_release(nullptr);  // a no-op
}

TEST_CASE("C API: a missing function or a rank's wrong argument list is refused before any rank runs") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "60", 1);
  Fixture f("c_api_rank_group", 2);
  hexir_rank_group_t* group = nullptr;
  REQUIRE(hexir_rank_group_create(f.instance, f.module, f.devices.data(), 2, &group) == HEXIR_OK);
  std::vector<hexir_values_t*> args = Shards(f);
  hexir_values_t* results = nullptr;
  REQUIRE(hexir_values_create(&results) == HEXIR_OK);
  REQUIRE(hexir_rank_group_call(group, "nope", args.data(), results, HEXIR_NO_DEADLINE) == HEXIR_NOT_FOUND);
  CHECK(LastError().find("nope") != std::string::npos);
  hexir_values_t* short_list = nullptr;
  REQUIRE(hexir_values_create(&short_list) == HEXIR_OK);
  REQUIRE(hexir_values_push_i64(short_list, 3) == HEXIR_OK);
  hexir_values_t* wrong[2] = {args[0], short_list};
  REQUIRE(hexir_rank_group_call(group, "main", wrong, results, HEXIR_NO_DEADLINE) == HEXIR_INVALID_ARGUMENT);
  CHECK(LastError() == "rank 1 of 2: function 'main' (signature 'rr_r') takes 2 arguments, got 1");
  CHECK(hexir_values_size(results) == 0);  // untouched
  // Nothing ran: the group still computes.
  REQUIRE(hexir_rank_group_call(group, "main", args.data(), results, HEXIR_NO_DEADLINE) == HEXIR_OK);
  CHECK(hexir_values_size(results) == 1);
  hexir_values_release(short_list);
  hexir_values_release(results);
  Release(args);
  hexir_rank_group_release(group);
}

TEST_CASE("C API: a rank that fails is named and its peer in the all_reduce fails at once, not at the timeout") {
  setenv("HEXIR_COLLECTIVE_TIMEOUT", "120", 1);
  Fixture f("c_api_rank_group", 2);
  hexir_rank_group_t* group = nullptr;
  REQUIRE(hexir_rank_group_create(f.instance, f.module, f.devices.data(), 2, &group) == HEXIR_OK);
  std::vector<hexir_values_t*> args = Shards(f);
  // Rank 1's x is 2-D: refused by the program's input check, so rank 1 never reaches the
  // all_reduce that rank 0 waits in.
  hexir_values_t* bad = nullptr;
  REQUIRE(hexir_values_create(&bad) == HEXIR_OK);
  hexir_buffer_view_t* w = nullptr;
  REQUIRE(hexir_values_get_buffer_view(args[1], 0, &w) == HEXIR_OK);
  hexir_buffer_view_t* x2d = F32View(f.devices[1], {2, 2}, {1, 2, 3, 4});
  REQUIRE(hexir_values_push_buffer_view(bad, w) == HEXIR_OK);
  REQUIRE(hexir_values_push_buffer_view(bad, x2d) == HEXIR_OK);
  hexir_buffer_view_release(w);
  hexir_buffer_view_release(x2d);
  hexir_values_t* rank_args[2] = {args[0], bad};
  hexir_values_t* results = nullptr;
  REQUIRE(hexir_values_create(&results) == HEXIR_OK);
  const auto start = std::chrono::steady_clock::now();
  const hexir_status_t status = hexir_rank_group_call(group, "main", rank_args, results, HEXIR_NO_DEADLINE);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(LastError());
  CHECK(status != HEXIR_OK);
  CHECK(LastError().rfind("rank 1 of 2 ('cpu'): function 'main'", 0) == 0);
  CHECK(seconds < 30.0);  // told by rank 1 through the abandoned channel; the timeout is 120 s
  CHECK(hexir_values_size(results) == 0);
  hexir_values_release(bad);
  hexir_values_release(results);
  Release(args);
  hexir_rank_group_release(group);
}

}  // namespace
}  // namespace hexir::e2e
