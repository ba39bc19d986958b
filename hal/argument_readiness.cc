#include "hal/argument_readiness.h"

#include "hal/profiling.h"

namespace hexir::hal {

namespace {

Status AwaitBuffer(const Buffer* buffer, DeviceCounters& counters) {
  SemaphoreValue ready;
  if (!buffer || !buffer->PendingReady(&ready)) return Status::Ok();
  DeviceCounters::Add(counters.argument_waits);
  Profiler* profiler = counters.profiler.load(std::memory_order_relaxed);
  const int64_t begin = profiler ? ProfileClockNs() : 0;
  Status status = ready.semaphore->Wait(ready.value);
  if (profiler) profiler->OnHostSpan("argument_wait", begin, ProfileClockNs());
  if (!status.ok()) return std::move(status).WithContext("waiting for an argument's readiness");
  return Status::Ok();
}

Status AwaitRef(const BufferRef& ref, const std::vector<BufferRef>& table,
                DeviceCounters& counters) {
  if (ref.is_slot()) {
    return ref.slot < table.size() ? AwaitBuffer(table[ref.slot].buffer.get(), counters)
                                   : Status::Ok();  // the submission's checks report it
  }
  return AwaitBuffer(ref.buffer.get(), counters);
}

}  // namespace

Status AwaitArgumentsReady(const Command& command, const std::vector<BufferRef>& table,
                           DeviceCounters& counters) {
  if (auto* d = std::get_if<DispatchCommand>(&command)) {
    for (const BufferRef& b : d->bindings) HEXIR_RETURN_IF_ERROR(AwaitRef(b, table, counters));
    if (d->indirect) return AwaitRef(d->workgroup_count_ref, table, counters);
  } else if (auto* c = std::get_if<CopyCommand>(&command)) {
    return AwaitBuffer(c->source.get(), counters);
  } else if (auto* col = std::get_if<CollectiveCommand>(&command)) {
    return AwaitRef(col->send, table, counters);
  } else if (auto* r = std::get_if<RepeatCommand>(&command)) {
    return AwaitRef(r->condition, table, counters);
  }
  return Status::Ok();
}

}  // namespace hexir::hal
