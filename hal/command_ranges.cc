#include "hal/command_ranges.h"

#include <algorithm>

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

// A dispatch's bindings by its executable's written_bindings (slots' ranges from `slot_range`)
// and its indirect count (read, from `count_range`).
template <typename SlotRange, typename CountRange>
void AppendDispatchRangesWith(const DispatchCommand& d, SlotRange slot_range,
                              CountRange count_range, CommandRanges* out) {
  for (size_t i = 0; i < d.bindings.size(); ++i) {
    const BufferRef& b = d.bindings[i];
    ByteRange range = b.is_slot() ? slot_range(b.slot)
                                  : ByteRange::Of(b.buffer->device_address() + b.offset, b.length);
    bool written = d.executable ? d.executable->MayWriteBinding(d.entry, i) : true;
    (written ? out->writes : out->reads).push_back(range);
  }
  if (d.indirect) out->reads.push_back(count_range(d.workgroup_count_ref));
}

bool Conflict(const CommandRanges& a, const CommandRanges& b) {
  for (const ByteRange& w : a.writes) {
    if (AnyOverlaps(b.reads, w) || AnyOverlaps(b.writes, w)) return true;
  }
  for (const ByteRange& r : a.reads) {
    if (AnyOverlaps(b.writes, r)) return true;
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
  // Dispatch slots bind the table entry as is (its offset and length).
  AppendDispatchRangesWith(
      d,
      [&](uint32_t slot) {
        const BufferRef& t = table[slot];
        return ByteRange::Of(t.buffer->device_address() + t.offset, t.length);
      },
      [&](const BufferRef& count) { return RefRange(count, table, kIndirectParamsSize); }, out);
}

void AppendDispatchStandInRanges(const DispatchCommand& d, CommandRanges* out) {
  AppendDispatchRangesWith(
      d, SlotStandIn,
      [](const BufferRef& count) {
        return count.is_slot() ? SlotStandIn(count.slot)
                               : ByteRange::Of(count.buffer->device_address() + count.offset,
                                               kIndirectParamsSize);
      },
      out);
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

ByteRange SlotStandIn(uint32_t slot) {
  return ByteRange::Of(kStandInBase + uint64_t{slot} * kStandInSpan, kStandInSpan);
}

// Descending over the earlier commands, each one either already implied (an ancestor of a
// command kept) or checked: the kept ones are then exactly the edges no path implies, since
// an ancestor always has a lower index than its descendant. `ancestors` holds one bit row per
// command: n^2 bits (a recording of 4096 commands: 2 MiB).
std::vector<std::vector<uint32_t>> OrderCommands(const std::vector<OrderedCommand>& commands) {
  const size_t n = commands.size(), words = (n + 63) / 64;
  std::vector<std::vector<uint32_t>> deps(n);
  std::vector<uint64_t> ancestors(n * words, 0);
  size_t barrier = 0;          // commands below this index lie before the last barrier
  size_t last_collective = n;  // none yet
  for (size_t j = 0; j < n; ++j) {
    const OrderedCommand& c = commands[j];
    if (c.kind == OrderedCommand::kBarrier) {
      barrier = j;
      continue;
    }
    uint64_t* mine = &ancestors[j * words];
    const bool collective = c.kind == OrderedCommand::kCollective;
    for (size_t i = j; i-- > 0;) {
      const OrderedCommand& e = commands[i];
      if (e.kind == OrderedCommand::kBarrier || ((mine[i / 64] >> (i % 64)) & 1)) continue;
      const bool ordered = i < barrier || collective || e.kind == OrderedCommand::kCollective;
      const bool follows = (collective && i == last_collective) ||
                           (ordered && Conflict(e.ranges, c.ranges));
      if (!follows) continue;
      deps[j].push_back(static_cast<uint32_t>(i));
      mine[i / 64] |= uint64_t{1} << (i % 64);
      const uint64_t* theirs = &ancestors[i * words];
      for (size_t w = 0; w <= i / 64; ++w) mine[w] |= theirs[w];
    }
    std::reverse(deps[j].begin(), deps[j].end());
    if (collective) last_collective = j;
  }
  return deps;
}

std::vector<uint32_t> LevelOrder(const std::vector<std::vector<uint32_t>>& deps) {
  // A dependence has a lower index (OrderCommands), so one pass in index order has every
  // dependence's level when it is needed.
  std::vector<uint32_t> level(deps.size(), 0);
  for (size_t j = 0; j < deps.size(); ++j) {
    for (uint32_t d : deps[j]) level[j] = std::max(level[j], level[d] + 1);
  }
  std::vector<uint32_t> order(deps.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = static_cast<uint32_t>(j);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return level[a] < level[b]; });
  return order;
}

JoinPlan PlanJoins(const std::vector<std::vector<uint32_t>>& deps) {
  JoinPlan plan;
  plan.join_of.assign(deps.size(), -1);
  // Commands with >= 2 dependences, grouped by their (ascending) lists.
  std::vector<uint32_t> fan_in;
  for (size_t j = 0; j < deps.size(); ++j) {
    if (deps[j].size() >= 2) fan_in.push_back(static_cast<uint32_t>(j));
  }
  std::stable_sort(fan_in.begin(), fan_in.end(),
                   [&](uint32_t a, uint32_t b) { return deps[a] < deps[b]; });
  for (size_t begin = 0, end = 0; begin < fan_in.size(); begin = end) {
    end = begin + 1;
    while (end < fan_in.size() && deps[fan_in[end]] == deps[fan_in[begin]]) ++end;
    const size_t n = deps[fan_in[begin]].size(), m = end - begin;
    if (n * m <= n + m) continue;
    const int32_t join = static_cast<int32_t>(plan.joins.size());
    plan.joins.push_back(deps[fan_in[begin]]);
    for (size_t k = begin; k < end; ++k) plan.join_of[fan_in[k]] = join;
  }
  for (size_t j = 0; j < deps.size(); ++j) plan.edges += plan.join_of[j] < 0 ? deps[j].size() : 1;
  for (const std::vector<uint32_t>& j : plan.joins) plan.edges += j.size();
  return plan;
}

void StandInUses::Add(const CommandRanges& ranges) {
  for (bool written : {false, true}) {
    for (const ByteRange& r : written ? ranges.writes : ranges.reads) {
      if (r.begin >= kStandInBase) {
        const uint32_t slot = static_cast<uint32_t>((r.begin - kStandInBase) / kStandInSpan);
        auto it = std::find_if(slots.begin(), slots.end(),
                               [&](const std::pair<uint32_t, bool>& s) { return s.first == slot; });
        if (it == slots.end()) {
          slots.push_back({slot, written});
        } else {
          it->second |= written;
        }
      } else if (r.end <= kStandInBase) {
        (written ? direct.writes : direct.reads).push_back(r);
      }  // else: spans the stand-ins (everything): ordered against all, no assumption
    }
  }
}

// One sweep in address order: a range overlaps an earlier-starting one exactly when it starts
// before that one's end, so the largest end seen so far per kind (slot or direct, any or
// written) answers for every earlier range at once. Direct ranges against each other are
// real addresses: never an assumption.
bool StandInsAlias(const StandInUses& uses, const std::vector<ByteRange>& slot_ranges) {
  struct Item {
    ByteRange range;
    bool written, slot;
  };
  thread_local std::vector<Item> items;
  items.clear();
  for (const auto& [slot, written] : uses.slots) {
    if (slot < slot_ranges.size()) items.push_back({slot_ranges[slot], written, true});
  }
  if (items.empty()) return false;
  for (const ByteRange& r : uses.direct.reads) items.push_back({r, false, false});
  for (const ByteRange& r : uses.direct.writes) items.push_back({r, true, false});
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.range.begin < b.range.begin; });
  uint64_t any_end[2] = {0, 0}, written_end[2] = {0, 0};  // [0] direct, [1] slots
  for (const Item& x : items) {
    if (x.range.begin >= x.range.end) continue;
    for (int kind : {0, 1}) {
      if (kind == 0 && !x.slot) continue;  // direct against direct
      if ((x.written && x.range.begin < any_end[kind]) || x.range.begin < written_end[kind])
        return true;
    }
    const int kind = x.slot ? 1 : 0;
    any_end[kind] = std::max(any_end[kind], x.range.end);
    if (x.written) written_end[kind] = std::max(written_end[kind], x.range.end);
  }
  return false;
}

}  // namespace hexir::hal
