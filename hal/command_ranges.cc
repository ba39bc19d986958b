#include "hal/command_ranges.h"

#include "hal/executable.h"

namespace hexir::hal {
namespace {

// A direct range, or a slot's table entry shifted by the reference's offset (the table entry
// is resolved: a buffer, an offset and a concrete length).
ByteRange RefRange(const BufferRef& ref, const std::vector<BufferRef>& table, uint64_t length) {
  if (ref.is_slot()) {
    const BufferRef& t = table[ref.slot];
    return ByteRange::Of(t.buffer->device_address() + t.offset + ref.offset, length);
  }
  return ByteRange::Of(ref.buffer->device_address() + ref.offset, length);
}

bool AnyOverlaps(const std::vector<ByteRange>& ranges, const ByteRange& r) {
  for (const ByteRange& x : ranges) {
    if (x.Overlaps(r)) return true;
  }
  return false;
}

}  // namespace

bool DependsOnCollective(const CommandRanges& ranges, const ByteRange& send,
                         const ByteRange& recv) {
  return AnyOverlaps(ranges.writes, send) || AnyOverlaps(ranges.writes, recv) ||
         AnyOverlaps(ranges.reads, recv);
}

void AppendDispatchRanges(const DispatchCommand& d, const std::vector<BufferRef>& table,
                          CommandRanges* out) {
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    const BufferRef& b = d.bindings[i];
    // Dispatch slots bind the table entry as is (its offset and length).
    const BufferRef& r = b.is_slot() ? table[b.slot] : b;
    ByteRange range = ByteRange::Of(r.buffer->device_address() + r.offset, r.length);
    bool written = d.executable ? d.executable->MayWriteBinding(d.entry, i) : true;
    (written ? out->writes : out->reads).push_back(range);
  }
  if (d.indirect) out->reads.push_back(RefRange(d.workgroup_count_ref, table, kIndirectParamsSize));
}

void AppendCommandRanges(const Command& c, const std::vector<BufferRef>& table,
                         CommandRanges* out) {
  if (auto* d = std::get_if<DispatchCommand>(&c)) {
    AppendDispatchRanges(*d, table, out);
  } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
    out->reads.push_back(ByteRange::Of(cp->source->device_address() + cp->source_offset, cp->length));
    out->writes.push_back(ByteRange::Of(cp->target->device_address() + cp->target_offset, cp->length));
  } else if (auto* f = std::get_if<FillCommand>(&c)) {
    out->writes.push_back(ByteRange::Of(f->target->device_address() + f->offset, f->length));
  } else if (std::holds_alternative<RepeatCommand>(c)) {
    out->AddEverything();
  }
}

}  // namespace hexir::hal
