#include "hal/drivers/cpu/cpu_dispatch.h"

#include <algorithm>
#include <cstring>

#include "hal/kernel_error.h"

namespace hexir::hal::cpu {

void ResolveBinding(const BufferRef& b, const std::vector<BufferRef>& table, void** ptr,
                    uint64_t* length) {
  if (!b.is_slot()) {
    uint8_t* data = b.buffer->host_data();
    *ptr = data ? data + b.offset : nullptr;
    *length = b.length;
    return;
  }
  // A slot at an offset into its entry: past the entry's end it is an empty range.
  const BufferRef& t = table[b.slot];
  const uint64_t skip = std::min(b.offset, t.length);
  uint8_t* data = t.buffer->host_data();
  *ptr = data ? data + t.offset + skip : nullptr;
  *length = t.length - skip;
}

void ResolveBindings(const DispatchCommand& cmd, const std::vector<BufferRef>& table,
                     void** ptrs, uint64_t* lengths) {
  for (size_t i = 0; i < cmd.bindings.size(); ++i) ResolveBinding(cmd.bindings[i], table, &ptrs[i], &lengths[i]);
}

StatusOr<WorkgroupCount> DispatchWorkgroupCount(const DispatchCommand& cmd,
                                                         const std::vector<BufferRef>& table) {
  if (!cmd.indirect) return cmd.workgroup_count;
  const BufferRef& r = cmd.workgroup_count_ref;
  const uint8_t* p;
  if (r.is_slot()) {
    const BufferRef& t = table[r.slot];
    if (r.offset > t.length || t.length - r.offset < kIndirectParamsSize) {
      return OutOfRange("dispatch_indirect of '", cmd.executable->entry_name(cmd.entry),
                        "': workgroup count at offset ", r.offset, " of binding table slot ",
                        r.slot, " needs ", kIndirectParamsSize, " bytes but the slot holds ",
                        t.length);
    }
    p = t.buffer->host_data() + t.offset + r.offset;
  } else {
    p = r.buffer->host_data() + r.offset;
  }
  std::array<uint32_t, 3> count;
  std::memcpy(count.data(), p, sizeof(count));
  if (!WorkgroupCountFits(count)) {
    return InvalidArgument("dispatch_indirect of '", cmd.executable->entry_name(cmd.entry),
                           "': workgroup count ", count[0], "x", count[1], "x", count[2],
                           " read from the buffer exceeds 2^40 workgroups");
  }
  return count;
}

Status WorkgroupError(const CpuExecutable& exe, uint32_t entry, const uint32_t id[3], int rc,
                      const hexir_cpu_kernel_error_t& error) {
  const std::string& name = exe.entry_name(entry);
  if (KnownKernelError(rc)) return KernelError(name, rc, error.values[0], error.values[1]);
  return Aborted("dispatch of entry '", name, "' failed: workgroup (", id[0], ", ", id[1], ", ",
                 id[2], ") returned ", rc);
}

void ExecuteCopy(const CopyCommand& cp) {
  std::memmove(cp.target->host_data() + cp.target_offset,
               cp.source->host_data() + cp.source_offset, cp.length);
}

void ExecuteFill(const FillCommand& f) {
  uint8_t* p = f.target->host_data() + f.offset;
  if (f.pattern_size == 1) {
    std::memset(p, static_cast<int>(f.pattern & 0xff), f.length);
    return;
  }
  for (uint64_t o = 0; o < f.length; o += f.pattern_size) {
    std::memcpy(p + o, &f.pattern, f.pattern_size);  // little-endian low bytes
  }
}

}  // namespace hexir::hal::cpu
