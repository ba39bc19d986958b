#include "hal/command_ranges.h"

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

}  // namespace

bool AnyOverlaps(const std::vector<ByteRange>& ranges, const ByteRange& a, const ByteRange& b) {
  for (const ByteRange& r : ranges) {
    if (r.Overlaps(a) || r.Overlaps(b)) return true;
  }
  return false;
}

void AppendDispatchRanges(const DispatchCommand& d, const std::vector<BufferRef>& table,
                          std::vector<ByteRange>* out) {
  for (const BufferRef& b : d.bindings) {
    // Dispatch slots bind the table entry as is (its offset and length).
    const BufferRef& r = b.is_slot() ? table[b.slot] : b;
    out->push_back(ByteRange::Of(r.buffer->device_address() + r.offset, r.length));
  }
  if (d.indirect) out->push_back(RefRange(d.workgroup_count_ref, table, kIndirectParamsSize));
}

void AppendCommandRanges(const Command& c, const std::vector<BufferRef>& table,
                         std::vector<ByteRange>* out) {
  if (auto* d = std::get_if<DispatchCommand>(&c)) {
    AppendDispatchRanges(*d, table, out);
  } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
    out->push_back(ByteRange::Of(cp->source->device_address() + cp->source_offset, cp->length));
    out->push_back(ByteRange::Of(cp->target->device_address() + cp->target_offset, cp->length));
  } else if (auto* f = std::get_if<FillCommand>(&c)) {
    out->push_back(ByteRange::Of(f->target->device_address() + f->offset, f->length));
  } else if (std::holds_alternative<RepeatCommand>(c)) {
    out->push_back({0, UINT64_MAX});
  }
}

}  // namespace hexir::hal
