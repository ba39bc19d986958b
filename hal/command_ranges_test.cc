// What a recorded command reads and writes, and which of them wait for a collective in flight
// (hal/command_ranges.h): the rule every driver applies to run compute beside collectives.
#include "hal/command_ranges.h"

#include <algorithm>

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

// ---- ordering a recording by its ranges (OrderCommands, stand-ins) ---------------------------

OrderedCommand Barrier() { return {OrderedCommand::kBarrier, {}}; }
// A command reading `reads` and writing `writes`, each a 64-byte block at 64 * key.
OrderedCommand Touch(std::vector<uint64_t> reads, std::vector<uint64_t> writes,
                     OrderedCommand::Kind kind = OrderedCommand::kCommand) {
  OrderedCommand c;
  c.kind = kind;
  for (uint64_t k : reads) c.ranges.reads.push_back(ByteRange::Of(64 * k, 64));
  for (uint64_t k : writes) c.ranges.writes.push_back(ByteRange::Of(64 * k, 64));
  return c;
}

size_t EdgeCount(const std::vector<std::vector<uint32_t>>& deps) {
  size_t n = 0;
  for (const auto& d : deps) n += d.size();
  return n;
}

// bench/schedule_waves: 8 chains of 4 steps sharing a weight (key 0, read by all); chain c's
// step s reads key in(c, s) and writes in(c, s + 1). `serial`: a barrier between every pair
// of commands (--schedule=serial), else between the steps (waves).
std::vector<OrderedCommand> Chains(bool serial) {
  auto in = [](int c, int s) { return uint64_t(1 + 8 * s + c); };
  std::vector<OrderedCommand> cmds;
  for (int s = 0; s < 4; ++s) {
    for (int c = 0; c < 8; ++c) {
      if (!cmds.empty() && (serial || c == 0)) cmds.push_back(Barrier());
      cmds.push_back(Touch({in(c, s), 0}, {in(c, s + 1)}));
    }
  }
  return cmds;
}

TEST_CASE("ordering by ranges: independent chains stay separate branches, waves or serial") {
  for (bool serial : {false, true}) {
    INFO((serial ? "serial" : "waves"));
    std::vector<OrderedCommand> cmds = Chains(serial);
    auto deps = OrderCommands(cmds);
    // One edge per step after the first (a barrier join: 3 x (8 + 8) edges and 3 join nodes).
    CHECK(EdgeCount(deps) == 8 * 3);
    // Each command follows its own chain's previous step, found by the key it reads.
    for (size_t j = 0; j < cmds.size(); ++j) {
      if (cmds[j].kind == OrderedCommand::kBarrier || deps[j].empty()) continue;
      REQUIRE(deps[j].size() == 1);
      CHECK(cmds[deps[j][0]].ranges.writes[0].begin == cmds[j].ranges.reads[0].begin);
    }
  }
}

TEST_CASE("ordering by ranges: read after write, write after read and after write; nothing "
          "between two barriers") {
  // 0 writes 1 | 2 reads 1, 3 writes 2 | 5 writes 1 (after the read: WAR), 6 reads 2 (RAW),
  // 7 writes 9 (nothing in common).
  auto deps = OrderCommands({Touch({}, {1}), Barrier(), Touch({1}, {}), Touch({}, {2}),
                             Barrier(), Touch({}, {1}), Touch({2}, {}), Touch({}, {9})});
  CHECK(deps[0].empty());
  CHECK(deps[2] == std::vector<uint32_t>{0});
  CHECK(deps[3].empty());
  CHECK(deps[5] == std::vector<uint32_t>{2});  // 0 -> 2 -> 5: the write after write is implied
  CHECK(deps[6] == std::vector<uint32_t>{3});
  CHECK(deps[7].empty());
  // Two writers of one key with no barrier between: the recorder said they may run together.
  CHECK(EdgeCount(OrderCommands({Touch({}, {1}), Touch({}, {1}), Touch({1}, {})})) == 0);
  // Partial overlap counts: [64, 128) against [96, 160).
  OrderedCommand half = Touch({}, {});
  half.ranges.reads.push_back({96, 160});
  CHECK(OrderCommands({Touch({}, {1}), Barrier(), half})[2] == std::vector<uint32_t>{0});
}

TEST_CASE("ordering by ranges: edges a path implies are left out") {
  // 0 -> 2 -> 4, and 4 also reads what 0 wrote: 4 follows 2 only. 6 reads all three writes.
  auto deps = OrderCommands({Touch({}, {1}), Barrier(), Touch({1}, {2}), Barrier(),
                             Touch({1, 2}, {3}), Barrier(), Touch({1, 2, 3}, {})});
  CHECK(deps[2] == std::vector<uint32_t>{0});
  CHECK(deps[4] == std::vector<uint32_t>{2});
  CHECK(deps[6] == std::vector<uint32_t>{4});
  // A fan-in is kept whole: 4 reads two independent writers.
  deps = OrderCommands({Touch({}, {1}), Touch({}, {2}), Barrier(), Touch({1, 2}, {})});
  CHECK(deps[3] == std::vector<uint32_t>{0, 1});
}

TEST_CASE("ordering by ranges: collectives, and commands that touch everything") {
  using K = OrderedCommand;
  // A collective sending key 1 into key 2 between barriers; the collective after it (keys 5,
  // 6) follows it although they share nothing. Without a barrier, a read of the result (2)
  // follows it, a read of its input (1) does not, and a write of the input does.
  // (5 and 6 share key 1 with no barrier between them: unordered.)
  auto deps = OrderCommands({Touch({}, {1}), Barrier(), Touch({1}, {2}, K::kCollective),
                             Touch({5}, {6}, K::kCollective), Touch({2}, {}), Touch({1}, {3}),
                             Touch({}, {1}), Touch({7}, {8})});
  CHECK(deps[2] == std::vector<uint32_t>{0});
  CHECK(deps[3] == std::vector<uint32_t>{2});
  CHECK(deps[4] == std::vector<uint32_t>{2});
  CHECK(deps[5] == std::vector<uint32_t>{0});  // the write before the barrier, not the collective
  CHECK(deps[6] == std::vector<uint32_t>{2});
  CHECK(deps[7].empty());
  // A repeat touches everything: it follows every command before its barrier, every later one
  // follows it (through it, not around it).
  OrderedCommand everything;
  everything.ranges.AddEverything();
  deps = OrderCommands({Touch({}, {1}), Touch({}, {2}), Barrier(), everything, Barrier(),
                        Touch({9}, {})});
  CHECK(deps[3] == std::vector<uint32_t>{0, 1});
  CHECK(deps[5] == std::vector<uint32_t>{3});
}

TEST_CASE("ordering by ranges: slots stand for ranges of their own, checked at submission") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 256), b = testing::DeviceBuffer(*dev, 256);
  auto direct = testing::DeviceBuffer(*dev, 64);
  vm::ExecutableView view = cpu::testing::TestKernelView({"add_f32"});
  view.entry_written_bindings = {uint64_t{1} << 2};
  auto exe = dev->CreateExecutable(view);
  REQUIRE(exe.ok());
  auto cb = dev->CreateCommandBuffer();
  REQUIRE(cb.ok());
  // add(slot 0, direct) -> slot 1
  REQUIRE((*cb)->Dispatch(*exe, 0, {1, 1, 1},
                          {BufferRef::Slot(0), BufferRef::Whole(direct), BufferRef::Slot(1)}, {16, 16})
              .ok());
  const auto& d = std::get<DispatchCommand>((*cb)->commands()[0]);
  CommandRanges r;
  AppendDispatchStandInRanges(d, &r);
  REQUIRE(r.reads.size() == 2);
  CHECK(r.reads[0].begin == SlotStandIn(0).begin);
  CHECK(r.reads[0].end == SlotStandIn(0).end);
  CHECK(r.reads[1].begin == Whole(direct).begin);
  REQUIRE(r.writes.size() == 1);
  CHECK(r.writes[0].begin == SlotStandIn(1).begin);
  CHECK_FALSE(SlotStandIn(0).Overlaps(SlotStandIn(1)));
  CHECK_FALSE(SlotStandIn(0).Overlaps(Whole(direct)));

  StandInUses uses;
  uses.Add(r);
  REQUIRE(uses.slots.size() == 2);
  auto at = [&](const vm::Ref<Buffer>& buf, uint64_t offset, uint64_t length) {
    return ByteRange::Of(buf->device_address() + offset, length);
  };
  // Slot 0 read, slot 1 written, `direct` read.
  CHECK_FALSE(StandInsAlias(uses, {at(a, 0, 256), at(b, 0, 256)}));
  CHECK_FALSE(StandInsAlias(uses, {at(a, 0, 128), at(a, 128, 128)}));  // halves of one buffer
  CHECK(StandInsAlias(uses, {at(a, 0, 256), at(a, 0, 256)}));  // read and written: one buffer
  CHECK(StandInsAlias(uses, {at(a, 0, 128), at(a, 64, 128)}));
  CHECK(StandInsAlias(uses, {at(a, 0, 256), at(direct, 0, 64)}));  // writes what is read
  CHECK_FALSE(StandInsAlias(uses, {at(direct, 0, 64), at(b, 0, 256)}));  // both only read
  CHECK_FALSE(StandInsAlias(uses, {at(a, 0, 0), at(a, 0, 256)}));  // an empty range
  // A command writing `direct` makes the read slot alias it.
  CommandRanges writes_direct;
  writes_direct.writes.push_back(Whole(direct));
  writes_direct.AddEverything();  // spans every stand-in: no assumption, not a use
  uses.Add(writes_direct);
  CHECK(uses.slots.size() == 2);
  CHECK(StandInsAlias(uses, {at(direct, 0, 64), at(b, 0, 256)}));
  CHECK_FALSE(StandInsAlias(uses, {at(a, 0, 256), at(b, 0, 256)}));
}

// ---- creating a graph's nodes: level order and join nodes -------------------------------------

// The longest dependence path ending at each command, by recursion (the reference).
uint32_t Depth(const std::vector<std::vector<uint32_t>>& deps, uint32_t j) {
  uint32_t depth = 0;
  for (uint32_t d : deps[j]) depth = std::max(depth, Depth(deps, d) + 1);
  return depth;
}

TEST_CASE("level order: chains recorded chain by chain are created wave by wave") {
  // chains.mlir as --schedule=serial records it: chain c's steps one after another (7 chains
  // of 3 steps, a barrier after every command); key in(c, s) as in Chains().
  auto in = [](int c, int s) { return uint64_t(1 + 8 * s + c); };
  std::vector<OrderedCommand> cmds;
  for (int c = 0; c < 7; ++c) {
    for (int s = 0; s < 3; ++s) {
      if (!cmds.empty()) cmds.push_back(Barrier());
      cmds.push_back(Touch({in(c, s), 0}, {in(c, s + 1)}));
    }
  }
  auto deps = OrderCommands(cmds);
  std::vector<uint32_t> order = LevelOrder(deps);
  REQUIRE(order.size() == cmds.size());
  std::vector<uint32_t> steps;  // the commands (not barriers) in creation order, by step
  for (uint32_t j : order) {
    if (cmds[j].kind == OrderedCommand::kCommand) steps.push_back(Depth(deps, j));
  }
  REQUIRE(steps.size() == 21);
  for (size_t k = 0; k < steps.size(); ++k) CHECK(steps[k] == k / 7);
  // Within a level, recording order: the first wave is chain 0, 1, ... 6's first step.
  std::vector<uint32_t> first_wave;
  for (uint32_t j : order) {
    if (cmds[j].kind == OrderedCommand::kCommand && Depth(deps, j) == 0) first_wave.push_back(j);
  }
  CHECK(std::is_sorted(first_wave.begin(), first_wave.end()));
}

TEST_CASE("level order: uneven chains and a fan-in; every command after its dependences") {
  // Chains of 1, 5 and 2 steps (keys 10.., 20.., 30..), then one command reading their ends.
  std::vector<OrderedCommand> cmds;
  const int lengths[] = {1, 5, 2};
  std::vector<uint64_t> ends;
  for (int c = 0; c < 3; ++c) {
    const uint64_t base = 10 * uint64_t(c + 1);
    for (int s = 0; s < lengths[c]; ++s) {
      cmds.push_back(Touch({base + s}, {base + s + 1}));
      cmds.push_back(Barrier());
    }
    ends.push_back(base + lengths[c]);
  }
  cmds.push_back(Touch(ends, {99}));
  auto deps = OrderCommands(cmds);
  std::vector<uint32_t> order = LevelOrder(deps);
  std::vector<uint32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k) REQUIRE(sorted[k] == k);  // a permutation
  std::vector<size_t> position(order.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  uint32_t last_depth = 0;
  for (uint32_t j : order) {
    for (uint32_t d : deps[j]) CHECK(position[d] < position[j]);
    CHECK(Depth(deps, j) >= last_depth);
    last_depth = Depth(deps, j);
  }
  CHECK(order.back() == cmds.size() - 1);  // the fan-in: depth 5, after the longest chain
  CHECK(Depth(deps, order.back()) == 5);
}

TEST_CASE("join nodes: a full fan-in between two groups costs n + m edges") {
  // 3 writers | 4 readers of all three: 12 edges, or 3 + 4 through one join.
  std::vector<OrderedCommand> cmds = {Touch({}, {1}), Touch({}, {2}), Touch({}, {3}), Barrier()};
  for (uint64_t k = 0; k < 4; ++k) cmds.push_back(Touch({1, 2, 3}, {10 + k}));
  auto deps = OrderCommands(cmds);
  CHECK(EdgeCount(deps) == 12);
  JoinPlan plan = PlanJoins(deps);
  REQUIRE(plan.joins.size() == 1);
  CHECK(plan.joins[0] == std::vector<uint32_t>{0, 1, 2});
  for (size_t j = 4; j < 8; ++j) CHECK(plan.join_of[j] == 0);
  for (size_t j = 0; j < 4; ++j) CHECK(plan.join_of[j] == -1);
  CHECK(plan.edges == 7);
}

TEST_CASE("join nodes: only where they save edges, only for identical dependence lists") {
  auto plan_of = [](const std::vector<std::vector<uint32_t>>& deps) { return PlanJoins(deps); };
  // 2 x 2: 4 edges either way (a join would add a node for nothing).
  JoinPlan two = plan_of({{}, {}, {0, 1}, {0, 1}});
  CHECK(two.joins.empty());
  CHECK(two.edges == 4);
  // 2 x 3: 5 edges instead of 6.
  JoinPlan three = plan_of({{}, {}, {0, 1}, {0, 1}, {0, 1}});
  REQUIRE(three.joins.size() == 1);
  CHECK(three.edges == 5);
  // A fan-out (1 x 5) and a fan-in (5 x 1) never.
  JoinPlan fan = plan_of({{}, {0}, {0}, {0}, {0}, {0}, {1, 2, 3, 4, 5}});
  CHECK(fan.joins.empty());
  CHECK(fan.edges == 10);
  // Lists that differ by one command: each keeps its own edges; two groups of three each
  // get their own join.
  JoinPlan mixed = plan_of({{}, {}, {}, {0, 1, 2}, {0, 1}, {0, 1, 2}, {0, 1, 2},  //
                            {1, 2}, {1, 2}, {1, 2}});
  REQUIRE(mixed.joins.size() == 2);
  CHECK(mixed.join_of[3] == mixed.join_of[5]);
  CHECK(mixed.join_of[3] == mixed.join_of[6]);
  CHECK(mixed.join_of[4] == -1);
  CHECK(mixed.join_of[7] == mixed.join_of[9]);
  CHECK(mixed.join_of[7] != mixed.join_of[3]);
  CHECK(mixed.edges == (3 + 3) + 2 + (2 + 3));
  // No dependences at all: no joins, no edges.
  CHECK(plan_of({{}, {}, {}}).edges == 0);
}

}  // namespace
}  // namespace hexir::hal
