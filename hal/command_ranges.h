// The device address ranges a recorded command reads and writes, for drivers that let a
// collective run beside later commands (hal/channel.h: a command that conflicts with neither
// its send nor its recv range need not wait for it). Addresses are Buffer::device_address()
// (host pointers on the CPU, device pointers on CUDA), so one rule serves every driver.
//
// A collective in flight reads its send range and writes its recv range. A later command
// depends on it when the command writes either range (it would change what is sent, or be
// overwritten by what arrives) or reads the recv range (it would see a partial result). Reading
// the send range is no dependence: that is the overlap of a chunked row-parallel matmul, and of
// a copy or dispatch that reads a collective's input (Executable::written_bindings says which
// bindings a dispatch writes; without that table every binding counts as written).
//
// The same ranges order the commands of a recorded graph (OrderCommands): a command follows an
// earlier one only when one writes what the other reads or writes, instead of following every
// command before the last barrier. A graph is built before its binding table is known, so each
// slot stands for a range of its own (SlotStandIn), distinct from every other slot and every
// device address; whether a submission's table keeps that promise is checked when it is
// submitted (StandInsAlias).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hal/command_buffer.h"

namespace hexir::hal {

// A half-open address range [begin, end).
struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;

  static ByteRange Of(uint64_t address, uint64_t length) { return {address, address + length}; }
  bool Overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};

// What one or more commands read and write.
struct CommandRanges {
  std::vector<ByteRange> reads;
  std::vector<ByteRange> writes;

  void clear() {
    reads.clear();
    writes.clear();
  }
  // Everything, written (a command whose ranges are not known).
  void AddEverything() { writes.push_back({0, UINT64_MAX}); }
};

// True when commands with `ranges` must wait for a collective in flight that reads `send` and
// writes `recv` (the rule in the header comment).
bool DependsOnCollective(const CommandRanges& ranges, const ByteRange& send, const ByteRange& recv);

// Every range `d` reads or writes (its bindings, by the executable's written_bindings, and an
// indirect count, read), slots resolved against `table` (a resolved binding table:
// ResolveBindingTable), appended to `out`.
void AppendDispatchRanges(const DispatchCommand& d, const std::vector<BufferRef>& table,
                          CommandRanges* out);
// The same for any command: a copy reads its source and writes its target, a fill writes its
// target; a repeat writes everything (its body is not looked into); a barrier or a collective
// nothing.
void AppendCommandRanges(const Command& c, const std::vector<BufferRef>& table,
                         CommandRanges* out);

// ---- ordering a recording by its ranges ------------------------------------------------------

// Binding-table slot `slot` as a range of its own: [kStandInBase + slot * kStandInSpan, +
// kStandInSpan), above every device and host address (those lie below 2^57).
inline constexpr uint64_t kStandInBase = uint64_t{1} << 62;
inline constexpr uint64_t kStandInSpan = uint64_t{1} << 36;
ByteRange SlotStandIn(uint32_t slot);

// AppendDispatchRanges before the table is known: each slot binding (and a count in a slot) as
// the slot's whole stand-in, direct buffers as their addresses.
void AppendDispatchStandInRanges(const DispatchCommand& d, CommandRanges* out);

// One recorded command as OrderCommands sees it.
struct OrderedCommand {
  enum Kind : uint8_t { kCommand, kBarrier, kCollective };
  Kind kind = kCommand;
  CommandRanges ranges;  // what it reads and writes (slots as stand-ins)
};

// Per command, the earlier commands it follows (ascending indices; none for a barrier): i < j
// when their ranges conflict (one writes what the other reads or writes) and a barrier lies
// between them or either is a collective (a collective is ordered by its ranges alone, in both
// directions: hal/channel.h), and each collective after the previous one (they run in
// recording order on every rank). Commands between two barriers stay unordered otherwise.
// Edges implied by the others (a path through another command) are left out.
std::vector<std::vector<uint32_t>> OrderCommands(const std::vector<OrderedCommand>& commands);

// The order in which to create the nodes of a graph ordered by `deps` (OrderCommands' result):
// level by level, breadth-first over the dependence DAG (a command's level is 0 without
// dependences, else one more than its deepest dependence's), recording order within a level.
// Every command comes after its dependences. A recording of independent chains recorded chain
// by chain (what --schedule=serial records) is thereby created wave by wave, as a waves
// recording is: CUDA's graph launch costs the host ~10 us more for the same graph created
// chain by chain (bench/README.md, schedule_waves).
std::vector<uint32_t> LevelOrder(const std::vector<std::vector<uint32_t>>& deps);

// Fan-in/fan-out through an empty node: the m commands whose dependences are the same n
// commands follow one join node that follows those n, when that saves edges (n * m > n + m:
// n, m >= 2, not both 2). So a full join of two groups costs n + m edges and one node instead
// of n * m edges. Commands whose dependence lists differ keep their own edges.
struct JoinPlan {
  std::vector<std::vector<uint32_t>> joins;  // per join node: the commands it follows
  std::vector<int32_t> join_of;              // per command: the join it follows instead, or -1
  // Edges of the graph with the joins (each join's own plus the commands' own), for counts.
  size_t edges = 0;
};
JoinPlan PlanJoins(const std::vector<std::vector<uint32_t>>& deps);

// What an order computed over stand-ins assumed apart: the slots used (each once, with
// whether any command writes it) and the direct ranges read and written.
struct StandInUses {
  std::vector<std::pair<uint32_t, bool>> slots;
  CommandRanges direct;
  // Adds the ranges of one command (a range over everything, which conflicts with all, is
  // no assumption and is skipped).
  void Add(const CommandRanges& ranges);
};

// True when, with slot s at `slot_ranges[s]` for this submission, a written slot overlaps
// another used slot or a direct range, or a written direct range overlaps a used slot: two
// commands the stand-ins kept apart may then touch the same memory, and an order computed over
// them may miss a dependence. Empty ranges touch nothing.
bool StandInsAlias(const StandInUses& uses, const std::vector<ByteRange>& slot_ranges);

}  // namespace hexir::hal
