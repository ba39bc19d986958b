// What a recorded command reads and writes, and which of them wait for a collective in flight
// (hal/command_ranges.h): the rule every driver applies to run compute beside collectives.
#include "hal/command_ranges.h"

#include <catch2/catch.hpp>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_device.h"
#include "hal/drivers/cpu/testing/test_kernels.h"

namespace hexir::hal {
namespace {

ByteRange Whole(const vm::Ref<Buffer>& b) { return ByteRange::Of(b->device_address(), b->byte_size()); }

// add_f32(a, b) -> out recorded with `written` as the module's mask (empty: none given).
CommandRanges AddRanges(Device& d, const vm::Ref<Buffer>& a, const vm::Ref<Buffer>& b,
                        const vm::Ref<Buffer>& out, std::vector<uint64_t> written) {
  vm::ExecutableView view = cpu::testing::TestKernelView({"add_f32"});
  view.entry_written_bindings = std::move(written);
  auto exe = d.CreateExecutable(view);
  REQUIRE(exe.ok());
  auto cb = d.CreateCommandBuffer();
  REQUIRE(cb.ok());
  REQUIRE((*cb)->Dispatch(*exe, 0, {1, 1, 1},
                          {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)},
                          {16, 16})
              .ok());
  REQUIRE((*cb)->commands().size() == 1);
  CommandRanges r;
  AppendCommandRanges((*cb)->commands()[0], {}, &r);
  return r;
}

TEST_CASE("command ranges: a dispatch reads and writes what its executable says") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 64), b = testing::DeviceBuffer(*dev, 64), out = testing::DeviceBuffer(*dev, 64);
  CommandRanges r = AddRanges(*dev, a, b, out, {uint64_t{1} << 2});
  REQUIRE(r.reads.size() == 2);
  CHECK(r.reads[0].begin == Whole(a).begin);
  CHECK(r.reads[1].begin == Whole(b).begin);
  REQUIRE(r.writes.size() == 1);
  CHECK(r.writes[0].begin == Whole(out).begin);
  CHECK(r.writes[0].end == Whole(out).end);

  // A module without the table (or a hand-built executable): every binding may be written.
  CommandRanges unknown = AddRanges(*dev, a, b, out, {});
  CHECK(unknown.reads.empty());
  CHECK(unknown.writes.size() == 3);
}

TEST_CASE("command ranges: which commands depend on a collective in flight") {
  auto dev = testing::CpuDevice(1);
  auto x = testing::DeviceBuffer(*dev, 64), s = testing::DeviceBuffer(*dev, 64), y = testing::DeviceBuffer(*dev, 64), z = testing::DeviceBuffer(*dev, 64);
  const ByteRange send = Whole(x), recv = Whole(s);
  // add(x, y) -> z reads the collective's input: no dependence (the chunked row-parallel
  // matmul's overlap); add(s, y) -> z reads its result; add(y, z) -> x overwrites its input.
  CHECK_FALSE(DependsOnCollective(AddRanges(*dev, x, y, z, {4}), send, recv));
  CHECK(DependsOnCollective(AddRanges(*dev, s, y, z, {4}), send, recv));
  CHECK(DependsOnCollective(AddRanges(*dev, y, z, x, {4}), send, recv));
  CHECK(DependsOnCollective(AddRanges(*dev, y, z, s, {4}), send, recv));
  CHECK_FALSE(DependsOnCollective(AddRanges(*dev, y, y, z, {4}), send, recv));
  // Without the table a read of the input counts as a write: it waits.
  CHECK(DependsOnCollective(AddRanges(*dev, x, y, z, {}), send, recv));

  // Copies read their source and write their target; fills write; a repeat writes everything.
  auto cb = dev->CreateCommandBuffer();
  REQUIRE(cb.ok());
  REQUIRE((*cb)->CopyBuffer(x, 0, y, 0, 64).ok());  // reads the input
  REQUIRE((*cb)->CopyBuffer(s, 0, y, 0, 64).ok());  // reads the result
  REQUIRE((*cb)->CopyBuffer(y, 0, x, 0, 64).ok());  // overwrites the input
  REQUIRE((*cb)->FillBuffer(z, 0, 64, 0, 4).ok());  // unrelated
  const std::vector<Command>& c = (*cb)->commands();
  REQUIRE(c.size() == 4);
  const bool expected[] = {false, true, true, false};
  for (size_t i = 0; i < c.size(); ++i) {
    CommandRanges r;
    AppendCommandRanges(c[i], {}, &r);
    INFO("command " << i);
    CHECK(DependsOnCollective(r, send, recv) == expected[i]);
  }
  // In place (send == recv): reading it waits too.
  CommandRanges read_x;
  AppendCommandRanges(c[0], {}, &read_x);
  CHECK(DependsOnCollective(read_x, send, send));
  CommandRanges everything;
  everything.AddEverything();
  CHECK(DependsOnCollective(everything, send, recv));
}

}  // namespace
}  // namespace hexir::hal
