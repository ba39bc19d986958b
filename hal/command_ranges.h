// The device address ranges a recorded command reads or writes, for drivers that let a
// collective run beside later commands (hal/channel.h: a command that touches neither its send
// nor its recv range need not wait for it). Addresses are Buffer::device_address() (host
// pointers on the CPU, device pointers on CUDA), so one rule serves every driver.
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

// True when one of `ranges` overlaps `a` or `b`.
bool AnyOverlaps(const std::vector<ByteRange>& ranges, const ByteRange& a, const ByteRange& b);

// Every range `d` reads or writes (its bindings and an indirect count), slots resolved against
// `table` (a resolved binding table: ResolveBindingTable), appended to `out`.
void AppendDispatchRanges(const DispatchCommand& d, const std::vector<BufferRef>& table,
                          std::vector<ByteRange>* out);
// The same for any command: copies and fills their two / one ranges; a repeat touches
// everything (its body is not looked into); a barrier or a collective nothing.
void AppendCommandRanges(const Command& c, const std::vector<BufferRef>& table,
                         std::vector<ByteRange>* out);

}  // namespace hexir::hal
