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
#pragma once

#include <cstdint>
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

}  // namespace hexir::hal
